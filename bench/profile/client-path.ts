/**
 * `npm run client-path --workspace=bench -- [--calls N] [--reps N]`: where a live call's time goes
 * on the client, without workerd. A peer in a child process (the `ws` package's server, pinned to
 * the last CPU when there are two or more, this process to the first) answers dorpc's call frames
 * and the floor's text frames at once; sequential `getValue()` calls of dorpc's client and of
 * hand-written clients, interleaved block by block, are timed at three points of each call:
 *
 *  - before the send: from the call to the client's `WebSocket.send`;
 *  - the round trip: from the send to the first listener of the reply's message event (the
 *    socket write, both kernels, the peer);
 *  - after the reply: from that listener to the `await` of the caller resuming.
 *
 * Besides dorpc and the floor's client (a promise, a map of waiters, `JSON.stringify` out,
 * `JSON.parse` in, sent at once), two variants of the floor's client add one mechanism of
 * dorpc's each, so the price of the mechanism shows apart from dorpc's code: the frame sent in a
 * microtask (dorpc batches a turn's calls into one frame), and the result awaited through a
 * proxy's `then` (dorpc's call handle, which pipelining needs, is not a native promise).
 *
 * Prints the medians over blocks of each block's median, the process CPU per call, and what one
 * more block runs per call (V8's precise coverage with call counts): the JavaScript functions
 * that ran at least once per call (dorpc's, undici's, Node's), and how many calls of functions
 * a call made in all. The
 * round trip here has no server work in it; in the bench it holds workerd's, so read the first
 * and third columns as the client's part of a call's critical path (docs/performance.md,
 * "Round fourteen").
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Session } from "node:inspector/promises";
import { fileURLToPath } from "node:url";
import { callsAndReps } from "./calls-reps.js";
import { createRpcClient, rpcDispose } from "@dorpc/rpc";

/** The peer: dorpc's call frames get `[id,0,5]` replies, the floor's `[id, method, args]` get `[id,5]`. */
const PEER = `
import { createServer } from "node:http";
import { createRequire } from "node:module";
const { WebSocketServer } = createRequire(process.env.RESOLVE_FROM)("ws");
const http = createServer((_req, res) => { res.statusCode = 426; res.end(); });
const wss = new WebSocketServer({ server: http });
wss.on("connection", (ws, req) => {
  const floor = req.url.startsWith("/floor");
  ws.on("message", (data) => {
    let text = data.toString("utf8");
    // A hello comes in the message of the first calls: what follows its end (the next frame mark).
    if (text.charCodeAt(1) === 0x48) text = text.slice(Math.max(0, text.indexOf("\\u001e", 2)));
    if (floor) return ws.send(JSON.stringify([JSON.parse(text)[0], 5]));
    if (text === "\\u001eP") return ws.send("\\u001eQ");
    if (text.charCodeAt(1) !== 0x43) return; // not a calls frame
    const replies = JSON.parse(text.slice(2)).filter((e) => e[0] > 0).map((e) => [e[0], 0, 5]);
    if (replies.length) ws.send("\\u001eR" + JSON.stringify(replies));
  });
});
http.listen(0, "127.0.0.1", () => process.stdout.write(String(http.address().port) + "\\n"));
`;

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

async function startPeer(): Promise<{ port: number; stop: () => void }> {
  const file = join(benchDir, "results", "scratch", "client-path-peer.mjs");
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, PEER);
  const pin = cpus().length >= 2 && hasTaskset();
  const last = String(cpus().length - 1);
  const command = pin ? ["taskset", "-c", last, process.execPath, file] : [process.execPath, file];
  const child = spawn(command[0]!, command.slice(1), { env: { ...process.env, RESOLVE_FROM: join(benchDir, "package.json") } });
  child.stderr.pipe(process.stderr);
  const port = await new Promise<number>((done, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the peer exited (${code})`)));
    child.stdout.once("data", (chunk: Buffer) => done(Number(chunk.toString().trim())));
  });
  if (pin) execFileSync("taskset", ["-a", "-p", "-c", "0", String(process.pid)], { stdio: "ignore" });
  process.stderr.write(`client-path: peer on port ${port}${pin ? `, pinned to CPU ${last}; this process to CPU 0` : " (not pinned)"}\n`);
  return { port, stop: () => child.kill() };
}

function hasTaskset(): boolean {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** When the last send and the last reply's first message listener happened (µs). */
const marks = { sent: 0, received: 0 };
const now = () => performance.now() * 1000;

/** Node's WebSocket, marking the send and the reply's arrival before any other listener runs. */
class MarkedWebSocket extends WebSocket {
  constructor(url: string | URL, protocols?: string | string[]) {
    super(url, protocols);
    this.addEventListener("message", () => {
      marks.received = now();
    });
  }

  override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
    marks.sent = now();
    super.send(data);
  }
}

type Call = () => PromiseLike<unknown>;
interface Client {
  call: Call;
  close(): void;
}

async function dorpcClient(port: number): Promise<Client> {
  const client = createRpcClient<{ getValue(): number }>("COUNTER", "path", {
    baseUrl: `http://127.0.0.1:${port}`,
    WebSocket: MarkedWebSocket as never,
  });
  await client.getValue();
  return { call: () => client.getValue(), close: () => rpcDispose(client) };
}

const RESOLVED = Promise.resolve();
const THENABLE_HANDLER: ProxyHandler<{ promise: Promise<unknown> }> = {
  get(target, key) {
    if (key !== "then") return undefined;
    const { promise } = target;
    return (onFulfilled?: (value: unknown) => unknown, onRejected?: (reason: unknown) => unknown) => promise.then(onFulfilled, onRejected);
  },
};

/** The floor's client; `microtask`: its frame leaves in a microtask; `thenable`: awaited through a proxy. */
async function floorClient(port: number, microtask: boolean, thenable: boolean): Promise<Client> {
  const socket = new MarkedWebSocket(`ws://127.0.0.1:${port}/floor/path`);
  const waiting = new Map<number, (value: unknown) => void>();
  let next = 1;
  socket.addEventListener("message", (event: MessageEvent) => {
    const [id, value] = JSON.parse(event.data as string) as [number, unknown];
    const resolve = waiting.get(id);
    waiting.delete(id);
    resolve?.(value);
  });
  await new Promise((done) => socket.addEventListener("open", done));
  const plain = () =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      const text = JSON.stringify([id, "getValue", []]);
      if (microtask) RESOLVED.then(() => socket.send(text));
      else socket.send(text);
    });
  const call: Call = thenable ? () => new Proxy({ promise: plain() }, THENABLE_HANDLER) as unknown as PromiseLike<unknown> : plain;
  return { call, close: () => socket.close() };
}

interface Block {
  beforeSend: number;
  roundTrip: number;
  afterReply: number;
  total: number;
  cpu: number;
}

const median = (values: ArrayLike<number>) => Float64Array.from(values).sort()[values.length >> 1]!;

async function block(call: Call, calls: number): Promise<Block> {
  const before = new Float64Array(calls);
  const trip = new Float64Array(calls);
  const after = new Float64Array(calls);
  const total = new Float64Array(calls);
  const cpu = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const start = now();
    await call();
    const end = now();
    before[i] = marks.sent - start;
    trip[i] = marks.received - marks.sent;
    after[i] = end - marks.received;
    total[i] = end - start;
  }
  const used = process.cpuUsage(cpu);
  return {
    beforeSend: median(before),
    roundTrip: median(trip),
    afterReply: median(after),
    total: median(total),
    cpu: (used.user + used.system) / calls,
  };
}

const options = callsAndReps("client-path", process.argv.slice(2), { calls: 3_000, reps: 8 });
const peer = await startPeer();
const clients: Record<string, Client> = {
  dorpc: await dorpcClient(peer.port),
  floor: await floorClient(peer.port, false, false),
  "floor, sent in a microtask": await floorClient(peer.port, true, false),
  "floor, awaited through a proxy's then": await floorClient(peer.port, false, true),
};
const names = Object.keys(clients);
const blocks: Record<string, Block[]> = Object.fromEntries(names.map((name) => [name, []]));
for (const name of names) await block(clients[name]!.call, Math.min(options.calls, 2_000)); // warm-up
for (let r = 0; r < options.reps; r++) {
  process.stderr.write(`client-path: rep ${r + 1}/${options.reps}\n`);
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const name of order) blocks[name]!.push(await block(clients[name]!.call, options.calls));
}
/** Functions that ran ≥ 0.9 times per call over one block of `calls`, and function calls per call. */
async function functionsPerCall(call: Call, calls: number): Promise<{ functions: number; invocations: number }> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  await session.post("Profiler.takePreciseCoverage"); // counts start from here
  for (let i = 0; i < calls; i++) await call();
  const { result } = await session.post("Profiler.takePreciseCoverage");
  await session.post("Profiler.stopPreciseCoverage");
  session.disconnect();
  let functions = 0;
  let invocations = 0;
  for (const script of result)
    for (const fn of script.functions) {
      const count = fn.ranges[0]?.count ?? 0;
      if (count < 0.9 * calls) continue;
      functions++;
      invocations += count;
    }
  return { functions, invocations: invocations / calls };
}
const COVERED_CALLS = 1_000;
const covered: Record<string, { functions: number; invocations: number }> = {};
for (const name of names) covered[name] = await functionsPerCall(clients[name]!.call, COVERED_CALLS);
for (const client of Object.values(clients)) client.close();
peer.stop();

const fmt = (n: number) => n.toFixed(1);
const lines = [
  `### Client path: ${options.reps} reps × ${options.calls.toLocaleString("en-US")} sequential getValue() calls per client against a Node peer, Node ${process.version}`,
  "",
  "| client | before the send, µs | round trip, µs | after the reply, µs | whole call, µs | process CPU µs/call | functions run per call | function calls per call |",
  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
];
for (const name of names) {
  const b = blocks[name]!;
  const m = (key: keyof Block) => fmt(median(b.map((x) => x[key])));
  const c = covered[name]!;
  lines.push(
    `| ${name} | ${m("beforeSend")} | ${m("roundTrip")} | ${m("afterReply")} | ${m("total")} | ${m("cpu")} | ${c.functions} | ${fmt(c.invocations)} |`,
  );
}
lines.push(
  "",
  `Medians over blocks of each block's median. CPU is this process's (the peer is a child process). Functions: over one more block of ${COVERED_CALLS.toLocaleString("en-US")} calls with V8's precise coverage on, those that ran at least 0.9 times per call, and the calls of all of them per call.`,
);
process.stdout.write(`${lines.join("\n")}\n`);
process.exit(0);
