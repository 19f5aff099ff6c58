#!/usr/bin/env node
/**
 * `node scripts/run-ts.mjs <entry.ts> [args…]`: bundles one TypeScript entry of the bench with
 * esbuild into a git-ignored module under results/scratch/ and runs it in this process, with
 * `args` as its argv. Packages stay external, so the built @dorpc/rpc is what runs.
 *
 * Used by `npm run micro` (micro/codec.ts) and `npm run profile` (profile/profile.ts).
 */
import { build } from "esbuild";
import { mkdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const [entry, ...args] = process.argv.slice(2);
if (!entry) {
  process.stderr.write("usage: node scripts/run-ts.mjs <entry.ts> [args…]\n");
  process.exit(2);
}
const outfile = join(benchDir, "results", "scratch", `${basename(entry, ".ts")}.mjs`);
mkdirSync(dirname(outfile), { recursive: true });
await build({
  entryPoints: [resolve(benchDir, entry)],
  bundle: true,
  platform: "node",
  format: "esm",
  packages: "external",
  outfile,
  logLevel: "warning",
});
process.argv = [process.argv[0], outfile, ...args];
await import(pathToFileURL(outfile).href);
