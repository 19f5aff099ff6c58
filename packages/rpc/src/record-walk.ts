/**
 * The record writer's walk (encoder.ts writes what each value becomes): which value is written
 * next, which record index it gets, where that index is stored in its container's record, and,
 * when something fails, where the walk was.
 *
 * Invariants:
 *  - Records are numbered in depth-first pre-order from the root (index 0), exactly as a
 *    recursive writer would, but the walk keeps its own stack of frames: a value 100,000 levels
 *    deep costs memory, never the call stack. `maxDepth` still bounds it, because a Proxy can
 *    produce an endless chain.
 *  - A container's record is pushed before its children are walked; each child's index is then
 *    stored in the slot reserved for it.
 *  - A failure becomes `RpcError` `ENCODE` naming where it was (`result.config.env`), worked out
 *    only then from the open frames; an exception thrown while reading (a getter) is kept as that
 *    error's `cause`. What the connection's `refer` hook threw passes through as is.
 *
 * Internal module.
 */
import type { EncodeContext } from "./encode-context.js";
import type { WireRecord } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { DEFAULT_LIMITS } from "./limits.js";
import { describeThrown, type Names, pathText, Refusal, type Segment, segmentOf, segmentText } from "./paths.js";

/** Where a child's record index is stored: a payload array, an entry pair, an error payload. */
export type Holder = object;

/** Where a frame puts child `j`'s record index (see Frame). */
export const INTO_LIST = 0;
export const INTO_PAIRS = 1;
export const INTO_SLOTS = 2;

/**
 * The children of one container still to be written, and where their record indexes go:
 * `into[j]` (arrays, sets), `into[j >> 1][j & 1]` (key/value pairs of objects and maps), or
 * `into[j][slots[j]]` (errors, arrays with holes or names).
 */
interface Frame {
  readonly values: unknown[];
  readonly mode: typeof INTO_LIST | typeof INTO_PAIRS | typeof INTO_SLOTS;
  readonly into: unknown[];
  readonly slots: (number | string)[] | undefined;
  readonly names: Names;
  next: number;
}

/** Carries what `refer` threw past the writer's error location. */
export class FromRefer {
  constructor(readonly error: unknown) {}
}

export abstract class RecordWalk {
  readonly records: WireRecord[] = [];
  /** Objects by identity and primitives by value → record index (aliases, cycles, dedupe). */
  protected readonly refs = new Map<unknown, number>();
  private readonly frames: Frame[] = [];
  private readonly maxDepth: number;

  constructor(protected readonly ctx: EncodeContext) {
    this.maxDepth = ctx.maxDepth ?? DEFAULT_LIMITS.maxDepth;
  }

  /** Writes `value`'s record (and opens a frame for its children); returns its index. */
  protected abstract add(value: unknown): number;

  write(root: unknown): void {
    const frames = this.frames;
    try {
      this.add(root);
      while (frames.length) {
        const frame = frames[frames.length - 1]!;
        if (frame.next === frame.values.length) {
          frames.pop();
          continue;
        }
        const j = frame.next++;
        const index = this.add(frame.values[j]);
        if (frame.mode === INTO_LIST) frame.into[j] = index;
        else if (frame.mode === INTO_PAIRS) (frame.into[j >> 1] as number[])[j & 1] = index;
        else (frame.into[j] as Record<string | number, number>)[frame.slots![j]!] = index;
      }
    } catch (error) {
      if (error instanceof FromRefer) throw error.error;
      throw this.located(error);
    }
  }

  /** Turns a refusal or a read failure into `ENCODE` naming where the walk was. */
  private located(error: unknown): RpcError {
    const frames = this.frames;
    // Each open frame is writing its child `next - 1`: the frame above it, or, for the top one,
    // the value that failed.
    const segments: Segment[] = [];
    for (const frame of frames) if (frame.next > 0) segments.push(segmentOf(frame.names, frame.next - 1));
    let path = (this.ctx.label ?? "value") + pathText(segments);
    if (error instanceof Refusal) {
      if (error.inner !== undefined) path += segmentText(error.inner);
      return new RpcError("ENCODE", error.describe(path), error.cause === undefined ? undefined : { cause: error.cause });
    }
    return new RpcError("ENCODE", `Reading ${path} threw: ${describeThrown(error)}`, { cause: error });
  }

  protected push(record: WireRecord, key: unknown): number {
    const index = this.records.push(record) - 1;
    this.refs.set(key, index);
    return index;
  }

  /**
   * A record the receiver counts as one level more, though nothing is walked below it here (a
   * view: its buffer is its child there): the same bound as `open`.
   */
  protected level(): void {
    if (this.frames.length >= this.maxDepth) {
      throw new Refusal((path) => `Cannot send ${path}: the value is nested deeper than ${this.maxDepth} levels.`);
    }
  }

  /** Opens a frame for a container's children; the container's record is already pushed. */
  protected open(values: unknown[], mode: Frame["mode"], into: unknown[], slots: Frame["slots"], names: Names): void {
    if (values.length === 0) return;
    if (this.frames.length >= this.maxDepth) {
      throw new Refusal((path) => `Cannot send ${path}: the value is nested deeper than ${this.maxDepth} levels.`);
    }
    this.frames.push({ values, mode, into, slots, names, next: 0 });
  }
}
