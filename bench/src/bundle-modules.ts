/**
 * Where the minimal page's bytes go: dorpc's entry of bundle-size.ts, bundled the same way, with
 * each module's share of the minified and of the min+gzip size.
 *
 * `node bench/scripts/run-ts.mjs src/bundle-modules.ts` (after `npm run build`). Prints two
 * Markdown tables: each module's share, largest gzip share first; and what a feature costs the
 * page, measured by bundling it with the module(s) implementing that feature replaced by empty
 * stubs (whatever only they used falls out too).
 *
 * How a share is measured: esbuild bundles the page with names minified but whitespace kept, so
 * each module's code still follows its `// path` comment; each module's code is then minified on
 * its own and appended, in bundle order, to what came before, and its gzip share is how much the
 * gzip (level 9) of the whole so far grew. A module thus pays for what earlier modules did not
 * already say (repeated names and messages compress against them). The shares add up to within
 * about 1 % of the real bundle's sizes, which are printed first.
 */
import { basename } from "node:path";
import { gzipSync } from "node:zlib";
import { build, type Plugin, transform } from "esbuild";
import ts from "typescript";
import { BUNDLE_ENTRIES, measureBundles, PAGE_BUILD } from "./bundle-size.js";
import { BENCH_DIR } from "./settings.js";

export interface ModuleShare {
  module: string;
  minifiedBytes: number;
  gzipBytes: number;
}

const gzip = (text: string) => gzipSync(Buffer.from(text), { level: 9 }).byteLength;

export async function moduleShares(source: string): Promise<{ minified: number; gzip: number; modules: ModuleShare[] }> {
  const common = {
    stdin: { contents: source, resolveDir: BENCH_DIR, loader: "js" as const, sourcefile: "page.js" },
    bundle: true,
    format: "esm" as const,
    platform: "browser" as const,
    target: "es2022",
    write: false,
    logLevel: "silent" as const,
  };
  const real = (await build({ ...common, minify: true })).outputFiles![0]!.text;
  const kept = (await build({ ...common, minifySyntax: true, minifyIdentifiers: true })).outputFiles![0]!.text;
  const parts: { module: string; lines: string[] }[] = [{ module: "(bundle glue)", lines: [] }];
  for (const line of kept.split("\n")) {
    const marker = /^\/\/ (.+\.[jt]s)$/.exec(line);
    if (marker) {
      const path = marker[1]!;
      parts.push({ module: path.endsWith("/page.js") ? "(the page itself)" : path.replace(/^.*\/(dist|src)\//, ""), lines: [] });
    } else parts.at(-1)!.lines.push(line);
  }
  let sofar = "";
  let before = 0;
  const modules: ModuleShare[] = [];
  for (const part of parts) {
    const code = (await transform(part.lines.join("\n"), { minifyWhitespace: true, loader: "js", format: "esm", target: "es2022" })).code;
    sofar += code;
    const now = gzip(sofar);
    modules.push({ module: part.module, minifiedBytes: code.length, gzipBytes: now - before });
    before = now;
  }
  modules.sort((a, b) => b.gzipBytes - a.gzipBytes);
  return { minified: Buffer.byteLength(real), gzip: gzip(real), modules };
}

/**
 * Features of the minimal page and the modules that implement them, as stubs exporting what the
 * rest imports (a build error here means an import changed: update the stub).
 */
const FEATURES: Record<string, Record<string, string>> = {
  "client-side schemas (the validate option)": {
    "client-schemas.js": "export function resolveClientSchemas() {} export function clientArgsCheck() {}",
  },
  "CONNECT_FAILED diagnosis": { "diagnose.js": "export async function diagnoseEndpoint() {}" },
  "serving the object's calls (callbacks, expose)": {
    "callee.js": "export class Callee { get label() { return ''; } receive() {} cancel() {} close() {} }",
  },
  "the record encoder (values JSON cannot carry, sent)": {
    "encoder.js":
      "export function writeRecords() { throw new Error(); } export class Substitute {} export function errorName(e) { return e.name; }",
  },
  "the record decoder and its validation (values JSON cannot carry, received)": {
    "decoder.js": "export function fromRecords() {} export function buildTable() {} export function bad() {}",
    "validate.js": "export function validateTable() {} export function bad() {}",
  },
};

/**
 * `code` with every message emptied: string literals of 16 or more characters and template
 * literals become `""`. Not a working page — a bound on what the messages weigh.
 */
export function withoutMessages(code: string): string {
  const file = ts.createSourceFile("page.js", code, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const cuts: [number, number][] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isTemplateExpression(node) ||
      ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && node.text.length >= 16)
    ) {
      cuts.push([node.getStart(file), node.end]);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  let out = code;
  for (const [start, end] of cuts.reverse()) out = `${out.slice(0, start)}""${out.slice(end)}`;
  return out;
}

/** min+gzip and minified bytes of `source` with `stubs` (file name → code) in place of those modules. */
async function withStubs(
  source: string,
  stubs: Record<string, string>,
  edit: (code: string) => string = (code) => code,
): Promise<{ minified: number; gzip: number }> {
  const stub: Plugin = {
    name: "stub",
    setup(b) {
      b.onLoad({ filter: /packages[\\/]rpc[\\/]dist[\\/].*\.js$/ }, (args) => {
        const code = stubs[basename(args.path)];
        return code === undefined ? undefined : { contents: code, loader: "js" };
      });
    },
  };
  const result = await build({
    stdin: { contents: source, resolveDir: BENCH_DIR, loader: "js" },
    ...PAGE_BUILD,
    plugins: [stub],
  });
  const code = edit(result.outputFiles![0]!.text);
  return { minified: Buffer.byteLength(code), gzip: gzip(code) };
}

const entry = BUNDLE_ENTRIES.find((e) => e.contender === "dorpc")!;
const { minified, gzip: gzipped, modules } = await moduleShares(entry.source);
const number = (n: number) => n.toLocaleString("en-US");
console.log(`Minimal page: ${number(minified)} B minified, ${number(gzipped)} B min+gzip.\n`);
console.log("| module | minified | min+gzip share |");
console.log("| ------ | -------: | -------------: |");
for (const m of modules) console.log(`| ${m.module} | ${number(m.minifiedBytes)} | ${number(m.gzipBytes)} |`);
const total = modules.reduce((sum, m) => ({ min: sum.min + m.minifiedBytes, gz: sum.gz + m.gzipBytes }), { min: 0, gz: 0 });
console.log(`| (sum of shares) | ${number(total.min)} | ${number(total.gz)} |`);

console.log("\n| without | minified | min+gzip |");
console.log("| ------- | -------: | -------: |");
const all: Record<string, string> = {};
for (const [feature, stubs] of [...Object.entries(FEATURES), ["all of the above", all] as const]) {
  if (stubs !== all) Object.assign(all, stubs);
  const left = await withStubs(entry.source, stubs);
  console.log(`| ${feature} | −${number(minified - left.minified)} | −${number(gzipped - left.gzip)} |`);
}
const emptied = await withStubs(entry.source, all, withoutMessages);
console.log(
  `| all of the above, and every message emptied (strings of 16+ characters, templates) | −${number(minified - emptied.minified)} | −${number(gzipped - emptied.gzip)} |`,
);

// What is left once every optional feature and every message is gone, against the bundle target.
const capnweb = (await measureBundles(BUNDLE_ENTRIES.filter((e) => e.contender === "capnweb"))).sizes[0]!;
if (capnweb.error) console.log(`\nCap'n Web's page could not be built: ${capnweb.error}`);
else {
  const ratio = (bytes: number) => (bytes / capnweb.gzipBytes).toFixed(2);
  console.log(
    `\nLeft without all five features and every message: ${number(emptied.gzip)} B min+gzip, ${ratio(emptied.gzip)} × Cap'n Web's page (${number(capnweb.gzipBytes)} B); the target (0.8 ×) is ${number(Math.floor(capnweb.gzipBytes * 0.8))} B. The whole page: ${ratio(gzipped)} ×.`,
  );
}
