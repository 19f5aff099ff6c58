/**
 * Reliability end to end (issue #6): Node clients over real WebSockets against `wrangler dev`
 * running test/reliability/wrangler.toml, with real faults — wrangler stopped and started again
 * on the same port mid-call (storage persisted with --persist-to), and sockets closed by the
 * Durable Object at random points under load.
 *
 * The load ledger: every client increments through `incrementOnce(opId)`, which applies each
 * opId at most once (a SQLite primary key). Calls are made `idempotent` (re-sent after a
 * reconnect), and a call that still fails (DISCONNECTED after its retries, TIMEOUT) is retried
 * by the client with the *same* opId until it succeeds. So every op ends confirmed exactly once
 * on the client, and the object's set of applied opIds must equal the union of its clients'
 * confirmed opIds: nothing lost (every confirmed op is stored) and nothing doubled (the count
 * equals the number of distinct ops, however many times an op was delivered).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRpcClient, rpcConnection, type RpcError, withCallOptions, type RpcClient } from "@dorpc/rpc";
import { startWranglerDev, type WranglerDev } from "../support/wrangler-dev.js";

/** Reliable's API (test/reliability/worker.ts), restated so this Node test needs no workerd types. */
interface Reliable {
  increment(by?: number): number;
  getValue(): number;
  incrementOnce(opId: string): number;
  ledger(): { applied: number; runs: number; ops: string[] };
  sleep(ms: number): string;
  dropOthers(count: number): number;
}

const CONFIG = "test/reliability/wrangler.toml";

/**
 * Connection attempts made while wrangler dev is down or starting can hang: Node's WebSocket
 * (undici) reports a refused connection with an "error" event and no "close" (see
 * websocket-transport.node.test.ts). `connectTimeout` bounds each attempt so the session's
 * backoff tries again; 3 s keeps the outage short.
 */
const CONNECT_TIMEOUT = 3_000;

const RECONNECT = { initialDelay: 20, maxDelay: 500 };

let dev: WranglerDev;
let persistTo: string;

/** Starts wrangler dev on `port` (retrying while the old process still holds it). */
async function start(port?: number): Promise<WranglerDev> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return await startWranglerDev({ config: CONFIG, persistTo, timeoutMs: 60_000, ...(port ? { port } : {}) });
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
    }
  }
  throw lastError;
}

async function restart(): Promise<{ downMs: number }> {
  const port = dev.port;
  const began = Date.now();
  await dev.stop();
  dev = await start(port);
  return { downMs: Date.now() - began };
}

beforeAll(async () => {
  persistTo = await mkdtemp(join(tmpdir(), "dorpc-reliability-"));
  dev = await start();
});

afterAll(async () => {
  await dev?.stop();
  if (persistTo) await rm(persistTo, { recursive: true, force: true });
});

/** A call whose settlements are counted (a promise settles once; this checks nothing else fires). */
function tracked<T>(promise: Promise<T>) {
  const record = { fulfilled: 0, rejected: 0, error: undefined as unknown, value: undefined as T | undefined };
  const done = promise.then(
    (value) => {
      record.fulfilled++;
      record.value = value;
    },
    (error: unknown) => {
      record.rejected++;
      record.error = error;
    },
  );
  return Object.assign(record, { done });
}

describe("wrangler dev restart mid-call", () => {
  it("every in-flight call settles exactly once (DISCONNECTED), the client reconnects and later calls succeed", async () => {
    const instance = `restart-${Date.now()}`;
    await using client = createRpcClient<Reliable>("RELIABLE", instance, {
      baseUrl: dev.baseUrl,
      reconnect: RECONNECT,
      connectTimeout: CONNECT_TIMEOUT,
    });
    const connection = rpcConnection(client);
    const states: string[] = [];
    connection.onStateChange((state) => states.push(state));
    expect(await client.increment(3)).toBe(3);

    // In flight when wrangler goes away: a long call, a plain call queued behind it on the
    // server (sequential ordering), and an idempotent read.
    const long = tracked(client.sleep(20_000).then((value) => value)); // `then` sends it now
    const plain = tracked(client.increment().then((value) => value));
    const idem = tracked(withCallOptions(client.getValue(), { idempotent: true }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(connection.pendingCalls).toBe(3);

    const port = dev.port;
    await dev.stop();
    await Promise.all([long.done, plain.done]);
    for (const call of [long, plain]) {
      expect(call.fulfilled + call.rejected).toBe(1);
      expect((call.error as RpcError).code).toBe("DISCONNECTED");
    }
    expect(connection.state).toBe("reconnecting");
    // Calls made while the server is down wait for the next connection.
    const whileDown = tracked(client.increment(10).then((value) => value));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(connection.state).toBe("reconnecting");

    dev = await start(port);
    await connection.waitForOpen();
    await Promise.all([idem.done, whileDown.done]);
    expect(idem).toMatchObject({ fulfilled: 1, rejected: 0 });
    expect(whileDown).toMatchObject({ fulfilled: 1, rejected: 0 });
    // The plain increment never reached the object (wrangler went down while it waited behind
    // the long call) or ran before the stop: either way it was not replayed.
    const value = await client.getValue();
    expect([13, 14]).toContain(value);
    expect(whileDown.value).toBe(value);
    expect(idem.value).toBe(value - 10);
    expect(await client.increment()).toBe(value + 1);
    expect(states[0]).toBe("connecting");
    expect(states.slice(1, 3)).toEqual(["open", "reconnecting"]);
    expect(states.at(-1)).toBe("open");
  });
});

describe("load ledger under faults", () => {
  it("≥ 50 clients × ≥ 1,000 increments over 8 objects, with sockets cut at random: nothing lost, nothing doubled", async () => {
    const CLIENTS = 50;
    const CALLS = 1_000;
    const OBJECTS = 8;
    const WINDOW = 8; // calls in flight per client
    const run = Date.now().toString(36);
    const objectName = (k: number) => `ledger-${run}-${k}`;

    const confirmed: Set<string>[] = Array.from({ length: OBJECTS }, () => new Set());
    let appRetries = 0;
    let timeouts = 0;
    let reconnects = 0;
    let completed = 0;
    const clients: RpcClient<Reliable>[] = [];
    for (let i = 0; i < CLIENTS; i++) {
      const client = createRpcClient<Reliable>("RELIABLE", objectName(i % OBJECTS), {
        baseUrl: dev.baseUrl,
        reconnect: RECONNECT,
        timeout: 60_000,
        connectTimeout: CONNECT_TIMEOUT,
      });
      rpcConnection(client).onStateChange((state) => {
        if (state === "reconnecting") reconnects++;
      });
      clients.push(client);
    }

    async function applyOnce(client: RpcClient<Reliable>, object: number, opId: string): Promise<void> {
      for (;;) {
        try {
          await withCallOptions(client.incrementOnce(opId), { idempotent: true, retries: 20, timeout: 15_000 });
          confirmed[object]!.add(opId);
          completed++;
          return;
        } catch (error) {
          const code = (error as RpcError).code;
          if (code !== "DISCONNECTED" && code !== "TIMEOUT") throw error;
          if (code === "TIMEOUT") timeouts++;
          appRetries++; // same opId again: applied at most once however often it arrives
        }
      }
    }

    async function drive(i: number): Promise<void> {
      const client = clients[i]!;
      let next = 0;
      const lane = async () => {
        while (next < CALLS) {
          const n = next++;
          await applyOnce(client, i % OBJECTS, `c${i}-${n}`);
        }
      };
      await Promise.all(Array.from({ length: WINDOW }, lane));
    }

    // Chaos: at random intervals a separate client asks a random object to close some of its
    // other sockets (1011) — clients lose their connection at random points of their run.
    let chaosOn = true;
    let socketsCut = 0;
    let chaosCalls = 0;
    const chaosClients = Array.from({ length: OBJECTS }, (_, k) =>
      createRpcClient<Reliable>("RELIABLE", objectName(k), {
        baseUrl: dev.baseUrl,
        reconnect: RECONNECT,
        timeout: 10_000,
        connectTimeout: CONNECT_TIMEOUT,
      }),
    );
    const chaos = (async () => {
      while (chaosOn) {
        await new Promise((resolve) => setTimeout(resolve, 40 + Math.random() * 160));
        if (!chaosOn) break;
        const k = Math.floor(Math.random() * OBJECTS);
        try {
          socketsCut += await chaosClients[k]!.dropOthers(1 + Math.floor(Math.random() * 3));
          chaosCalls++;
        } catch {
          // the chaos client's own connection may be down (restart): skip this round
        }
      }
    })();

    // Optionally (LEDGER_RESTART=1) one restart of wrangler dev once ~40% of the calls are done.
    // Off by default: under this load the restarted wrangler serves the clients again within
    // seconds, but startWranglerDev's readiness probe (a fetch to /__ready) did not resolve
    // within the test's time bound (see docs/reliability.md). The restart with calls in flight
    // is covered by the test above.
    let restarts = 0;
    let downMs = 0;
    const restarter = (async () => {
      if (process.env.LEDGER_RESTART !== "1") return;
      while (completed < CLIENTS * CALLS * 0.4) await new Promise((resolve) => setTimeout(resolve, 50));
      const result = await restart();
      downMs = result.downMs;
      restarts++;
    })();

    const began = Date.now();
    const progress = setInterval(() => {
      const open = clients.filter((client) => rpcConnection(client).state === "open").length;
      console.log(
        `ledger progress: ${completed} done, ${open}/${CLIENTS} open, ${reconnects} reconnects, ${appRetries} app retries (${timeouts} timeouts), ${socketsCut} cut, ${restarts} restarts, ${((Date.now() - began) / 1000).toFixed(0)} s`,
      );
    }, 5_000);
    await Promise.all(clients.map((_, i) => drive(i))).finally(() => clearInterval(progress));
    const seconds = (Date.now() - began) / 1000;
    chaosOn = false;
    await Promise.all([chaos, restarter]);

    // The ledger: per object, the applied set equals the confirmed set, and the count matches.
    let applied = 0;
    let runs = 0;
    for (let k = 0; k < OBJECTS; k++) {
      const ledger = await chaosClients[k]!.ledger();
      const expected = confirmed[k]!;
      expect(ledger.ops.length).toBe(ledger.applied);
      expect(ledger.applied, `object ${k}`).toBe(expected.size);
      const stored = new Set(ledger.ops);
      expect(stored.size).toBe(ledger.ops.length);
      const missing = [...expected].filter((op) => !stored.has(op));
      const extra = ledger.ops.filter((op) => !expected.has(op));
      expect(missing, "confirmed ops the object does not have (lost)").toEqual([]);
      expect(extra, "ops the object applied that no client confirmed").toEqual([]);
      applied += ledger.applied;
      runs += ledger.runs;
    }
    expect(applied).toBe(CLIENTS * CALLS);
    if (process.env.LEDGER_RESTART === "1") expect(restarts).toBe(1);

    const figures = {
      clients: CLIENTS,
      objects: OBJECTS,
      callsPerClient: CALLS,
      inFlightPerClient: WINDOW,
      confirmedIncrements: applied,
      deliveries: runs,
      duplicateDeliveriesAbsorbed: runs - applied,
      socketsCutByChaos: socketsCut,
      chaosRounds: chaosCalls,
      wranglerRestarts: restarts,
      restartDowntimeMs: downMs,
      reconnects,
      appLevelRetries: appRetries,
      timeouts,
      durationS: Number(seconds.toFixed(1)),
      callsPerSecond: Math.round(applied / seconds),
    };
    console.log(`reliability ledger: ${JSON.stringify(figures, null, 2)}`);

    for (const client of [...clients, ...chaosClients]) client[Symbol.dispose]();
  }, 170_000);
});
