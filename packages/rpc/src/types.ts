/**
 * The client's static types: what `createRpcClient<T>` exposes for a Durable Object class `T`.
 *
 * The mapping mirrors what the other end lets through (access.ts): public members of the user's
 * class, minus `ctx`, `env`, lifecycle methods and `_`-prefixed names; every method returns an
 * `RpcPromise` (a promise of the result that is also a pipelining handle on it); results arrive
 * as `Arrived<T>` (an `RpcTarget` or a function becomes an `RpcStub`); parameters accept the
 * value, a pending result of it, or a stub of it (`Param<T>`); what the wire cannot carry turns
 * into `never`, so a wrong call fails to compile instead of failing at run time. A method made by
 * `rpcMethod` is called with its argument schema's *input* (what the object accepts before
 * coercions and transforms) and returns its result schema's output.
 */
import type { RpcMethodTypes } from "./rpc-method.js";

/** Members never reachable over RPC, whatever the class declares. */
export type ReservedMember =
  | "ctx"
  | "env"
  | "constructor"
  | "prototype"
  | "__proto__"
  | "then"
  | "toJSON"
  | "catch"
  | "finally"
  | "fetch"
  | "alarm"
  | "connect" // DurableObject's optional TCP handler (workers-types): a lifecycle method like fetch
  | "webSocketMessage"
  | "webSocketClose"
  | "webSocketError"
  | keyof Object
  | keyof Function
  | "__defineGetter__"
  | "__defineSetter__"
  | "__lookupGetter__"
  | "__lookupSetter__"
  | "caller"
  | "arguments";

/** Values the wire carries as themselves. */
export type Primitive = string | number | boolean | bigint | null | undefined;

/**
 * `Blob` and `File`, recognised by shape: naming `Blob` would break the whole client type in a
 * program whose lib does not declare it (an ES-only tsconfig), and workers-types declares it as
 * a class, which a conditional on `typeof globalThis` cannot see.
 */
type BlobLike = { readonly size: number; readonly type: string; arrayBuffer(): Promise<ArrayBuffer>; text(): Promise<string> };

/** Built-in objects that cross the wire as themselves. */
export type WireBuiltin = Date | RegExp | Error | ArrayBuffer | ArrayBufferView | String | Number | Boolean | BlobLike;

type AnyFunction = (...args: never[]) => unknown;

/** The brand of `RpcTarget` instances (declared on the class). */
type Target = { readonly __dorpcRpcTarget: true };

/** Built-in objects that are neither data nor something dorpc passes by reference. */
type Uncloneable = WeakMap<object, unknown> | WeakSet<object> | WeakRef<object> | PromiseLike<unknown>;

/**
 * Whether `T` is `Uncloneable`. A `Map` or `Set` has every member a `WeakMap` or `WeakSet` has
 * (a `Set` of objects is structurally a `WeakSet`), so they are told apart by `size`.
 */
type IsUncloneable<T> = [T] extends [{ readonly size: number }] ? false : [T] extends [Uncloneable] ? true : false;

declare const PENDING: unique symbol;
declare const STUB: unique symbol;
/** Type-level only: a client's topics (see `subscribe`). */
export declare const TOPICS: unique symbol;

/**
 * For an API declared as a type only (an interface the page shares with the Worker, so the page
 * never imports the Durable Object class): the topics it publishes, as `RpcDurableObject<Env,
 * Client, Topics>` declares them. `interface RoomApi extends WithTopics<RoomTopics> { … }` lets
 * `subscribe(client, topic, …)` check topic names and event types.
 */
export interface WithTopics<Topics> {
  readonly __dorpcTopics?: Topics;
}

/** The topics a Durable Object class declares (`RpcDurableObject<Env, Client, Topics>`, or `WithTopics`). */
export type TopicsOf<T> = InstanceOf<T> extends { readonly __dorpcTopics?: infer X } ? X : Record<never, never>;

/**
 * `T` when values of type `T` can cross the wire by value, otherwise `never`. (Functions and
 * `RpcTarget`s cross by reference: see `Param` and `Arrived`.)
 */
export type Sendable<T> = unknown extends T
  ? T // `unknown` / `any` (e.g. a generic parameter): checked at run time instead
  : T extends Primitive | void // a `void` method's result arrives as `undefined`
    ? T
    : T extends symbol | AnyFunction
      ? never
      : T extends Target
        ? never
        : T extends WireBuiltin
          ? T
          : T extends Map<infer K, infer V>
            ? [Sendable<K>] extends [never]
              ? never
              : [Sendable<V>] extends [never]
                ? never
                : T
            : T extends Set<infer V>
              ? [Sendable<V>] extends [never]
                ? never
                : T
              : T extends readonly unknown[]
                ? SendableArray<T>
                : T extends object
                  ? SendableObject<T>
                  : never;

type SendableArray<T extends readonly unknown[]> = { [K in keyof T]: Sendable<T[K]> } extends infer M ? (M extends T ? T : never) : never;

type SendableObject<T extends object> = {
  [K in keyof T]: K extends symbol ? T[K] : Sendable<T[K]>;
} extends T
  ? T
  : never;

/** The instance type of a class, or `T` itself when it is already an instance type. */
export type InstanceOf<T> = T extends abstract new (...args: never[]) => infer I ? I : T;

/** Names of `T` a client may reach. */
export type PublicKeys<T> = {
  // `-?`: an optional member would otherwise add `undefined` to the union.
  [K in keyof T]-?: K extends string ? (K extends ReservedMember | `_${string}` ? never : K) : never;
}[keyof T];

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

/**
 * What a value of type `T` is when it arrives: data as itself, an `RpcTarget` or a function as an
 * `RpcStub` (calls on it go back to the original), anything that cannot travel as `never`.
 */
export type Arrived<T> = unknown extends T
  ? T
  : T extends Primitive | void
    ? T
    : T extends symbol
      ? never
      : T extends { readonly [STUB]: unknown }
        ? T
        : T extends AnyFunction | Target
          ? RpcStub<T>
          : IsUncloneable<T> extends true
            ? never
            : T extends WireBuiltin
              ? BuiltinOf<T>
              : T extends Map<infer K, infer V>
                ? Map<Arrived<K>, Arrived<V>>
                : T extends Set<infer V>
                  ? Set<Arrived<V>>
                  : T extends readonly unknown[]
                    ? WholeOrNever<T, { -readonly [K in keyof T]: Arrived<T[K]> }>
                    : T extends object
                      ? WholeOrNever<T, { [K in keyof T]: Arrived<T[K]> }>
                      : never;

/**
 * `M` (`T` as it arrives), or `never` when a member of `T` is a value that can never travel (a
 * `WeakMap`, a `Promise`…): the whole value is refused. Only direct members are looked at, so
 * that recursive types (trees, lists) stay types TypeScript can resolve.
 */
type WholeOrNever<T, M> = true extends {
  [K in keyof T]-?: [T[K]] extends [never] ? false : IsUncloneable<T[K]>;
}[keyof T]
  ? never
  : M;

/** `T` when it adds no member to the built-in `B` (e.g. `Uint8Array<ArrayBuffer>`), else `B`. */
type Plain<T, B> = [Exclude<keyof T, keyof B>] extends [never] ? T : B;

/**
 * The built-in type a value of a subclass of one arrives as: a `Buffer` or a class extending
 * `Uint8Array` arrives as a `Uint8Array` (an `Error` subclass keeps its type: its own fields
 * travel with it), and
 * so on; their own members stay behind.
 */
type BuiltinOf<T> = T extends Date
  ? Plain<T, Date>
  : T extends RegExp
    ? Plain<T, RegExp>
    : T extends Error
      ? ErrorOf<T>
      : T extends Uint8Array
        ? Plain<T, Uint8Array>
        : T extends Uint8ClampedArray
          ? Plain<T, Uint8ClampedArray>
          : T extends Int8Array
            ? Plain<T, Int8Array>
            : T extends Uint16Array
              ? Plain<T, Uint16Array>
              : T extends Int16Array
                ? Plain<T, Int16Array>
                : T extends Uint32Array
                  ? Plain<T, Uint32Array>
                  : T extends Int32Array
                    ? Plain<T, Int32Array>
                    : T extends Float32Array
                      ? Plain<T, Float32Array>
                      : T extends Float64Array
                        ? Plain<T, Float64Array>
                        : T extends BigInt64Array
                          ? Plain<T, BigInt64Array>
                          : T extends BigUint64Array
                            ? Plain<T, BigUint64Array>
                            : T extends DataView
                              ? Plain<T, DataView>
                              : T;

/**
 * An error as it arrives: a standard one (`TypeError`…) as itself; one of another class as an
 * `Error` with that class's own fields (its `name` travels, its prototype and methods do not).
 */
type ErrorOf<T extends Error> = [Exclude<keyof T, keyof Error>] extends [never]
  ? T
  : Error & { [K in Exclude<keyof T, keyof Error> as T[K] extends AnyFunction ? never : K]: Arrived<T[K]> };

/**
 * The built-in names every object has (`toString`, `valueOf`, `hasOwnProperty`…): on a client, a
 * pending result or a stub they are not the remote object's (the server never lets a chain reach
 * them), so they are typed `undefined` and calling one is a compile error.
 */
export type NoObjectMembers = { readonly [K in keyof Object]?: never };

/** The same for the built-in names of functions (`bind`, `call`, `apply`, `name`, `length`…), on a remote method or function. */
export type NoFunctionMembers = { readonly [K in Exclude<keyof Function, symbol>]?: never };

/**
 * A pending result: a promise of the value as it arrives *and* a handle to use it before it
 * arrives. Reading a property or calling a method on it pipelines (same frame, no extra round
 * trip); passing it as an argument passes the eventual value.
 */
export type RpcPromise<V> = [V] extends [never]
  ? Promise<never>
  : Promise<Arrived<V>> &
      ([NonNullable<V>] extends [never] ? unknown : Pipeline<NonNullable<V>>) & { readonly [PENDING]: V } & NoObjectMembers;

/** What can be reached *through* a pending value of type `V`. */
export type Pipeline<V> = V extends Primitive | WireBuiltin | Map<unknown, unknown> | Set<unknown>
  ? unknown
  : V extends { readonly [STUB]: infer S }
    ? Pipeline<S>
    : (V extends AnyFunction ? RemoteCall<V> : unknown) &
        (V extends readonly unknown[]
          ? number extends V["length"]
            ? { readonly [index: number]: Remote<V[number]> }
            : { readonly [K in keyof V & `${number}`]: Remote<V[K]> }
          : V extends object
            ? { readonly [K in PublicKeys<V>]: Remote<V[K]> }
            : unknown);

/** A member as the client sees it: methods return pending results, everything else is one. */
export type Remote<V> = 0 extends 1 & V
  ? // biome-ignore lint/suspicious/noExplicitAny: a member typed `any` stays `any`
    RpcPromise<any>
  : [NonNullable<V>] extends [never]
    ? RpcPromise<Awaited<V>>
    : [NonNullable<V>] extends [AnyFunction]
      ? RemoteCall<NonNullable<V>> // a method (optional ones too)
      : RpcPromise<Awaited<V>>; // data, with its null and undefined

/**
 * A function as the client calls it. One made by `rpcMethod` takes its argument schema's input
 * and resolves to its result (schema's output); any other takes its own parameters.
 */
type RemoteCall<V extends AnyFunction> = (V extends RpcMethodTypes<infer I, infer O>
  ? (...args: Params<I>) => RpcPromise<O>
  : (...args: Params<Parameters<V>>) => RpcPromise<Awaited<ReturnType<V>>>) &
  NoFunctionMembers;

// ---------------------------------------------------------------------------------------------
// Stubs
// ---------------------------------------------------------------------------------------------

/** Stub members that are not the remote object's: dorpc's own. */
export type StubMember = "dup";

/**
 * The other end's object or function, held by reference: calls on it go to the original. Dispose
 * it when done (`using`, `[Symbol.dispose]()`, or `rpcDispose(stub)` where symbols are missing);
 * `dup()` makes another holder with its own lifetime. A callback a method receives as an argument
 * is a stub too, released when the method returns unless it was `dup()`ed.
 */
export type RpcStub<T> = (T extends AnyFunction ? RemoteCall<T> : unknown) &
  (T extends AnyFunction ? unknown : { readonly [K in Exclude<PublicKeys<T>, StubMember>]: Remote<T[K]> }) & {
    /** Another holder of the same remote object, disposed independently. */
    dup(): RpcStub<T>;
    readonly [STUB]: T;
  } & DisposeMembers &
  (T extends AnyFunction ? NoFunctionMembers : NoObjectMembers);

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

/**
 * What a client may pass for a parameter declared as `T`: the value itself, a pending result of
 * it (pipelined), or, for an `RpcTarget` or a function, a stub of it or a local one (which
 * travels by reference). A parameter declared as `RpcStub<F>` accepts a plain function `F`.
 */
export type Param<T> = unknown extends T ? T : Accepted<T> | { readonly [PENDING]: T };

type Accepted<T> = T extends Primitive
  ? T
  : T extends symbol
    ? never
    : T extends { readonly [STUB]: infer S }
      ? Accepted<S>
      : IsUncloneable<T> extends true
        ? never
        : T extends AnyFunction
          ? // One signature (a stub of such a function fits it too), so a lambda's parameters are
            // inferred — as they arrive: an RpcTarget or a function the object passes is a stub.
            // A callback declared to return nothing may return anything (as TypeScript lets a
            // function that returns a value stand for a `void` one): the object ignores it.
            (
              ...args: ArrivedList<Parameters<T>>
            ) => [Awaited<ReturnType<T>>] extends [void] ? unknown : Awaited<ReturnType<T>> | Promise<Awaited<ReturnType<T>>>
          : T extends Target
            ? T | RpcStub<T>
            : T extends WireBuiltin
              ? T
              : T extends Map<infer K, infer V>
                ? Map<Param<K>, Param<V>> // keys and values as any parameter: functions and targets by reference
                : T extends Set<infer V>
                  ? Set<Param<V>>
                  : T extends readonly unknown[]
                    ? { [K in keyof T]: Param<T[K]> }
                    : T extends object
                      ? { [K in keyof T]: Param<T[K]> }
                      : never;

/** A parameter list as it arrives (a callback's, called by the object). */
type ArrivedList<A extends readonly unknown[]> = { [I in keyof A]: Arrived<A[I]> };

/** A parameter list mapped through `Param`. */
export type Params<A> = A extends readonly unknown[] ? { [I in keyof A]: Param<A[I]> } : never;

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

/**
 * `[Symbol.dispose]()` and `[Symbol.asyncDispose]()` where the program's lib declares those
 * symbols (`ESNext.Disposable`, `@types/node`), and nothing where it does not. Clients and stubs
 * have both.
 *
 * Why not `Disposable & AsyncDisposable`: in a program without those lib types (a Vite-style
 * browser tsconfig: `ES2022` + `DOM`, `skipLibCheck`), the names do not resolve, the error is
 * hidden inside this package's .d.ts, and tsc turns the whole client type into `any`, so misuse
 * compiles. `SymbolConstructor` exists in every lib since ES2015, so reading the symbols off it
 * never fails; `rpcConnection(client).close()` / `rpcDispose(value)` close either way.
 */
export type DisposeMembers = SymbolConstructor extends {
  readonly dispose: infer Dispose extends symbol;
  readonly asyncDispose: infer AsyncDispose extends symbol;
}
  ? { readonly [K in Dispose]: () => void } & { readonly [K in AsyncDispose]: () => Promise<void> }
  : unknown;

/**
 * The client for a Durable Object of class (or instance type) `T`: every public method and
 * getter as a member returning an `RpcPromise`, plus `Symbol.dispose` / `Symbol.asyncDispose`
 * where the lib has them (see {@link DisposeMembers}).
 */
export type RpcClient<T> = { readonly [K in PublicKeys<InstanceOf<T>>]: Remote<InstanceOf<T>[K]> } & DisposeMembers & {
    readonly [TOPICS]?: TopicsOf<T>;
  } & NoObjectMembers;
