/**
 * Idle clients and waking up, measured with real evictions under `wrangler dev` (workerd evicts
 * an object whose sockets are all hibernatable after it has been idle for a while; an object with
 * an accepted socket stays). Per cycle, every contender opens `connections` clients, each to an
 * object of its own, reads the object's construction time (`bornAt`), and then every client idles
 * for the same `idleSeconds`, all contenders at once. Then, contender after contender (order
 * alternating per cycle), each client makes one call (the wake-up call, timed), reads `bornAt`
 * again, and makes a few more calls (the warm baseline, timed).
 *
 * A later `bornAt` means the object was evicted and built again. If it was built before the
 * wake-up call started, something the client sent while idle (a heartbeat not answered by the
 * platform's auto-response) woke it. An object woken early in the window and evicted again before
 * its end looks like a plain eviction; the window is chosen so that dorpc's heartbeat (after 30 s
 * idle) falls in its last 10 s (docs/performance.md).
 */
import type { Conn, Contender } from "./contenders/index.js";
import { now, type Progress } from "./region.js";
import { median } from "./stats.js";
import { WireCounters } from "./wire.js";

export interface IdleSettings {
  idleSeconds: number;
  connections: number;
  cycles: number;
  /** Timed calls after the wake-up call (their median is the warm baseline). */
  warmCalls: number;
}

export const IDLE_FULL: IdleSettings = { idleSeconds: 35, connections: 8, cycles: 3, warmCalls: 5 };
export const IDLE_QUICK: IdleSettings = { idleSeconds: 12, connections: 1, cycles: 1, warmCalls: 3 };

export interface IdleSample {
  contender: string;
  cycle: number;
  /** Wall time from the last reply before idling to the wake-up call, ms (client clock). */
  idleMs: number;
  evicted: boolean;
  /** Built again before the wake-up call: idle traffic reached the object. */
  wokeDuringIdle: boolean;
  /** The first call after idling, µs. */
  firstCallUs: number;
  /** Median of the calls right after it, µs. */
  warmCallUs: number;
  /** Frames the client sent / received while idle (heartbeats). */
  idleSentFrames: number;
  idleRecvFrames: number;
}

export interface IdleRun {
  settings: IdleSettings;
  /** Contenders measured, in order; others are listed in `notRun` with the reason. */
  contenders: string[];
  notRun: { contender: string; reason: string }[];
  samples: IdleSample[];
}

interface Client {
  conn: Conn;
  counters: WireCounters;
  bornAt: number;
  idleSince: number;
  sentAtIdle: number;
  recvAtIdle: number;
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

async function openClients(baseUrl: string, contender: Contender, names: string[]): Promise<Client[]> {
  const clients: Client[] = [];
  for (const name of names) {
    const counters = new WireCounters();
    const { conn } = await contender.connect(baseUrl, name, counters);
    const bornAt = await conn.bornAt();
    clients.push({ conn, counters, bornAt, idleSince: 0, sentAtIdle: 0, recvAtIdle: 0 });
  }
  return clients;
}

async function wake(contender: Contender, cycle: number, client: Client, warmCalls: number): Promise<IdleSample> {
  const idleSentFrames = client.counters.sentFrames - client.sentAtIdle;
  const idleRecvFrames = client.counters.recvFrames - client.recvAtIdle;
  const wakeWall = Date.now();
  const start = now();
  await client.conn.getValue();
  const firstCallUs = Number(now() - start) / 1e3;
  const bornAt = await client.conn.bornAt();
  const warm: number[] = [];
  for (let i = 0; i < warmCalls; i++) {
    const t = now();
    await client.conn.getValue();
    warm.push(Number(now() - t) / 1e3);
  }
  const evicted = bornAt !== client.bornAt;
  return {
    contender: contender.name,
    cycle,
    idleMs: wakeWall - client.idleSince,
    evicted,
    // The object's clock is the machine's clock; 50 ms of slack for when workerd reads it.
    wokeDuringIdle: evicted && bornAt < wakeWall - 50,
    firstCallUs,
    warmCallUs: median(warm),
    idleSentFrames,
    idleRecvFrames,
  };
}

export async function measureIdle(
  baseUrl: string,
  tag: string,
  contenders: readonly Contender[],
  settings: IdleSettings,
  progress: Progress,
): Promise<IdleRun> {
  const run: IdleRun = { settings, contenders: [], notRun: [], samples: [] };
  const active = contenders.filter((c) => {
    if (c.pending) run.notRun.push({ contender: c.name, reason: c.pending });
    return !c.pending;
  });
  run.contenders = active.map((c) => c.name);
  for (let cycle = 0; cycle < settings.cycles; cycle++) {
    const order = cycle % 2 === 0 ? active : [...active].reverse();
    const open = new Map<string, Client[]>();
    try {
      for (const contender of order) {
        const names = Array.from({ length: settings.connections }, (_, i) => `idle-${contender.name}-${tag}-c${cycle}-${i}`);
        open.set(contender.name, await openClients(baseUrl, contender, names));
      }
      const idleSince = Date.now();
      for (const clients of open.values()) {
        for (const client of clients) {
          client.idleSince = idleSince;
          client.sentAtIdle = client.counters.sentFrames;
          client.recvAtIdle = client.counters.recvFrames;
        }
      }
      progress(
        `idle · cycle ${cycle + 1}/${settings.cycles} · ${open.size} contenders × ${settings.connections} clients idle for ${settings.idleSeconds} s`,
      );
      await sleep(settings.idleSeconds * 1000);
      for (const contender of order) {
        const samples: IdleSample[] = [];
        for (const client of open.get(contender.name) ?? []) samples.push(await wake(contender, cycle, client, settings.warmCalls));
        run.samples.push(...samples);
        const evicted = samples.filter((s) => s.evicted).length;
        progress(
          `idle · cycle ${cycle + 1} · ${contender.name}: evicted ${evicted}/${samples.length}, first call p50 ${median(samples.map((s) => s.firstCallUs)).toFixed(0)} µs, warm ${median(samples.map((s) => s.warmCallUs)).toFixed(0)} µs`,
        );
      }
    } finally {
      await Promise.all([...open.values()].flat().map((c) => c.conn.close().catch(() => {})));
    }
  }
  return run;
}
