/**
 * Bundle size of a minimal client page (issue 13): a browser entry that imports the library's
 * client, connects and makes one call — nothing else. Each entry is bundled with esbuild for the
 * browser (ESM, minified, tree-shaken as a page's bundler would) and gzipped at level 9; the
 * bytes are measured, not looked up. dorpc's entry imports the built @dorpc/rpc of this checkout.
 */
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { BENCH_DIR } from "./settings.js";

export interface BundleEntry {
  contender: string;
  /** The page's whole script. */
  source: string;
}

/** One call, result to the page: the smallest useful client of each library. */
export const BUNDLE_ENTRIES: readonly BundleEntry[] = [
  {
    contender: "dorpc",
    source: `import { createRpcClient } from "@dorpc/rpc";
const counter = createRpcClient("COUNTER", "demo", { baseUrl: location.origin });
counter.getValue().then((n) => { document.body.textContent = String(n); });`,
  },
  {
    contender: "capnweb",
    source: `import { newWebSocketRpcSession } from "capnweb";
const counter = newWebSocketRpcSession(location.origin.replace(/^http/, "ws") + "/capnweb/demo");
counter.getValue().then((n) => { document.body.textContent = String(n); });`,
  },
  {
    contender: "agents",
    source: `import { AgentClient } from "agents/client";
const counter = new AgentClient({ agent: "AgentsCounter", name: "demo", host: location.host });
counter.call("getValue").then((n) => { document.body.textContent = String(n); });`,
  },
];

export interface BundleSize {
  contender: string;
  minifiedBytes: number;
  gzipBytes: number;
  /** Why it could not be built, when it could not. */
  error?: string;
}

export interface BundleRun {
  esbuild: string;
  sizes: BundleSize[];
}

/** How a client page is bundled: for the browser, minified, one ESM chunk, nothing written. */
export const PAGE_BUILD = {
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  write: false,
  logLevel: "silent",
} as const;

export async function measureBundles(entries: readonly BundleEntry[] = BUNDLE_ENTRIES): Promise<BundleRun> {
  const { version } = await import("esbuild");
  const sizes: BundleSize[] = [];
  for (const entry of entries) {
    try {
      const result = await build({
        stdin: { contents: entry.source, resolveDir: BENCH_DIR, loader: "js", sourcefile: `${entry.contender}-page.js` },
        ...PAGE_BUILD,
      });
      const code = result.outputFiles[0]!.contents;
      sizes.push({ contender: entry.contender, minifiedBytes: code.byteLength, gzipBytes: gzipSync(code, { level: 9 }).byteLength });
    } catch (error) {
      sizes.push({
        contender: entry.contender,
        minifiedBytes: 0,
        gzipBytes: 0,
        error: String((error as Error)?.message ?? error).slice(0, 300),
      });
    }
  }
  return { esbuild: version, sizes };
}
