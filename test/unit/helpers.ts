/**
 * Small helpers shared by the unit tests: error assertions, a structural comparison that is
 * exact about what structured clone preserves, and a raw-frame harness around `dispatchFrame`.
 */
import { expect } from "vitest";
import { decodeContext, fromRecords, readValue } from "../../packages/rpc/src/codec.js";
import { dispatchFrame, resolveServerOptions, type RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { RpcError, type RpcErrorCode } from "../../packages/rpc/src/errors.js";
import { readFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/** The value `fn` throws; fails the test when it returns normally. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected the function to throw, but it returned");
}

/** The reason `promise` rejects with; fails the test when it fulfils. */
export async function rejectionOf(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject, but it fulfilled");
}

/** Asserts `error` is dorpc's RpcError (both checks) with exactly `code`. */
export function expectRpcError(error: unknown, code: RpcErrorCode): RpcError {
  expect(RpcError.is(error), `expected an RpcError, got ${String(error)}`).toBe(true);
  expect(error).toBeInstanceOf(RpcError);
  expect((error as RpcError).code, (error as RpcError).message).toBe(code);
  return error as RpcError;
}

/** Asserts the synchronous call throws an RpcError with `code`. */
export function expectThrowsCode(fn: () => unknown, code: RpcErrorCode): RpcError {
  return expectRpcError(thrownBy(fn), code);
}

/** Asserts the promise rejects with an RpcError with `code`. */
export async function expectRejectsCode(promise: PromiseLike<unknown>, code: RpcErrorCode): Promise<RpcError> {
  return expectRpcError(await rejectionOf(promise), code);
}

/** Lets every queued microtask and zero-delay timer run (the paired transport uses both). */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}

// ---------------------------------------------------------------------------------------------
// Structural comparison
// ---------------------------------------------------------------------------------------------

const tagOf = (value: object): string => Object.prototype.toString.call(value).slice(8, -1);

const ERROR_PROTOS = [
  AggregateError.prototype,
  EvalError.prototype,
  RangeError.prototype,
  ReferenceError.prototype,
  SyntaxError.prototype,
  TypeError.prototype,
  URIError.prototype,
  Error.prototype,
];

/** The built-in error prototype an error inherits from (what a decoder can rebuild). */
function builtinErrorProto(error: object): object | undefined {
  for (let p = Object.getPrototypeOf(error) as object | null; p; p = Object.getPrototypeOf(p) as object | null) {
    if (ERROR_PROTOS.includes(p as never)) return p;
  }
  return undefined;
}

/**
 * Where `actual` differs from `expected` as structured clone defines sameness, or `undefined`.
 * Exact about -0/NaN, holes, aliasing (each expected object maps to exactly one actual object),
 * buffer sharing between views, boxed primitives and Error name/message/cause/own props.
 * `Error.stack` is not compared. Null-prototype objects are expected to come back as plain objects.
 */
export function difference(actual: unknown, expected: unknown, path = "value", seen = new Map<object, unknown>()): string | undefined {
  if (typeof actual !== typeof expected) return `${path}: ${typeof actual} instead of ${typeof expected}`;
  if (typeof expected !== "object" || expected === null || actual === null) {
    return Object.is(actual, expected) ? undefined : `${path}: ${String(actual)} instead of ${String(expected)}`;
  }
  const a = actual as object;
  const e = expected;
  if (seen.has(e)) return seen.get(e) === a ? undefined : `${path}: a shared or cyclic reference was not preserved`;
  seen.set(e, a);
  const tag = tagOf(e);
  if (tagOf(a) !== tag && !(tag === "Error")) return `${path}: ${tagOf(a)} instead of ${tag}`;

  switch (tag) {
    case "Array": {
      const x = a as unknown[];
      const y = e as unknown[];
      if (!Array.isArray(x)) return `${path}: not an array`;
      if (x.length !== y.length) return `${path}: length ${x.length} instead of ${y.length}`;
      for (let i = 0; i < y.length; i++) {
        if (i in x !== i in y) return `${path}[${i}]: hole ${i in x ? "filled" : "introduced"}`;
        const d = difference(x[i], y[i], `${path}[${i}]`, seen);
        if (d) return d;
      }
      return keysDifference(a, e, path, seen, (k) => !/^\d+$/.test(k));
    }
    case "Date":
      return Object.is((a as Date).getTime(), (e as Date).getTime()) ? undefined : `${path}: date ${String(a)} instead of ${String(e)}`;
    case "RegExp": {
      const x = a as RegExp;
      const y = e as RegExp;
      return x.source === y.source && x.flags === y.flags ? undefined : `${path}: ${String(x)} instead of ${String(y)}`;
    }
    case "Map": {
      const x = [...(a as Map<unknown, unknown>)];
      const y = [...(e as Map<unknown, unknown>)];
      if (x.length !== y.length) return `${path}: map size ${x.length} instead of ${y.length}`;
      for (let i = 0; i < y.length; i++) {
        const d = difference(x[i]![0], y[i]![0], `${path}.key#${i}`, seen) ?? difference(x[i]![1], y[i]![1], `${path}.value#${i}`, seen);
        if (d) return d;
      }
      return undefined;
    }
    case "Set": {
      const x = [...(a as Set<unknown>)];
      const y = [...(e as Set<unknown>)];
      if (x.length !== y.length) return `${path}: set size ${x.length} instead of ${y.length}`;
      for (let i = 0; i < y.length; i++) {
        const d = difference(x[i], y[i], `${path}.entry#${i}`, seen);
        if (d) return d;
      }
      return undefined;
    }
    case "ArrayBuffer": {
      const [rx, ry] = [a, e].map(
        (b) => (b as { resizable?: boolean; maxByteLength?: number }).resizable && (b as { maxByteLength?: number }).maxByteLength,
      );
      if (rx !== ry) return `${path}: resizable to ${String(rx)} instead of ${String(ry)}`;
      const x = new Uint8Array(a as ArrayBuffer);
      const y = new Uint8Array(e as ArrayBuffer);
      if (x.length !== y.length) return `${path}: ${x.length} bytes instead of ${y.length}`;
      for (let i = 0; i < y.length; i++) if (x[i] !== y[i]) return `${path}: byte ${i} is ${x[i]} instead of ${y[i]}`;
      return undefined;
    }
    case "Boolean":
    case "Number":
    case "String":
    case "BigInt": {
      const x = (a as { valueOf(): unknown }).valueOf();
      const y = (e as { valueOf(): unknown }).valueOf();
      return Object.is(x, y) ? undefined : `${path}: boxed ${String(x)} instead of ${String(y)}`;
    }
  }
  if (ArrayBuffer.isView(e)) {
    const x = a as ArrayBufferView;
    // dorpc sends a view with only its own bytes unless the value shares its buffer elsewhere
    // (see trimBuffers in codec.ts); then offset and whole buffer must match exactly.
    if (x.byteLength !== e.byteLength) return `${path}: view of ${x.byteLength} bytes instead of ${e.byteLength}`;
    if (x.byteOffset === e.byteOffset && x.buffer.byteLength === e.buffer.byteLength) {
      return difference(x.buffer, e.buffer, `${path}.buffer`, seen);
    }
    if (x.byteOffset !== 0 || x.buffer.byteLength !== x.byteLength) return `${path}: trimmed view does not own its buffer`;
    const xb = new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
    const eb = new Uint8Array(e.buffer, e.byteOffset, e.byteLength);
    for (let i = 0; i < eb.length; i++) if (xb[i] !== eb[i]) return `${path}: byte ${i} is ${xb[i]} instead of ${eb[i]}`;
    return undefined;
  }
  if (e instanceof Error) {
    const x = a as Error;
    if (!(x instanceof Error)) return `${path}: not an Error`;
    if (Object.getPrototypeOf(x) !== builtinErrorProto(e)) return `${path}: rebuilt as ${x.constructor.name}`;
    // `class NotFound extends Error {}` keeps name "Error" locally; dorpc sends the class name.
    const ctor = (e as { constructor?: { name?: string } }).constructor;
    const expectedName = e.name === "Error" && ctor && ctor !== Error && ctor.name ? ctor.name : e.name;
    if (x.name !== expectedName) return `${path}: name ${x.name} instead of ${expectedName}`;
    if (x.message !== e.message) return `${path}: message ${JSON.stringify(x.message)} instead of ${JSON.stringify(e.message)}`;
    if (Object.hasOwn(x, "message") !== Object.hasOwn(e, "message")) return `${path}.message: own property presence differs`;
    if (Object.hasOwn(x, "cause") !== Object.hasOwn(e, "cause")) return `${path}.cause: presence differs`;
    if (Object.hasOwn(e, "cause")) {
      const d = difference(x.cause, e.cause, `${path}.cause`, seen);
      if (d) return d;
    }
    if (e instanceof AggregateError) {
      const d = difference((x as AggregateError).errors, e.errors, `${path}.errors`, seen);
      if (d) return d;
    }
    return keysDifference(a, e, path, seen);
  }
  const proto = Object.getPrototypeOf(e) as object | null;
  if (proto === Object.prototype || proto === null) {
    if (Object.getPrototypeOf(a) !== Object.prototype) return `${path}: not a plain object`;
    return keysDifference(a, e, path, seen);
  }
  return `${path}: cannot compare a ${tag}`;
}

function keysDifference(
  a: object,
  e: object,
  path: string,
  seen: Map<object, unknown>,
  filter: (k: string) => boolean = () => true,
): string | undefined {
  const x = Object.keys(a).filter(filter);
  const y = Object.keys(e).filter(filter);
  if (x.join("\u0000") !== y.join("\u0000")) return `${path}: keys [${x.join(",")}] instead of [${y.join(",")}]`;
  for (const key of y) {
    const d = difference((a as Record<string, unknown>)[key], (e as Record<string, unknown>)[key], `${path}.${key}`, seen);
    if (d) return d;
  }
  return undefined;
}

/** Asserts `actual` is a faithful structured clone of `expected` (see {@link difference}). */
export function expectSame(actual: unknown, expected: unknown): void {
  expect(difference(actual, expected)).toBeUndefined();
}

// ---------------------------------------------------------------------------------------------
// A raw-frame harness around the dispatcher
// ---------------------------------------------------------------------------------------------

export type Outcome =
  | { kind: "void" }
  | { kind: "ok"; value: unknown }
  | { kind: "threw"; error: unknown }
  | { kind: "failed"; code: string; message: string; cause?: unknown; issues?: unknown };

export interface RawServer {
  /** Frames the dispatcher sent. */
  readonly sent: (string | Uint8Array)[];
  /** close(code, reason) calls the dispatcher made. */
  readonly closes: [number, string][];
  /** dispatchFrame's return value for `data`. */
  dispatch(data: string | ArrayBuffer | Uint8Array): boolean;
  /** Sends one call frame built from `calls` (each `[id, chain]`). */
  sendCalls(calls: unknown[]): boolean;
  /** Every reply envelope sent so far, after letting pending work settle. */
  replies(): Promise<unknown[][]>;
  /** The decoded outcome of the reply with `id` (fails when there is none or several). */
  outcome(id: number): Promise<Outcome>;
}

/** `target` served by the real dispatcher on a fake channel that records what it sends. */
export function rawServer(target: object, options?: RpcServerOptions): RawServer {
  const resolved = resolveServerOptions(options);
  const sent: (string | Uint8Array)[] = [];
  const closes: [number, string][] = [];
  const channel = {
    send(frame: string | Uint8Array) {
      sent.push(frame);
    },
    close(code = 1000, reason = "") {
      closes.push([code, reason]);
    },
  };
  const server: RawServer = {
    sent,
    closes,
    dispatch: (data) => dispatchFrame(data, target, resolved, channel),
    sendCalls: (calls) => server.dispatch("\u001eC" + JSON.stringify(calls)),
    async replies() {
      await settle();
      const out: unknown[][] = [];
      for (const frame of sent) {
        const raw = readFrame(frame, DEFAULT_LIMITS)!;
        expect(raw.kind).toBe(0x52);
        out.push(...(raw.body as unknown[][]));
      }
      return out;
    },
    async outcome(id) {
      await settle();
      const matching: { reply: unknown[]; blobs: readonly Uint8Array[] }[] = [];
      for (const frame of sent) {
        const raw = readFrame(frame, DEFAULT_LIMITS)!;
        for (const reply of raw.body as unknown[][]) if (reply[0] === id) matching.push({ reply, blobs: raw.blobs });
      }
      expect(matching, `replies for call ${id}`).toHaveLength(1);
      const { reply, blobs } = matching[0]!;
      const ctx = decodeContext(blobs, DEFAULT_LIMITS);
      if (reply.length === 1) return { kind: "void" };
      switch (reply[1]) {
        case 0:
        case 1:
        case 4:
          return { kind: "ok", value: readValue(reply[1], reply[2], ctx) };
        case 2:
          return { kind: "threw", error: fromRecords(reply[2], ctx) };
        case 3:
          return {
            kind: "failed",
            code: reply[2] as string,
            message: reply[3] as string,
            // INVALID_ARGUMENT carries its issues as JSON; other codes a cause as records.
            ...(reply.length > 4 ? (reply[2] === "INVALID_ARGUMENT" ? { issues: reply[4] } : { cause: fromRecords(reply[4], ctx) }) : {}),
          };
      }
      throw new Error(`unexpected reply ${JSON.stringify(reply)}`);
    },
  };
  return server;
}

/** A call frame's text for `calls`. */
export function callFrame(calls: unknown[]): string {
  return "\u001eC" + JSON.stringify(calls);
}
