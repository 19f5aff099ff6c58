/**
 * Reliability end to end (issues 6 and 12): Node clients over real WebSockets against
 * `wrangler dev` running test/reliability/wrangler.toml, with real faults — wrangler stopped and
 * started again on the same port mid-call (storage persisted with --persist-to), sockets closed
 * by the Durable Object at random points under load, and calls whose answer is lost after they
 * ran (the object closes the caller's socket before the answer leaves).
 *
 * Exactly once (the default): a call cut by any of these is resent on the next connection and
 * answered from the object's delivery record if it ran, or run if it did not. The ledger: plain,
 * non-idempotent `increment()` calls, no application-level retry; every call must resolve once,
 * none with DISCONNECTED, and each object's counter must equal the number of calls its clients
 * made — nothing lost, nothing doubled.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRpcClient, rpcConnection, type RpcError, type RpcClient } from "@dorpc/rpc";
import { startWranglerDev, type WranglerDev } from "../support/wrangler-dev.js";

/** Reliable's API (test/reliability/worker.ts), restated so this Node test needs no workerd types. */
interface Reliable {
  increment(by?: number): number;
  incrementThenDrop(by?: number): number;
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
  it("every in-flight call settles exactly once with its result; the count is exact after the restart", async () => {
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

    // In flight when wrangler goes away: a long call, and a plain increment queued behind it on
    // the server (sequential ordering).
    const long = tracked(client.sleep(1_500));
    const plain = tracked(client.increment());
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(connection.pendingCalls).toBe(2);

    const port = dev.port;
    await dev.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(connection.state).toBe("reconnecting");
    // Calls made while the server is down wait for the next connection.
    const whileDown = tracked(client.increment(10));
    expect(long.fulfilled + long.rejected + plain.fulfilled + plain.rejected).toBe(0); // waiting to be resent

    dev = await start(port);
    await connection.waitForOpen();
    await Promise.all([long.done, plain.done, whileDown.done]);
    expect(long).toMatchObject({ fulfilled: 1, rejected: 0, value: "slept" });
    expect(plain).toMatchObject({ fulfilled: 1, rejected: 0, value: 4 });
    expect(whileDown).toMatchObject({ fulfilled: 1, rejected: 0, value: 14 });
    expect(await client.getValue()).toBe(14);
    expect(states[0]).toBe("connecting");
    expect(states.slice(1, 3)).toEqual(["open", "reconnecting"]);
    expect(states.at(-1)).toBe("open");
  });
});

/** Calls per client in the ledger: 200 in `npm test`, `LEDGER_CALLS=1000` for the full run (docs/reliability.md). */
const LEDGER_CALLS = Number(process.env.LEDGER_CALLS ?? 200);

describe("load ledger under faults", () => {
  it(`50 clients × ${LEDGER_CALLS} plain increments over 8 objects, sockets cut at random, answers lost after runs, one wrangler restart: every call resolves once, none DISCONNECTED, the counts are exact`, async () => {
    const CLIENTS = 50;
    const CALLS = LEDGER_CALLS;
    const OBJECTS = 8;
    const WINDOW = 8; // calls in flight per client
    const LOST_ANSWER_EVERY = 50; // every 50th call makes the object drop its answer on purpose
    const run = Date.now().toString(36);
    const objectName = (k: number) => `ledger-${run}-${k}`;

    const made = new Array<number>(OBJECTS).fill(0);
    let completed = 0;
    let lostOnPurpose = 0;
    let reconnects = 0;
    const failures: string[] = [];
    const clients: RpcClient<Reliable>[] = [];
    for (let i = 0; i < CLIENTS; i++) {
      const client = createRpcClient<Reliable>("RELIABLE", objectName(i % OBJECTS), {
        baseUrl: dev.baseUrl,
        reconnect: RECONNECT,
        timeout: 120_000,
        connectTimeout: CONNECT_TIMEOUT,
      });
      rpcConnection(client).onStateChange((state) => {
        if (state === "reconnecting") reconnects++;
      });
      clients.push(client);
    }

    async function drive(i: number): Promise<void> {
      const client = clients[i]!;
      let next = 0;
      const lane = async () => {
        while (next < CALLS) {
          const n = next++;
          made[i % OBJECTS]!++;
          try {
            if (n % LOST_ANSWER_EVERY === LOST_ANSWER_EVERY - 1) {
              lostOnPurpose++;
              await client.incrementThenDrop();
            } else await client.increment();
            completed++;
          } catch (error) {
            failures.push(`${(error as RpcError).code}: ${(error as Error).message}`);
          }
        }
      };
      await Promise.all(Array.from({ length: WINDOW }, lane));
    }

    // Chaos: at random intervals a separate client asks a random object to close some of its
    // other sockets (1011) — clients lose their connection at random points of their run.
    let chaosOn = true;
    let socketsCut = 0;
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
        } catch {
          // the chaos client's own connection may be down (restart): skip this round
        }
      }
    })();

    // One restart of wrangler dev once ~40% of the calls are done.
    let restarts = 0;
    let downMs = 0;
    const restarter = (async () => {
      while (completed < CLIENTS * CALLS * 0.4) await new Promise((resolve) => setTimeout(resolve, 50));
      const result = await restart();
      downMs = result.downMs;
      restarts++;
    })();

    const began = Date.now();
    const progress = setInterval(() => {
      const open = clients.filter((client) => rpcConnection(client).state === "open").length;
      console.log(
        `ledger progress: ${completed} done, ${open}/${CLIENTS} open, ${reconnects} reconnects, ${socketsCut} cut, ${restarts} restarts, ${((Date.now() - began) / 1000).toFixed(0)} s`,
      );
    }, 5_000);
    await Promise.all(clients.map((_, i) => drive(i))).finally(() => clearInterval(progress));
    const seconds = (Date.now() - began) / 1000;
    chaosOn = false;
    await Promise.all([chaos, restarter]);

    expect(failures, "calls that did not resolve with their result").toEqual([]);
    expect(completed).toBe(CLIENTS * CALLS);
    for (let k = 0; k < OBJECTS; k++) {
      expect(await chaosClients[k]!.getValue(), `object ${k}: its counter against the calls its clients made`).toBe(made[k]);
    }
    expect(restarts).toBe(1);
    // The chaos happened: sockets were cut, and clients reconnected.
    expect(socketsCut).toBeGreaterThan(0);
    expect(reconnects).toBeGreaterThan(0);

    const figures = {
      clients: CLIENTS,
      objects: OBJECTS,
      callsPerClient: CALLS,
      inFlightPerClient: WINDOW,
      increments: completed,
      answersLostOnPurpose: lostOnPurpose,
      socketsCutByChaos: socketsCut,
      wranglerRestarts: restarts,
      restartDowntimeMs: downMs,
      reconnects,
      durationS: Number(seconds.toFixed(1)),
      callsPerSecond: Math.round(completed / seconds),
    };
    console.log(`reliability ledger: ${JSON.stringify(figures, null, 2)}`);

    for (const client of [...clients, ...chaosClients]) client[Symbol.dispose]();
  }, 300_000);
});
