/**
 * What the browser tests call on the `Probe` object (worker.ts), as plain TypeScript: the page
 * imports this, never worker.ts, so no Workers type enters the page's program (the types-only
 * pattern of docs/getting-started.md).
 */
import type { WithTopics } from "@dorpc/rpc";

/** The Probe's methods; `WithTopics` carries its topics to `subscribe` and `useSubscription`. */
export interface ProbeApi extends WithTopics<ProbeTopics> {
  /** Returns its argument: values make the round trip through the codec both ways. */
  echo<T>(value: T): T;
  /** `length` bytes where byte i is `i & 0xff`. */
  bytes(length: number): Uint8Array;
  /** Byte count and sum of the bytes received, to check what arrived without echoing it. */
  measure(data: Uint8Array): { length: number; sum: number };
  increment(by?: number): number;
  getValue(): number;
  /** Throws the kind of error asked for (see `FailKind`). */
  fail(kind: FailKind): never;
  /** Resolves with `label` after `ms` milliseconds. */
  wait(ms: number, label: string): Promise<string>;
  /** What arrived on the object for a Blob or File argument: its class, fields and a digest of its bytes. */
  inspectBlob(blob: Blob): Promise<BlobReport>;
  /** A File made on the object: `size` bytes where byte i is `(i * 7) & 0xff`. */
  makeFile(name: string, type: string, lastModified: number, size: number): File;
  /** Publishes `text` on `news`; returns its sequence number. */
  announce(text: string): number;
  /** How many of the object's sockets are subscribed to `topic`, as the object sees it. */
  subscribers(topic: string): number;
}

/** The Probe's topics and their event types. */
export interface ProbeTopics {
  news: { text: string };
}

/** A Blob or File as the object received it. */
export interface BlobReport {
  kind: "File" | "Blob";
  type: string;
  size: number;
  /** File only. */
  name?: string;
  lastModified?: number;
  /** SHA-256 of the bytes, hex. */
  sha256: string;
}

/** `type`/`range`: standard subclasses; `quota`: a custom subclass with a `code` property; `string`: a thrown non-Error. */
export type FailKind = "type" | "range" | "quota" | "string";
