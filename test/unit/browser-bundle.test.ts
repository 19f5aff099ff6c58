/**
 * `@dorpc/rpc` must stay browser-safe: bundling its entry for the browser needs no
 * `cloudflare:*` module and no Node built-in. (The server entry is allowed both.)
 *
 * And a page pays only for what it uses: the smallest useful page (bench/src/bundle-size.ts)
 * bundles exactly the modules listed below, so an optional feature that leaks into it (a static
 * import where an install-on-use was meant) fails here, by name, instead of as a few hundred
 * bytes in the next bundle-size run. Composition, not byte counts: docs/performance.md has the
 * sizes ("Bundle size").
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

/** The bench's minimal page: create a client, make one call, show the result. */
const MINIMAL_PAGE = `import { createRpcClient } from "@dorpc/rpc";
const counter = createRpcClient("COUNTER", "demo", { baseUrl: location.origin });
counter.getValue().then((n) => { document.body.textContent = String(n); });`;

/** The modules of @dorpc/rpc that contribute code to a page, by file name. */
async function pageModules(source: string): Promise<string[]> {
  const result = await build({
    stdin: { contents: source, resolveDir: fileURLToPath(new URL(".", import.meta.url)), loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const [output] = Object.values(result.metafile.outputs);
  return Object.entries(output!.inputs)
    .filter(([path, input]) => input.bytesInOutput > 0 && path.includes("packages/rpc/dist/"))
    .map(([path]) => path.slice(path.lastIndexOf("/") + 1))
    .sort();
}

describe("what the smallest page bundles", () => {
  it("is exactly the client core: calls, session, WebSocket transport, codec, callee for callbacks, client-side schemas", async () => {
    // A module added here grows every page: add it only if the minimal page really runs it.
    expect(await pageModules(MINIMAL_PAGE)).toEqual([
      "access.js", // rule 1 and rules 2–3 for calls the object makes on the client (callbacks, expose)
      "blobs.js",
      "borrowed-stubs.js", // when the stubs a call received go back (callbacks the client serves)
      "brands.js",
      "byte-records.js",
      "bytes.js",
      "call-options.js", // per-call timeout, signal, idempotent (withCallOptions)
      "call-sending.js",
      "call-settling.js",
      "call-timeouts.js",
      "call-writer.js",
      "callee-config.js",
      "callee-references.js",
      "callee-replies.js",
      "callee.js", // the client serves callbacks it passes and what it exposes
      "caller.js",
      "chain.js",
      "client-controls.js", // rpcConnection, withCallOptions, rpcDispose, subscribe, getRpcSession
      "client-schemas.js", // the validate option is checked when the client is made
      "client-url.js", // the connect URL, checked as the router reads it
      "client.js",
      "close-reasons.js", // DISCONNECTED says what the close code means
      "codec.js",
      "connection.js",
      "decoder.js",
      "diagnose.js", // CONNECT_FAILED says why the WebSocket did not open
      "encode-context.js",
      "encoder.js",
      "envelopes.js",
      "errors.js",
      "frame.js",
      "id-map.js", // the calls waiting for a reply, by id
      "incoming-call.js",
      "json-path.js",
      "limits.js",
      "option-keys.js", // a misspelt option is refused, not ignored
      "outbox.js",
      "outgoing-call.js",
      "oversized.js", // a frame over maxMessageBytes is refused call by call, without closing
      "paths.js",
      "pipelined-copy.js", // a pipelined argument to a client's callback is a round trip's copy
      "proxy.js",
      "reconnecting-link.js",
      "record-walk.js",
      "records.js",
      "references.js",
      "refusals.js",
      "replies.js",
      "reply-reader.js",
      "rpc-method.js", // methodSpec only: the checks come with rpcMethod (method-checks.js)
      "rpc-target.js",
      "schema-check.js",
      "session-closes.js",
      "session.js",
      "slot-readers.js",
      "standard-schema.js",
      "stub-release.js",
      "timers.js",
      "validate.js",
      "websocket-transport.js",
    ]);
  });

  it.each([
    ["subscriptions.js", "topic subscriptions: installed by the first subscribe()"],
    ["http-transport.js", "HTTP batches: only with transport: httpTransport()"],
    ["http-frames.js", "HTTP batch bodies"],
    ["method-checks.js", "running rpcMethod schemas: reached through the spec rpcMethod makes"],
    ["server-callee.js", "the object's delivery record, sequential ordering, whenIdle"],
    ["current-call.js", "rpcCaller()'s running call"],
    ["access-options.js", "the server's access option (allow, unsafeTrustedCaller)"],
    ["delivery.js", "the object's delivery record"],
    ["dispatcher.js", "the Durable Object side"],
    ["value.js", "standalone encode/decode"],
  ])("leaves out %s (%s)", async (module) => {
    expect(await pageModules(MINIMAL_PAGE)).not.toContain(module);
  });

  it("brings subscriptions with subscribe() and HTTP batches with httpTransport() (the checks above are not vacuous)", async () => {
    const subscribing = await pageModules(
      `import { createRpcClient, subscribe } from "@dorpc/rpc";
      subscribe(createRpcClient("ROOM", "a"), "chat", (event) => console.log(event));`,
    );
    expect(subscribing).toContain("subscriptions.js");
    expect(subscribing).not.toContain("http-transport.js");
    const overHttp = await pageModules(
      `import { createRpcClient, httpTransport } from "@dorpc/rpc";
      createRpcClient("COUNTER", "a", { transport: httpTransport() }).getValue();`,
    );
    expect(overHttp).toContain("http-transport.js");
    expect(overHttp).not.toContain("subscriptions.js");
    const declaring = await pageModules(`import { rpcMethod } from "@dorpc/rpc"; export const m = rpcMethod({ readOnly: true }, () => 1);`);
    expect(declaring).toContain("method-checks.js");
  });
});
