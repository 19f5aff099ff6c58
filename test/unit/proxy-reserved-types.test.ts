/**
 * The client proxies answer `toJSON` themselves (undefined: `JSON.stringify` leaves them out), so
 * the types leave it out too: `ReservedMember` lists it, and `client.toJSON()` does not compile.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

describe("toJSON is dorpc's own on the client, in the types too", () => {
  it("so RpcClient<T> and RpcStub<T> leave out toJSON (api.md:801 ReservedMember)", () => {
    const file = join(root, "test", "unit", "__probe_docs_types_snippet.ts");
    const source = `
import type { RpcClient, RpcStub } from "../../packages/rpc/src/index.js";
class Doc { toJSON(): string { return "doc"; } }
export const clientLeavesOut: "toJSON" extends keyof RpcClient<Doc> ? "present" : "absent" = "absent";
export const stubLeavesOut: "toJSON" extends keyof RpcStub<Doc> ? "present" : "absent" = "absent";
`;
    const options: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2023,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ["lib.es2023.d.ts", "lib.esnext.disposable.d.ts", "lib.dom.d.ts"],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: [],
    };
    const host = ts.createCompilerHost(options);
    const read = host.readFile.bind(host);
    const exists = host.fileExists.bind(host);
    host.readFile = (f) => (f === file ? source : read(f));
    host.fileExists = (f) => f === file || exists(f);
    const getSource = host.getSourceFile.bind(host);
    host.getSourceFile = (f, v, ...rest) => (f === file ? ts.createSourceFile(f, source, v) : getSource(f, v, ...rest));
    const program = ts.createProgram([file], options, host);
    const errors = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file?.fileName === file)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(errors).toEqual([]);
  }, 60_000);
});
