/**
 * The `wrangler.toml` a Node-20 user pastes from README.md's quick start and
 * docs/getting-started.md must start under the wrangler npm installs there: wrangler 4.86 (later
 * versions need Node 22), whose runtime refuses a `compatibility_date` after 2026-05-03, so
 * `wrangler dev` would not start. Both pages say so; this keeps their dates within it.
 * docs/testing.md's date may be later: its setup needs Node 22.12 or later (the Workers Vitest
 * integration), which the page states.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/** The newest compatibility date the runtime of wrangler 4.86 accepts. */
const NODE_20_LATEST_DATE = "2026-05-03";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const read = (file: string) => readFileSync(join(root, file), "utf8");

/** The `compatibility_date` values of the ```toml blocks of `file`, with their line numbers. */
function tomlDates(file: string): { line: number; date: string }[] {
  const found: { line: number; date: string }[] = [];
  let inToml = false;
  read(file)
    .split("\n")
    .forEach((line, i) => {
      if (/^\s*```/.test(line)) inToml = !inToml && /^\s*```toml\s*$/.test(line);
      else if (inToml) {
        const m = /^\s*compatibility_date\s*=\s*"([^"]*)"/.exec(line);
        if (m) found.push({ line: i + 1, date: m[1]! });
      }
    });
  return found;
}

describe("compatibility dates of the wrangler.toml snippets", () => {
  for (const file of ["README.md", "docs/getting-started.md"]) {
    it(`${file}: every date is a date no later than ${NODE_20_LATEST_DATE}, what wrangler on Node 20 accepts`, () => {
      const dates = tomlDates(file);
      expect(dates.length, "no wrangler.toml with a compatibility_date found").toBeGreaterThan(0);
      for (const { line, date } of dates) {
        expect(date, `${file}:${line}`).toMatch(/^\d{4}-\d{2}-\d{2}$/);
        expect(date <= NODE_20_LATEST_DATE, `${file}:${line} has ${date}`).toBe(true);
      }
    });
  }

  it(`README.md and docs/getting-started.md give ${NODE_20_LATEST_DATE} as the latest date wrangler 4.86 accepts`, () => {
    for (const file of ["README.md", "docs/getting-started.md"]) {
      const stated = /wrangler 4\.86 [^.]*?(\d{4}-\d{2}-\d{2})/.exec(read(file).replace(/\s+/g, " "));
      expect(stated?.[1], file).toBe(NODE_20_LATEST_DATE);
    }
  });

  it("docs/testing.md, whose date is not held to that limit, says its setup needs Node 22.12 or later", () => {
    expect(tomlDates("docs/testing.md").length).toBeGreaterThan(0);
    expect(read("docs/testing.md").replace(/\s+/g, " ")).toMatch(/needs? \*\*Node 22\.12 or later\*\*/);
  });
});
