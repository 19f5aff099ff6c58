/**
 * Builds the browser tier's pages into test/browser/dist, the Worker's `[assets]` directory:
 * the HTML files as they are and each page script bundled by esbuild with the packages' built
 * `dist/` (what a user's bundler would see). Runs once before the tier (global-setup.ts).
 */
import { build } from "esbuild";
import { copyFile, mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT } from "../../support/wrangler-dev.js";

const SOURCE = join(REPO_ROOT, "test/browser/page");
export const ASSETS = join(REPO_ROOT, "test/browser/dist");

export async function buildPages(): Promise<void> {
  await rm(ASSETS, { recursive: true, force: true });
  await mkdir(ASSETS, { recursive: true });
  for (const file of await readdir(SOURCE)) {
    if (file.endsWith(".html")) await copyFile(join(SOURCE, file), join(ASSETS, file));
  }
  await build({
    entryPoints: {
      client: join(SOURCE, "client.ts"),
      react: join(SOURCE, "react-app.tsx"),
      subscription: join(SOURCE, "subscription-app.tsx"),
    },
    outdir: ASSETS,
    bundle: true,
    format: "esm",
    platform: "browser",
    // ES2022 lowers `using` / `await using` (the pages use them), as most app builds still do.
    target: "es2022",
    jsx: "automatic",
    // React's development build: StrictMode double-mounts only there, and the tests rely on it.
    define: { "process.env.NODE_ENV": '"development"' },
    sourcemap: "inline",
    logLevel: "warning",
  });
}
