/**
 * Helpers on a test client's connection: what it connected to and how each attempt went, cutting
 * the connection as a network failure would, and waiting for a connection state.
 */
import { rpcConnection, type ConnectionState } from "@dorpc/rpc";
import type { TestClient } from "./client.js";
import { describe, TestingError } from "./errors.js";
import { recordOf } from "./registry.js";
import type { ConnectionAttempt } from "./upgrade-transport.js";

/** What a test client connects to, and its connections so far. See {@link testConnection}. */
export interface TestConnection {
  /** The `{binding}` segment of the connect URL (the namespace's env key unless `options.binding` was given). */
  readonly binding: string;
  /** The `{instance}` segment: the name, or the id's name or hex string. */
  readonly instance: string;
  /** The object's id. */
  readonly id: DurableObjectId;
  /** A fresh stub of the object, e.g. for the `cloudflare:test` helpers this package does not wrap. */
  readonly stub: DurableObjectStub;
  /** The URL of every upgrade request (`http://dorpc.test{prefix}/{binding}/{instance}?{query}`). */
  readonly url: string;
  /** Every connection attempt, oldest first: `attempts.length` counts connects and reconnects. */
  readonly attempts: readonly ConnectionAttempt[];
  /** The client end of the open connection's socket, or `undefined` while not connected. */
  readonly socket: WebSocket | undefined;
}

/**
 * The connection record of `client`: the object it talks to, every connection attempt (status,
 * socket, close code) and the socket open now. Live: the arrays and getters reflect later
 * connections too.
 *
 * ```ts
 * expect(testConnection(counter).attempts).toHaveLength(2); // it reconnected once
 * expect(testConnection(counter).attempts[0]!.closed?.code).toBe(1006);
 * ```
 */
export function testConnection(client: TestClient<unknown>): TestConnection {
  const record = recordOf(client, "testConnection");
  return {
    binding: record.binding,
    instance: record.instance,
    id: record.id,
    get stub() {
      return record.namespace.get(record.id);
    },
    url: record.url,
    attempts: record.transport.attempts,
    get socket() {
      return record.transport.current()?.socket;
    },
  };
}

/** Options for {@link dropConnection}. */
export interface DropOptions {
  /** Close code the client sees. Default 1006 (abnormal closure: what a lost network looks like). */
  code?: number;
  /** Close reason the client sees. Default `"connection dropped by test"`. */
  reason?: string;
}

/**
 * Cuts the client's open connection as a network failure would: the client sees it close with
 * code 1006 (or `options.code`) at once — calls waiting for a reply are resent on the next
 * connection and answered once (with `exactlyOnce: false` they fail with `DISCONNECTED`,
 * idempotent ones excepted), queued calls wait — and it reconnects per its `reconnect` option.
 * The object sees its socket close too (with code 4006, since 1006 cannot be sent), so its
 * `webSocketClose` runs.
 *
 * Synchronous: when it returns, the client has already seen the close (its state is
 * `"reconnecting"`, or `"idle"` with `reconnect: false`).
 *
 * @throws {TestingError} `NOT_CONNECTED` when the client has no open connection (it connects on
 *   its first call; `await rpcConnection(client).waitForOpen()` connects it; one being opened is
 *   waited for with `waitForState(client, "open")`), `BAD_OPTION`.
 */
export function dropConnection(client: TestClient<unknown>, options: DropOptions = {}): void {
  const record = recordOf(client, "dropConnection");
  if (typeof options !== "object" || options === null) {
    throw new TestingError("BAD_OPTION", `dropConnection's options must be an object, got ${describe(options)}.`);
  }
  const code = options.code ?? 1006;
  const reason = options.reason ?? "connection dropped by test";
  if (!Number.isInteger(code) || code < 1000 || code > 4999) {
    throw new TestingError("BAD_OPTION", `options.code must be a WebSocket close code from 1000 to 4999, got ${describe(code)}.`);
  }
  if (typeof reason !== "string") throw new TestingError("BAD_OPTION", `options.reason must be a string, got ${describe(reason)}.`);
  if (!record.transport.drop(code, reason)) {
    const state = rpcConnection(client).state;
    throw new TestingError(
      "NOT_CONNECTED",
      state === "disposed"
        ? `dropConnection: the client of ${record.binding}/${record.instance} was disposed; it has no connection to drop. Make a new client.`
        : state === "connecting" || state === "reconnecting"
          ? `dropConnection: ${record.binding}/${record.instance} has no open connection to drop yet (state "${state}"): await waitForState(client, "open") (or rpcConnection(client).waitForOpen()) first.`
          : `dropConnection: ${record.binding}/${record.instance} has no open connection to drop (state "${state}"). A client connects on its first call; await rpcConnection(client).waitForOpen() to connect it.`,
    );
  }
}

/** Options for {@link waitForState}. */
export interface WaitForStateOptions {
  /** Give up after this many ms with a `TestingError` of code `TIMEOUT`. Default 4,000 (below a test's 5 s timeout). */
  timeout?: number;
}

const STATES: readonly ConnectionState[] = ["idle", "connecting", "open", "reconnecting", "disposed"];

/** The longest a timer can wait (a longer `setTimeout` fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Resolves once the client's connection is in `state` (at once if it already is). Only waits:
 * it never connects an idle client (`rpcConnection(client).waitForOpen()` does).
 *
 * ```ts
 * dropConnection(counter);
 * await waitForState(counter, "open"); // reconnected
 * ```
 *
 * @throws {TestingError} `TIMEOUT` after `options.timeout` ms (the message lists the states seen
 *   meanwhile), `DISPOSED` when the client is (or is then) disposed and another state is
 *   awaited, `BAD_OPTION` for an unknown state or a timeout that is not 1 to 2³¹ − 1 ms.
 */
export function waitForState(client: TestClient<unknown>, state: ConnectionState, options: WaitForStateOptions = {}): Promise<void> {
  let record: ReturnType<typeof recordOf>;
  try {
    record = recordOf(client, "waitForState");
  } catch (error) {
    return Promise.reject(error);
  }
  if (typeof options !== "object" || options === null) {
    return Promise.reject(new TestingError("BAD_OPTION", `waitForState's options must be an object, got ${describe(options)}.`));
  }
  if (!STATES.includes(state)) {
    return Promise.reject(new TestingError("BAD_OPTION", `Unknown connection state ${describe(state)}; one of: ${STATES.join(", ")}.`));
  }
  // Below a test's default 5 s timeout, so this error (with the states seen) is what fails the test.
  const timeout = options.timeout ?? 4_000;
  if (typeof timeout !== "number" || !(timeout > 0) || !Number.isFinite(timeout) || timeout > MAX_TIMER_MS) {
    return Promise.reject(
      new TestingError("BAD_OPTION", `options.timeout must be a positive number of ms up to ${MAX_TIMER_MS}, got ${describe(timeout)}.`),
    );
  }
  const connection = rpcConnection(client);
  if (connection.state === state) return Promise.resolve();
  if (connection.state === "disposed") {
    return Promise.reject(
      new TestingError("DISPOSED", `${record.binding}/${record.instance} is disposed: it never reaches state "${state}".`),
    );
  }
  const seen: ConnectionState[] = [connection.state];
  return new Promise<void>((resolve, reject) => {
    const done = (error?: TestingError): void => {
      clearTimeout(timer);
      off();
      if (error) reject(error);
      else resolve();
    };
    const off = connection.onStateChange((next) => {
      seen.push(next);
      if (next === state) done();
      else if (next === "disposed") {
        done(new TestingError("DISPOSED", `${record.binding}/${record.instance} was disposed while waiting for state "${state}".`));
      }
    });
    const timer = setTimeout(() => {
      const hint =
        connection.state !== "idle" || state !== "open"
          ? ""
          : seen.includes("connecting") || seen.includes("reconnecting")
            ? " It tried to connect and is idle again: the connection was refused or failed (a call made meanwhile failed with CONNECT_FAILED or DISCONNECTED, saying why; testConnection(client) shows the object's answer)."
            : " An idle client only connects on a call or rpcConnection(client).waitForOpen().";
      done(
        new TestingError(
          "TIMEOUT",
          `${record.binding}/${record.instance} did not reach state "${state}" within ${timeout} ms (states seen: ${seen.join(" → ")}).${hint}`,
        ),
      );
    }, timeout);
  });
}
