/**
 * Hand-built binary frames for hostile-input tests (Node and workerd alike), laid out as
 * packages/rpc/src/frame.ts reads them: mark, kind, two zero bytes, u32 blob count, u32 header
 * length, u32 per blob (little-endian), header, blobs. `layout` overrides the declared numbers,
 * so a test can make a frame lie about itself; `align` pads the header with spaces so the first
 * blob starts at a multiple of 16, as packages/rpc/src/frame.ts writes frames.
 */
export interface BinaryLayout {
  /** Frame kind byte. Default "C" (calls). */
  kind?: number;
  blobCount?: number;
  headerLength?: number;
  lengths?: number[];
  /** Pad the header with spaces (which JSON ignores) so the first blob starts at a multiple of 16. */
  align?: boolean;
}

export function binaryFrame(header: string | Uint8Array, blobs: Uint8Array[] = [], layout: BinaryLayout = {}): Uint8Array {
  let head = typeof header === "string" ? new TextEncoder().encode(header) : header;
  const lengths = layout.lengths ?? blobs.map((b) => b.byteLength);
  if (layout.align) {
    const start = 12 + 4 * lengths.length;
    const padded = new Uint8Array(head.byteLength + ((16 - ((start + head.byteLength) % 16)) % 16)).fill(0x20);
    padded.set(head);
    head = padded;
  }
  const total = 12 + 4 * lengths.length + head.byteLength + blobs.reduce((n, b) => n + b.byteLength, 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  out[0] = 0x1e;
  out[1] = layout.kind ?? 0x43;
  view.setUint32(4, layout.blobCount ?? lengths.length, true);
  view.setUint32(8, layout.headerLength ?? head.byteLength, true);
  for (const [i, length] of lengths.entries()) view.setUint32(12 + 4 * i, length, true);
  let at = 12 + 4 * lengths.length;
  out.set(head, at);
  at += head.byteLength;
  for (const blob of blobs) {
    out.set(blob, at);
    at += blob.byteLength;
  }
  return out;
}
