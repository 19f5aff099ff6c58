/**
 * Checks that hold under every tsconfig in test/types/*: the client type is never `any`, and
 * misuse does not compile. Each `@ts-expect-error` line claims the line does NOT compile; if
 * the client type collapses to `any`, tsc fails on the unused directive (and on `IsAny`).
 *
 * Nothing here may name `Symbol.dispose`: some of these configs have no `ESNext.Disposable`.
 */
import { createRpcClient, rpcConnection, type RpcClient } from "@dorpc/rpc";
import type { CounterApi } from "./counter-api.js";

/**
 * `true` only for `any`, including the "error" `any` that tsc silently substitutes for a type
 * that does not resolve under `skipLibCheck` (the common `0 extends 1 & T` test answers `any`
 * itself for that one, so it cannot catch the collapse).
 */
// biome-ignore lint/suspicious/noExplicitAny: comparing with `any` is the point of this check
export type IsAny<T> = (<U>() => U extends T ? 1 : 2) extends <U>() => U extends any ? 1 : 2 ? true : false;
/** Compiles only when `T` is not `any`. */
export function assertNotAny<T>(..._proof: IsAny<T> extends false ? [] : [never]): void {}
/** Compiles only when `A` and `B` are the same type (identical, not merely mutually assignable). */
export function assertSame<A, B>(..._proof: (<U>() => U extends A ? 1 : 2) extends <U>() => U extends B ? 1 : 2 ? [] : [never]): void {}
/** Compiles only when each of `A` and `B` is assignable to the other (same members, however built). */
export function assertSameShape<A, B>(..._proof: [A] extends [B] ? ([B] extends [A] ? [] : [never]) : [never]): void {}

const client = createRpcClient<CounterApi>("COUNTER", "room-1", { baseUrl: "http://127.0.0.1:8787" });
assertNotAny<typeof client>();
assertNotAny<RpcClient<CounterApi>>();
assertNotAny<typeof client.increment>();
assertNotAny<ReturnType<typeof client.getValue>>();
// A stub (here of a returned function) is not `any` either.
export const ticker = await client.ticker();
assertNotAny<typeof ticker>();
export const tick: Promise<number> = ticker();
// @ts-expect-error: the stub's function takes no argument
ticker(1);

// Methods return promises of their results.
export const incremented: Promise<number> = client.increment(2);
export const since: Promise<Date> = client.stats().since;

// @ts-expect-error: wrong argument type
client.increment("2");
// @ts-expect-error: no such method
client.decrement();
// @ts-expect-error: the result is a number, not a string
export const wrong: Promise<string> = client.getValue();
// A `void` method resolves to `void`, not `never` (which would be assignable to anything).
assertSame<Awaited<ReturnType<typeof client.rename>>, void>();
// @ts-expect-error: a void method's result is not a number
export const nothing: Promise<number> = client.rename("a");

// Closing without the dispose symbols always type-checks.
rpcConnection(client).close();
// @ts-expect-error: rpcConnection needs an object
rpcConnection("not a client");
