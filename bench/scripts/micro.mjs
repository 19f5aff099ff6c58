#!/usr/bin/env node
/**
 * `npm run micro --workspace=bench`: bundles micro/codec.ts (TypeScript) with esbuild into a
 * temporary module and runs it. Packages stay external, so it measures the built @dorpc/rpc.
 */
import { build } from "esbuild";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const outfile = join(benchDir, "results", "scratch", "micro.mjs"); // git-ignored
mkdirSync(dirname(outfile), { recursive: true });
await build({
  entryPoints: [join(benchDir, "micro", "codec.ts")],
  bundle: true,
  platform: "node",
  format: "esm",
  packages: "external",
  outfile,
  logLevel: "warning",
});
await import(pathToFileURL(outfile).href);
