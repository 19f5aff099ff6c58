/**
 * `npm run split --workspace=bench -- [options]`: which end of a call the gap to the floor sits on.
 *
 * Three clients make the same sequential calls against one `wrangler dev`, interleaved block by
 * block (ABC, CBA, …), each round on fresh connections:
 *  - floor: the floor contender's client and object (bench/src/contenders/floor.ts);
 *  - hand→dorpc: a hand-written client that sends dorpc's frames itself (a Hello, then one call
 *    frame per call, the reply awaited by its first message) to the same Counter as dorpc without
 *    the exactly-once record (`COUNTER_AT_MOST_ONCE`): dorpc's server, the floor's client work;
 *  - dorpc: dorpc's client to that Counter (the bench's `dorpc-at-most-once` contender).
 * hand→dorpc ÷ floor is the server's share of dorpc's gap, dorpc ÷ hand→dorpc the client's.
 * Per block: p50, the client's CPU (this process) and the Worker's and dev proxy's workerd CPU
 * per call (kernel accounting, as in the bench's tables). Printed: medians over rounds of each
 * block's figure and of its ratio to the floor's block of the same round, and p90 / p99 of every
 * client's samples pooled over the rounds (which end a tail comes from).
 *
 *   --call getValue | increment | bytes
 *                             getValue() (default), increment() (a call that writes storage) or
 *                             echo of a 1 KiB Uint8Array
 *   --rounds N                rounds (default 20)
 *   --calls N                 calls per block (default 300)
 *   --perf DIR                then one more round, not counted, with the Worker's workerd recorded
 *                             by `perf record` during each client's block (DIR/<client>.perf.data)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { binaryFrame } from "../../test/support/binary-frame.js";
import { startWranglerDev } from "../../test/support/wrangler-dev.js";
import { dorpcAtMostOnce } from "../src/contenders/dorpc-guarantees.js";
import type { Contender } from "../src/contenders/index.js";
import { floor } from "../src/contenders/floor.js";
import { findServerPids, ServerCpuMeter, serverCpuDelta } from "../src/server-cpu.js";
import { percentileSorted, sortedCopy } from "../src/stats.js";
import { whenOpen, WireCounters } from "../src/wire.js";

type Call = "getValue" | "increment" | "bytes";
const CALLS: readonly Call[] = ["getValue", "increment", "bytes"];

interface Options {
  call: Call;
  rounds: number;
  calls: number;
  perf: string | undefined;
}

function fail(message: string): never {
  process.stderr.write(`split: ${message}\n`);
  process.exit(2);
}

function parseOptions(argv: string[]): Options {
  const options: Options = { call: "getValue", rounds: 20, calls: 300, perf: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => argv[++i] ?? fail(`${arg} needs a value`);
    if (arg === "--call") {
      const call = value();
      if (!CALLS.includes(call as Call)) fail(`--call is one of ${CALLS.join(", ")}, got ${JSON.stringify(call)}`);
      options.call = call as Call;
    } else if (arg === "--rounds") options.rounds = Number(value());
    else if (arg === "--calls") options.calls = Number(value());
    else if (arg === "--perf") options.perf = value();
    else fail(`unknown argument ${JSON.stringify(arg)}`);
  }
  for (const key of ["rounds", "calls"] as const) {
    if (!Number.isSafeInteger(options[key]) || options[key] < 1) fail(`--${key} must be a positive integer`);
  }
  return options;
}

/** One client's connection for a round: a call to time, and how to close it. */
interface Client {
  call(): Promise<unknown>;
  close(): Promise<void>;
}

const FRAME_MARK = "\u001e";
const BYTES = new Uint8Array(1024).map((_, i) => i & 0xff);

/** dorpc's binary call frame for `echo(bytes)` (the tests' hand-built layout, header padded to 16). */
function bytesCallFrame(id: number, blob: Uint8Array): Uint8Array {
  return binaryFrame(`[[${id},["echo",[4,["Uint8Array",0]]]]]`, [blob], { align: true });
}

/**
 * Whether `data` is dorpc's successful reply to the hand-written client's call: a text reply
 * `[[id,0,value]]` for getValue() and increment(), a binary reply frame carrying one 1 KiB blob for the echo.
 */
function isOkReply(data: unknown, id: number, call: Call): boolean {
  if (call !== "bytes") return typeof data === "string" && data.startsWith(`${FRAME_MARK}R[[${id},0,`);
  if (!(data instanceof ArrayBuffer) || data.byteLength < 16) return false;
  const view = new DataView(data);
  const header = new TextDecoder().decode(new Uint8Array(data, 16, view.getUint32(8, true)));
  return view.getUint8(0) === 0x1e && view.getUint32(4, true) === 1 && view.getUint32(12, true) === 1024 && header.startsWith(`[[${id},`);
}

/**
 * The hand-written client: dorpc's frames, nothing else (no reconnect, timeouts or decoding; a
 * reply is the next message). Its first reply is checked, so frames the server refuses cannot
 * pass for fast calls.
 */
async function handClient(baseUrl: string, instance: string, kind: Call): Promise<Client> {
  const socket = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/__rpc/COUNTER_AT_MOST_ONCE/${encodeURIComponent(instance)}`);
  socket.binaryType = "arraybuffer";
  await whenOpen(socket);
  const session = crypto.randomUUID().replace(/-/g, "").slice(0, 22);
  socket.send(`${FRAME_MARK}H["${session}",0]`);
  let settle: ((data: unknown) => void) | undefined;
  socket.addEventListener("message", (event) => {
    const done = settle;
    settle = undefined;
    done?.(event.data);
  });
  let id = 0;
  const call = () =>
    new Promise<unknown>((resolve) => {
      settle = resolve;
      id++;
      socket.send(kind === "bytes" ? bytesCallFrame(id, BYTES) : `${FRAME_MARK}C[[${id},["${kind}",[0]]]]`);
    });
  const first = await call();
  if (!isOkReply(first, id, kind))
    fail(`the hand-written client's first call was not answered as expected: ${String(first).slice(0, 200)}`);
  return {
    call,
    async close() {
      socket.close(1000, "split done");
    },
  };
}

async function contenderClient(contender: Contender, baseUrl: string, instance: string, kind: Call): Promise<Client> {
  const { conn } = await contender.connect(baseUrl, instance, new WireCounters());
  const call = kind === "bytes" ? () => conn.echo(BYTES) : kind === "increment" ? () => conn.increment() : () => conn.getValue();
  return { call, close: () => conn.close() };
}

const CLIENTS = ["floor", "hand→dorpc", "dorpc"] as const;
type ClientName = (typeof CLIENTS)[number];

function median(values: number[]): number {
  return percentileSorted(sortedCopy(Float64Array.from(values)), 50);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  process.stderr.write("split: starting wrangler dev …\n");
  const state = `/tmp/dorpc-split-${process.pid}`;
  const dev = await startWranglerDev({
    config: "wrangler.toml",
    persistTo: state,
    timeoutMs: 90_000,
    env: { X_LOCAL_OBSERVABILITY: "false" },
  });
  const meter = ServerCpuMeter.create(findServerPids());
  if (!meter) fail("cannot read the workerd processes' CPU (Linux /proc needed)");
  if (options.perf) mkdirSync(options.perf, { recursive: true });
  const rows = new Map<
    ClientName,
    { p50: number[]; client: number[]; worker: number[]; proxy: number[]; ratio: number[]; samples: Float64Array[] }
  >();
  for (const name of CLIENTS) rows.set(name, { p50: [], client: [], worker: [], proxy: [], ratio: [], samples: [] });
  try {
    const total = options.rounds + (options.perf ? 1 : 0);
    for (let round = 0; round < total; round++) {
      const recording = round === options.rounds; // the extra round of --perf: recorded, not counted
      const instance = (name: string) => `split-${name.replace(/\W/g, "")}-${process.pid}-${round}`;
      const clients = new Map<ClientName, Client>([
        ["floor", await contenderClient(floor, dev.baseUrl, instance("floor"), options.call)],
        ["hand→dorpc", await handClient(dev.baseUrl, instance("hand"), options.call)],
        ["dorpc", await contenderClient(dorpcAtMostOnce, dev.baseUrl, instance("dorpc"), options.call)],
      ]);
      const order = round % 2 === 0 ? [...CLIENTS] : [...CLIENTS].reverse();
      for (const name of order) for (let i = 0; i < (round === 0 ? 500 : 30); i++) await clients.get(name)!.call();
      const p50 = new Map<ClientName, number>();
      for (const name of order) {
        const client = clients.get(name)!;
        let perf: ChildProcess | undefined;
        if (options.perf && recording) {
          const out = join(options.perf, `${name.replace(/\W/g, "-")}.perf.data`);
          perf = spawn("perf", ["record", "-F", "4000", "-e", "cpu-clock", "-g", "-p", String(meter.pids.worker[0]), "-o", out], {
            stdio: "ignore",
          });
          await new Promise((resolve) => setTimeout(resolve, 1_500));
        }
        const samples = new Float64Array(options.calls);
        const cpu0 = process.cpuUsage();
        const server0 = meter.read();
        for (let i = 0; i < options.calls; i++) {
          const start = process.hrtime.bigint();
          await client.call();
          samples[i] = Number(process.hrtime.bigint() - start) / 1000;
        }
        const cpu = process.cpuUsage(cpu0);
        const server = serverCpuDelta(server0, meter.read());
        if (perf) {
          perf.kill("SIGINT");
          await new Promise((resolve) => perf.once("exit", resolve));
        }
        if (recording) continue;
        const row = rows.get(name)!;
        const blockP50 = percentileSorted(sortedCopy(samples), 50);
        p50.set(name, blockP50);
        row.p50.push(blockP50);
        row.samples.push(samples);
        row.client.push((cpu.user + cpu.system) / options.calls);
        row.worker.push(server.workerUs / options.calls);
        row.proxy.push(server.proxyUs / options.calls);
      }
      if (!recording) for (const name of CLIENTS) rows.get(name)!.ratio.push(p50.get(name)! / p50.get("floor")!);
      for (const client of clients.values()) await client.close();
      process.stderr.write(recording ? "split: perf round done\n" : `split: round ${round + 1}/${options.rounds}\n`);
    }
  } finally {
    await dev.stop();
    rmSync(state, { recursive: true, force: true });
  }
  const call = options.call === "bytes" ? "echo(1 KiB Uint8Array)" : `${options.call}()`;
  const lines = [
    `### ${call}: ${options.rounds} rounds × ${options.calls} sequential calls per client (medians over rounds)`,
    "",
    "| client | p50 µs | ÷ floor (p50) [range] | pooled p90 / p99 µs (n) | client CPU µs/call | Worker CPU µs/call | dev proxy CPU µs/call |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const name of CLIENTS) {
    const row = rows.get(name)!;
    const f = (values: number[]) => median(values).toFixed(0);
    const range = `[${Math.min(...row.ratio).toFixed(2)}–${Math.max(...row.ratio).toFixed(2)}]`;
    const pooled = new Float64Array(row.samples.reduce((n, block) => n + block.length, 0));
    let at = 0;
    for (const block of row.samples) {
      pooled.set(block, at);
      at += block.length;
    }
    const sorted = sortedCopy(pooled);
    const tail = `${percentileSorted(sorted, 90).toFixed(0)} / ${percentileSorted(sorted, 99).toFixed(0)} (${sorted.length})`;
    lines.push(
      `| ${name} | ${f(row.p50)} | ${median(row.ratio).toFixed(2)} ${range} | ${tail} | ${f(row.client)} | ${f(row.worker)} | ${f(row.proxy)} |`,
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

await main();
