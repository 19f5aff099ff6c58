/**
 * `@dorpc/rpc` must stay browser-safe: bundling its entry for the browser needs no
 * `cloudflare:*` module and no Node built-in. (The server entry is allowed both.)
 */
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const entry = fileURLToPath(new URL("../../packages/rpc/dist/index.js", import.meta.url));

describe("browser entry", () => {
  it("bundles for the browser with no cloudflare:* or node:* import", async () => {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((path) => path.includes("cloudflare:") || path.startsWith("node:"))).toBe(false);
    const code = result.outputFiles[0]!.text;
    expect(code).not.toMatch(/from\s*["'](cloudflare|node):/);
    expect(code).toContain("createRpcClient");
  });

  it("refuses to bundle the server entry for the browser (it needs cloudflare:workers)", async () => {
    const server = fileURLToPath(new URL("../../packages/rpc/dist/server.js", import.meta.url));
    await expect(
      build({ entryPoints: [server], bundle: true, platform: "browser", format: "esm", write: false, logLevel: "silent" }),
    ).rejects.toThrow(/cloudflare:workers/);
  });
});
