/**
 * Every message dorpc puts on a WebSocket, in one place. Read this file to learn the protocol;
 * docs/protocol.md says the same in prose with examples.
 *
 * A connection carries *frames*. A frame is either
 *  - text:   FRAME_MARK, then a kind character, then JSON (the frame body), or
 *  - binary: FRAME_MARK, kind, two zero bytes, u32 blob count, u32 header length, one u32 length
 *            per blob (all little-endian), the header (UTF-8 JSON, the same body a text frame
 *            would carry, padded with spaces so the blobs start at a multiple of 16 bytes), then
 *            the blobs back to back.
 * Binary frames are used only when a value carries bytes (ArrayBuffer, typed arrays, DataView,
 * Blob, File): bytes travel as bytes, never as numbers or base64.
 *
 * A frame that does not start with FRAME_MARK is not dorpc's: `handleRpcMessage` returns false
 * for it so a Durable Object can speak its own protocol on the same socket.
 *
 * Internal module: the types are re-exported for documentation, the shapes may change with the
 * protocol version.
 */

/** First character (text) or byte (binary) of every dorpc frame: ASCII "record separator". */
export const FRAME_MARK = 0x1e;
/** `FRAME_MARK` as a one-character string. */
export const FRAME_MARK_CHAR = "\u001e";

/**
 * Frame kinds: the character after FRAME_MARK. The protocol is symmetric: either end may send
 * calls (a client calls the object; the object calls what the client exposes or passed as a
 * callback), replies to the other end's calls, releases and cancels.
 */
export const FrameKind = {
  /** A batch of calls made by the sender. "C" */
  Calls: 0x43,
  /** A batch of replies to calls the receiver made. "R" */
  Replies: 0x52,
  /** The sender drops references to the receiver's exports: `[[exportId, count], …]`. "X" */
  Release: 0x58,
  /** The sender no longer waits for these calls it made: `[callId, …]`. "K" */
  Cancel: 0x4b,
  /**
   * Client → server, first on every connection: `[sessionId, resending]` or `[sessionId, 1, age]`.
   * Names the client session the calls belong to (their delivery record), and says whether calls
   * of an earlier connection follow as resends (1), or not (0), or that the session has sent no
   * call before this connection (2: its first one; the object then looks up nothing about it).
   * Travels in the same text message as the frame sent after it (see `Outbox.lead`): the receiver
   * reads the two apart at the second FRAME_MARK (`helloEnd`). "H"
   */
  Hello: 0x48,
  /** Client → server heartbeat, answered by the platform without waking the object. "P" */
  Ping: 0x50,
  /** Server → client heartbeat answer. "Q" */
  Pong: 0x51,
} as const;

/**
 * Heartbeat frames: exactly these strings. The server registers them as the Durable Object's
 * WebSocket auto-response (`ctx.setWebSocketAutoResponse`), so a ping is answered by the
 * runtime and never wakes a hibernating object.
 */
export const HEARTBEAT_PING = "\u001eP";
export const HEARTBEAT_PONG = "\u001eQ";
export type FrameKind = (typeof FrameKind)[keyof typeof FrameKind];

/**
 * How a value is carried inside a frame body. Three forms, chosen per value by the encoder:
 *  - `ValueTag.Json`: the value *is* the JSON that follows (it held only plain objects, dense
 *    arrays, strings, finite non-negative-zero numbers, booleans and null, with no shared
 *    references). This is the fast path: it costs what JSON costs.
 *  - `ValueTag.Records`: the value is a record table in the `@ungap/structured-clone` layout
 *    (`[[type, payload], …]`, root at index 0, references by index) with dorpc's extensions
 *    for -0/NaN/±Infinity, sparse arrays, named array properties, bytes, resizable buffers,
 *    Blob, File, boxed primitives, full Error values and references (see `RefRecord`).
 *  - `ValueTag.Bytes`: the value is one ArrayBuffer, typed array or DataView, carried as
 *    `[typeName, blobIndex]` ("ArrayBuffer", "Uint8Array", …, "DataView"): its bytes are the
 *    blob, nothing else is written. 4, not 2: as a reply status, 2 and 3 are taken.
 */
export const ValueTag = { Json: 0, Records: 1, Bytes: 4 } as const;
export type ValueTag = (typeof ValueTag)[keyof typeof ValueTag];

/**
 * One step of an operation chain.
 *  - a string: read that property;
 *  - an array: call the member read by the previous step (or the call's target itself, when
 *    the chain starts with a call). `[ValueTag.Json, ...args]` carries the arguments inline as
 *    JSON; `[ValueTag.Records, records]` carries the arguments array as a record table;
 *    `[ValueTag.Bytes, [typeName, blobIndex]]` carries exactly one argument that is bytes.
 */
export type ChainStep = string | ApplyStep;
export type ApplyStep =
  | [typeof ValueTag.Json, ...unknown[]]
  | [typeof ValueTag.Records, RecordTable]
  | [typeof ValueTag.Bytes, [type: string, blob: number]];

/**
 * A call: `[id, chain]`, `[id, chain, target]` or `[id, chain, target, flags]`.
 *  - `id`: a positive integer the reply will carry, unique among the sender's unanswered calls
 *    on this connection (a client never reuses one in its whole session: see `CallFlags.Retry`);
 *    `0` for a notification, which gets no reply at all (broadcasts).
 *  - `chain`: non-empty. From the root, it starts with a member name.
 *  - `target`, where the chain starts (default 0):
 *      `0`  the receiver's root (the Durable Object; on a client, what it `expose`s);
 *      `n > 0` the receiver's export `n` (a stub it handed out earlier);
 *      `n < 0` the result of the sender's call `-n` made earlier *in the same frame*
 *              (promise pipelining: the receiver runs that call first, then this one on its
 *              result, without a round trip).
 *  - `flags`: a bit set of `CallFlags`.
 *  - `answered` (a client with an exactly-once session, when it has grown since it last said
 *    it): every call of the sender's session with a lower id has had its reply (or was given up,
 *    never to be resent). At most the call's own id. The receiver's delivery record then keeps
 *    only markers for those calls' answers that still wait in memory (delivery.ts `acknowledge`).
 */
export type CallEnvelope =
  | [id: number, chain: ChainStep[]]
  | [id: number, chain: ChainStep[], target: number]
  | [id: number, chain: ChainStep[], target: number, flags: number]
  | [id: number, chain: ChainStep[], target: number, flags: number, answered: number];

/** Bits of a call envelope's `flags`. */
export const CallFlags = {
  /**
   * The call was sent before, on a connection that closed before its reply arrived. The
   * receiver answers from its call record instead of running it again (exactly once), or
   * refuses if it cannot tell.
   */
  Retry: 1,
  /**
   * The call is for dorpc itself on the receiving end, not for the user's root: a client's
   * `subscribe` / `unsubscribe` on a Durable Object, an `event` pushed to a client. Its chain
   * starts at that end's system object (target 0).
   */
  System: 2,
} as const;

/** Body of a `FrameKind.Calls` frame. */
export type CallsBody = CallEnvelope[];

/** Reply statuses: the second element of a reply envelope. */
export const ReplyStatus = {
  /** The chain's result, as JSON. */
  OkJson: 0,
  /** The chain's result, as a record table. */
  OkRecords: 1,
  /** The chain threw: the thrown value, as a record table (rebuilt as a real Error). */
  Threw: 2,
  /**
   * dorpc refused or failed: `[id, 3, code, message]`, `[id, 3, code, message, causeRecords]`, or
   * for `INVALID_ARGUMENT` `[id, 3, code, message, issues]`.
   */
  Failed: 3,
  /** The chain's result, as bytes (`ValueTag.Bytes`): `[id, 4, [typeName, blobIndex]]`. */
  OkBytes: 4,
} as const;
export type ReplyStatus = (typeof ReplyStatus)[keyof typeof ReplyStatus];

/**
 * A reply:
 *  - `[id]`: the result was `undefined` (the common `void` method);
 *  - `[id, 0, json]`, `[id, 1, records]`, `[id, 4, [typeName, blobIndex]]`: the result (the
 *    status of a result is its `ValueTag`);
 *  - `[id, 2, records]`: the thrown value;
 *  - `[id, 3, code, message]`: an `RpcError` with that code; `[id, 3, code, message, records]`
 *    when it has a cause worth keeping (the exception a getter threw while the result was
 *    encoded), as a record table; `[id, 3, "INVALID_ARGUMENT", message, issues]` with the
 *    argument schema's issues as plain JSON, `[{ message, path }, …]` (at most 50).
 */
export type ReplyEnvelope =
  | [id: number]
  | [id: number, status: typeof ReplyStatus.OkJson, value: unknown]
  | [id: number, status: typeof ReplyStatus.OkRecords, records: RecordTable]
  | [id: number, status: typeof ReplyStatus.OkBytes, bytes: [type: string, blob: number]]
  | [id: number, status: typeof ReplyStatus.Threw, records: RecordTable]
  | [id: number, status: typeof ReplyStatus.Failed, code: string, message: string, cause?: RecordTable]
  | [id: number, status: typeof ReplyStatus.Failed, code: "INVALID_ARGUMENT", message: string, issues: WireIssue[]];

/** One issue of an `INVALID_ARGUMENT` reply: the validator's message, and where (keys and indexes from the argument list). */
export interface WireIssue {
  message: string;
  path: (string | number)[];
}

/** Body of a `FrameKind.Replies` frame. */
export type RepliesBody = ReplyEnvelope[];

/** Body of a `FrameKind.Release` frame: `[exportId, count]` pairs. */
export type ReleaseBody = [exportId: number, count: number][];

/** Body of a `FrameKind.Cancel` frame: ids of calls the sender made and gave up on. */
export type CancelBody = number[];

/**
 * Reference records: dorpc's record types for values that travel by reference, not by copy.
 * They only appear in record tables (never on the JSON fast path).
 *  - `[30, [callId, ...names]]` PIPELINE: the result of the sender's call `callId`, made earlier
 *    in the same frame, then these property reads on it.
 *  - `[31, [exportId, kind]]` EXPORT: a stub for the sender's export `exportId`; `kind` 0 is a
 *    function, 1 an object (an `RpcTarget`). Every occurrence is one reference the receiver
 *    holds until it sends `Release` for it.
 *  - `[32, exportId]` RETURN: the receiver's own export `exportId`, handed back (the receiver
 *    uses its original object).
 */
export const RefRecord = { Pipeline: 30, Export: 31, Return: 32 } as const;
export type RefRecord = (typeof RefRecord)[keyof typeof RefRecord];

/** `kind` of an EXPORT record. */
export const ExportKind = { Function: 0, Object: 1 } as const;

/** A call or export id as the wire carries it: a positive safe integer. */
export function isWireId(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

/** A record: `[type, payload]`. See codec.ts for the types and their payloads. */
export type WireRecord = [type: number, payload?: unknown];
export type RecordTable = WireRecord[];

/** A decoded frame, before its body is checked. */
export interface RawFrame {
  kind: number;
  body: unknown;
  /** Blobs of a binary frame, in order; empty for text frames (one shared array: never written to). */
  blobs: readonly Uint8Array[];
}

/** WebSocket close codes dorpc uses. */
export const CloseCode = {
  Normal: 1000,
  GoingAway: 1001,
  /** The peer sent something that is not a dorpc frame it can parse. */
  PolicyViolation: 1008,
  /** The peer sent a frame over a size limit (`limits.maxMessageBytes`, `limits.maxBlobs`). */
  MessageTooBig: 1009,
  InternalError: 1011,
  /** Sent by a client that got no answer to its heartbeat (application range 4000–4999). */
  HeartbeatTimeout: 4000,
  /** Sent by a client whose connection attempt neither opened nor failed in time. */
  ConnectTimeout: 4001,
  /**
   * Sent by a client that was disposed: its session is over, and nothing of it is ever resent.
   * The object then takes what still runs for it as abandoned, and lets go of the answers its
   * delivery record had not written yet (they were kept only to answer a resend). A code of its
   * own, not 1000: the object cannot tell a client's 1000 from the echo of its own.
   */
  SessionEnded: 4002,
  /**
   * Sent by a client that refused a frame of the object's (unreadable): the meaning of 1008, in
   * the range a WHATWG `WebSocket.close()` accepts (1000 or 3000–4999; browsers and Node's
   * WebSocket throw for 1008). The client resends its calls on its next connection, so for the
   * object this is a cut, not a client that left.
   */
  ClientRefusedFrame: 4008,
  /** The same for a frame over the client's limits (the meaning of 1009). */
  ClientFrameTooBig: 4009,
  /**
   * Never on the wire (no close frame can carry 0): a client's transport reports it when workerd
   * refuses to let a request use a socket another request opened (a client kept in a Worker's
   * module scope). See session.ts.
   */
  OtherRequest: 0,
} as const;
