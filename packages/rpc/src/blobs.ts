/**
 * Blob and File values: their bytes can only be read asynchronously (`blob.arrayBuffer()`), but
 * encoding is synchronous. So the record writer reserves a blob slot for each one and records a
 * `PendingBlob`; `resolveBlobs` then reads them all into their slots, and only then may the
 * frame be written. A connection that waits for a Blob holds back its later frames too, so calls
 * and replies keep their order (outbox.ts: an envelope whose bytes are not ready holds back every
 * envelope after it).
 *
 * On the receiving side a Blob or File is rebuilt from its blob with `type` (and `name`,
 * `lastModified`), under the same limits as any other bytes: they are blobs of the frame.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";
import { BlobCtor, FileCtor } from "./records.js";

/** A Blob whose bytes belong in `blobs[slot]` of the frame being encoded. */
export interface PendingBlob {
  readonly blob: Blob;
  readonly slot: number;
  /** `blob.size` when it was encoded: a Blob is immutable, so the bytes read must match. */
  readonly size: number;
}

export function pendingBlob(blob: Blob, slot: number): PendingBlob {
  return { blob, slot, size: blob.size };
}

/**
 * Reads every pending Blob into its slot of `blobs`, in parallel. Rejects with `RpcError`
 * `ENCODE` (the read failure as its `cause`) when one cannot be read, e.g. a browser File whose
 * file changed on disk.
 */
export async function resolveBlobs(blobs: Uint8Array[], pending: readonly PendingBlob[]): Promise<void> {
  await Promise.all(
    pending.map(async ({ blob, slot, size }) => {
      let bytes: ArrayBuffer;
      try {
        bytes = await blob.arrayBuffer();
      } catch (error) {
        throw new RpcError("ENCODE", `Reading the bytes of a Blob of ${size} bytes failed: ${String(error)}`, { cause: error });
      }
      if (bytes.byteLength !== size) {
        throw new RpcError("ENCODE", `A Blob of ${size} bytes gave ${bytes.byteLength} bytes when read.`);
      }
      blobs[slot] = new Uint8Array(bytes);
    }),
  );
}

/** Rebuilds a Blob from `bytes` (copied by the constructor). */
export function makeBlob(bytes: Uint8Array, type: string): Blob {
  if (!BlobCtor) throw new RpcError("DECODE", "This runtime has no Blob, so a Blob value cannot be received here.");
  return new BlobCtor([bytes as Uint8Array<ArrayBuffer>], { type });
}

/**
 * Rebuilds a File. Where the runtime has Blob but no File, the bytes arrive as a Blob carrying
 * `name` and `lastModified` as own properties, so nothing the sender gave is lost.
 */
export function makeFile(bytes: Uint8Array, type: string, name: string, lastModified: number): Blob {
  if (FileCtor) return new FileCtor([bytes as Uint8Array<ArrayBuffer>], name, { type, lastModified });
  return Object.assign(makeBlob(bytes, type), { name, lastModified });
}
