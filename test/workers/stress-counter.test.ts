/**
 * Exactly-once under load and faults (docs/reliability.md): many clients of one Counter in a
 * seeded random interleaving of awaited and un-awaited increments (some with a short timeout or
 * an abort), reads, dropped connections, evictions (sockets hibernated or closed), clients
 * disposed and made again, bursts of calls followed by a fault, floods of one client's calls,
 * and reconnect storms (the connection cut each time it opens). After each run:
 *  - the final count lies between the sum of the increments that resolved and that sum plus the
 *    increments whose outcome is unknown (DISPOSED, TIMEOUT, DISCONNECTED, EXPIRED, aborted),
 *    and it no longer changes;
 *  - the ranges (value - by, value] of resolved increments never overlap, and none lies above
 *    the final count: no increment ran twice, and none got another's answer;
 *  - a read returns at least what had resolved before it was made, and at most what had been
 *    issued when it settled;
 *  - no call hangs, a call without a short timeout never times out, reads fail only with
 *    DISPOSED, TIMEOUT or DISCONNECTED, and no client reports an error through onError.
 * MyCounter runs the same with `ordering: "sequential"`.
 *
 * Each seed is one run; the default seeds keep the file short. To run more (they replace the
 * defaults of every describe here and in stress-room.test.ts), from test/:
 *   VITE_STRESS_SEEDS=1-30 npx vitest run --project workers workers/stress-counter.test.ts
 * A run that breaks an invariant prints its seed, a summary and the log of its faults.
 */
import { RpcError, rpcConnection, withCallOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, type TestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";
import { expectNoProblems, Problems, seeded, serialEvictions, settleOrHang, sleep, stressSeeds } from "./stress-support.js";

type Outcome = "ok" | "maybe" | "no" | "unexpected" | "hang";

interface Write {
  id: number;
  client: number;
  by: number;
  kind: "increment" | "incrementSoon" | "increment+timeout" | "increment+abort";
  outcome?: Outcome;
  value?: number;
  code?: string;
  message?: string;
}

interface Read {
  id: number;
  client: number;
  /** The sum of the increments resolved before the read was made. */
  lower: number;
  outcome?: string;
  value?: number;
  /** The sum of the increments issued by the time the read settled. */
  upper?: number;
}

const MAYBE_RAN = ["DISPOSED", "TIMEOUT", "DISCONNECTED", "EXPIRED"];

/** What a failed increment says about whether it ran. */
function classify(write: Write, error: unknown): void {
  if (error instanceof Error && error.name === "AbortError") {
    write.outcome = "maybe";
    write.code = "ABORT";
  } else if (!(error instanceof RpcError)) {
    write.outcome = "unexpected";
    write.message = String(error);
  } else {
    write.code = error.code;
    write.message = error.message;
    write.outcome = MAYBE_RAN.includes(error.code) ? "maybe" : error.code === "CONNECT_FAILED" ? "no" : "unexpected";
  }
}

/** One seeded run on a new instance of `ns`: returns its broken invariants, a summary and a log. */
async function runSeed(seed: number, ns: DurableObjectNamespace<Counter>, steps: number) {
  const { rand, int } = seeded(seed);
  const name = uniqueName(`stress-counter-${seed}`);
  const nClients = 10 + int(21);
  const log: string[] = [];
  const onErrors: string[] = [];
  const clients: TestClient<Counter>[] = [];
  const generations: number[] = [];
  const make = (i: number) => {
    const tag = `${i}:${(generations[i] = (generations[i] ?? 0) + 1)}`;
    clients[i] = createTestClient<Counter>(ns, name, {
      timeout: 15_000,
      onError: (error) => onErrors.push(`${tag}: ${error instanceof RpcError ? `${error.code} ${error.message}` : String(error)}`),
    });
  };
  for (let i = 0; i < nClients; i++) make(i);

  const writes: Write[] = [];
  const reads: Read[] = [];
  const pending: Promise<void>[] = [];
  let resolvedSum = 0;
  let issuedSum = 0;
  let nextId = 0;
  const stats = { drops: 0, evicts: 0, evictFails: 0, disposes: 0 };
  const evictNow = serialEvictions();
  const evict = (i: number, webSockets: "hibernate" | "close") =>
    evictNow(clients[i]!, webSockets).then(
      () => void stats.evicts++,
      (error: unknown) => {
        stats.evictFails++;
        log.push(`evict via ${i} failed: ${String(error)}`);
      },
    );
  const drop = (client: TestClient<Counter>, code?: number) => {
    if (rpcConnection(client).state !== "open") return false;
    dropConnection(client, code === undefined ? {} : { code });
    stats.drops++;
    return true;
  };
  const dispose = (i: number) => {
    clients[i]![Symbol.dispose]();
    stats.disposes++;
    make(i);
  };

  const write = (i: number): Promise<void> => {
    const client = clients[i]!;
    const by = 1 + int(3);
    const variant = int(10);
    const w: Write = { id: nextId++, client: i, by, kind: "increment" };
    let call: Promise<number>;
    if (variant < 5) call = client.increment(by);
    else if (variant < 8) {
      w.kind = "incrementSoon";
      call = client.incrementSoon(by);
    } else if (variant < 9) {
      w.kind = "increment+timeout";
      call = withCallOptions(client.increment(by), { timeout: 1 + int(20) });
    } else {
      w.kind = "increment+abort";
      const controller = new AbortController();
      call = withCallOptions(client.increment(by), { signal: controller.signal });
      const delay = int(15);
      if (delay === 0) queueMicrotask(() => controller.abort());
      else setTimeout(() => controller.abort(), delay);
    }
    writes.push(w);
    issuedSum += by;
    const settled = settleOrHang(
      call,
      (value) => {
        w.outcome = "ok";
        w.value = value;
        resolvedSum += by;
      },
      (error) => classify(w, error),
      () => (w.outcome = "hang"),
    );
    pending.push(settled);
    return settled;
  };

  const read = (i: number): Promise<void> => {
    const r: Read = { id: nextId++, client: i, lower: resolvedSum };
    reads.push(r);
    const settled = settleOrHang(
      clients[i]!.getValue(),
      (value) => {
        r.outcome = "ok";
        r.value = value;
        r.upper = issuedSum;
      },
      (error) => (r.outcome = error instanceof RpcError ? error.code : String(error)),
      () => (r.outcome = "hang"),
    );
    pending.push(settled);
    return settled;
  };

  for (let step = 0; step < steps; step++) {
    const i = int(nClients);
    const roll = rand();
    try {
      if (roll < 0.3) await write(i);
      else if (roll < 0.55) void write(i);
      else if (roll < 0.65) await read(i);
      else if (roll < 0.7) void read(i);
      else if (roll < 0.78) {
        if (drop(clients[i]!, rand() < 0.8 ? 1006 : 1011)) log.push(`${step}: drop ${i}`);
      } else if (roll < 0.81) {
        const mode = rand() < 0.5 ? "hibernate" : "close";
        log.push(`${step}: evict via ${i} ${mode}`);
        const evicted = evict(i, mode);
        if (rand() < 0.5) await evicted;
        else pending.push(evicted);
      } else if (roll < 0.9) {
        // Burst: several clients issue calls in the same turn, then a fault on one of them.
        const who: number[] = [];
        for (let k = 1 + int(5); k > 0; k--) {
          const j = int(nClients);
          who.push(j);
          for (let m = 1 + int(6); m > 0; m--) void (rand() < 0.85 ? write(j) : read(j));
        }
        const fault = rand();
        const victim = who[int(who.length)]!;
        if (fault < 0.35) {
          drop(clients[victim]!);
          log.push(`${step}: burst ${who} + drop ${victim}`);
        } else if (fault < 0.5) {
          const delay = int(4);
          if (delay) await sleep(delay);
          dispose(victim);
          log.push(`${step}: burst ${who} + dispose ${victim} after ${delay} ms`);
        } else if (fault < 0.6) {
          pending.push(evict(victim, rand() < 0.5 ? "hibernate" : "close"));
          log.push(`${step}: burst ${who} + evict`);
        } else if (fault < 0.7) {
          await sleep(int(3));
          drop(clients[victim]!);
          log.push(`${step}: burst ${who} + later drop ${victim}`);
        }
      } else if (roll < 0.915) {
        // Storm: calls in flight, then the connection cut each time it opens, k times.
        const client = clients[i]!;
        const connection = rpcConnection(client);
        for (let m = 1 + int(8); m > 0; m--) void write(i);
        const k = 1 + int(4);
        let left = k;
        const cutOnOpen = () => {
          if (left <= 0) return;
          left--;
          const delay = int(3);
          const code = [1006, 1011, 1001][int(3)]!;
          if (delay === 0) drop(client, code);
          else setTimeout(() => drop(client, code), delay - 1);
        };
        const off = connection.onStateChange((state) => {
          if (state === "open") cutOnOpen();
          if (state === "disposed") off();
        });
        setTimeout(off, 2_000);
        if (connection.state === "open") cutOnOpen();
        log.push(`${step}: storm ${i} x${k}`);
      } else if (roll < 0.925) {
        // Flood: many calls from one client in one turn, then a drop or an eviction mid-way.
        const n = 50 + int(250);
        for (let m = 0; m < n; m++) void write(i);
        await sleep(int(5));
        if (rand() < 0.5) drop(clients[i]!);
        else pending.push(evict(i, rand() < 0.5 ? "hibernate" : "close"));
        log.push(`${step}: flood ${i} x${n}`);
      } else if (roll < 0.94) {
        log.push(`${step}: dispose ${i}`);
        dispose(i);
      } else {
        await sleep(int(6));
      }
    } catch (error) {
      log.push(`${step}: operation threw ${String(error)}`);
    }
    if (rand() < 0.3) await sleep(int(3));
  }

  await Promise.all(pending);
  // Every call has settled, but a call whose outcome is unknown may still run late on the object:
  // the final count, read twice some time apart, must not change any more.
  await sleep(300);
  using checker = createTestClient<Counter>(ns, name);
  const final = await checker.getValue();
  await sleep(300);
  const finalLater = await checker.getValue();
  for (const client of clients) client[Symbol.dispose]();

  const problems = new Problems();
  const ok = writes.filter((w) => w.outcome === "ok");
  const sumOk = ok.reduce((sum, w) => sum + w.by, 0);
  const sumMaybe = writes.filter((w) => w.outcome === "maybe").reduce((sum, w) => sum + w.by, 0);
  if (final < sumOk) problems.add("finalBelowResolved", `${final} < ${sumOk}`);
  if (final > sumOk + sumMaybe) problems.add("finalAboveResolvedPlusUnknown", `${final} > ${sumOk} + ${sumMaybe}`);
  if (final !== finalLater) problems.add("finalChanged", `${final}, then ${finalLater}`);
  const byValue = [...ok].sort((a, b) => a.value! - b.value!);
  for (let k = 1; k < byValue.length; k++) {
    const [prev, cur] = [byValue[k - 1]!, byValue[k]!];
    if (cur.value! - cur.by < prev.value!) {
      problems.add("overlappingIncrements", `#${prev.id} (by ${prev.by}) = ${prev.value}, #${cur.id} (by ${cur.by}) = ${cur.value}`);
    }
  }
  for (const w of ok) if (w.value! > final) problems.add("resolvedAboveFinal", `#${w.id} = ${w.value}`);
  for (const w of writes) {
    if (w.outcome === "hang" || w.outcome === undefined) problems.add("hangs", `#${w.id} ${w.kind} of client ${w.client}`);
    if (w.outcome === "unexpected") problems.add("unexpectedErrors", `#${w.id} ${w.kind}: ${w.code} ${w.message}`);
    if (w.code === "TIMEOUT" && w.kind !== "increment+timeout")
      problems.add("timeoutWithoutShortTimeout", `#${w.id} ${w.kind}: ${w.message}`);
  }
  for (const r of reads) {
    if (r.outcome === "hang" || r.outcome === undefined) problems.add("hangs", `read #${r.id} of client ${r.client}`);
    else if (r.outcome === "ok") {
      if (r.value! < r.lower || r.value! > r.upper!)
        problems.add("readOutOfBounds", `read #${r.id} = ${r.value}, not in [${r.lower}, ${r.upper}]`);
    } else if (!["DISPOSED", "TIMEOUT", "DISCONNECTED"].includes(r.outcome)) problems.add("readErrors", `read #${r.id}: ${r.outcome}`);
  }
  for (const error of onErrors) problems.add("onError", error);

  const outcomes: Record<string, number> = {};
  for (const w of writes) {
    const key = `${w.kind}:${w.outcome}${w.code ? `:${w.code}` : ""}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
  }
  const summary = { nClients, steps, writes: writes.length, reads: reads.length, sumOk, sumMaybe, final, stats, outcomes };
  return { problems, summary, log };
}

describe("many clients on one Counter, with faults: exactly once", () => {
  for (const seed of stressSeeds([5, 8])) {
    it(`seed ${seed}: every increment counted once, reads in bounds, nothing hangs`, { timeout: 60_000 }, async () => {
      const { problems, summary, log } = await runSeed(seed, env.COUNTER, 320);
      expectNoProblems("Counter", seed, problems, summary, log);
    });
  }
});

describe("many clients on one MyCounter (ordering: sequential), with faults: exactly once", () => {
  for (const seed of stressSeeds([21])) {
    it(`seed ${seed}: every increment counted once, reads in bounds, nothing hangs`, { timeout: 60_000 }, async () => {
      const { problems, summary, log } = await runSeed(seed, env.MY_COUNTER, 320);
      expectNoProblems("MyCounter", seed, problems, summary, log);
    });
  }
});
