/**
 * The server side of the protocol: one incoming frame in, replies out. Runtime-neutral: it
 * sees a connection only as a `ReplyChannel` and the Durable Object only as an object, so it
 * runs in Node unit tests exactly as in workerd.
 *
 * Invariants:
 *  - Nothing survives between frames except the set of ids still running per connection (for
 *    duplicate detection and the pending limit), which is empty whenever the object can
 *    hibernate. Everything else a reply needs is in the frame.
 *  - Calls of one connection run in the order sent. With `ordering: "sequential"` (default) a
 *    call that awaits holds back the calls after it until it settles; with "concurrent" each
 *    call starts when it arrives and only its synchronous part runs before the next starts.
 *  - Every call with a recoverable id gets exactly one reply. A frame that cannot be read at all
 *    closes the connection with 1008 (malformed) or 1009 (too big), because no id can be
 *    answered; other connections and the object's state are untouched.
 *  - Replies produced in the same microtask leave in one frame.
 *
 * Internal module.
 */
import { AccessPolicy, findMember, isPlainData, notFound, readDataProperty, type AccessOptions, type Member } from "./access.js";
import {
  decodeContext,
  type DecodeContext,
  type EncodeContext,
  type PendingBlob,
  readArgs,
  resolveBlobs,
  writeThrown,
  writeValue,
} from "./codec.js";
import { CloseCode, FrameKind, HEARTBEAT_PONG, type RawFrame, ReplyStatus } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { readFrame, writeFrame, type IncomingData, type WireFrame } from "./frame.js";
import { resolveLimits, type RpcLimits } from "./limits.js";
import { platformIdentities } from "./platform-state.js";
import { RpcTarget } from "./rpc-target.js";

/** Options of the server side. Validated once per options object. */
export interface RpcServerOptions {
  /** Send `Error.stack` of thrown errors to clients. Default `false`: stacks reveal code paths. */
  exposeErrorStack?: boolean;
  /** Receive-side limits. */
  limits?: Partial<RpcLimits>;
  /** Narrow what chains may reach (see access.ts for the fixed rules). */
  access?: AccessOptions;
  /** Path prefix of the RPC endpoint, as routed by `routeDORequest`. Default `/__rpc`. */
  prefix?: string;
  /**
   * `"sequential"` (default): calls from one connection run one after another in the order
   * sent, even when a call awaits I/O. `"concurrent"`: each call starts as soon as it arrives
   * (still in order), so a slow call does not hold back the ones after it.
   */
  ordering?: "sequential" | "concurrent";
  /**
   * Runs on each WebSocket upgrade; what it returns is stored with the socket (surviving
   * hibernation) and read by `rpcCaller()` during calls. Throwing refuses the connection with
   * 401. Example: `identify: readIdentityHeader` behind `routeDORequest` + `withIdentity`.
   */
  identify?: (request: Request) => unknown;
  /**
   * `true` (default): sockets are accepted with the hibernation API (`ctx.acceptWebSocket`), so
   * the object can be evicted between messages and heartbeats never wake it. `false`: sockets are
   * `accept()`ed and served from event listeners — measurably lower latency per call under
   * workerd (see docs/performance.md), but the object stays in memory while any client is
   * connected and every socket closes when the object is reset.
   */
  hibernation?: boolean;
}

/** Options after validation, with the derived policy. */
export interface ResolvedServerOptions {
  readonly exposeErrorStack: boolean;
  readonly limits: Readonly<RpcLimits>;
  readonly policy: AccessPolicy;
  readonly prefix: string;
  readonly sequential: boolean;
  readonly identify: ((request: Request) => unknown) | undefined;
  readonly hibernation: boolean;
}

const resolved = new WeakMap<object, ResolvedServerOptions>();
const DEFAULTS_KEY = {};

/** Validates `options` (once per object) and derives the policy. */
export function resolveServerOptions(options: RpcServerOptions | undefined): ResolvedServerOptions {
  const key = options ?? DEFAULTS_KEY;
  let out = resolved.get(key);
  if (out) return out;
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new RpcError("BAD_OPTION", "Server options must be an object.");
  }
  const prefix = options?.prefix ?? "/__rpc";
  if (typeof prefix !== "string" || !prefix.startsWith("/") || prefix.endsWith("/")) {
    throw new RpcError("BAD_OPTION", `prefix must start with "/" and not end with one, got ${JSON.stringify(prefix)}.`);
  }
  const limits = resolveLimits(options?.limits);
  const ordering = options?.ordering ?? "sequential";
  if (ordering !== "sequential" && ordering !== "concurrent") {
    throw new RpcError("BAD_OPTION", `ordering must be "sequential" or "concurrent", got ${JSON.stringify(ordering)}.`);
  }
  if (options?.identify !== undefined && typeof options.identify !== "function") {
    throw new RpcError("BAD_OPTION", "identify must be a function of the upgrade request.");
  }
  if (options?.hibernation !== undefined && typeof options.hibernation !== "boolean") {
    throw new RpcError("BAD_OPTION", `hibernation must be true or false, got ${JSON.stringify(options.hibernation)}.`);
  }
  out = Object.freeze({
    identify: options?.identify,
    hibernation: options?.hibernation !== false,
    sequential: ordering === "sequential",
    exposeErrorStack: options?.exposeErrorStack === true,
    limits,
    policy: new AccessPolicy(options?.access, limits),
    prefix,
  });
  resolved.set(key, out);
  return out;
}

/** A connection as the dispatcher needs it. Also the key of its per-connection state. */
export interface ReplyChannel {
  send(frame: WireFrame): void;
  close(code?: number, reason?: string): void;
}

/** A reply whose Blob bytes (`pending[from, to)`) must be read before its frame is sent. */
interface BlobReply {
  readonly id: number;
  readonly part: number;
  readonly from: number;
  readonly to: number;
}

class Outbox {
  parts: string[] = [];
  blobs: Uint8Array[] = [];
  /** Blob reads of the replies in `parts` (blobs.ts), and which reply each belongs to. */
  pending: PendingBlob[] = [];
  blobReplies: BlobReply[] = [];
  /** Set while a frame waits for Blob bytes: later frames queue behind it, so replies keep their order. */
  held: Promise<void> | undefined;
  scheduled = false;
  /** True while `dispatchFrame` runs a frame's calls: it flushes at its end, so `push` schedules nothing. */
  batching = false;
  /** Ids of calls received and not yet answered. */
  readonly running = new Set<number>();
  /** Settles when the last call that awaited has finished (sequential ordering). */
  tail: Promise<void> | undefined;
  private readonly flushBound = () => this.flush();

  constructor(private readonly channel: ReplyChannel) {}

  /** Queues a reply; `finished` false for a refusal that must not end the running call of that id. */
  push(id: number, json: string, finished = true): void {
    if (finished) this.running.delete(id);
    this.parts.push(json);
    if (!this.scheduled && !this.batching) {
      this.scheduled = true;
      queueMicrotask(this.flushBound);
    }
  }

  /**
   * Sends what is queued. Runs from the microtask `push` scheduled, and directly at the end of
   * `dispatchFrame` so that calls which finished synchronously are answered without waiting for
   * a microtask turn (the scheduled one then finds nothing to send).
   */
  flush(): void {
    this.scheduled = false;
    if (this.parts.length === 0) return;
    const { parts, blobs, pending, blobReplies } = this;
    this.parts = [];
    this.blobs = [];
    if (pending.length === 0 && this.held === undefined) {
      this.send(parts, blobs);
      return;
    }
    this.pending = [];
    this.blobReplies = [];
    const held: Promise<void> = (this.held ?? Promise.resolve())
      .then(() => readReplyBlobs(parts, blobs, pending, blobReplies))
      .then(() => {
        this.send(parts, blobs);
        if (this.held === held) this.held = undefined;
      });
    this.held = held;
  }

  private send(parts: string[], blobs: Uint8Array[]): void {
    const body = parts.length === 1 ? `[${parts[0]}]` : `[${parts.join(",")}]`;
    try {
      this.channel.send(writeFrame(FrameKind.Replies, body, blobs));
    } catch {
      // The socket closed under us: the client sees DISCONNECTED for these calls.
    }
  }
}

/** Reads the Blobs of a reply frame; a reply whose Blob cannot be read becomes an `ENCODE` failure. */
async function readReplyBlobs(parts: string[], blobs: Uint8Array[], pending: PendingBlob[], replies: BlobReply[]): Promise<void> {
  await Promise.all(
    replies.map(({ id, part, from, to }) =>
      resolveBlobs(blobs, pending.slice(from, to)).catch((error: unknown) => {
        for (let i = from; i < to; i++) blobs[pending[i]!.slot] = new Uint8Array(0);
        parts[part] = failed(id, asRpcError(error, "ENCODE"));
      }),
    ),
  );
}

const outboxes = new WeakMap<ReplyChannel, Outbox>();

function outboxFor(channel: ReplyChannel): Outbox {
  let out = outboxes.get(channel);
  if (!out) {
    out = new Outbox(channel);
    outboxes.set(channel, out);
  }
  return out;
}

/** Truncates a close reason to the 123 UTF-8 bytes a close frame can carry. */
export function closeReason(text: string): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= 123) return text;
  let cut = 120;
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--; // do not split a UTF-8 sequence
  return new TextDecoder().decode(bytes.subarray(0, cut)) + "...";
}

/**
 * Handles one incoming message on `channel` for `target`. Returns `false` when the message is
 * not a dorpc frame (the caller may handle it), `true` otherwise. The replies of calls that
 * finished synchronously leave in one frame before this returns; the others as they settle
 * (batched per microtask turn).
 */
export function dispatchFrame(data: IncomingData, target: object, options: ResolvedServerOptions, channel: ReplyChannel): boolean {
  const { limits } = options;
  let frame: RawFrame | undefined;
  try {
    frame = readFrame(data, limits);
  } catch (error) {
    const e = error as RpcError;
    channel.close(e.code === "LIMIT" ? CloseCode.MessageTooBig : CloseCode.PolicyViolation, closeReason(e.message));
    return true;
  }
  if (!frame) return false;
  const body = frame.body;
  if (frame.kind === FrameKind.Ping) {
    // Normally answered by the runtime's auto-response without waking the object; this covers
    // sockets accepted without it.
    channel.send(HEARTBEAT_PONG);
    return true;
  }
  if (frame.kind !== FrameKind.Calls) {
    refuseFrame(frame.kind, body, channel);
    return true;
  }
  if (!Array.isArray(body)) {
    channel.close(CloseCode.PolicyViolation, "dorpc: a call frame's body must be an array of calls.");
    return true;
  }
  if (body.length > limits.maxPendingCalls) {
    channel.close(
      CloseCode.PolicyViolation,
      closeReason(`dorpc: frame carries ${body.length} calls, more than limits.maxPendingCalls (${limits.maxPendingCalls}).`),
    );
    return true;
  }
  // Every envelope must carry a usable id before any call of the frame runs: a frame that
  // cannot be answered call by call is refused whole.
  for (const envelope of body as unknown[]) {
    if (!Array.isArray(envelope) || !isCallId(envelope[0])) {
      channel.close(CloseCode.PolicyViolation, "dorpc: a call must be [id, chain] with a positive integer id.");
      return true;
    }
  }
  const out = outboxFor(channel);
  out.batching = true;
  try {
    runFrame(body as [number, ...unknown[]][], target, options, channel, out, decodeContext(frame.blobs, limits));
  } finally {
    out.batching = false;
    out.flush();
  }
  return true;
}

/** Starts every call of a validated frame, in order. */
function runFrame(
  body: [number, ...unknown[]][],
  target: object,
  options: ResolvedServerOptions,
  channel: ReplyChannel,
  out: Outbox,
  ctx: DecodeContext,
): void {
  const { limits } = options;
  const label = labelOf(target);
  for (const envelope of body) {
    const id = envelope[0];
    if (out.running.has(id)) {
      out.push(id, failed(id, new RpcError("PROTOCOL", `Call id ${id} is already running on this connection.`)), false);
      continue;
    }
    if (out.running.size >= limits.maxPendingCalls) {
      out.push(
        id,
        failed(
          id,
          new RpcError("LIMIT", `More than limits.maxPendingCalls (${limits.maxPendingCalls}) calls are running on this connection.`),
        ),
        false,
      );
      continue;
    }
    out.running.add(id);
    let steps: Step[];
    try {
      if (envelope.length !== 2) throw new RpcError("PROTOCOL", "A call must be exactly [id, chain].");
      steps = parseChain(envelope[1], options, ctx, label);
    } catch (error) {
      out.push(id, failed(id, asRpcError(error)));
      continue;
    }
    if (!options.sequential) {
      runCall(id, target, steps, options, out, label, channel);
      continue;
    }
    // Sequential: run now unless an earlier call of this connection is still awaiting. (No
    // closure unless one is needed: bundlers that keep names wrap every closure in a call.)
    const started = out.tail
      ? out.tail.then(() => runCall(id, target, steps, options, out, label, channel))
      : runCall(id, target, steps, options, out, label, channel);
    if (started) {
      const tail: Promise<void> = started.then(() => {
        if (out.tail === tail) out.tail = undefined;
      });
      out.tail = tail;
    }
  }
}

/**
 * A frame of the wrong kind (e.g. replies sent to the server). Each envelope whose id can be
 * recovered gets a `PROTOCOL` failure; a frame with none is closed with 1008.
 */
function refuseFrame(kind: number, body: unknown, channel: ReplyChannel): void {
  const ids = Array.isArray(body) ? body.filter((e): e is [number] => Array.isArray(e) && isCallId(e[0])).map((e) => e[0]) : [];
  if (ids.length === 0) {
    channel.close(CloseCode.PolicyViolation, closeReason(`dorpc: a server accepts only call frames, got kind ${kind}.`));
    return;
  }
  const out = outboxFor(channel);
  for (const id of ids.slice(0, 1024)) {
    out.push(
      id,
      failed(id, new RpcError("PROTOCOL", "A server accepts only call frames; this envelope came in another kind of frame.")),
      false,
    );
  }
}

function isCallId(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

function labelOf(target: object): string {
  const name = (target as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name ? name : "the Durable Object";
}

/** A parsed chain step: a property name, or the decoded arguments of a call. */
type Step = string | { args: unknown[] };

/**
 * Validates the whole chain and decodes its arguments before any step runs: shape, length,
 * argument counts, names (access rule 1). Throws `RpcError`.
 */
function parseChain(chain: unknown, options: ResolvedServerOptions, ctx: DecodeContext, label: string): Step[] {
  const { limits } = options;
  if (!Array.isArray(chain) || chain.length === 0) throw new RpcError("PROTOCOL", "A chain must be a non-empty array of steps.");
  if (chain.length > limits.maxChainLength) {
    throw new RpcError("LIMIT", `Chain of ${chain.length} steps exceeds limits.maxChainLength (${limits.maxChainLength}).`);
  }
  if (typeof chain[0] !== "string") throw new RpcError("PROTOCOL", "A chain must start with a member name.");
  const names: string[] = [];
  const steps: Step[] = new Array(chain.length);
  for (let i = 0; i < chain.length; i++) {
    const step: unknown = chain[i];
    if (typeof step === "string") {
      names.push(step);
      steps[i] = step;
    } else if (Array.isArray(step) && step.length > 0) {
      steps[i] = { args: [] };
    } else {
      throw new RpcError("PROTOCOL", `Chain step ${i} is neither a member name nor a call.`);
    }
  }
  options.policy.checkStatic(names, label);
  for (let i = 0; i < chain.length; i++) {
    const step = steps[i]!;
    if (typeof step === "string") continue;
    step.args = readArgs(chain[i] as unknown[], ctx, i);
  }
  return steps;
}

/** Errors the dispatcher raises itself (sent as `Failed` with their code, not as thrown values). */
const ownErrors = new WeakSet<object>();

function refuse(error: RpcError): never {
  ownErrors.add(error);
  throw error;
}

/** Where a chain is while it runs. */
interface Cursor {
  /** The value the last step produced. */
  value: unknown;
  /** A method read by the last step and not yet called, with its receiver. */
  method: Member["fn"] | undefined;
  receiver: object | undefined;
  /** The connection the call came from, exposed to user code through `currentChannel`. */
  channel: ReplyChannel;
}

/** The connection whose call is running synchronously right now (see `currentChannel`). */
let current: ReplyChannel | undefined;

/**
 * The connection of the call whose synchronous part is running, or `undefined`. Valid at the
 * start of a method, before its first `await` (there is no portable async context here).
 */
export function currentChannel(): ReplyChannel | undefined {
  return current;
}

/** Runs one call and queues its reply. Returns a promise only when the call went async. */
function runCall(
  id: number,
  target: object,
  steps: Step[],
  options: ResolvedServerOptions,
  out: Outbox,
  label: string,
  channel: ReplyChannel,
): Promise<void> | undefined {
  const cursor: Cursor = { value: target, method: undefined, receiver: undefined, channel };
  let result: unknown;
  try {
    result = runFrom(cursor, target, steps, 0, label, options.policy);
  } catch (error) {
    out.push(id, threw(id, error, options, out, target));
    return undefined;
  }
  if (result instanceof Promise) {
    return result.then(
      (value) => out.push(id, ok(id, value, out, target, options)),
      (error) => out.push(id, threw(id, error, options, out, target)),
    );
  }
  out.push(id, ok(id, result, out, target, options));
  return undefined;
}

/** Runs steps from `i`; synchronous until a step returns a promise. */
function runFrom(cursor: Cursor, target: object, steps: Step[], i: number, label: string, policy: AccessPolicy): unknown {
  for (; i < steps.length; i++) {
    const step = steps[i]!;
    let produced: unknown;
    const outer = current;
    current = cursor.channel;
    try {
      if (typeof step === "string") {
        produced = read(cursor, target, step, i, label, policy);
        if (produced === METHOD) continue;
      } else {
        const fn = cursor.method;
        if (!fn) refuse(new RpcError("NOT_CALLABLE", `Step ${i} calls something that is not a reachable method on ${label}.`));
        cursor.method = undefined;
        produced = fn.apply(cursor.receiver, step.args);
      }
    } finally {
      current = outer;
    }
    if (produced instanceof Promise) {
      const next = i + 1;
      return produced.then((value) => {
        cursor.value = value;
        return runFrom(cursor, target, steps, next, label, policy);
      });
    }
    cursor.value = produced;
  }
  if (cursor.method) {
    refuse(new RpcError("NOT_CALLABLE", `The chain ends at a method of ${label} without calling it; add the call.`));
  }
  return cursor.value;
}

/** Marker: the step resolved a method, now held by the cursor. */
const METHOD = Symbol("method");

/** Access rules 2 and 3 for one property step. */
function read(cursor: Cursor, target: object, name: string, i: number, label: string, policy: AccessPolicy): unknown {
  if (cursor.method) refuse(notFound(name, label)); // a property of a method: never reachable
  const holder = cursor.value;
  if (policy.trusted) {
    const found = policy.readTrusted(holder, name);
    if (!found) refuse(notFound(name, label));
    if (typeof found.value === "function") {
      cursor.method = found.value as Member["fn"];
      cursor.receiver = holder as object;
      return METHOD;
    }
    return found.value;
  }
  if (i === 0 || holder instanceof RpcTarget) {
    const owner = holder as object;
    const member = findMember(owner, name);
    // Always the Durable Object's name: naming inner classes would tell a prober what it reached.
    if (!member) refuse(notFound(name, label));
    if (member.kind === "getter") return member.fn.call(owner);
    cursor.method = member.fn;
    cursor.receiver = owner;
    return METHOD;
  }
  if (typeof holder === "object" && holder !== null && isPlainData(holder) && !isPlatformState(target, holder)) {
    const found = readDataProperty(holder, name);
    if (found) return found.value;
  }
  return refuse(notFound(name, label));
}

/**
 * The object itself, its `env` and its `ctx`: never stepped into, never sent, even when a user
 * getter hands them out (`env` is a plain object in workerd, so rule 3 alone would let
 * `client.environment.SECRET` through).
 */
function isPlatformState(target: object, value: unknown): boolean {
  return value === target || value === (target as { env?: unknown }).env || value === (target as { ctx?: unknown }).ctx;
}

/**
 * How replies of `target` are encoded into `out`'s frame: never the object, its env or its ctx
 * (platform-state.ts) unless the policy trusts every caller.
 */
function replyContext(out: Outbox, target: object, options: ResolvedServerOptions, label: string, stack: boolean): EncodeContext {
  return {
    blobs: out.blobs,
    pending: out.pending,
    stack,
    label,
    maxDepth: options.limits.maxDepth,
    forbidden: options.policy.trusted ? undefined : platformIdentities(target),
  };
}

const PRIMITIVES: EncodeContext = { blobs: [], stack: false, label: "result" };

/** Records the Blob reads a reply added; it is pushed right after, so its part index is the current length. */
function noteBlobs(out: Outbox, id: number, from: number): void {
  if (out.pending.length > from) out.blobReplies.push({ id, part: out.parts.length, from, to: out.pending.length });
}

function ok(id: number, value: unknown, out: Outbox, target: object, options: ResolvedServerOptions): string {
  if (value === undefined) return `[${id}]`;
  const blobMark = out.blobs.length;
  const pendingMark = out.pending.length;
  // Primitives add no blobs and cannot be forbidden: no per-reply context for them.
  const ctx = typeof value === "object" && value !== null ? replyContext(out, target, options, "result", false) : PRIMITIVES;
  try {
    // A result's reply status is its value tag: OkJson, OkRecords or OkBytes.
    const [tag, payload] = writeValue(value, ctx);
    const json = JSON.stringify([id, tag, payload]);
    noteBlobs(out, id, pendingMark);
    return json;
  } catch (error) {
    out.blobs.length = blobMark;
    out.pending.length = pendingMark;
    return failed(id, asRpcError(error, "ENCODE"), ctx === PRIMITIVES ? undefined : ctx);
  }
}

function threw(id: number, error: unknown, options: ResolvedServerOptions, out: Outbox, target: object): string {
  if (error instanceof RpcError && ownErrors.has(error)) return failed(id, error);
  const blobMark = out.blobs.length;
  const pendingMark = out.pending.length;
  const ctx = replyContext(out, target, options, "thrown value", options.exposeErrorStack);
  try {
    const json = JSON.stringify([id, ReplyStatus.Threw, writeThrown(error, ctx)]);
    noteBlobs(out, id, pendingMark);
    return json;
  } catch {
    out.blobs.length = blobMark;
    out.pending.length = pendingMark;
    // The thrown value holds something that cannot travel: keep what identifies it.
    const plain = error instanceof Error ? error : new Error(String(error));
    const fallback = new Error(plain.message);
    fallback.name = plain.name;
    if (options.exposeErrorStack && plain.stack) fallback.stack = plain.stack;
    return JSON.stringify([id, ReplyStatus.Threw, writeThrown(fallback, { blobs: out.blobs, stack: options.exposeErrorStack })]);
  }
}

/**
 * `[id, 3, code, message]`. An `ENCODE` failure caused by user code (a getter that threw while
 * the result was read) also carries that exception, as a record table, so the client's
 * `RpcError` has it as `cause`. A cause that cannot travel itself (or holds a Blob, which would
 * need another read) is left out.
 */
function failed(id: number, error: RpcError, ctx?: EncodeContext): string {
  if (ctx && error.code === "ENCODE" && error.cause !== undefined) {
    const blobMark = ctx.blobs.length;
    try {
      const causeCtx: EncodeContext = { ...ctx, pending: [], label: "cause" };
      const cause = writeThrown(error.cause, causeCtx);
      if (causeCtx.pending!.length === 0) return JSON.stringify([id, ReplyStatus.Failed, error.code, error.message, cause]);
    } catch {
      // The cause cannot travel: the code and message still do.
    }
    ctx.blobs.length = blobMark;
  }
  return JSON.stringify([id, ReplyStatus.Failed, error.code, error.message]);
}

function asRpcError(error: unknown, fallback: RpcError["code"] = "INTERNAL"): RpcError {
  return error instanceof RpcError ? error : new RpcError(fallback, String((error as Error)?.message ?? error));
}
