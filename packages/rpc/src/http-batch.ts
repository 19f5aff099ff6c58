/**
 * The HTTP batch endpoint: dorpc without a socket. A `POST` to the RPC path carries one frame of
 * calls; the object runs them exactly as it runs a socket's frame (same dispatcher, access
 * policy, limits, pipelining, delivery record), and the response carries their replies once every
 * call of the request has answered. Nothing outlives the request: references handed out in it
 * end with it, and the object cannot call the client back.
 *
 * Two bodies:
 *  - `application/x-dorpc`: one dorpc frame, text or binary, as on a socket. The response is one
 *    frame, or, when the replies needed several (bytes of several replies), a frame list
 *    (`application/x-dorpc-frames`: each frame prefixed by its u32 little-endian byte length).
 *  - `application/json`: a human-writable form for `curl` (plain JSON values only):
 *    `{"method": "users.get", "args": ["a"]}`, or an array of such calls (one batch, in order).
 *    The answer is `{"result": …}` or `{"error": {"code"?, "name", "message"}}` per call.
 *
 * A request dorpc cannot take is answered with a 4xx and a JSON body `{"error": {"code",
 * "message"}}`: 413 (larger than limits.maxMessageBytes), 415 (another content
 * type), 400 (not a frame, malformed), 401 (identify refused). The object's state is untouched.
 *
 * Headers: `X-Dorpc-Session` names the client session (the key of its calls' delivery record),
 * `X-Dorpc-Resending: 1` says the request resends calls of one that failed.
 *
 * Internal module.
 */
import { decodeContext, fromRecords } from "./codec.js";
import { channelClosed, connectionFor, type ChannelHooks, type ReplyChannel, type ResolvedServerOptions } from "./dispatcher.js";
import { CloseCode, FRAME_MARK, FRAME_MARK_CHAR, FrameKind, ReplyStatus } from "./envelopes.js";
import { RpcError, type RpcErrorCode } from "./errors.js";
import { readFrame, type WireFrame } from "./frame.js";
import {
  FRAME_TYPE,
  FRAMES_TYPE,
  frameOf,
  joinFrames,
  RESENDING_HEADER,
  readLimited,
  readResending,
  SESSION_HEADER,
} from "./http-frames.js";

/** What an HTTP batch caller looks like to `rpcCaller()` (it has no socket). */
export interface HttpChannel extends ReplyChannel {
  readonly http: true;
  readonly identity: unknown;
  readonly connectedAt: number;
}

/** A 4xx answer with a typed body. */
function refusal(status: number, code: RpcErrorCode, message: string): Response {
  return new Response(JSON.stringify({ error: { code, message } }), {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8" },
  });
}

const SESSION_ID = /^[A-Za-z0-9_-]{16,64}$/;

/**
 * Answers one HTTP batch request (a `POST`) for `target`. `identity` is what `identify` returned for it
 * (already checked); `hooks` are the object's per-channel hooks (delivery record, system calls).
 */
export async function handleBatch(
  request: Request,
  target: object,
  options: ResolvedServerOptions,
  identity: unknown,
  hooks: (channel: ReplyChannel) => ChannelHooks,
): Promise<Response> {
  const type = (request.headers.get("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
  const json = type === "application/json";
  if (type !== FRAME_TYPE && !json) {
    await request.body?.cancel().catch(() => undefined);
    return refusal(415, "PROTOCOL", `An HTTP batch is ${FRAME_TYPE} (a dorpc frame) or application/json, not ${JSON.stringify(type)}.`);
  }
  const max = options.limits.maxMessageBytes;
  const declared = Number(request.headers.get("Content-Length") ?? "NaN");
  if (declared > max) {
    await request.body?.cancel().catch(() => undefined);
    return refusal(413, "LIMIT", `The request body of ${declared} bytes exceeds limits.maxMessageBytes (${max}).`);
  }
  let body: Uint8Array | undefined;
  try {
    body = await readLimited(request.body, max);
  } catch (error) {
    // The client went away mid-upload (its request was aborted): nothing ran, nobody reads this.
    return refusal(400, "DECODE", `The request body could not be read: ${String((error as Error)?.message ?? error).slice(0, 200)}`);
  }
  if (body === undefined) return refusal(413, "LIMIT", `The request body exceeds limits.maxMessageBytes (${max}).`);

  let frame: WireFrame;
  let calls: JsonCalls | undefined;
  if (json) {
    try {
      calls = parseJsonCalls(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body));
    } catch (error) {
      return refusal(400, (error as RpcError).code ?? "DECODE", (error as Error).message);
    }
    frame = FRAME_MARK_CHAR + "C" + JSON.stringify(calls.map((call, i) => [i + 1, [...call.path, [0, ...call.args]]]));
  } else {
    if (body[0] !== FRAME_MARK || body[1] !== FrameKind.Calls)
      return refusal(400, "PROTOCOL", "An HTTP batch carries one frame of calls (kind C).");
    try {
      frame = frameOf(body);
    } catch (error) {
      return refusal(400, "DECODE", (error as Error).message);
    }
  }

  const header = request.headers.get(SESSION_HEADER) ?? undefined;
  if (header !== undefined && !SESSION_ID.test(header))
    return refusal(400, "PROTOCOL", `${SESSION_HEADER} must be 16–64 characters of base64url.`);
  // The JSON form numbers its calls per request (1, 2, …): it has no session to be kept under.
  const session = calls ? undefined : header;

  // One connection for the request: replies are collected, never sent early.
  const sent: WireFrame[] = [];
  let refused: RpcError | undefined;
  const channel: HttpChannel = {
    http: true,
    identity,
    connectedAt: Date.now(),
    send: (out) => void sent.push(out),
    close: (code, reason) => {
      // 1009: over a limit (too many blobs, calls, …); anything else: not a readable frame.
      refused ??= new RpcError(code === CloseCode.MessageTooBig ? "LIMIT" : "PROTOCOL", reason ?? "The batch was refused.");
    },
  };
  const base = hooks(channel);
  const conn = connectionFor(channel, target, options, () => ({
    ...base,
    session,
    noCallbacks: "This client reached the object over HTTP batch, so it cannot be called back: pass values, or connect with a WebSocket.",
    referencesEnd:
      "references handed out over HTTP batch end with the request that received them. Use one in the same turn as the call that returned it (pipelining), or connect with a WebSocket.",
  }));
  try {
    if (session !== undefined) {
      conn.session = session;
      const { resending, age } = readResending(request.headers.get(RESENDING_HEADER));
      conn.expiredSession = base.onHello ? !base.onHello(session, resending, age) : false;
    }
    // The JSON form's body was checked against maxMessageBytes; the frame it was rewritten as
    // may be longer (`9e20` becomes 21 digits) and is not checked again.
    conn.receive(frame, calls !== undefined);
    await conn.whenIdle();
    // What the object kept of the client (a function it dup()ed) ends with the request: the
    // client is told, so it can let go of them too.
    conn.releaseImports({ code: "REFERENCE_LOST", message: "Received over HTTP batch: it ended with its request." });
  } finally {
    channelClosed(channel, 1000, "batch answered");
  }
  if (refused) return refusal(refused.code === "LIMIT" ? 413 : 400, refused.code, refused.message);
  if (calls) return jsonAnswer(sent, calls.length, calls.single, options);
  return frameAnswer(sent);
}

/** The replies, as one frame or a frame list (http-frames.ts). */
function frameAnswer(frames: WireFrame[]): Response {
  if (frames.length === 1) {
    const frame = frames[0]!;
    return new Response(frame as Body, { headers: { "Content-Type": FRAME_TYPE } });
  }
  return new Response(joinFrames(frames) as Body, { headers: { "Content-Type": FRAMES_TYPE } });
}

/** What a Response is made of (the global `BodyInit` type is not in every lib these files are checked with). */
type Body = ConstructorParameters<typeof Response>[0];

// ---------------------------------------------------------------------------------------------
// The JSON form
// ---------------------------------------------------------------------------------------------

interface JsonCall {
  path: string[];
  args: unknown[];
}

type JsonCalls = JsonCall[] & { single?: true };

/** `{"method": "a.b", "args": [...]}` or an array of those. Throws `RpcError`. */
function parseJsonCalls(text: string): JsonCalls {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new RpcError("DECODE", `The body is not JSON: ${(error as Error).message.slice(0, 100)}`);
  }
  const single = !Array.isArray(parsed);
  const list = (single ? [parsed] : parsed) as unknown[];
  if (list.length === 0) throw new RpcError("PROTOCOL", "The batch holds no calls.");
  const calls = list.map((item, i) => {
    const at = single ? "The call" : `Call ${i}`;
    if (typeof item !== "object" || item === null) throw new RpcError("PROTOCOL", `${at} must be {"method": "name", "args": [...]}.`);
    const { method, args = [] } = item as { method?: unknown; args?: unknown };
    if (typeof method !== "string" || method === "")
      throw new RpcError("PROTOCOL", `${at} needs "method", a name like "increment" or "users.get".`);
    if (!Array.isArray(args)) throw new RpcError("PROTOCOL", `${at}'s "args" must be an array.`);
    if (!allFinite(args)) {
      // JSON.parse reads 1e400 as Infinity, which the frame would carry as null: say so instead.
      throw new RpcError("DECODE", `${at}'s "args" hold a number beyond what a double can hold; send it as a string.`);
    }
    return { path: method.split("."), args };
  }) as JsonCalls;
  if (single) calls.single = true;
  return calls;
}

/** Whether every number in parsed JSON `value` is finite (iterative: bodies may nest deeply). */
function allFinite(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return false;
    } else if (typeof v === "object" && v !== null) {
      for (const key of Object.keys(v)) stack.push((v as Record<string, unknown>)[key]);
    }
  }
  return true;
}

/** Turns the reply frames of a JSON batch back into JSON answers. */
function jsonAnswer(frames: WireFrame[], count: number, single: true | undefined, options: ResolvedServerOptions): Response {
  const answers: unknown[] = new Array(count).fill({ error: { code: "INTERNAL", message: "No reply." } });
  for (const frame of frames) {
    let parsed: ReturnType<typeof readFrame>;
    try {
      // The object's own frames: read whatever their size and blobs (each call is answered below).
      parsed = readFrame(frame, { ...options.limits, maxMessageBytes: Number.MAX_SAFE_INTEGER, maxBlobs: Number.MAX_SAFE_INTEGER });
    } catch {
      continue;
    }
    if (!parsed || parsed.kind !== FrameKind.Replies || !Array.isArray(parsed.body)) continue;
    for (const reply of parsed.body as unknown[][]) {
      const id = reply[0] as number;
      answers[id - 1] = jsonReply(reply, parsed.blobs, options);
    }
  }
  const body = single ? answers[0] : answers;
  return new Response(JSON.stringify(body), { headers: { "Content-Type": "application/json; charset=utf-8" } });
}

function jsonReply(reply: unknown[], blobs: readonly Uint8Array[], options: ResolvedServerOptions): unknown {
  if (reply.length === 1) return { result: null };
  switch (reply[1]) {
    case ReplyStatus.OkJson:
      return { result: reply[2] };
    case ReplyStatus.OkRecords: {
      // Plain JSON the JSON fast path left to records (a sub-object reached twice, or nesting
      // deeper than it walks) is still plain JSON here.
      try {
        const value = fromRecords(reply[2], decodeContext(blobs, options.limits));
        if (isPlainJson(value, options.limits.maxNodes)) return { result: value };
      } catch {
        // references, or what the records cannot rebuild without a connection: not plain JSON
      }
      return notJson();
    }
    case ReplyStatus.Failed:
      return { error: { code: reply[2], message: reply[3] } };
    case ReplyStatus.Threw: {
      try {
        const error = fromRecords(reply[2], decodeContext(blobs, options.limits)) as Error;
        return { error: { name: error?.name ?? "Error", message: String(error?.message ?? error) } };
      } catch {
        return { error: { name: "Error", message: "The method threw a value that is not an Error." } };
      }
    }
    default:
      return notJson();
  }
}

function notJson(): { error: { code: string; message: string } } {
  return {
    error: {
      code: "ENCODE",
      message: "The result is not plain JSON (it holds dates, maps, bytes, references…); call it with the dorpc client instead.",
    },
  };
}

/**
 * Whether `value` is plain JSON: null, strings, booleans, finite numbers, dense arrays and plain
 * objects of them, at any depth, shared or not, but without cycles (iterative).
 */
function isPlainJson(value: unknown, maxNodes: number): boolean {
  const stack: [unknown, boolean][] = [[value, false]];
  const onPath = new Set<object>();
  // Shared sub-objects are walked (and would be answered) once per place: bounded, as JSON.
  for (let steps = 0; stack.length > 0; steps++) {
    if (steps > 2 * maxNodes) return false;
    const [v, leaving] = stack.pop()!;
    if (leaving) {
      onPath.delete(v as object);
      continue;
    }
    if (v === null || typeof v === "string" || typeof v === "boolean") continue;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return false;
      continue;
    }
    if (typeof v !== "object" || onPath.has(v)) return false;
    const keys = Object.keys(v);
    if (Array.isArray(v) ? keys.length !== v.length : ![Object.prototype, null].includes(Object.getPrototypeOf(v))) return false;
    onPath.add(v);
    stack.push([v, true]);
    for (const key of keys) stack.push([(v as Record<string, unknown>)[key], false]);
  }
  return true;
}
