/**
 * The objects user code holds for remote things, on either end:
 *  - the **client** (`createRpcClient`): property reads start a path on the Durable Object;
 *  - a **path**: property reads on something remote. Lazy: nothing is sent until it is awaited,
 *    called, or passed along as an argument;
 *  - a **call handle**: what calling a path returns. The call is sent when it is made (in the
 *    frame of its microtask turn); the handle is a promise of the result *and* a path on it, so
 *    `client.rooms.open("a").join(user.id)` pipelines without waiting;
 *  - a **stub**: the other end's object or function, passed by reference. Calls on it go to that
 *    object. Disposable (`using`, `[Symbol.dispose]`, `rpcDispose`), `dup()` for another holder,
 *    released when every holder is disposed or garbage-collected, or when the connection ends
 *    (how a holder ends, and what follows: stub-release.ts).
 *
 * Every proxy answers what it stands for under a module-private symbol key (`INFO`), so the
 * encoder can recognise one passed as an argument and no remote member name (a string) can
 * shadow it.
 *
 * Hot path: a root member (`client.increment`) is one cached proxy; a call makes one handle.
 *
 * Internal module.
 */
import { isNameAllowed, isPlainData, notFound, readDataProperty } from "./access.js";
import { RpcError } from "./errors.js";
import { bounded, type CallOptions } from "./call-options.js";
import { type Base, type OutgoingCall, thenable, unawaitable } from "./outgoing-call.js";
import type { ImportEntry, ImportTable } from "./references.js";
import { disposerOf, finalizer, isAsyncDispose, isDispose, releaseHolder } from "./stub-release.js";

/** What proxies need from the end they call through (a client session, or a server connection). */
export interface CallMaker {
  /** Makes a call (with `args`) or a property read (without) on `base`, following `path`. */
  call(base: Base, path: readonly string[], args: readonly unknown[] | undefined, options?: CallOptions): OutgoingCall;
  /** Applies per-call options to a call already made (still queued or waiting). */
  configure(call: OutgoingCall, options: CallOptions): void;
  /** Describes the other end in error messages. */
  readonly label: string;
}

/**
 * The key under which each proxy's `get` trap hands out what it is. Module-private, so user code
 * cannot read it, and a symbol, so no remote member name (always a string) can shadow it.
 */
const INFO = Symbol("dorpc.proxy");

/** What a proxy stands for. `mark` is `INFO` itself: an object some other proxy answers for `INFO` (a catch-all proxy answers every key) cannot hold it, so it is never taken for one. */
interface Marked {
  readonly mark: typeof INFO;
}

interface PathInfo extends Marked {
  readonly kind: "path";
  readonly maker: CallMaker;
  readonly base: Base;
  readonly path: readonly string[];
  /** A cached root member: every await reads afresh (`await client.counter` twice reads twice). */
  readonly fresh: boolean;
  /** The memoised read of this path: a path awaited twice is read once, like any promise. */
  read: Promise<unknown> | undefined;
}

interface RootInfo extends Marked {
  readonly kind: "root";
  readonly maker: CallMaker;
  readonly dispose: () => void;
}

/** One holder of an import: the first stub for it, or a `dup()`. */
export interface StubHolder extends Marked {
  readonly kind: "stub";
  readonly maker: CallMaker;
  readonly entry: ImportEntry;
  readonly imports: ImportTable;
  disposed: boolean;
  /** Released by dorpc when the call that passed it ended (an argument not kept with `dup()`). */
  callEnded?: boolean;
  /** Its `[Symbol.dispose]`, made when first read (not per stub: most are never disposed by hand). */
  disposer?: () => void;
}

type Info = PathInfo | RootInfo | StubHolder;

/**
 * What a value is, if it is one of dorpc's proxies. Asked of the value itself (its `get` trap
 * answers `INFO`), not of a registry: a WeakMap entry per call handle cost more than the rest of
 * making the handle, and its ephemerons slowed every young-generation GC.
 */
export function proxyInfo(value: unknown): Info | undefined {
  if (typeof value !== "function" && (typeof value !== "object" || value === null)) return undefined;
  let info: unknown;
  try {
    info = (value as { [INFO]?: unknown })[INFO];
  } catch {
    return undefined; // a revoked proxy, or one whose trap throws on keys it does not know
  }
  return typeof info === "object" && info !== null && (info as Partial<Marked>).mark === INFO ? (info as Info) : undefined;
}

/** The holder behind a stub, if `value` is one. */
export function stubHolder(value: unknown): StubHolder | undefined {
  const info = proxyInfo(value);
  return info?.kind === "stub" ? info : undefined;
}

/** A function target so that the `apply` trap works; never called itself. */
function target(): void {}

const NOT_ASSIGNABLE = () => {
  throw new RpcError("NOT_CALLABLE", "Remote properties cannot be assigned; call a method instead.");
};

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

const ROOT: Base = { kind: "root" };

/** The client object: property reads start paths on the other end's root. */
export function rootProxy(maker: CallMaker, dispose: () => void, extra: (key: symbol) => unknown): object {
  const members = new Map<string, object>();
  const asyncDispose = async () => dispose();
  const info: RootInfo = { mark: INFO, kind: "root", maker, dispose };
  const describeClient = () => `[dorpc client of ${maker.label}]`;
  return new Proxy(target, {
    get(_t, key) {
      if (typeof key === "symbol") {
        if (key === INFO) return info;
        if (isDispose(key)) return dispose;
        if (isAsyncDispose(key)) return asyncDispose;
        if (key === Symbol.toPrimitive) return describeClient;
        return extra(key);
      }
      // Not awaitable: `await client` or returning it from an async function sends nothing. Nor
      // serialisable: `JSON.stringify` leaves a client out instead of calling the object's toJSON.
      if (key === "then" || key === "toJSON") return undefined;
      let member = members.get(key);
      if (member === undefined) {
        member = pathProxy(maker, ROOT, [key], true);
        members.set(key, member);
      }
      return member;
    },
    apply() {
      throw new RpcError("NOT_CALLABLE", "A dorpc client is not a function; call one of its methods.");
    },
    set() {
      throw new RpcError("NOT_CALLABLE", "Properties of a dorpc client cannot be assigned; call a method instead.");
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Paths and call handles
// ---------------------------------------------------------------------------------------------

/** A handle on `call`: a promise of its result and a path on it. */
export function callHandle(maker: CallMaker, call: OutgoingCall): object {
  return pathProxy(maker, { kind: "call", call }, [], false);
}

function pathProxy(maker: CallMaker, base: Base, path: readonly string[], fresh: boolean): object {
  const info: PathInfo = { mark: INFO, kind: "path", maker, base, path, fresh, read: undefined };
  return new Proxy(target, {
    get(_t, key) {
      if (typeof key === "symbol") {
        if (key === INFO) return info;
        if (key === Symbol.dispose && base.kind === "call" && path.length === 0) return () => disposeResult(base.call);
        // `${path}` and String(path) describe it instead of calling toString/valueOf remotely.
        if (key === Symbol.toPrimitive) return () => `[dorpc ${base.kind === "call" ? "call" : "path"} ${path.join(".") || "result"}]`;
        return undefined;
      }
      switch (key) {
        case "toJSON":
          return undefined;
        case "then":
          return (onFulfilled?: (value: unknown) => unknown, onRejected?: (reason: unknown) => unknown) =>
            settledValue(info).then(onFulfilled, onRejected);
        case "catch":
          return (onRejected?: (reason: unknown) => unknown) => settledValue(info).catch(onRejected);
        case "finally":
          return (onFinally?: () => void) => settledValue(info).finally(onFinally);
      }
      return pathProxy(maker, base, [...path, key], false);
    },
    apply(_t, _this, args: unknown[]) {
      return callHandle(maker, maker.call(base, path, args));
    },
    set: NOT_ASSIGNABLE,
  });
}

/** The promise behind awaiting a path: the call's own, or a read of the path. */
export function settledValue(info: PathInfo, options?: CallOptions): Promise<unknown> {
  const { base, path, maker } = info;
  if (base.kind === "call" && path.length === 0) {
    base.call.observed = true;
    if (options) maker.configure(base.call, options);
    return base.call.promise;
  }
  if (info.fresh || options) return readPath(info, options);
  return (info.read ??= readPath(info, undefined));
}

function readPath(info: PathInfo, options: CallOptions | undefined): Promise<unknown> {
  const { base, path, maker } = info;
  if (base.kind !== "call") {
    const call = maker.call(base, path, undefined, options);
    call.observed = true;
    return call.promise;
  }
  const call = base.call;
  call.observed = true;
  if (!call.settled && !call.sentOn && !call.deferred) {
    // The result has not left yet: read the path on it in the same frame (pipelined).
    const read = maker.call(base, path, undefined, options);
    read.observed = true;
    return read.promise;
  }
  // A path on a result that left earlier: wait for it, then read the path from it — locally for
  // plain data, by a call for a stub it contains. This read's own options bound the wait.
  if (options?.signal?.aborted) return Promise.reject(options.signal.reason);
  const read = call.promise.then((value) => {
    const found = readFrom(maker, value, path, 0, options);
    // Returned bare from here, a `{ then: <the peer's function> }` in the result would be adopted:
    // its `then` called with this end's settle functions, as a call's answer never is.
    if (!(found instanceof Promise) && thenable(found)) throw unawaitable();
    return found;
  });
  return options ? bounded(read, options, maker.label) : read;
}

/** Reads `path[i…]` from a value that already arrived. */
export function readFrom(
  maker: CallMaker,
  value: unknown,
  path: readonly string[],
  i: number,
  options?: CallOptions,
  guard?: DataGuard,
): unknown {
  const at = followData(value, path, i, guard?.label ?? maker.label, guard?.isPlatformState);
  if (at.index === path.length) return at.value;
  // The rest of the path is on a stub: read it there.
  const call = maker.call({ kind: "stub", stub: at.value as object }, path.slice(at.index), undefined, options);
  call.observed = true;
  return call.promise;
}

/** How the end that runs calls reads a path through a value of its own (a PIPELINE path). */
export interface DataGuard {
  /** Named in `NOT_FOUND`: the end's own class, not the peer. */
  readonly label: string;
  /** Never stepped into (a Durable Object, its env, its ctx), plain as it may look. */
  readonly isPlatformState: (value: unknown) => boolean;
}

/**
 * Follows `path[i…]` through plain data that already arrived, as far as it goes: to its end, or
 * to a stub (`index`: the step after it). The receiver's rules, applied here so a path reads the
 * same locally as remotely: rule 1 names (`constructor`, `name`, …) are never read, and only own
 * data of plain data is (never what `isPlatformState` says is the platform's); anything else is
 * `NOT_FOUND` naming `label`.
 */
export function followData(
  value: unknown,
  path: readonly string[],
  i: number,
  label: string,
  isPlatformState?: (value: unknown) => boolean,
): { value: unknown; index: number } {
  for (; i < path.length && !stubHolder(value); i++) {
    const name = path[i]!;
    const found =
      typeof value === "object" &&
      value !== null &&
      isPlainData(value) &&
      isNameAllowed(name) &&
      !isPlatformState?.(value) &&
      (readDataProperty(value, name) ?? stubProperty(value, name));
    if (!found) throw notFound(name, label);
    value = found.value;
  }
  return { value, index: i };
}

/** An own data property of `value` that holds a stub (a function to `readDataProperty`): the walk stops there. */
function stubProperty(value: object, name: string): { value: unknown } | undefined {
  const desc = Object.getOwnPropertyDescriptor(value, name);
  return desc && "value" in desc && stubHolder(desc.value) ? { value: desc.value } : undefined;
}

/** `[Symbol.dispose]` of a call handle: disposes the stubs of its result, now or when it arrives. */
function disposeResult(call: OutgoingCall): void {
  call.observed = true;
  call.whenSettled(() => {
    if (call.ok) disposeStubsIn(call.value);
  });
}

/** Disposes every stub in a value (plain objects and arrays are searched, iteratively). */
export function disposeStubsIn(value: unknown): void {
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length) {
    const v = stack.pop();
    if ((typeof v !== "object" && typeof v !== "function") || v === null || seen.has(v)) continue;
    seen.add(v);
    const holder = stubHolder(v);
    if (holder) {
      releaseHolder(holder);
      continue;
    }
    if (typeof v === "object" && isPlainData(v)) for (const key of Object.keys(v)) stack.push((v as Record<string, unknown>)[key]);
  }
}

// ---------------------------------------------------------------------------------------------
// Stubs
// ---------------------------------------------------------------------------------------------

/** A new holder (stub object) of `entry`. */
export function makeStub(maker: CallMaker, entry: ImportEntry, imports: ImportTable): object {
  const holder: StubHolder = { mark: INFO, kind: "stub", maker, entry, imports, disposed: false };
  entry.holders++;
  const base: Base = { kind: "stub", stub: undefined as never };
  const proxy = new Proxy(target, {
    get(_t, key) {
      if (typeof key === "symbol") {
        if (key === INFO) return holder;
        if (key === Symbol.toPrimitive) return () => `[dorpc stub of ${maker.label}]`;
        if (isDispose(key)) return disposerOf(holder);
        if (isAsyncDispose(key)) return async () => releaseHolder(holder);
        return undefined;
      }
      // A stub is not a promise: `await stub` yields the stub. Nor serialisable or coerced into
      // calls (JSON.stringify, String(), template literals).
      if (key === "then" || key === "toJSON") return undefined;
      if (key === "dup") return () => dupStub(holder);
      return pathProxy(maker, base, [key], false);
    },
    apply(_t, _this, args: unknown[]) {
      return callHandle(maker, maker.call(base, [], args));
    },
    set: NOT_ASSIGNABLE,
  });
  (base as { stub: object }).stub = proxy;
  finalizer?.register(proxy, holder, holder);
  return proxy;
}

function dupStub(holder: StubHolder): object {
  const ended = holder.disposed
    ? {
        code: "RELEASED" as const,
        message: holder.callEnded
          ? "This stub was released when the call that passed it ended: dup() it during that call to keep it."
          : "This stub was disposed; dup() it before disposing.",
      }
    : holder.entry.ended;
  if (ended) throw new RpcError(ended.code, ended.message);
  return makeStub(holder.maker, holder.entry, holder.imports);
}
