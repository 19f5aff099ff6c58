/**
 * wrangler bundles a Worker with esbuild's `keepNames` on by default: every function expression
 * that has a name (`const save = () => …`, `{ validate: () => … }`) is passed through a helper
 * that redefines its `name` property when it is made — about half a microsecond each in V8, per
 * call when such a function is made per call. dorpc's per-call paths, on both ends, must make no
 * named function once warm. This bundles both ends with keepNames, counts the helper's calls and
 * names what was made.
 */
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const entry = fileURLToPath(new URL("../support/keep-names-entry.ts", import.meta.url));
/** esbuild's helper, as it emits it (the parameter name varies). */
const HELPER = /var __name = \((\w+), value\) => __defProp\(\1, "name", \{ value, configurable: true \}\);/;

type Entry = typeof import("../support/keep-names-entry.js");
let bundled: Entry;
let dir: string;
const made = new Map<string, number>();

beforeAll(async () => {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "es2022",
    keepNames: true,
    write: false,
    logLevel: "silent",
  });
  const code = result.outputFiles[0]!.text;
  expect(code, "esbuild's __name helper (its form changed?)").toMatch(HELPER);
  const counted = code.replace(
    HELPER,
    'var __name = (target, value) => { globalThis.__dorpcNamed(value); return __defProp(target, "name", { value, configurable: true }); };',
  );
  (globalThis as { __dorpcNamed?: (name: string) => void }).__dorpcNamed = (name) => made.set(name, (made.get(name) ?? 0) + 1);
  dir = await mkdtemp(join(tmpdir(), "dorpc-keep-names-"));
  const file = join(dir, "bundle.mjs");
  await writeFile(file, counted);
  bundled = (await import(file)) as Entry;
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("per-call paths make no named function (bundled with keepNames, as wrangler does)", () => {
  const shapes = [
    "getValue()",
    "increment()",
    'echo("x")',
    "echo(object)",
    "echo(Map, Date, BigInt)",
    "echo(Uint8Array)",
    "an async method",
    "a pipelined chain of 3",
    "a stub's method",
  ] as const;
  for (const record of [false, true]) {
    it.each(shapes)(`%s, ${record ? "with" : "without"} a delivery record`, async (shape) => {
      await bundled.run(shape, record, 20, 50, () => made.clear());
      expect(Object.fromEntries(made)).toEqual({});
    });
  }

  it("counts a named function the object's own method makes on every call (the control: the count can fail)", async () => {
    await bundled.run("a method that makes a named function", false, 20, 50, () => made.clear());
    expect(Object.fromEntries(made)).toEqual({ double: 50 });
  });
});
