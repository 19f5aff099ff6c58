/**
 * What the browser tests call on the `Probe` object (worker.ts), as plain TypeScript: the page
 * imports this, never worker.ts, so no Workers type enters the page's program (the types-only
 * pattern of docs/getting-started.md).
 */
export interface ProbeApi {
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
}

/** `type`/`range`: standard subclasses; `quota`: a custom subclass with a `code` property; `string`: a thrown non-Error. */
export type FailKind = "type" | "range" | "quota" | "string";
