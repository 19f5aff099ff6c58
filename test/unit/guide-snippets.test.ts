/**
 * docs/getting-started.md shows code that the workers tier runs: the guide's objects are files of
 * test/workers/guide/ (each one a code block of the guide, byte for byte), and its client snippets
 * are the regions between `// guide:start` and `// guide:end` in that folder's tests (each one a
 * code block of the guide, or a run of its lines). So a snippet cannot change without the test
 * that runs it changing too.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const GUIDE_DIR = join(ROOT, "test/workers/guide");
const guide = readFileSync(join(ROOT, "docs/getting-started.md"), "utf8");
const blocks = [...guide.matchAll(/^```ts\n([\s\S]*?)\n```$/gm)].map((match) => match[1]!);

/** The regions of `source`, each without the indentation its lines share. */
function regions(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/^[ \t]*\/\/ guide:start\n([\s\S]*?)\n[ \t]*\/\/ guide:end$/gm)) {
    const lines = match[1]!.split("\n");
    const indent = Math.min(...lines.filter((line) => line.trim() !== "").map((line) => /^ */.exec(line)![0].length));
    found.push(lines.map((line) => line.slice(indent)).join("\n"));
  }
  return found;
}

/** True when `region` is a run of whole lines of `block`. */
function within(block: string, region: string): boolean {
  return `\n${block}\n`.includes(`\n${region}\n`);
}

describe("docs/getting-started.md", () => {
  for (const file of ["directory.ts", "table.ts", "ledger.ts"]) {
    it(`shows test/workers/guide/${file} as it is`, () => {
      const content = readFileSync(join(GUIDE_DIR, file), "utf8").replace(/\n$/, "");
      expect(blocks).toContain(content);
    });
  }

  const sources = readdirSync(GUIDE_DIR).filter((file) => file.endsWith(".ts"));
  const all = sources.flatMap((file) => regions(readFileSync(join(GUIDE_DIR, file), "utf8")).map((region) => ({ file, region })));

  it("has guide regions to check", () => {
    expect(all.length).toBeGreaterThanOrEqual(7);
  });

  for (const [i, { file, region }] of all.entries()) {
    it(`shows region ${i + 1} of test/workers/guide/${file} (${JSON.stringify(region.split("\n")[0]!.slice(0, 60))}…)`, () => {
      expect(
        blocks.some((block) => within(block, region)),
        `not in the guide:\n${region}`,
      ).toBe(true);
    });
  }
});
