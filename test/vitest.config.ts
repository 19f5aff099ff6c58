import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// The tiers, one command (`npm test` at the root runs them all):
//  - unit:        Node, fast: codec, proxy, dispatcher over an in-memory transport, routing,
//                 and the Node-side security and reliability cases (fuzzing, fault timing).
//  - workers:     workerd through the Workers Vitest plugin, with its own worker and DOs.
//  - testing:     @dorpc/testing's own tests (workerd), with their own worker and DOs.
//  - security:    hostile inputs against a real DO in workerd (storage and env checked).
//  - reliability: real faults in workerd (eviction, abort, resets) — *.workers.test.ts.
//  - conformance: the WPT structured-clone battery (test/conformance/wpt) through dorpc's codec
//                 and the comparison contenders in Node; conformance-workers runs it through a
//                 real connection in workerd, plus Blob/File, deep values and env/ctx there.
//                 Both fail when a case of the committed baseline stops passing.
//  - e2e:         Node clients against a real `wrangler dev` that the tests start, stop and
//                 restart themselves (end to end, and the fault/load ledger).
//  - browser:     headless Chromium (shipped by the @sparticuz/chromium package) on pages that
//                 a test Worker serves from `[assets]` under `wrangler dev`: the client bundle,
//                 @dorpc/react, and the examples.
//  - packaging:   the published tarballs (`npm pack`): contents and metadata, and the README's
//                 quick start installed into a fresh app and run on Node 20 and Node 22 (needs
//                 the npm registry, like `npm ci`).
// Order on two cores: the in-process tiers run side by side first; then browser and packaging
// share group 1, one file at a time; e2e (one file at a time, default group) runs last, so
// no two `wrangler dev` and no Chromium compete with the load ledger.
const workers = (name: string, dir: string) => ({
  plugins: [cloudflareTest({ wrangler: { configPath: `./${dir}/wrangler.toml` } })],
  test: { name, include: [`${dir}/**/*.workers.test.ts`, ...(dir === "workers" ? ["workers/**/*.test.ts"] : [])] },
});

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          environment: "node",
          // gc() lets the reference tests prove that a stub nobody holds is released.
          execArgv: ["--expose-gc"],
          include: ["unit/**/*.test.ts", "routing/**/*.test.ts", "security/**/*.node.test.ts", "reliability/**/*.node.test.ts"],
        },
      },
      workers("workers", "workers"),
      workers("testing", "testing"),
      workers("security", "security"),
      workers("reliability", "reliability"),
      {
        test: {
          name: "conformance",
          environment: "node",
          include: ["conformance/**/*.node.test.ts"],
        },
      },
      workers("conformance-workers", "conformance"),
      {
        test: {
          name: "e2e",
          environment: "node",
          include: ["e2e/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // One wrangler dev at a time: these machines have two cores.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "browser",
          environment: "node",
          include: ["browser/**/*.browser.test.ts"],
          globalSetup: ["browser/support/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: "packaging",
          environment: "node",
          include: ["packaging/**/*.test.ts"],
          testTimeout: 600_000,
          hookTimeout: 300_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
