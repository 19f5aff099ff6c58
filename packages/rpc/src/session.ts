/**
 * The client side of one logical connection: ids, pending calls, batching, timeouts, replies.
 * It speaks to the network only through an `RpcTransport` (transport.ts).
 *
 * Invariants:
 *  - Every call settles exactly once: by its reply, its timeout, its abort signal, the
 *    connection closing (`DISCONNECTED`) or disposal (`DISPOSED`), whichever comes first. A reply
 *    that arrives after that is ignored.
 *  - Calls queued in the same microtask leave in one frame, in the order they were made.
 *  - Arguments are encoded when the call is queued (when the chain is awaited), so later
 *    mutation of an argument does not change what is sent.
 *  - A connection that closes is not reused; the next call opens a new one. Calls already sent
 *    are rejected, never replayed: the Durable Object may already have run them.
 *
 * Internal module.
 */
import { decodeContext, fromRecords, isJsonSafe, readValue, toRecords } from "./codec.js";
import { FrameKind, ReplyStatus, type ChainStep } from "./envelopes.js";
import { isRpcErrorCode, RpcError } from "./errors.js";
import { readFrame, writeFrame, type IncomingData } from "./frame.js";
import type { RpcLimits } from "./limits.js";
import type { RpcTransport, TransportFactory, TransportHandler } from "./transport.js";

/** One link of an operation chain as the proxy builds it: a property read or a call. */
export interface ChainNode {
  readonly parent: ChainNode | undefined;
  /** Property name for a read; `undefined` for a call. */
  readonly key: string | undefined;
  /** Arguments for a call. */
  readonly args: readonly unknown[] | undefined;
}

export interface SessionOptions {
  transport: TransportFactory;
  /** Default per-call timeout in ms; 0 disables. */
  timeout: number;
  limits: Readonly<RpcLimits>;
  /** Describes the endpoint in error messages. */
  label: string;
}

export interface CallOptions {
  timeout?: number;
  signal?: AbortSignal;
}

interface Pending {
  resolve(value: unknown): void;
  reject(reason: unknown): void;
  timer: ReturnType<typeof setTimeout> | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

type State = "idle" | "connecting" | "open" | "disposed";

export class ClientSession implements TransportHandler {
  private state: State = "idle";
  private transport: RpcTransport | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Envelopes (JSON text) waiting for the next flush. */
  private parts: string[] = [];
  private blobs: Uint8Array[] = [];
  private flushScheduled = false;
  private readonly flushBound = () => this.flush();

  constructor(private readonly options: SessionOptions) {}

  get disposed(): boolean {
    return this.state === "disposed";
  }

  /** Number of calls waiting for a reply. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Sends the chain ending at `node`; settles through `resolve`/`reject` exactly once. */
  call(node: ChainNode, resolve: (value: unknown) => void, reject: (reason: unknown) => void, callOptions?: CallOptions): void {
    if (this.state === "disposed") {
      reject(new RpcError("DISPOSED", `The client for ${this.options.label} was disposed; create a new one to make calls.`));
      return;
    }
    const signal = callOptions?.signal;
    if (signal?.aborted) {
      reject(signal.reason ?? new RpcError("TIMEOUT", "The call was aborted before it was sent."));
      return;
    }
    const { limits } = this.options;
    if (this.pending.size >= limits.maxPendingCalls) {
      reject(new RpcError("LIMIT", `${this.pending.size} calls already wait for a reply on ${this.options.label} (limits.maxPendingCalls).`));
      return;
    }

    const id = this.nextId++;
    const blobMark = this.blobs.length;
    let json: string;
    try {
      json = JSON.stringify([id, this.encodeChain(node)]);
    } catch (error) {
      this.blobs.length = blobMark;
      reject(error instanceof RpcError ? error : new RpcError("ENCODE", `Cannot encode the call: ${String(error)}`, { cause: error }));
      return;
    }

    const entry: Pending = { resolve, reject, timer: undefined, signal, onAbort: undefined };
    const timeout = callOptions?.timeout ?? this.options.timeout;
    if (timeout > 0) {
      entry.timer = setTimeout(() => {
        this.settle(id)?.reject(new RpcError("TIMEOUT", `No reply from ${this.options.label} within ${timeout} ms.`));
      }, timeout);
    }
    if (signal) {
      entry.onAbort = () => this.settle(id)?.reject(signal.reason);
      signal.addEventListener("abort", entry.onAbort, { once: true });
    }
    this.pending.set(id, entry);
    this.parts.push(json);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(this.flushBound);
    }
    if (this.state === "idle") this.connect();
  }

  private encodeChain(node: ChainNode): ChainStep[] {
    let length = 0;
    for (let n: ChainNode | undefined = node; n; n = n.parent) length++;
    if (length > this.options.limits.maxChainLength) {
      throw new RpcError("ENCODE", `The chain has ${length} steps, more than limits.maxChainLength (${this.options.limits.maxChainLength}).`);
    }
    const steps: ChainStep[] = new Array(length);
    for (let n: ChainNode | undefined = node; n; n = n.parent) {
      const args = n.args;
      if (args === undefined) steps[--length] = n.key!;
      else if (isJsonSafe(args)) steps[--length] = [0, ...args];
      else steps[--length] = [1, toRecords(args, { blobs: this.blobs, stack: true })];
    }
    return steps;
  }

  private connect(): void {
    this.state = "connecting";
    const transport = this.options.transport(this);
    this.transport = transport;
    transport.open().then(
      () => {
        if (this.transport !== transport || this.state !== "connecting") return;
        this.state = "open";
        this.flush();
      },
      () => {
        // onClose has run (transport contract) and rejected everything queued.
      },
    );
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.state !== "open" || this.parts.length === 0) return;
    const parts = this.parts;
    const blobs = this.blobs;
    this.parts = [];
    this.blobs = [];
    const body = parts.length === 1 ? `[${parts[0]}]` : `[${parts.join(",")}]`;
    this.transport!.send(writeFrame(FrameKind.Calls, body, blobs));
  }

  /** Removes and returns the pending entry for `id`, clearing its timer and abort listener. */
  private settle(id: number): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    if (entry.onAbort) entry.signal!.removeEventListener("abort", entry.onAbort);
    return entry;
  }

  onMessage(data: IncomingData): void {
    let frame;
    try {
      frame = readFrame(data, this.options.limits);
      if (frame && frame.kind !== FrameKind.Replies) throw new RpcError("PROTOCOL", "Server sent a frame that is not a reply frame.");
      if (frame && !Array.isArray(frame.body)) throw new RpcError("PROTOCOL", "Reply frame body is not an array.");
    } catch (error) {
      this.fail(error as RpcError);
      return;
    }
    if (!frame) return; // not a dorpc frame: the Durable Object's own traffic
    const ctx = decodeContext(frame.blobs, this.options.limits);
    for (const reply of frame.body as unknown[]) {
      if (!Array.isArray(reply) || typeof reply[0] !== "number") continue;
      const entry = this.settle(reply[0]);
      if (!entry) continue; // timed out, aborted, or never ours
      try {
        switch (reply.length === 1 ? -1 : reply[1]) {
          case -1:
            entry.resolve(undefined);
            break;
          case ReplyStatus.OkJson:
          case ReplyStatus.OkRecords:
            entry.resolve(readValue(reply[1], reply[2], ctx));
            break;
          case ReplyStatus.Threw:
            entry.reject(fromRecords(reply[2], ctx));
            break;
          case ReplyStatus.Failed: {
            const code = isRpcErrorCode(reply[2]) ? reply[2] : "INTERNAL";
            entry.reject(new RpcError(code, typeof reply[3] === "string" ? reply[3] : "The server failed without a message."));
            break;
          }
          default:
            entry.reject(new RpcError("PROTOCOL", `Reply with unknown status ${String(reply[1])}.`));
        }
      } catch (error) {
        entry.reject(error);
      }
    }
  }

  /** The server sent something unreadable: the connection cannot be trusted any more. */
  private fail(error: RpcError): void {
    this.transport?.close(1008, error.message.slice(0, 120));
  }

  onClose(code: number, reason: string): void {
    if (this.state !== "disposed") this.state = "idle";
    this.transport = undefined;
    this.parts = [];
    this.blobs = [];
    const error = new RpcError(
      "DISCONNECTED",
      `Connection to ${this.options.label} closed (code ${code}${reason ? `: ${reason}` : ""}) before the reply arrived.`,
    );
    for (const id of [...this.pending.keys()]) this.settle(id)!.reject(error);
  }

  /** Closes the connection and rejects every waiting call with `DISPOSED`. Idempotent. */
  dispose(): void {
    if (this.state === "disposed") return;
    this.state = "disposed";
    const error = new RpcError("DISPOSED", `The client for ${this.options.label} was disposed while the call was waiting.`);
    for (const id of [...this.pending.keys()]) this.settle(id)!.reject(error);
    this.parts = [];
    this.blobs = [];
    this.transport?.close(1000, "client disposed");
    this.transport = undefined;
  }
}
