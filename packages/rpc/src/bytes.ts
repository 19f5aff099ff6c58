/**
 * The bytes path (`ValueTag.Bytes`): a value that *is* one ArrayBuffer, typed array or DataView
 * (an upload, a file chunk, an image) travels as one blob and a two-element descriptor,
 * `[typeName, blobIndex]`, instead of a record table. It costs what the raw bytes cost: one copy
 * into the frame, one copy out of it, no table to write, validate or build.
 *
 * Only the view's own bytes travel, and the decoded view starts at offset 0 of a buffer of its
 * own (as on the record path when nothing shares the buffer). Views of resizable or shared
 * buffers, and out-of-bounds views, take the record path, which keeps or refuses them.
 *
 * Internal module.
 */
import { bad, type DecodeContext } from "./decoder.js";
import { tooManyNodes } from "./json-path.js";
import { copyBytes, isArrayBuffer, isDetached, isOutOfBounds, isResizable, VIEW_TYPES, viewName, viewSlots } from "./records.js";

/** The descriptor of a lone bytes value: `[typeName, blobIndex]`, typeName a view name or "ArrayBuffer". */
export type BytesPayload = [type: string, blob: number];

/**
 * The descriptor for `value` when it can take the bytes path (its bytes pushed onto `blobs`),
 * or `undefined` when it is anything else.
 */
export function writeBytes(value: object, blobs: Uint8Array[]): BytesPayload | undefined {
  if (ArrayBuffer.isView(value)) {
    if (isOutOfBounds(value)) return undefined;
    // From the view's slots: an own property or a subclass getter cannot redirect them.
    const { buffer, byteOffset, byteLength } = viewSlots(value);
    if (!isArrayBuffer(buffer) || isResizable(buffer)) return undefined;
    const name = viewName(value);
    if (!(name in VIEW_TYPES)) return undefined;
    // A copy: what is sent is the value as it was now, whatever the caller does with its
    // buffer before the frame leaves (a few microtasks later).
    return [name, blobs.push(new Uint8Array(buffer, byteOffset, byteLength).slice()) - 1];
  }
  if (value instanceof ArrayBuffer && isArrayBuffer(value) && !isResizable(value) && !isDetached(value)) {
    return ["ArrayBuffer", blobs.push(new Uint8Array(value).slice()) - 1];
  }
  return undefined;
}

/** Rebuilds a bytes value after checking its descriptor: a copy, never a view into the frame. */
export function readBytes(payload: unknown, ctx: DecodeContext): ArrayBuffer | ArrayBufferView {
  if (!Array.isArray(payload) || payload.length !== 2) throw bad("A bytes value must be [type, blob].");
  const [name, index] = payload as unknown[];
  if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= ctx.blobs.length) {
    throw bad(`A bytes value refers to blob ${String(index)}, but the frame has ${ctx.blobs.length}.`);
  }
  const View = name === "ArrayBuffer" ? undefined : typeof name === "string" ? VIEW_TYPES[name] : undefined;
  if (name !== "ArrayBuffer" && !View) throw bad(`A bytes value names type ${JSON.stringify(name)}, which is not allowed.`);
  if (--ctx.budget.nodes < 0) throw tooManyNodes(ctx.limits);
  const blob = ctx.blobs[index]!;
  const buffer = copyBytes(blob);
  if (!View) return buffer;
  if (blob.byteLength % View.BYTES_PER_ELEMENT !== 0) {
    throw bad(`A ${String(name)} cannot hold ${blob.byteLength} bytes: not a multiple of ${View.BYTES_PER_ELEMENT}.`);
  }
  return new View(buffer, 0, blob.byteLength / View.BYTES_PER_ELEMENT);
}
