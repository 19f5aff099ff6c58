/**
 * The client's static types: what `createRpcClient<T>` exposes for a Durable Object class `T`.
 *
 * The mapping mirrors what the server lets through (access.ts): public members of the user's
 * class, minus `ctx`, `env`, lifecycle methods and `_`-prefixed names; every method returns a
 * promise; parameters and results that the wire cannot carry turn into `never`, so a wrong
 * call fails to compile instead of failing at run time.
 */

/** Members never reachable over RPC, whatever the class declares. */
export type ReservedMember =
  | "ctx"
  | "env"
  | "constructor"
  | "prototype"
  | "__proto__"
  | "then"
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

/** Values the wire carries (the structured clone types plus Error). */
export type Primitive = string | number | boolean | bigint | null | undefined;

/** Built-in objects that cross the wire as themselves. */
export type WireBuiltin = Date | RegExp | Error | ArrayBuffer | ArrayBufferView | String | Number | Boolean;

/**
 * `T` when values of type `T` can cross the wire, otherwise `never`. Functions, symbols and
 * RpcTarget instances (which are reachable through chains but not sendable) are refused.
 */
export type Sendable<T> = unknown extends T
  ? T // `unknown` / `any` (e.g. a generic parameter): checked at run time instead
  : T extends Primitive | void // a `void` method's result arrives as `undefined`
    ? T
    : T extends symbol | ((...args: never[]) => unknown)
      ? never
      : T extends { readonly __dorpcRpcTarget: true }
        ? never
        : T extends WireBuiltin
          ? T
          : T extends Map<infer K, infer V>
            ? [Sendable<K>, Sendable<V>] extends [never, never]
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
  [K in keyof T]: K extends string ? (K extends ReservedMember | `_${string}` ? never : K) : never;
}[keyof T];

/**
 * An awaitable step of a chain: awaiting it runs the whole chain in one round trip and yields
 * the result; reading a property or calling a method extends the chain instead.
 */
export type RpcPromise<V> = [V] extends [never] ? Promise<never> : Promise<Sendable<V>> & RemoteMembers<NonNullable<V>>;

/** What can be reached *through* a value of type `V` (data properties, RpcTarget methods). */
export type RemoteMembers<V> = V extends Primitive | WireBuiltin | Map<unknown, unknown> | Set<unknown>
  ? unknown
  : V extends readonly unknown[]
    ? { readonly [index: number]: Remote<V[number]> }
    : V extends object
      ? { readonly [K in PublicKeys<V>]: Remote<V[K]> }
      : unknown;

/** A member as the client sees it: methods return chains, everything else is a chain. */
export type Remote<V> = V extends (...args: infer A) => infer R
  ? (...args: SendableArgs<A>) => RpcPromise<Awaited<R>>
  : RpcPromise<Awaited<V>>;

type SendableArgs<A extends unknown[]> = { [I in keyof A]: Sendable<A[I]> };

/**
 * `[Symbol.dispose]()` and `[Symbol.asyncDispose]()` where the program's lib declares those
 * symbols (`ESNext.Disposable`, `@types/node`), and nothing where it does not.
 *
 * Why not `Disposable & AsyncDisposable`: in a program without those lib types (a Vite-style
 * browser tsconfig: `ES2022` + `DOM`, `skipLibCheck`), the names do not resolve, the error is
 * hidden inside this package's .d.ts, and tsc turns the whole client type into `any`, so misuse
 * compiles. `SymbolConstructor` exists in every lib since ES2015, so reading the symbols off it
 * never fails; `rpcConnection(client).close()` closes a client either way.
 */
export type DisposeMembers = SymbolConstructor extends {
  readonly dispose: infer Dispose extends symbol;
  readonly asyncDispose: infer AsyncDispose extends symbol;
}
  ? { readonly [K in Dispose]: () => void } & { readonly [K in AsyncDispose]: () => Promise<void> }
  : unknown;

/**
 * The client for a Durable Object of class (or instance type) `T`: every public method and
 * getter as a promise-returning member, plus `Symbol.dispose` / `Symbol.asyncDispose` where the
 * lib has them (see {@link DisposeMembers}).
 */
export type RpcClient<T> = { readonly [K in PublicKeys<InstanceOf<T>>]: Remote<InstanceOf<T>[K]> } & DisposeMembers;
