/**
 * Helpers that act on the Durable Object behind a test client, through the Workers Vitest
 * pool's `cloudflare:test` module: evict it, run code inside it, read its storage, run its alarm.
 * They reach the object with a fresh stub each time (a stub that saw its object evicted or reset
 * may be unusable), and only work for objects defined in the test Worker (`main`), as the pool's
 * own helpers do.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { TestingError } from "./errors.js";
import { recordOf, type TestClientRecord } from "./registry.js";
import type { TestClient } from "./client.js";

/** The instance type of a class, or `T` itself when it is already an instance type. */
export type InstanceOf<T> = T extends abstract new (...args: never[]) => infer I ? I : T;

/** Options for {@link evictObject}. */
export interface EvictOptions {
  /**
   * What happens to the object's hibernatable WebSockets. `"hibernate"` (default): they stay
   * open and the client keeps its connection; the next call wakes a new instance. `"close"`:
   * they are closed, and the client sees the close and reconnects (per its `reconnect` option).
   */
  webSockets?: "hibernate" | "close";
}

function stubOf(record: TestClientRecord): DurableObjectStub {
  return record.namespace.get(record.id);
}

function label(record: TestClientRecord): string {
  return `${record.binding}/${record.instance}`;
}

/**
 * Evicts the object behind `client`, as the runtime does to an idle object: its in-memory state
 * is gone, its storage stays, and the next request constructs a new instance. By default its
 * hibernatable WebSockets survive (the client's connection stays open: this is hibernation);
 * with `{ webSockets: "close" }` they are closed, and `evictObject` resolves once the client has
 * seen its connection close, so the next call goes out on a new connection.
 *
 * The object must be running (the pool refuses to evict an idle one): make a call first.
 *
 * @throws {TestingError} `RUNTIME` when the pool refuses (e.g. the object is not running),
 *   `BAD_OPTION` for an unknown `webSockets` value, `NOT_A_TEST_CLIENT`.
 */
export async function evictObject(client: TestClient<unknown>, options: EvictOptions = {}): Promise<void> {
  const record = recordOf(client, "evictObject");
  if (typeof options !== "object" || options === null) {
    throw new TestingError("BAD_OPTION", `evictObject's options must be an object, got ${String(options)}.`);
  }
  const webSockets = options.webSockets ?? "hibernate";
  if (webSockets !== "hibernate" && webSockets !== "close") {
    throw new TestingError("BAD_OPTION", `options.webSockets must be "hibernate" or "close", got ${JSON.stringify(webSockets)}.`);
  }
  const open = record.transport.current();
  const closed = webSockets === "close" && open ? whenClosed(open.socket!) : undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    // The runtime waits (about 30 s, past a test's timeout) while the object holds active
    // references, such as sockets accepted without the hibernation API (`hibernation: false`).
    await Promise.race([
      evictDurableObject(stubOf(record), { webSockets }),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the runtime did not evict it within ${EVICT_WAIT_MS} ms`)), EVICT_WAIT_MS);
      }),
    ]);
  } catch (error) {
    // Its own sentence, whether or not the runtime's message ends with a full stop.
    const message = String((error as Error)?.message ?? error).replace(/\.+$/, "");
    throw new TestingError(
      "RUNTIME",
      `Could not evict ${label(record)}: ${message}. The runtime refuses an object that is not running (make a call first) and waits while it runs a request (a call still in flight) or holds active references, such as sockets of an object served with hibernation: false (close its clients first: they cannot hibernate). The eviction may still happen once that ends.`,
      { cause: error },
    );
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
  // The transport reports the close to the client from the same event; waiting for it here
  // means the test's next call cannot race the old connection.
  await closed;
}

/** How long `evictObject` waits for the runtime: below a test's default 5 s timeout. */
const EVICT_WAIT_MS = 3_000;

/** Resolves when `socket` fires "close" (immediately when it is already closed). */
function whenClosed(socket: WebSocket): Promise<void> {
  if (socket.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => socket.addEventListener("close", () => resolve(), { once: true }));
}

/**
 * Runs `callback` inside the object behind `client`, with its instance and its
 * `DurableObjectState` (`state.storage`, `state.getWebSockets()`…), and returns what it returns.
 * The `runInDurableObject` of `cloudflare:test`, addressed by the client. Wakes the object if it
 * was evicted or hibernating.
 *
 * ```ts
 * const sockets = await runInObject(counter, (_instance, state) => state.getWebSockets().length);
 * ```
 */
export function runInObject<T, R>(
  client: TestClient<T>,
  callback: (instance: InstanceOf<T>, state: DurableObjectState) => R | Promise<R>,
): Promise<R> {
  let record: TestClientRecord;
  try {
    record = recordOf(client, "runInObject");
  } catch (error) {
    return Promise.reject(error);
  }
  if (typeof callback !== "function") {
    return Promise.reject(new TestingError("BAD_OPTION", "runInObject needs a callback as its second argument."));
  }
  return runInDurableObject(stubOf(record), callback as (instance: DurableObject, state: DurableObjectState) => R | Promise<R>);
}

/**
 * Reads the key-value storage of the object behind `client`: the value stored under `key`
 * (`undefined` when absent), or, without a key, every entry as a `Map`. Works for SQLite-backed
 * objects (their `storage.kv`) and key-value ones alike; for SQL tables use {@link runInObject}.
 */
export function readStorage(client: TestClient<unknown>): Promise<Map<string, unknown>>;
export function readStorage<V = unknown>(client: TestClient<unknown>, key: string): Promise<V | undefined>;
export function readStorage(client: TestClient<unknown>, key?: string): Promise<unknown> {
  let record: TestClientRecord;
  try {
    record = recordOf(client, "readStorage");
  } catch (error) {
    return Promise.reject(error);
  }
  if (key !== undefined && typeof key !== "string") {
    return Promise.reject(new TestingError("BAD_OPTION", `readStorage's key must be a string, got ${typeof key}.`));
  }
  return runInDurableObject(stubOf(record), (_instance, state) => (key === undefined ? state.storage.list() : state.storage.get(key)));
}

/**
 * Runs the alarm of the object behind `client` now, if one is scheduled, and removes it.
 * Resolves `true` if an alarm ran. The `runDurableObjectAlarm` of `cloudflare:test`.
 */
export function runAlarm(client: TestClient<unknown>): Promise<boolean> {
  let record: TestClientRecord;
  try {
    record = recordOf(client, "runAlarm");
  } catch (error) {
    return Promise.reject(error);
  }
  return runDurableObjectAlarm(stubOf(record));
}
