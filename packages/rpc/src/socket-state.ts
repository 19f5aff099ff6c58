/**
 * What dorpc keeps per accepted socket on a Durable Object, and how it finds its sockets again:
 * the attachment (identity, connection time, subscriptions; survives hibernation), the caller's
 * identity header, and the registry of sockets accepted without hibernation.
 *
 * Attachments are only written through `writeAttachment`, so a parsed copy is cached per socket
 * object: reading one costs a WeakMap lookup, not a structured-clone deserialisation per call.
 * After eviction the cache is empty and each socket's attachment is read once again.
 *
 * Internal module (workerd only; no `cloudflare:*` import of its own).
 */
import type { ChannelHooks } from "./dispatcher.js";
import { RpcError } from "./errors.js";

/** Tag given to every socket dorpc accepts (`ctx.getWebSockets(RPC_SOCKET_TAG)` lists them). */
export const RPC_SOCKET_TAG = "dorpc";

/** What dorpc stores in a socket's attachment; survives hibernation. */
export interface RpcAttachment {
  /** Protocol version of the connection. */
  v: 1;
  /** Unix ms when the socket was accepted. */
  connectedAt: number;
  /** What `options.identify` returned for the upgrade request, if anything. */
  identity?: unknown;
  /**
   * Set when the object first handed out a reference (stub) or made a call on this socket: which
   * incarnation of the object did. A later incarnation (after eviction) knows those references
   * are gone, and numbers its own references and calls after theirs (`refsGen`).
   */
  refs?: string;
  /**
   * How many incarnations before this one handed out references or made calls on this socket
   * (absent: none). Incarnation n numbers its references and its calls from n × 2³¹ + 1, so the
   * ids of an earlier one, which the client may still hold or be answering, never name new ones.
   */
  refsGen?: number;
  /** Topics this socket subscribed to (see topics.ts). */
  topics?: string[];
  /** The client session this socket carries (its Hello): its calls' delivery record. */
  session?: string;
}

const cache = new WeakMap<WebSocket, RpcAttachment>();
/** Sockets accepted with `hibernation: false`: their attachment lives only here. */
const live = new WeakSet<WebSocket>();

/** The attachment of `ws`, or `undefined` if it is not a dorpc socket. */
export function readAttachment(ws: WebSocket): RpcAttachment | undefined {
  let attachment = cache.get(ws);
  if (attachment) return attachment;
  try {
    attachment = (ws.deserializeAttachment() as RpcAttachment | null) ?? undefined;
  } catch {
    return undefined;
  }
  if (attachment?.v === 1) cache.set(ws, attachment);
  return attachment;
}

/** Stores `attachment` for `ws` (serialised, so it survives hibernation, unless the socket is live). */
export function writeAttachment(ws: WebSocket, attachment: RpcAttachment): void {
  cache.set(ws, attachment);
  if (!live.has(ws)) ws.serializeAttachment(attachment);
}

/** Sockets accepted without hibernation, per object (they are not in `ctx.getWebSockets()`). */
const liveSockets = new WeakMap<object, Set<WebSocket>>();

export function addLiveSocket(target: object, ws: WebSocket, attachment: RpcAttachment): void {
  live.add(ws);
  cache.set(ws, attachment);
  let set = liveSockets.get(target);
  if (!set) liveSockets.set(target, (set = new Set()));
  set.add(ws);
}

export function removeLiveSocket(target: object, ws: WebSocket): void {
  liveSockets.get(target)?.delete(ws);
}

/**
 * Whether dorpc accepted `ws` on `target` (its tag, or a live socket): the object's own sockets
 * are not, whatever their messages look like.
 */
export function isRpcSocket(target: object, ws: WebSocket): boolean {
  if (live.has(ws)) return true;
  const ctx = (target as { ctx?: DurableObjectState }).ctx;
  try {
    return ctx !== undefined && typeof ctx.getTags === "function" && ctx.getTags(ws).includes(RPC_SOCKET_TAG);
  } catch {
    // Not a socket of this object's hibernation API — or one that closed: workerd keeps no tags
    // for those, but its attachment stays readable (a caller kept after it left is still the
    // object's client: calls to it fail DISCONNECTED, dispatcher.ts).
    return ws.readyState > 1 && readAttachment(ws)?.v === 1;
  }
}

/** Every open dorpc socket of `target`: hibernatable ones from the runtime, live ones from memory. */
export function socketsOf(target: object): WebSocket[] {
  const ctx = (target as { ctx?: DurableObjectState }).ctx;
  const sockets = ctx && typeof ctx.getWebSockets === "function" ? ctx.getWebSockets(RPC_SOCKET_TAG) : [];
  const mine = liveSockets.get(target);
  return mine?.size ? [...sockets, ...mine] : sockets;
}

// ---------------------------------------------------------------------------------------------
// References and eviction
// ---------------------------------------------------------------------------------------------

/**
 * Each instance of an object gets a mark of its own: references handed out by an earlier one
 * (before an eviction) are gone. Per instance, not per isolate: an isolate outlives the objects
 * it evicts, and builds them again in the same module state.
 */
const incarnations = new WeakMap<object, string>();

function incarnationOf(target: object): string {
  let mark = incarnations.get(target);
  if (!mark) incarnations.set(target, (mark = Math.random().toString(36).slice(2, 10)));
  return mark;
}

/** Ids of references one incarnation hands out on a socket (see `RpcAttachment.refsGen`). */
const REF_ID_RANGE = 2 ** 31;
/** Generations wrap before ids leave the safe integers (2²¹ evictions of one open socket). */
const REF_GENERATIONS = 2 ** 21;

/** The hooks that keep references apart across evictions, and explain the ones lost to one. */
export function hooksFor(channel: unknown, target: object): ChannelHooks {
  const ws = channel as WebSocket;
  const incarnation = incarnationOf(target);
  return {
    session: readAttachment(ws)?.session,
    lostBefore: (id) => {
      const attachment = readAttachment(ws);
      if (attachment?.refs === undefined) return false;
      if (attachment.refs !== incarnation) return true;
      return id <= (attachment.refsGen ?? 0) * REF_ID_RANGE; // an earlier incarnation's id
    },
    firstId: () => {
      const attachment = readAttachment(ws);
      if (!attachment) return 1;
      if (attachment.refs === incarnation) return (attachment.refsGen ?? 0) * REF_ID_RANGE + 1;
      // An earlier incarnation handed out references or made calls here: take the next range of ids.
      const generation = attachment.refs === undefined ? 0 : ((attachment.refsGen ?? 0) + 1) % REF_GENERATIONS;
      writeAttachment(
        ws,
        generation === 0 ? { ...attachment, refs: incarnation } : { ...attachment, refs: incarnation, refsGen: generation },
      );
      return generation * REF_ID_RANGE + 1;
    },
  };
}

/** Ids one HTTP batch request may hand out, and how many such ranges an instance has. */
const HTTP_ID_RANGE = 2 ** 24;
const HTTP_RANGES = 2 ** 29;
/** Per instance: the next range of ids for an HTTP batch request (see `httpFirstId`). */
const httpRanges = new WeakMap<object, { next: number }>();

/**
 * The first id of the references an HTTP batch request hands out. Each request of an instance
 * takes a range of its own, starting at a random one per instance: a stub a client kept from an
 * earlier request (or instance) names an id no later request hands out, so it is REFERENCE_LOST,
 * never another request's object.
 */
export function httpFirstId(target: object): number {
  let ranges = httpRanges.get(target);
  if (!ranges) httpRanges.set(target, (ranges = { next: Math.floor(Math.random() * HTTP_RANGES) }));
  const range = ranges.next;
  ranges.next = (range + 1) % HTTP_RANGES;
  return range * HTTP_ID_RANGE + 1;
}

// ---------------------------------------------------------------------------------------------
// Identity
// ---------------------------------------------------------------------------------------------

/**
 * Header that carries a caller's identity from the Worker to the Durable Object. `routeDORequest`
 * removes it from every incoming request, so only its hooks (via `withIdentity`) can set it.
 */
export const IDENTITY_HEADER = "X-Dorpc-Identity";

/** Largest identity accepted, in characters of JSON (attachments are limited to 2 KiB). */
export const MAX_IDENTITY = 1024;

/**
 * An `identify` function for `RpcServerOptions`: the JSON identity a `routeDORequest` hook set
 * with `withIdentity`. Use it only behind `routeDORequest`, which strips client-sent copies of
 * the header; anywhere else a client could send its own.
 */
export function readIdentityHeader(request: Request): unknown {
  const raw = request.headers.get(IDENTITY_HEADER);
  if (raw === null) return undefined;
  if (raw.length > MAX_IDENTITY) throw new RpcError("LIMIT", `${IDENTITY_HEADER} is longer than ${MAX_IDENTITY} characters.`);
  try {
    return JSON.parse(raw);
  } catch {
    throw new RpcError("DECODE", `${IDENTITY_HEADER} is not valid JSON.`);
  }
}

/**
 * The identity must fit the socket attachment (2 KiB, structured-clone serialised): checked and
 * normalised to plain JSON before the socket is accepted, so a bad identity refuses the
 * connection instead of breaking it after the upgrade.
 */
export function toAttachable(identity: unknown): unknown {
  if (identity === undefined) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(identity);
  } catch {
    json = undefined;
  }
  if (json === undefined) throw new RpcError("BAD_OPTION", "identify() must return a JSON-serialisable value.");
  if (json.length > MAX_IDENTITY) {
    throw new RpcError(
      "LIMIT",
      `identify() returned ${json.length} characters of JSON; at most ${MAX_IDENTITY} fit the socket attachment.`,
    );
  }
  // Stored as its JSON round trip: exactly what was checked, and always cloneable.
  return JSON.parse(json);
}
