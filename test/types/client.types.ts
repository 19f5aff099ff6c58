/**
 * Compile-only type tests: `tsc -p test/types` must pass. Each `@ts-expect-error` line is a
 * claim that the line does NOT compile; if dorpc's types ever let it through, tsc fails on the
 * unused directive.
 */
import { createRpcClient, type RpcClient } from "@dorpc/rpc";
import { RpcDurableObject, RpcTarget } from "@dorpc/rpc/server";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

interface Env {
  SECRET: string;
}

class Users extends RpcTarget {
  get(id: string): { id: string; joined: Date } {
    return { id, joined: new Date() };
  }
  secretField = 1;
}

class Counter extends RpcDurableObject<Env> {
  increment(by = 1): number {
    return by;
  }
  async load(key: string): Promise<Map<string, bigint>> {
    return new Map([[key, 1n]]);
  }
  get config(): { limits: { max: number }; tags: string[] } {
    return { limits: { max: 1 }, tags: [] };
  }
  get later(): Promise<{ answer: number }> {
    return Promise.resolve({ answer: 42 });
  }
  fails(): never {
    throw new Error("no");
  }
  get users(): Users {
    return new Users();
  }
  takesCallback(cb: () => void): void {
    cb();
  }
  returnsFunction(): () => void {
    return () => {};
  }
  bytes(data: Uint8Array): ArrayBuffer {
    return data.buffer as ArrayBuffer;
  }
  find(id: string): { id: string } | null {
    return id ? { id } : null;
  }
  _internal(): number {
    return 1;
  }
}

declare const baseUrl: string;

// Instance type and class type are both accepted and mean the same client.
const byInstance = createRpcClient<Counter>("COUNTER", "a", { baseUrl });
const byClass = createRpcClient<typeof Counter>("COUNTER", "a", { baseUrl });
assertType<Equal<typeof byInstance, typeof byClass>>();
assertType<Equal<typeof byInstance, RpcClient<Counter>>>();

// Sync methods return promises; async ones are not double-wrapped.
const n: Promise<number> = byInstance.increment(2);
const m: Promise<Map<string, bigint>> = byInstance.load("k");
byInstance.increment();
// @ts-expect-error: wrong argument type
byInstance.increment("2");

// Property chains compose and are awaitable at every step.
const max: Promise<number> = byInstance.config.limits.max;
const tag: Promise<string> = byInstance.config.tags[0]!;
const user: Promise<{ id: string; joined: Date }> = byInstance.users.get("a");
const joined: Promise<Date> = byInstance.users.get("a").joined;

// A getter returning a promise chains through the awaited value; `never` results still catch.
const answer: Promise<number> = byInstance.later.answer;
const failed: Promise<unknown> = byInstance.fails().catch(() => undefined);

// A nullable result keeps its members for chaining.
const foundId: Promise<string> = byInstance.find("a").id;

// Bytes are sendable.
const buf: Promise<ArrayBuffer> = byInstance.bytes(new Uint8Array(4));

// Unreachable members are absent from the type.
// @ts-expect-error: ctx is never reachable
byInstance.ctx;
// @ts-expect-error: env is never reachable
byInstance.env;
// @ts-expect-error: lifecycle methods are never reachable
byInstance.fetch;
// @ts-expect-error: lifecycle methods are never reachable
byInstance.webSocketMessage;
// @ts-expect-error: lifecycle methods are never reachable (DurableObject's optional TCP handler)
byInstance.connect;
// @ts-expect-error: _-prefixed members are never reachable
byInstance._internal();

// What the wire cannot carry does not compile.
// @ts-expect-error: functions cannot be sent
byInstance.takesCallback(() => {});
// An RpcTarget can be stepped through but not received.
const usersValue: Promise<never> = byInstance.users;
// A function result cannot be received.
const fnValue: Promise<never> = byInstance.returnsFunction();

// Clients are disposable.
byInstance[Symbol.dispose]();
await byClass[Symbol.asyncDispose]();

void [answer, failed, foundId, n, m, max, tag, user, joined, buf, usersValue, fnValue];
