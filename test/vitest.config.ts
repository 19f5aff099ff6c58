import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// The tiers, one command (`npm test` at the root runs them all):
//  - unit:        Node, fast: codec, proxy, dispatcher over an in-memory transport, routing,
//                 and the Node-side security and reliability cases (fuzzing, fault timing).
//  - workers:     workerd through the Workers Vitest plugin, with its own worker and DOs.
//  - testing:     @dorpc/testing's own tests (workerd), with their own worker and DOs.
//  - security:    hostile inputs against a real DO in workerd (storage and env checked).
//  - reliability: real faults in workerd (eviction, abort, resets) — *.workers.test.ts.
//  - e2e:         Node clients against a real `wrangler dev` that the tests start, stop and
//                 restart themselves (end to end, and the fault/load ledger).
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
          name: "e2e",
          environment: "node",
          include: ["e2e/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // One wrangler dev at a time: these machines have two cores.
          fileParallelism: false,
        },
      },
    ],
  },
});
