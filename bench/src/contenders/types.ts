/**
 * The one interface every contender implements. A contender is one small file in this folder
 * plus one line in index.ts; the harness knows nothing else about it.
 */
import type { SocketTimes, WireCounters } from "../wire.js";
import type { Payload } from "../payloads.js";

/**
 * The methods every contender's Durable Object serves (worker/counter-impl.ts), as the clients
 * see them. The client side does not import Worker code, so this is declared here.
 */
export interface CounterMethods {
  noop(): void;
  increment(by?: number): number;
  getValue(): number;
  echo<T>(value: T): T;
  /** When the serving object was constructed (its clock, ms): a later value after idling = it was evicted. */
  bornAt(): number;
  /** Takes `ms` on the server without holding its CPU. */
  slow(ms: number): Promise<void>;
}

/**
 * The scenarios that need more than a call: each contender says per feature whether it runs
 * them. `pipeline`: three dependent calls; `callback`: the server calls a client function;
 * `fanout`: one call reaches every connected client; `http`: calls over a one-shot HTTP request.
 */
export type Feature = "pipeline" | "callback" | "fanout" | "http";

/**
 * `true`: runs it. `unsupported`: the library cannot do it (a result, shown as such).
 * `pending`: the library is meant to and the bench slot is ready, but the feature is not built
 * yet (shown as "not run" with the reason; never an error).
 */
export type Support = true | { unsupported: string } | { pending: string };

/** An open connection to one Durable Object instance of the contender. */
export interface Conn {
  noop(): Promise<void>;
  increment(): Promise<number>;
  getValue(): Promise<number>;
  echo<T>(value: T): Promise<T>;
  bornAt(): Promise<number>;
  slow(ms: number): Promise<void>;
  /**
   * Three dependent calls, `echo(echo(getValue()))`: pipelined where the library can send a call
   * that uses a result not received yet, otherwise three awaited round trips (`Contender.pipeline`
   * says which). Only when `feature("pipeline")` is true.
   */
  chain3?(): Promise<number>;
  /**
   * The object calls a function this client passed `times` times and returns the sum of what it
   * returned (the function returns its argument i, so the sum is times·(times−1)/2). Only when
   * `feature("callback")` is true.
   */
  callback?(times: number): Promise<number>;
  /** Makes this connection a fan-out listener; `onMessage` gets every message sent by `fanOut`. */
  listen?(onMessage: (message: string) => void): Promise<void>;
  /** Asks the object to send `message` to every other listener of the object. */
  fanOut?(message: string): Promise<unknown>;
  /** Closes the connection and waits (bounded) for the close handshake. */
  close(): Promise<void>;
}

/** What `connect` measured: the handshake and the first call are timed separately. */
export interface Connected {
  conn: Conn;
  /** ns from starting to connect until the WebSocket "open" event. */
  handshakeNs: number;
  /** ns from starting to connect until the first call's (getValue) reply. */
  totalNs: number;
}

export interface Contender {
  /** Short id used in tables, file names and instance names. */
  readonly name: string;
  /** Human label for the log. */
  readonly label: string;
  /** What its wire is, in one sentence (the entry's contender list). */
  readonly wire?: string;
  /**
   * The whole contender is a slot for something not built yet (e.g. dorpc with an exactly-once
   * record): every scenario reports it as not run, with this reason, and it never connects.
   */
  readonly pending?: string;
  /** How `chain3` runs its three calls, when it does. */
  readonly pipeline?: "pipelined" | "awaited";
  /**
   * Whether this contender can carry `payload` at all: `true`, or why not. Only for limits known
   * by design (the floor speaks JSON plus one byte array). Everything else is tried, and a
   * failure or a wrong answer is reported as unsupported with the error it gave.
   */
  supports(payload: Payload): true | string;
  /** Whether it runs the scenarios of `feature` (see `Support`). */
  feature(feature: Feature): Support;
  /**
   * Opens a connection to `instance` and makes one first call (getValue), so every contender's
   * connection is fully set up on both ends before anything is timed on it. Every socket must be
   * a counting socket bound to `counters`.
   */
  connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected>;
  /**
   * One new HTTP request carrying `calls` getValue() calls; resolves with their results. Only
   * when `feature("http")` is true.
   */
  httpBatch?(baseUrl: string, instance: string, calls: number): Promise<number[]>;
}

export type CountingSocket = WebSocket & { readonly times: SocketTimes };

export function elapsedNs(from: bigint, to: bigint = process.hrtime.bigint()): number {
  return Number(to - from);
}

/** The sum `callback(times)` must return: the client's function answers i for call i. */
export function callbackSum(times: number): number {
  return (times * (times - 1)) / 2;
}
