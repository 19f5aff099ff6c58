/**
 * `npm run client-loop --workspace=bench -- [--calls N] [--reps N]`: what dorpc's client costs per
 * call in this process, without a network or a server: sequential `getValue()` calls over a fake
 * WebSocket that answers each call frame on the next turn of the event loop (`setImmediate`, like
 * a message event), beside a hand-written client doing the floor's client work (a promise, a map
 * of waiters, `JSON.stringify` out, `JSON.parse` in) over the same fake socket.
 *
 * Per client, interleaved rep by rep after a warm-up: CPU per call (process CPU ÷ calls; min and
 * median over reps), young-generation GCs and their time per 1,000 calls (`PerformanceObserver`),
 * and bytes allocated per call (V8's sampling heap profiler over one more block). A hot loop: it
 * shows what the client's own code and garbage cost, not what a call costs in a live process,
 * where the same code runs colder (docs/performance.md, "Round seven").
 */
import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks";
import { Session } from "node:inspector/promises";
import { callsAndReps } from "./calls-reps.js";
import { createRpcClient, rpcDispose } from "@dorpc/rpc";

/** A WebSocket that answers every dorpc call frame `\u001eC[[id,…` with `\u001eR[[id,0,5]]` on the next turn. */
class FakeSocket {
  binaryType = "blob";
  readyState = 0;
  bufferedAmount = 0;
  private readonly listeners = new Map<string, ((event: unknown) => void)[]>();

  constructor(_url?: string) {
    setTimeout(() => {
      this.readyState = 1;
      this.emit("open", {});
    }, 0);
  }

  addEventListener(type: string, listener: (event: never) => void): void {
    const list = this.listeners.get(type) ?? [];
    list.push(listener as (event: unknown) => void);
    this.listeners.set(type, list);
  }

  emit(type: string, event: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) listener(event);
  }

  send(message: unknown): void {
    if (typeof message !== "string") return;
    // A hello is not answered; the first calls come in its message (after its end, the next frame mark).
    const data = message.charCodeAt(1) === 0x48 ? message.slice(Math.max(0, message.indexOf("\u001e", 2))) : message;
    if (data.charCodeAt(1) !== 0x43) return; // a call frame ("C")
    const id = Number(data.slice(4, data.indexOf(",")));
    setImmediate(() => this.emit("message", { data: `\u001eR[[${id},0,5]]` }));
  }

  close(): void {
    this.readyState = 3;
  }
}

type Call = () => Promise<unknown>;

async function dorpcClient(): Promise<{ call: Call; close: () => void }> {
  const client = createRpcClient<{ getValue(): number }>("COUNTER", "loop", {
    baseUrl: "http://localhost",
    WebSocket: FakeSocket as never,
  });
  await client.getValue();
  return { call: () => client.getValue(), close: () => rpcDispose(client) };
}

async function handClient(): Promise<{ call: Call; close: () => void }> {
  const socket = new FakeSocket();
  await new Promise((resolve) => socket.addEventListener("open", resolve));
  const waiting = new Map<number, (value: unknown) => void>();
  let next = 1;
  socket.addEventListener("message", (event: { data: string }) => {
    for (const [id, , value] of JSON.parse(event.data.slice(2)) as [number, number, unknown][]) {
      const resolve = waiting.get(id);
      waiting.delete(id);
      resolve?.(value);
    }
  });
  const call = () =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      socket.send(`\u001eC[[${id},[${JSON.stringify("getValue")},[0]]]]`);
    });
  return { call, close: () => socket.close() };
}

interface Rep {
  cpuUs: number;
  minorGcs: number;
  minorGcMs: number;
}

const gcs: PerformanceEntry[] = [];
const observer = new PerformanceObserver((list) => gcs.push(...list.getEntries()));

async function rep(call: Call, calls: number): Promise<Rep> {
  gcs.length = 0;
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) await call();
  const used = process.cpuUsage(start);
  await new Promise((resolve) => setImmediate(resolve)); // let the observer see the block's GCs
  const minor = gcs.filter(
    (e) => (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR,
  );
  return {
    cpuUs: (used.user + used.system) / calls,
    minorGcs: (minor.length * 1000) / calls,
    minorGcMs: (minor.reduce((t, e) => t + e.duration, 0) * 1000) / calls,
  };
}

async function allocatedPerCall(call: Call, calls: number): Promise<number> {
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 128,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  for (let i = 0; i < calls; i++) await call();
  const { profile } = await session.post("HeapProfiler.stopSampling");
  session.disconnect();
  let total = 0;
  const stack = [profile.head];
  while (stack.length) {
    const node = stack.pop()!;
    total += node.selfSize;
    stack.push(...node.children);
  }
  return total / calls;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const fmt = (n: number, digits = 2) => n.toFixed(digits);

const options = callsAndReps("client-loop", process.argv.slice(2), { calls: 50_000, reps: 8 });
observer.observe({ entryTypes: ["gc"] });
const clients = { dorpc: await dorpcClient(), hand: await handClient() };
const reps: Record<keyof typeof clients, Rep[]> = { dorpc: [], hand: [] };
for (const client of Object.values(clients)) await rep(client.call, Math.min(options.calls, 5_000)); // warm-up
for (let r = 0; r < options.reps; r++) {
  process.stderr.write(`client-loop: rep ${r + 1}/${options.reps}\n`);
  const order = r % 2 === 0 ? (["dorpc", "hand"] as const) : (["hand", "dorpc"] as const);
  for (const name of order) reps[name].push(await rep(clients[name].call, options.calls));
}
const allocated = {
  dorpc: await allocatedPerCall(clients.dorpc.call, Math.min(options.calls, 20_000)),
  hand: await allocatedPerCall(clients.hand.call, Math.min(options.calls, 20_000)),
};
observer.disconnect();
for (const client of Object.values(clients)) client.close();

const lines = [
  `### Client loop: ${options.reps} reps × ${options.calls.toLocaleString("en-US")} sequential getValue() calls per client, Node ${process.version}`,
  "",
  "| client | CPU µs/call, min | median | young GCs / 1,000 calls | young-GC µs / call | bytes allocated / call |",
  "| --- | ---: | ---: | ---: | ---: | ---: |",
];
for (const name of ["dorpc", "hand"] as const) {
  const r = reps[name];
  lines.push(
    `| ${name === "hand" ? "hand-written" : "dorpc"} | ${fmt(Math.min(...r.map((x) => x.cpuUs)))} | ${fmt(median(r.map((x) => x.cpuUs)))} | ${fmt(median(r.map((x) => x.minorGcs)))} | ${fmt(median(r.map((x) => x.minorGcMs)))} | ${Math.round(allocated[name]).toLocaleString("en-US")} |`,
  );
}
process.stdout.write(`${lines.join("\n")}\n`);
process.exit(0);
