/**
 * How an encoding failure names where it happened: `result.config.env`, `arguments[0]`,
 * `value<Map value #2>.b`. Both walks (json-path.ts, and record-walk.ts for the record writer)
 * keep only what they need to rebuild a path and spell it out when something fails, so the
 * success path pays nothing.
 *
 * Internal module.
 */

const MAX_PATH_SEGMENTS = 16;

/** A path below the root, in order; a very deep one keeps its ends and says how many levels it skips. */
export function abbreviatePath(segments: string[]): string {
  if (segments.length <= MAX_PATH_SEGMENTS) return segments.join("");
  const half = MAX_PATH_SEGMENTS / 2;
  return `${segments.slice(0, half).join("")}…(${segments.length - MAX_PATH_SEGMENTS} more levels)…${segments.slice(-half).join("")}`;
}

/** `.name`, or `["odd name"]` when the key is not an identifier. */
export function keySegment(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** A path segment that is not a property name (a Map entry, an error's cause). */
export class Literal {
  constructor(readonly text: string) {}
}

export type Segment = string | number | Literal;

export function pathText(segments: Segment[]): string {
  return abbreviatePath(segments.map(segmentText));
}

export function segmentText(segment: Segment): string {
  if (typeof segment === "number") return `[${segment}]`;
  if (typeof segment === "string") return keySegment(segment);
  return segment.text;
}

/**
 * How a container's children are named in error paths, worked out only when a path is needed:
 * an array's child j is `[j]`, a Map's entry halves and a Set's elements are numbered, a plain
 * object's children come in key/value pairs named by `keys`, anything else lists its segments.
 */
export const BY_INDEX = 0;
export const MAP_ENTRIES = 1;
export const SET_ELEMENTS = 2;
export class PairKeys {
  constructor(readonly keys: string[]) {}
}
export type Names = typeof BY_INDEX | typeof MAP_ENTRIES | typeof SET_ELEMENTS | PairKeys | Segment[];

export function segmentOf(names: Names, j: number): Segment {
  if (names === BY_INDEX) return j;
  if (names === MAP_ENTRIES) return new Literal(`<Map ${j % 2 ? "value" : "key"} #${j >> 1}>`);
  if (names === SET_ELEMENTS) return new Literal(`<Set element #${j}>`);
  if (names instanceof PairKeys) return names.keys[j >> 1]!;
  return names[j]!;
}

/** The record writer's own refusal; the path is added by the writer, which knows where its walk is. */
export class Refusal {
  constructor(
    readonly describe: (path: string) => string,
    readonly cause?: unknown,
    /** A segment below the child being written (the property whose getter threw). */
    readonly inner?: Segment,
  ) {}
}

/** A property read by the JSON walk threw; `segments` name where, innermost first. */
export class ReadFailure {
  readonly segments: string[] = [];
  constructor(readonly cause: unknown) {}
}

/** An exception in one line of at most 200 characters, for error messages. */
export function describeThrown(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 200 ? text.slice(0, 200) + "…" : text;
}
