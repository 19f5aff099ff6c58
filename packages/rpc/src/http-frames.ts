/**
 * How frames travel in HTTP bodies (the HTTP batch transport, both ends):
 *  - `application/x-dorpc`: one frame, exactly the bytes a WebSocket message would carry (a text
 *    frame as UTF-8, a binary frame as it is);
 *  - `application/x-dorpc-frames`: several frames, each prefixed by its byte length (u32,
 *    little-endian), when one request's replies took more than one frame;
 *  - headers `X-Dorpc-Session` (the client session, the key of its calls' delivery record) and
 *    `X-Dorpc-Resending: 1; age=<ms>` (the request resends calls of one that got no answer; the
 *    session began that many ms ago, as in the WebSocket hello).
 *
 * Internal module.
 */
import { FRAME_MARK } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { WireFrame } from "./frame.js";

export const FRAME_TYPE = "application/x-dorpc";
export const FRAMES_TYPE = "application/x-dorpc-frames";
export const SESSION_HEADER = "X-Dorpc-Session";
export const RESENDING_HEADER = "X-Dorpc-Resending";

/** The `X-Dorpc-Resending` value for a session that began `age` ms ago. */
export function resendingHeader(age: number): string {
  return `1; age=${age}`;
}

const RESENDING = /^1(?:;\s*age=(\d{1,15}))?$/;

/**
 * Reads `X-Dorpc-Resending`: `1` (resending, age not said) or `1; age=<ms>`. Anything else is
 * not resending.
 */
export function readResending(value: string | null): { resending: boolean; age?: number } {
  const match = value === null ? null : RESENDING.exec(value.trim());
  if (!match) return { resending: false };
  return match[1] === undefined ? { resending: true } : { resending: true, age: Number(match[1]) };
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/**
 * The frame whose bytes are `bytes`: a binary frame has two zero bytes after its mark and kind
 * (frame.ts); a text frame never does (they are the start of its JSON), so it is decoded back to
 * the string a WebSocket would have delivered. Throws `RpcError` `DECODE` for text that is not UTF-8.
 */
export function frameOf(bytes: Uint8Array): WireFrame {
  if (bytes[0] !== FRAME_MARK || (bytes.byteLength >= 4 && bytes[2] === 0 && bytes[3] === 0)) return bytes;
  try {
    return decoder.decode(bytes);
  } catch {
    throw new RpcError("DECODE", "A text frame is not valid UTF-8.");
  }
}

/**
 * The most bytes a frame within `maxMessageBytes` can take in an HTTP body: a text frame's limit
 * counts UTF-16 code units, and one unit is at most three bytes of UTF-8.
 */
export function bodyBytesFor(maxMessageBytes: number): number {
  return Math.min(3 * maxMessageBytes, Number.MAX_SAFE_INTEGER);
}

/**
 * A body read whole, or `undefined` as soon as it passes `max` bytes (the rest is not read). A
 * missing body is empty.
 */
export async function readLimited(body: ReadableStream<Uint8Array> | null, max: number): Promise<Uint8Array | undefined> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return chunks.length === 1 ? chunks[0]! : concat(chunks, size);
}

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/**
 * Reads a frame-list body, handing each frame to `onFrame` as soon as it has arrived whole, so no
 * more than one frame is held. Resolves with `undefined` at the end of the list, or with the
 * declared size of a frame over `max` bytes (that frame and the rest are not read). Throws
 * `RpcError` `DECODE` for a list cut inside a frame or a length.
 */
export async function readFrameList(
  body: ReadableStream<Uint8Array> | null,
  max: number,
  onFrame: (bytes: Uint8Array) => void,
): Promise<number | undefined> {
  if (!body) return undefined;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let held = 0;
  /** The first `n` held bytes, taken out of `chunks`. */
  const take = (n: number): Uint8Array => {
    let out: Uint8Array;
    const first = chunks[0]!;
    if (first.byteLength >= n) {
      out = new Uint8Array(first.buffer, first.byteOffset, n);
      if (first.byteLength === n) chunks.shift();
      else chunks[0] = new Uint8Array(first.buffer, first.byteOffset + n, first.byteLength - n);
    } else {
      out = new Uint8Array(n);
      for (let at = 0; at < n; ) {
        const chunk = chunks[0]!;
        const part = Math.min(n - at, chunk.byteLength);
        out.set(part === chunk.byteLength ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, part), at);
        if (part === chunk.byteLength) chunks.shift();
        else chunks[0] = new Uint8Array(chunk.buffer, chunk.byteOffset + part, chunk.byteLength - part);
        at += part;
      }
    }
    held -= n;
    return out;
  };
  let length = -1; // of the frame being read; -1 while its length is
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value.byteLength === 0) continue;
    chunks.push(value);
    held += value.byteLength;
    for (;;) {
      if (length < 0) {
        if (held < 4) break;
        const prefix = take(4);
        length = new DataView(prefix.buffer, prefix.byteOffset, 4).getUint32(0, true);
        if (length > max) {
          await reader.cancel().catch(() => undefined);
          return length;
        }
      }
      if (held < length) break;
      const frame = take(length);
      length = -1;
      onFrame(frame);
    }
  }
  if (length >= 0) throw new RpcError("DECODE", "A frame list's frame runs past its end.");
  if (held > 0) throw new RpcError("DECODE", "A frame list ends inside a length.");
  return undefined;
}

/** Frames as one frame-list body. */
export function joinFrames(frames: readonly WireFrame[]): Uint8Array {
  const bytes = frames.map((f) => (typeof f === "string" ? encoder.encode(f) : f));
  let total = 0;
  for (const b of bytes) total += 4 + b.byteLength;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const b of bytes) {
    view.setUint32(at, b.byteLength, true);
    out.set(b, at + 4);
    at += 4 + b.byteLength;
  }
  return out;
}
