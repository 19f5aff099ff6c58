/**
 * ArrayBuffers, typed arrays, DataViews, Blobs and Files inside a record table (records 17, 18,
 * 21, 22, 23): one record per buffer however many views share it, which bytes become blobs of
 * the frame (a view alone sends only its own bytes), and which views cannot be sent at all
 * (out of bounds, detached, shared memory). Owned by the record writer (encoder.ts).
 *
 * Internal module.
 */
import { pendingBlob } from "./blobs.js";
import type { EncodeContext } from "./encode-context.js";
import type { WireRecord } from "./envelopes.js";
import { Refusal } from "./paths.js";
import {
  Ext,
  FileCtor,
  isArrayBuffer,
  isDetached,
  isOutOfBounds,
  isResizable,
  VIEW_TYPES,
  type ViewSlots,
  viewName,
  viewSlots,
} from "./records.js";

const EMPTY_BYTES = new Uint8Array(0);

export class ByteRecords {
  /** ArrayBuffer → record index, so views over one buffer share it after decoding too. */
  private readonly buffers = new Map<ArrayBufferLike, number>();
  /** Buffer record → how many times the value refers to it (absent: once). */
  private readonly bufferUses = new Map<number, number>();
  /** Views whose buffer record may be trimmed to the view's own bytes. */
  private readonly views: [payload: [string, number, number, number], view: ViewSlots][] = [];

  constructor(
    private readonly records: WireRecord[],
    private readonly ctx: EncodeContext,
  ) {}

  /** The record of `buffer`, written once however many views and references share it. */
  buffer(buffer: ArrayBufferLike): number {
    const known = this.buffers.get(buffer);
    if (known !== undefined) {
      this.bufferUses.set(known, (this.bufferUses.get(known) ?? 1) + 1);
      return known;
    }
    if (!isArrayBuffer(buffer)) {
      throw new Refusal((path) => `Cannot send ${path}: it is a SharedArrayBuffer, and only ArrayBuffer bytes cross the wire.`);
    }
    if (isDetached(buffer)) throw new Refusal((path) => `Cannot send ${path}: its ArrayBuffer is detached.`);
    const blob = this.ctx.blobs.push(new Uint8Array(buffer)) - 1;
    // Tracked in `buffers` only (not `refs`), so every reference comes through here and counts.
    const index =
      this.records.push(
        isResizable(buffer)
          ? [Ext.RESIZABLE_BUFFER, [blob, (buffer as unknown as { maxByteLength: number }).maxByteLength]]
          : [Ext.ARRAY_BUFFER, blob],
      ) - 1;
    this.buffers.set(buffer, index);
    return index;
  }

  /**
   * A view is sent with only its own bytes when nothing else in the value refers to its buffer.
   * The structured clone algorithm would copy the whole buffer, but over a network that leaks
   * whatever else shares it: Node's `Buffer.from("hi")` sits in an 8 KiB pool of unrelated
   * data. Views that share a buffer with another part of the value keep sharing it, and so do
   * views of a resizable buffer (its size and maximum are part of the value).
   */
  trim(): void {
    for (const [payload, view] of this.views) {
      const bufferRecord = payload[1];
      if (this.bufferUses.has(bufferRecord)) continue;
      const record = this.records[bufferRecord]!;
      if (record[0] !== Ext.ARRAY_BUFFER) continue;
      const blob = this.ctx.blobs[record[1] as number]!; // the whole buffer's bytes
      if (view.byteLength === blob.byteLength) continue;
      this.ctx.blobs[record[1] as number] = blob.subarray(view.byteOffset, view.byteOffset + view.byteLength);
      payload[2] = 0;
    }
    // Copies, taken now: what is sent is the value as it was when it was encoded, whatever
    // happens to its buffers before the frame leaves (a few microtasks later).
    for (const index of this.buffers.values()) {
      const blob =
        this.records[index]![0] === Ext.RESIZABLE_BUFFER ? (this.records[index]![1] as number[])[0]! : (this.records[index]![1] as number);
      this.ctx.blobs[blob] = this.ctx.blobs[blob]!.slice();
    }
  }

  /** Writes `view`'s record with `push` (so it is registered like any object), then its buffer's. */
  view(view: ArrayBufferView, push: (record: WireRecord) => number): number {
    const name = viewName(view);
    if (!(name in VIEW_TYPES)) throw new Refusal((path) => `Cannot send ${path}: it is a ${name}, which this runtime cannot rebuild.`);
    if (isOutOfBounds(view)) {
      throw new Refusal((path) => `Cannot send ${path}: the ${name} is out of bounds (its buffer shrank under it or was detached).`);
    }
    // Read from the view's slots, never through properties its class or an own property may override.
    const slots = viewSlots(view);
    // Push the view before its buffer: the first value added must get index 0 (the root).
    const payload: [string, number, number, number] = [name, -1, slots.byteOffset, slots.length];
    const index = push([Ext.VIEW, payload]);
    payload[1] = this.buffer(slots.buffer);
    this.views.push([payload, slots]);
    return index;
  }

  /** The record of a Blob or File; its blob slot stays empty until `resolveBlobs` reads the bytes. */
  blob(blob: Blob): WireRecord {
    const slot = this.ctx.blobs.push(EMPTY_BYTES) - 1;
    (this.ctx.pending ??= []).push(pendingBlob(blob, slot));
    return FileCtor && blob instanceof FileCtor
      ? [Ext.FILE, [slot, blob.type, blob.name, blob.lastModified]]
      : [Ext.BLOB, [slot, blob.type]];
  }
}
