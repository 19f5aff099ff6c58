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
}

/** An open connection to one Durable Object instance of the contender. */
export interface Conn {
  noop(): Promise<void>;
  increment(): Promise<number>;
  getValue(): Promise<number>;
  echo<T>(value: T): Promise<T>;
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
  /**
   * Whether this contender can carry `payload` at all: `true`, or why not. Only for limits known
   * by design (the floor speaks JSON plus one byte array). Everything else is tried, and a
   * failure or a wrong answer is reported as unsupported with the error it gave.
   */
  supports(payload: Payload): true | string;
  /**
   * Opens a connection to `instance` and makes one first call (getValue), so every contender's
   * connection is fully set up on both ends before anything is timed on it. Every socket must be
   * a counting socket bound to `counters`.
   */
  connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected>;
}

export type CountingSocket = WebSocket & { readonly times: SocketTimes };

export function elapsedNs(from: bigint, to: bigint = process.hrtime.bigint()): number {
  return Number(to - from);
}
