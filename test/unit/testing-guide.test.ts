/**
 * docs/testing.md shows the files of examples/testing-counter, which npm test runs: each one must
 * appear in the guide as a code block, byte for byte, so the guide's "test to paste" is the one
 * that is known to pass.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const guide = readFileSync(join(ROOT, "docs/testing.md"), "utf8");
const blocks = [...guide.matchAll(/^```[a-z]*\n([\s\S]*?)\n```$/gm)].map((match) => match[1]);

describe("docs/testing.md", () => {
  for (const file of [
    "wrangler.toml",
    "src/index.ts",
    "vitest.config.ts",
    "tsconfig.json",
    "worker-configuration.d.ts",
    "test/counter.test.ts",
  ]) {
    it(`shows examples/testing-counter/${file} as it is`, () => {
      const content = readFileSync(join(ROOT, "examples/testing-counter", file), "utf8").replace(/\n$/, "");
      expect(blocks).toContain(content);
    });
  }
});
