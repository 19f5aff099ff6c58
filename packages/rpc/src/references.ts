/**
 * Reference tables: what one end hands out by reference (exports) and what it holds of the other
 * end's (imports), with the distributed reference count that lets each side free its entries.
 *
 * Counting (the same on both ends):
 *  - Every EXPORT record a message carries is one reference. The sender's export entry counts the
 *    references the peer holds (`refs`); the receiver's import entry counts how many it received.
 *  - When the receiver no longer needs the import, it sends `Release [id, received]` once and
 *    forgets the entry. The sender subtracts; its entry goes when nothing is left. A reference
 *    sent again while a release is in flight is simply counted again, so the race is harmless.
 *  - An entry is also pinned while a message that carries it waits to be sent (a client encodes a
 *    call when it is made, possibly before it has a connection).
 *  - When the connection ends, the peer's references end with it (`peerLost`); imports of that
 *    connection are marked dead and calls on their stubs fail with `REFERENCE_LOST`.
 *
 * Tables live in memory only: a hibernating Durable Object that is evicted loses them, which is
 * why a call on an old stub after eviction fails with `REFERENCE_LOST` (docs/protocol.md).
 *
 * Internal module.
 */
import { ExportKind, isWireId, RefRecord, ReplyStatus, ValueTag } from "./envelopes.js";
import { RpcError } from "./errors.js";

export interface ExportEntry {
  readonly id: number;
  readonly value: object;
  readonly kind: number;
  /** References the peer holds. */
  refs: number;
  /** References in messages not sent yet. */
  pins: number;
}

/** What this end hands out by reference. */
export class ExportTable {
  private readonly byId = new Map<number, ExportEntry>();
  private readonly byValue = new Map<object, ExportEntry>();
  private nextId = 0;

  constructor(
    private readonly max: number,
    private readonly label: string,
    /**
     * Asked when the first entry is made (the workerd glue marks the socket): the first id, when
     * ids from 1 may still be in the peer's hands (handed out on the same socket before an
     * eviction).
     */
    private readonly firstId?: () => number,
  ) {}

  get size(): number {
    return this.byId.size;
  }

  /** One more reference to `value` in a message being encoded: pinned until `sent` or `dropped`. */
  pin(value: object): ExportEntry {
    let entry = this.byValue.get(value);
    if (!entry) {
      if (this.byId.size >= this.max) {
        throw new RpcError(
          "LIMIT",
          `${this.label} already holds ${this.byId.size} objects or functions passed by reference (limits.maxExports); release stubs you no longer need.`,
        );
      }
      if (this.nextId === 0) this.nextId = this.firstId?.() ?? 1;
      entry = { id: this.nextId++, value, kind: typeof value === "function" ? ExportKind.Function : ExportKind.Object, refs: 0, pins: 0 };
      this.byId.set(entry.id, entry);
      this.byValue.set(value, entry);
    }
    entry.pins++;
    return entry;
  }

  /** The message carrying these references left: the peer holds them now. */
  sent(ids: readonly number[]): void {
    for (const id of ids) {
      const entry = this.byId.get(id);
      if (!entry) continue;
      entry.pins--;
      entry.refs++;
    }
  }

  /** A sent message carrying these references will be sent again (on the next connection). */
  repin(ids: readonly number[]): void {
    for (const id of ids) {
      const entry = this.byId.get(id);
      if (entry) entry.pins++;
    }
  }

  /** The message carrying these references will never be sent. */
  dropped(ids: readonly number[]): void {
    for (const id of ids) {
      const entry = this.byId.get(id);
      if (!entry) continue;
      entry.pins--;
      this.collect(entry);
    }
  }

  /** The peer released `count` references to `id`. Unknown ids are ignored (already gone). */
  release(id: number, count: number): void {
    const entry = this.byId.get(id);
    if (!entry) return;
    entry.refs -= count;
    this.collect(entry);
  }

  /** The export `id`, if the peer may use it. */
  get(id: number): ExportEntry | undefined {
    const entry = this.byId.get(id);
    return entry && entry.refs > 0 ? entry : undefined;
  }

  /** The connection ended: the peer holds nothing any more. */
  peerLost(): void {
    for (const entry of [...this.byId.values()]) {
      entry.refs = 0;
      this.collect(entry);
    }
  }

  private collect(entry: ExportEntry): void {
    if (entry.refs > 0 || entry.pins > 0) return;
    this.byId.delete(entry.id);
    this.byValue.delete(entry.value);
  }
}

/** Why an import can no longer be used; part of the `RpcError` a call on its stub rejects with. */
export type ImportEnd = { code: "RELEASED" | "REFERENCE_LOST"; message: string };

export interface ImportEntry {
  readonly id: number;
  readonly kind: number;
  /** EXPORT records received for it: what the release gives back. */
  received: number;
  /** Live stub objects for it (the first one plus `dup()`s, minus disposed ones). */
  holders: number;
  /** Set once released or lost; calls on its stubs then fail with this. */
  ended: ImportEnd | undefined;
  /**
   * The stub handed out for it, held weakly: later EXPORT records of the same id yield the same
   * stub while anyone holds it, and the table never keeps a stub from being garbage-collected.
   */
  stub: { deref(): object | undefined } | undefined;
}

/** What this end holds of the peer's exports. */
export class ImportTable {
  private readonly byId = new Map<number, ImportEntry>();

  constructor(
    private readonly max: number,
    private readonly sendRelease: (id: number, count: number) => void,
    /** The connection these imports came over (opaque here). */
    readonly owner: object,
  ) {}

  get size(): number {
    return this.byId.size;
  }

  /** An EXPORT record for `id` arrived: one more reference held. */
  receive(id: number, kind: number): ImportEntry {
    let entry = this.byId.get(id);
    if (!entry) {
      if (this.byId.size >= this.max) {
        throw new RpcError("LIMIT", `The peer passed more than limits.maxImports (${this.max}) objects or functions by reference.`);
      }
      entry = { id, kind, received: 0, holders: 0, ended: undefined, stub: undefined };
      this.byId.set(id, entry);
    }
    entry.received++;
    return entry;
  }

  /**
   * An EXPORT record of `id` this end will never use (its call or reply was given up): counted
   * and released at once. Makes no entry, so it works at `maxImports` too.
   */
  giveBack(id: number): void {
    const entry = this.byId.get(id);
    if (!entry) {
      this.sendRelease(id, 1);
      return;
    }
    entry.received++;
    // Held by a stub already: counted, and released with it; else released now.
    if (entry.holders === 0) this.release(entry, { code: "RELEASED", message: "Released: its call was given up." });
  }

  /** The last holder of `entry` let go: tell the peer and forget it. */
  release(entry: ImportEntry, why: ImportEnd): void {
    if (entry.ended) return;
    entry.ended = why;
    if (this.byId.get(entry.id) === entry) this.byId.delete(entry.id);
    this.sendRelease(entry.id, entry.received);
  }

  /** Ends every import and returns the releases to send for them (`[id, received]` each). */
  drain(why: ImportEnd): [number, number][] {
    const pairs: [number, number][] = [];
    for (const entry of this.byId.values()) {
      entry.ended = why;
      pairs.push([entry.id, entry.received]);
    }
    this.byId.clear();
    return pairs;
  }

  /** The connection ended: every import is dead, nothing is sent. */
  lost(why: ImportEnd): void {
    for (const entry of this.byId.values()) entry.ended = why;
    this.byId.clear();
  }
}

/**
 * Checks an EXPORT record's payload (`[exportId, kind]`) or a RETURN record's (`exportId`) while
 * a table is validated, before anything is built. Throws `DECODE`.
 */
export function checkReference(type: number, payload: unknown): void {
  if (type === RefRecord.Export) {
    if (
      !Array.isArray(payload) ||
      payload.length !== 2 ||
      !isWireId(payload[0]) ||
      (payload[1] !== ExportKind.Function && payload[1] !== ExportKind.Object)
    ) {
      throw new RpcError("DECODE", "An export record must be [exportId, kind].");
    }
  } else if (!isWireId(payload)) {
    throw new RpcError("DECODE", "A return record must carry an export id.");
  }
}

/**
 * A reply nobody waits for any more (the call timed out or was cancelled after it ran): the
 * objects and functions it hands out by reference are released at once, or the peer would hold
 * them for the rest of the connection. Not decoded: its record table is only scanned for EXPORT
 * records.
 */
export function releaseUnclaimed(imports: ImportTable, reply: unknown[]): void {
  releaseExports(imports, reply[1] === ReplyStatus.OkRecords || reply[1] === ReplyStatus.Threw ? reply[2] : undefined);
}

/**
 * A call that ends without its arguments built (refused, cancelled before it started, answered
 * from the delivery record, failed before it ran): what they hand out by reference is released,
 * as for an unclaimed reply. `steps` are its parsed steps (a table still there was never built).
 */
export function releaseUnbuilt(imports: ImportTable, steps: readonly (string | { table: unknown })[]): void {
  for (const step of steps) {
    if (typeof step === "string" || step.table === undefined) continue;
    releaseExports(imports, step.table);
    step.table = undefined;
  }
}

/** The same for a call refused before it was parsed: `chain` is its envelope's raw chain. */
export function releaseUnread(imports: ImportTable, chain: unknown): void {
  if (!Array.isArray(chain)) return;
  for (const step of chain) if (Array.isArray(step) && step[0] === ValueTag.Records) releaseExports(imports, step[1]);
}

/**
 * Gives back what the EXPORT records of `table` hand out (see `ImportTable.giveBack`), except
 * the records in `built` (their payloads): a table whose build failed part-way already counted
 * those, and their stubs are released with whatever holds them.
 */
export function releaseExports(imports: ImportTable, table: unknown, built?: ReadonlySet<unknown>): void {
  if (!Array.isArray(table)) return;
  for (const record of table as unknown[]) {
    if (!Array.isArray(record) || record[0] !== RefRecord.Export || built?.has(record[1])) continue;
    try {
      checkReference(RefRecord.Export, record[1]);
    } catch {
      continue; // not a reference that can be counted: nothing to release
    }
    imports.giveBack((record[1] as [number, number])[0]);
  }
}
