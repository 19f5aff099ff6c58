/**
 * Compile-only type tests: `tsc -p test/types` must pass. Each `@ts-expect-error` line is a
 * claim that the line does NOT compile; if dorpc's types ever let it through, tsc fails on the
 * unused directive.
 */
import { createRpcClient, type RpcClient, type RpcStub } from "@dorpc/rpc";
import { RpcDurableObject, RpcTarget } from "@dorpc/rpc/server";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

interface Env {
  SECRET: string;
}

class Users extends RpcTarget {
  _hidden(): number {
    return 1;
  }
  get(id: string): { id: string; joined: Date } {
    return { id, joined: new Date() };
  }
  secretField = 1;
}

class Room extends RpcTarget {
  constructor(readonly name: string) {
    super();
  }
  join(id: string): number {
    return id.length;
  }
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
  each(fn: (n: number) => number): number {
    return fn(1);
  }
  takesSymbol(value: symbol): string {
    return String(value);
  }
  takesMap(value: WeakMap<object, number>): void {
    void value;
  }
  greet(user: { id: string; joined: Date }): string {
    return user.id;
  }
  takesId(id: string): string {
    return id;
  }
  open(name: string): Room {
    return new Room(name);
  }
  closeRoom(room: Room): void {
    void room;
  }
  subscribe(listener: RpcStub<(text: string) => void>): void {
    void listener;
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
// @ts-expect-error: _-prefixed members are never reachable
byInstance._internal();

// What the wire cannot carry does not compile.
// @ts-expect-error: a symbol cannot be sent
byInstance.takesSymbol(Symbol("s"));
// @ts-expect-error: a WeakMap cannot be sent
byInstance.takesMap(new WeakMap());

// Functions travel by reference: a callback argument compiles, its parameters are inferred.
byInstance.takesCallback(() => {});
byInstance.each((n) => {
  assertType<Equal<typeof n, number>>();
  return n + 1;
});
byInstance.each(async (n) => n * 2);
// @ts-expect-error: the callback must return what the parameter type says
byInstance.each((n) => `${n}`);

// An RpcTarget arrives as a stub with only its public members.
const users = await byInstance.users;
assertType<Equal<typeof users, RpcStub<Users>>>();
const viaStub: Promise<{ id: string; joined: Date }> = users.get("a");
// @ts-expect-error: _-prefixed members are not on the stub
users._hidden();
const copy: RpcStub<Users> = users.dup();
copy[Symbol.dispose]();
// A function result arrives as a callable stub.
const fn = await byInstance.returnsFunction();
const called: Promise<void> = fn();

// Pipelining: a pending result is typed as its eventual value and can be used before it arrives.
const pending = byInstance.users.get("a");
const pendingId: Promise<string> = pending.id;
byInstance.greet(pending); // the whole pending value as an argument
byInstance.takesId(pending.id); // one property of it
// @ts-expect-error: a pending number is not a string
byInstance.takesId(byInstance.increment());
const room = byInstance.open("lobby");
const joinedCount: Promise<number> = room.join(pending.id); // a call on a pending RpcTarget
byInstance.closeRoom(room); // a pending RpcTarget where the target is expected
byInstance.closeRoom(await room); // its stub, once arrived
// @ts-expect-error: the stub of another target does not fit
byInstance.closeRoom(users);

// A parameter declared as a stub accepts a plain function.
byInstance.subscribe((text) => {
  assertType<Equal<typeof text, string>>();
});

// Clients are disposable.
byInstance[Symbol.dispose]();
await byClass[Symbol.asyncDispose]();

void [answer, failed, foundId, n, m, max, tag, user, joined, buf, viaStub, called, pendingId, joinedCount];
