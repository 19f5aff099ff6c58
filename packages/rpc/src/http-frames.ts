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

/** A frame-list body back into frames (views into `body`). Throws `RpcError` `DECODE`. */
export function splitFrames(body: Uint8Array): Uint8Array[] {
  const frames: Uint8Array[] = [];
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let at = 0;
  while (at < body.byteLength) {
    if (at + 4 > body.byteLength) throw new RpcError("DECODE", "A frame list ends inside a length.");
    const length = view.getUint32(at, true);
    if (at + 4 + length > body.byteLength) throw new RpcError("DECODE", "A frame list's frame runs past its end.");
    frames.push(new Uint8Array(body.buffer, body.byteOffset + at + 4, length)); // not subarray: no species lookup
    at += 4 + length;
  }
  return frames;
}
