/**
 * Frames: how one batch of envelopes becomes one WebSocket message and back.
 *
 * Text when the batch carries no bytes, binary (header + blobs) when it does; the layout is
 * documented in envelopes.ts. Size is checked before anything is parsed.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";
import { FRAME_MARK, FRAME_MARK_CHAR, FrameKind, type RawFrame } from "./envelopes.js";
import type { RpcLimits } from "./limits.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Bytes before the blob-length table in a binary frame. */
const FIXED_HEADER = 12;

/**
 * The first blob starts at a multiple of this, the JSON header padded with spaces (which JSON
 * ignores) to get there. Copying bytes out of a frame, or into one, at an offset that is not a
 * multiple of 16 measured up to 3× slower in V8 for 64 KiB; aligned, a view could also be made
 * over the frame itself.
 */
const BLOB_ALIGNMENT = 16;
const SPACE = 0x20;

/** The blobs of every text frame. */
const NO_BLOBS: readonly Uint8Array[] = Object.freeze([]);

/**
 * Headers up to this many characters are written and read by a loop when they are ASCII (as
 * nearly all are: ids, method names, record tables of plain keys) instead of by a TextEncoder /
 * TextDecoder call, which costs more than the loop for a short header in Node and workerd alike.
 */
const SHORT_HEADER = 512;

/** A frame ready for `WebSocket.send`. */
export type WireFrame = string | Uint8Array;

/**
 * One frame of `kind` whose body is the JSON text `json`, plus the blobs its records refer to.
 * Callers stringify (each envelope once, when it is queued) so a frame is assembled, not re-walked.
 */
export function writeFrame(kind: number, json: string, blobs: readonly Uint8Array[]): WireFrame {
  if (blobs.length === 0) return FRAME_MARK_CHAR + String.fromCharCode(kind) + json;
  const header = isShortAscii(json) ? undefined : encoder.encode(json);
  const jsonBytes = header ? header.byteLength : json.length;
  const start = FIXED_HEADER + 4 * blobs.length;
  const headerLength = jsonBytes + ((BLOB_ALIGNMENT - ((start + jsonBytes) % BLOB_ALIGNMENT)) % BLOB_ALIGNMENT);
  let total = start + headerLength;
  for (const blob of blobs) total += blob.byteLength;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  out[0] = FRAME_MARK;
  out[1] = kind;
  view.setUint32(4, blobs.length, true);
  view.setUint32(8, headerLength, true);
  let at = FIXED_HEADER;
  for (const blob of blobs) {
    view.setUint32(at, blob.byteLength, true);
    at += 4;
  }
  if (header) out.set(header, at);
  else for (let i = 0; i < jsonBytes; i++) out[at + i] = json.charCodeAt(i);
  out.fill(SPACE, at + jsonBytes, at + headerLength);
  at += headerLength;
  for (const blob of blobs) {
    out.set(blob, at);
    at += blob.byteLength;
  }
  return out;
}

/**
 * The most characters a Hello frame takes (mark, kind, a session id of at most 64 characters in
 * quotes, the resending flag and an age): where the end of a leading Hello is looked for.
 */
export const HELLO_MAX = 128;

/**
 * A client's Hello and the frame it sends next travel as one text message (`Outbox.lead`): where
 * the Hello at the start of `text` ends and that frame begins, or -1 when `text` is not a Hello
 * followed by another frame. JSON text holds no raw U+001E (JSON escapes every control character
 * in a string), so the next frame mark is where the Hello ends.
 */
export function helloEnd(text: string): number {
  if (text.charCodeAt(0) !== FRAME_MARK || text.charCodeAt(1) !== FrameKind.Hello) return -1;
  const end = Math.min(text.length, HELLO_MAX + 1);
  for (let i = 2; i < end; i++) if (text.charCodeAt(i) === FRAME_MARK) return i;
  return -1;
}

/** What `readFrame` accepts: what WebSockets deliver in browsers, Node and workerd. */
export type IncomingData = string | ArrayBuffer | ArrayBufferView;

/**
 * Parses one incoming message. Returns `undefined` when it is not a dorpc frame (it does not
 * start with FRAME_MARK); throws `RpcError` `LIMIT` when it is too large and `DECODE` when it
 * is malformed. Blobs are views into the message, not copies.
 */
export function readFrame(data: IncomingData, limits: RpcLimits): RawFrame | undefined {
  if (typeof data === "string") {
    if (data.charCodeAt(0) !== FRAME_MARK) return undefined;
    if (data.length > limits.maxMessageBytes) throw tooBig(data.length, limits);
    // A bare mark + kind (heartbeats) has no body.
    return { kind: data.charCodeAt(1), body: data.length === 2 ? null : parseJson(data.slice(2)), blobs: NO_BLOBS };
  }
  if (!ArrayBuffer.isView(data) && !(data instanceof ArrayBuffer)) {
    // A Blob (the default binaryType of some sockets) cannot be read synchronously: fail loudly
    // instead of dropping the frame and leaving its calls to time out.
    throw new RpcError("DECODE", 'Binary messages must arrive as ArrayBuffer: set the socket\'s binaryType to "arraybuffer".');
  }
  const bytes = ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
  if (bytes[0] !== FRAME_MARK) return undefined;
  if (bytes.byteLength > limits.maxMessageBytes) throw tooBig(bytes.byteLength, limits);
  if (bytes.byteLength < FIXED_HEADER) throw new RpcError("DECODE", "Binary frame is shorter than its fixed header.");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const blobCount = view.getUint32(4, true);
  const headerLength = view.getUint32(8, true);
  if (blobCount > limits.maxBlobs) {
    throw new RpcError("LIMIT", `Frame carries ${blobCount} blobs, more than limits.maxBlobs (${limits.maxBlobs}).`);
  }
  let at = FIXED_HEADER + 4 * blobCount;
  if (at + headerLength > bytes.byteLength) throw new RpcError("DECODE", "Binary frame header runs past the end of the frame.");
  const lengths: number[] = [];
  let total = at + headerLength;
  for (let i = 0; i < blobCount; i++) {
    const length = view.getUint32(FIXED_HEADER + 4 * i, true);
    lengths.push(length);
    total += length;
  }
  if (total !== bytes.byteLength) {
    throw new RpcError("DECODE", `Binary frame declares ${total} bytes but is ${bytes.byteLength} bytes long.`);
  }
  const json = readHeader(bytes, at, headerLength);
  at += headerLength;
  const blobs: Uint8Array[] = [];
  // Views made directly, not by `subarray`: that one looks up the array's constructor (species).
  const buffer = bytes.buffer;
  for (const length of lengths) {
    blobs.push(new Uint8Array(buffer, bytes.byteOffset + at, length));
    at += length;
  }
  return { kind: bytes[1]!, body: parseJson(json), blobs };
}

/** True when `text` is short and every character is ASCII: then its UTF-8 bytes are its char codes. */
function isShortAscii(text: string): boolean {
  if (text.length > SHORT_HEADER) return false;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The header text of a binary frame: `length` bytes of UTF-8 from `at` (JSON, padded with spaces). */
function readHeader(bytes: Uint8Array, at: number, length: number): string {
  const header = new Uint8Array(bytes.buffer, bytes.byteOffset + at, length);
  if (length <= SHORT_HEADER) {
    let ascii = true;
    for (let i = 0; i < length; i++) {
      if (header[i]! > 0x7f) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode.apply(null, header as unknown as number[]);
  }
  try {
    return decoder.decode(header);
  } catch {
    throw new RpcError("DECODE", "Binary frame header is not valid UTF-8.");
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RpcError("DECODE", `Frame is not valid JSON: ${(error as Error).message.slice(0, 100)}`);
  }
}

function tooBig(size: number, limits: RpcLimits): RpcError {
  return new RpcError("LIMIT", `Frame of ${size} bytes exceeds limits.maxMessageBytes (${limits.maxMessageBytes}).`);
}
