/**
 * Every relative link in README.md, docs/*.md, packages/*\/README.md and examples/*\/README.md
 * resolves: the file or folder it names exists, and an anchor (`](#anchor)`,
 * `](file.md#anchor)`) names a heading of its Markdown target, by GitHub's slug rules: a link
 * in a heading counts as its text, lower case, punctuation other than `-` and `_` dropped,
 * spaces to `-`, duplicates suffixed -1, -2…. Links inside code (fenced blocks, `inline`) are
 * not links; absolute URLs (`https:`, `mailto:`) are not checked.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const files = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  ...["packages", "examples"].flatMap((dir) =>
    readdirSync(join(root, dir))
      .map((d) => `${dir}/${d}/README.md`)
      .filter((f) => existsSync(join(root, f))),
  ),
];

function slug(text: string): string {
  return text
    .trim()
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, "")
    .replace(/ /g, "-");
}

/** The lines of `file` outside fenced code blocks, with their line numbers. */
function prose(file: string): [line: string, number: number][] {
  const out: [string, number][] = [];
  let fenced = false;
  readFileSync(join(root, file), "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (/^\s*```/.test(line)) fenced = !fenced;
      else if (!fenced) out.push([line, i + 1]);
    });
  return out;
}

const headingCache = new Map<string, Set<string>>();
function headings(file: string): Set<string> {
  let out = headingCache.get(file);
  if (out) return out;
  out = new Set<string>();
  const count = new Map<string, number>();
  for (const [line] of prose(file)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = count.get(base);
    count.set(base, (n ?? -1) + 1);
    out.add(n === undefined ? base : `${base}-${n + 1}`);
  }
  headingCache.set(file, out);
  return out;
}

interface Link {
  where: string;
  href: string;
  /** The target, relative to the repository root. */
  path: string;
  anchor: string | undefined;
}

/** Every relative link of every file, resolved against the file's folder. */
function relativeLinks(): Link[] {
  const links: Link[] = [];
  for (const file of files) {
    for (const [line, number] of prose(file)) {
      for (const m of line.replace(/`[^`]*`/g, "``").matchAll(/\]\(([^)\s]+)\)/g)) {
        const href = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue;
        const [target = "", anchor] = href.split("#");
        const path = normalize(target === "" ? file : join(dirname(file), decodeURIComponent(target)));
        links.push({ where: `${file}:${number}`, href, path, anchor });
      }
    }
  }
  return links;
}

describe("relative links in the documentation resolve", () => {
  const links = relativeLinks();

  it("finds links to check in every kind of file", () => {
    for (const prefix of ["README.md", "docs/", "packages/", "examples/"]) {
      expect(
        links.some((link) => link.where.startsWith(prefix)),
        prefix,
      ).toBe(true);
    }
  });

  it("every relative link, with or without an anchor, names a file or folder that exists", () => {
    const broken = links.filter((link) => !existsSync(join(root, link.path))).map((link) => `${link.where} → ${link.href}`);
    expect(broken).toEqual([]);
  });

  it("every anchor names a heading of its Markdown target", () => {
    const broken: string[] = [];
    for (const link of links) {
      if (link.anchor === undefined || !existsSync(join(root, link.path))) continue;
      if (statSync(join(root, link.path)).isDirectory() || !link.path.endsWith(".md")) {
        broken.push(`${link.where} → ${link.href} (an anchor on a target that is not Markdown)`);
      } else if (!headings(link.path).has(link.anchor)) {
        broken.push(`${link.where} → ${link.href}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
