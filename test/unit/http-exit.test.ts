/**
 * A Node program using an httpTransport() client exits once its calls have settled, whatever
 * they went through: nothing of the client (a reconnect timer, a request of a transport that
 * ended, a call's timer) keeps the process alive, disposed or not. Each case runs the built
 * package in a child process (node-peer.ts runScript) with a stub fetch, and one with Node's own
 * fetch against a local server; a child still alive at the deadline is killed and fails its test.
 */
import { createServer, type ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { type Run, runScript } from "../support/node-peer.js";

/** Generous: these programs end in well under a second. */
const DEADLINE = 10_000;

const HEADER = `
import { createRpcClient, httpTransport, rpcConnection, withCallOptions } from "@DIST@";
/** An answer to every call of the request \`init\` carries, each with \`value\`. */
const reply = (init, value) => {
  const text = typeof init.body === "string" ? init.body : new TextDecoder().decode(init.body);
  const ids = JSON.parse(text.slice(2)).map((call) => call[0]);
  return new Response("\\u001eR" + JSON.stringify(ids.map((id) => [id, 0, value])), { headers: { "Content-Type": "application/x-dorpc" } });
};
/** A fetch that never answers but rejects when its signal aborts; \`inFlight\` resolves when it is called. */
let called;
const inFlight = new Promise((resolve) => (called = resolve));
const hanging = (u, init) => { called(); return new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(init.signal.reason))); };
const reaches = (c, state) => new Promise((ok) => { const off = rpcConnection(c).onStateChange((s) => { if (s === state) { off(); ok(); } }); });
const client = (fetch, extra = {}) => createRpcClient("A", "b", { baseUrl: "http://x.test", transport: httpTransport({ fetch }), ...extra });
const failure = (e) => console.log("rejected", typeof e?.code === "string" ? e.code : e?.name, e?.message);
`;

function run(body: string, port = 0): Promise<Run> {
  return runScript(`${HEADER}\n${body}\nconsole.log("END");\n`, port, DEADLINE);
}

/** The child ran to the end of its script and exited by itself with code 0. */
function expectExited(r: Run): void {
  expect({ killed: r.killed, code: r.code, end: r.stdout.includes("END") }, r.stderr).toEqual({ killed: false, code: 0, end: true });
}

describe("a Node process with an httpTransport() client exits", () => {
  it.each([
    ["disposed", "c[Symbol.dispose]();"],
    ["not disposed", ""],
  ])(
    "calls answered, client %s",
    async (_label, end) => {
      const r = await run(`
const c = client(async (u, init) => reply(init, 1));
console.log("answers", await c.a(), await c.b());
${end}`);
      expectExited(r);
      expect(r.stdout).toContain("answers 1 1");
    },
    20_000,
  );

  it("a 503 (a lost answer), then the resend answered; not disposed", async () => {
    const r = await run(`
let n = 0;
const c = client(async (u, init) => (++n === 1 ? new Response("busy", { status: 503 }) : reply(init, 7)), { reconnect: { initialDelay: 10, maxDelay: 10, jitter: 0 } });
console.log("answer", await c.a());`);
    expectExited(r);
    expect(r.stdout).toContain("answer 7");
  }, 20_000);

  it("503 on every request, the call times out; not disposed: the reconnect loop does not keep it alive", async () => {
    const r = await run(`
const c = client(async () => new Response("busy", { status: 503 }), { timeout: 300, reconnect: { initialDelay: 50, maxDelay: 50, jitter: 0 } });
await c.a().catch(failure);`);
    expectExited(r);
    expect(r.stdout).toContain("rejected TIMEOUT");
  }, 20_000);

  it("503 on every request, disposed while waiting out a long backoff: the call is DISPOSED", async () => {
    const r = await run(`
const c = client(async () => new Response("busy", { status: 503 }), { timeout: 0, reconnect: { initialDelay: 60000, maxDelay: 60000, jitter: 0 } });
const reconnecting = reaches(c, "reconnecting");
const call = c.a().catch(failure);
await reconnecting;
c[Symbol.dispose]();
await call;`);
    expectExited(r);
    expect(r.stdout).toContain("rejected DISPOSED");
  }, 20_000);

  it("a request holding a handle until aborted, its call timed out, then disposed", async () => {
    const r = await run(`
const fetch = (u, init) => new Promise((_, reject) => { const handle = setTimeout(() => {}, 600000); init.signal.addEventListener("abort", () => { clearTimeout(handle); reject(init.signal.reason); }); });
const c = client(fetch, { timeout: 200 });
await c.a().catch(failure);
c[Symbol.dispose]();`);
    expectExited(r);
    expect(r.stdout).toContain("rejected TIMEOUT");
  }, 20_000);

  it("disposed while a request is in flight: the call is DISPOSED", async () => {
    const r = await run(`
const c = client(hanging, { timeout: 0 });
const call = c.a().catch(failure);
await inFlight;
c[Symbol.dispose]();
await call;`);
    expectExited(r);
    expect(r.stdout).toContain("rejected DISPOSED");
  }, 20_000);

  it("a call's signal aborted while its request is in flight (the fetch never answers, ignoring its signal): rejected with the reason", async () => {
    const r = await run(`
const c = client((u, init) => { called(); return new Promise(() => {}); }, { timeout: 0 });
const controller = new AbortController();
const call = withCallOptions(c.a(), { signal: controller.signal }).catch(failure);
await inFlight;
controller.abort();
await call;`);
    expectExited(r);
    expect(r.stdout).toContain("rejected AbortError");
  }, 20_000);
});

describe("with Node's own fetch against a local server", () => {
  it("a request that hangs when another gets a 503: the resend answers both calls, and after dispose the process exits", async () => {
    // The hanging request belongs to the transport the 503 ended: it is aborted, or its open
    // socket would keep the process alive.
    let requests = 0;
    const server = createServer((request, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const n = ++requests;
        if (n === 1) return; // never answered
        if (n === 2) {
          response.writeHead(503).end("busy");
          return;
        }
        const ids = (JSON.parse(Buffer.concat(chunks).toString("utf8").slice(2)) as unknown[][]).map((call) => call[0] as number);
        response.writeHead(200, { "Content-Type": "application/x-dorpc" }).end(`\u001eR${JSON.stringify(ids.map((id) => [id, 0, id]))}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const r = await run(
        `
const c = createRpcClient("A", "b", { baseUrl: "http://127.0.0.1:" + process.env.PORT, reconnect: { initialDelay: 5, maxDelay: 5, jitter: 0 }, transport: httpTransport() });
const a = c.a();
await new Promise((resolve) => setTimeout(resolve, 20)); // two turns, two requests (either may hang)
console.log("answers", await c.b(), await a);
c[Symbol.dispose]();`,
        (server.address() as { port: number }).port,
      );
      expectExited(r);
      expect(r.stdout).toContain("answers 2 1");
      expect(requests).toBe(3);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }, 20_000);
});
