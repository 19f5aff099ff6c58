/**
 * Every intra-doc link `](#anchor)` and `](file.md#anchor)` in docs/*.md and README.md resolves
 * to a heading (GitHub's slug rules: lower case, punctuation other than `-` and `_` dropped,
 * spaces to `-`, duplicates suffixed -1, -2…).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const files = [
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  "README.md",
];

function slug(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, "")
    .replace(/ /g, "-");
}

function headings(file: string): Set<string> {
  const out = new Set<string>();
  const count = new Map<string, number>();
  let fenced = false;
  for (const line of readFileSync(join(root, file), "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) continue;
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = count.get(base);
    count.set(base, (n ?? -1) + 1);
    out.add(n === undefined ? base : `${base}-${n + 1}`);
  }
  return out;
}

describe("intra-doc links resolve", () => {
  it("every ](#…) and ](file.md#…) link names an existing heading", () => {
    const all = new Map(files.map((f) => [normalize(f), headings(f)]));
    const broken: string[] = [];
    for (const file of files) {
      readFileSync(join(root, file), "utf8")
        .split("\n")
        .forEach((line, i) => {
          for (const m of line.matchAll(/\]\(([^)\s#]*)#([^)\s]+)\)/g)) {
            const target = m[1]!;
            if (/^[a-z]+:/i.test(target)) continue;
            const path = normalize(target === "" ? file : join(dirname(file), target));
            const known = all.get(path);
            if (!known) broken.push(`${file}:${i + 1} → ${target} (no such file)`);
            else if (!known.has(m[2]!)) broken.push(`${file}:${i + 1} → ${target}#${m[2]}`);
          }
        });
    }
    expect(broken).toEqual([]);
  });
});
