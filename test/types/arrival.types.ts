/**
 * Compile-only type tests (`tsc -p test/types`): values typed as they arrive. Nullable getters
 * keep null/undefined, null- and undefined-only results are not `never`, callbacks' parameters
 * arrive as stubs, a Map holding what cannot be sent is refused, subclasses of built-ins arrive
 * as the built-in, results that cannot travel are `never`, only clients take topics, tuples
 * pipeline per element. Each `@ts-expect-error` claims the line does NOT compile.
 */
import { createRpcClient, type RpcPromise, type RpcStub, type Sendable, subscribe } from "@dorpc/rpc";
import { RpcDurableObject, RpcTarget } from "@dorpc/rpc/server";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

class Room extends RpcTarget {
  join(id: string): number {
    return id.length;
  }
}
class Bytes extends Uint8Array {
  hex(): string {
    return "";
  }
}

class Api extends RpcDurableObject {
  get current(): string | null {
    return null;
  }
  get maybeUser(): { id: string } | undefined {
    return undefined;
  }
  get cfg(): { b: string | null } {
    return { b: null };
  }
  clear(): undefined {
    return undefined;
  }
  nothing(): null {
    return null;
  }
  takesId(id: string): string {
    return id;
  }
  onRoom(cb: (room: Room) => unknown): void {
    cb(new Room());
  }
  onFn(cb: (inner: () => number) => void): void {
    cb(() => 1);
  }
  takesMapSym(m: Map<string, symbol>): number {
    return m.size;
  }
  bytes(): Bytes {
    return new Bytes(2);
  }
  weak(): WeakMap<object, number> {
    return new WeakMap();
  }
  nested(): { later: Promise<number> } {
    return { later: Promise.resolve(1) };
  }
  pair(): [string, number] {
    return ["a", 1];
  }
  open(): Room {
    return new Room();
  }
}

declare const baseUrl: string;
const client = createRpcClient<Api>("API", "a", { baseUrl });

// Getters and data properties keep their null and undefined (they were dropped).
const current = await client.current;
assertType<Equal<typeof current, string | null>>();
const maybeUser = await client.maybeUser;
assertType<Equal<typeof maybeUser, { id: string } | undefined>>();
const b = await client.cfg.b;
assertType<Equal<typeof b, string | null>>();
// A method returning only `undefined` / `null` is not `never` (which was assignable to anything):
// @ts-expect-error: the result is undefined, not a string
export const cleared: Promise<string> = client.clear();
// @ts-expect-error: the result is null, not a number
export const nothing: Promise<number> = client.nothing();
// ...and a possibly-null getter is not accepted where the object requires a string:
// @ts-expect-error: client.current may be null, takesId needs a string
client.takesId(client.current);

// A callback's parameters are typed as they arrive: an RpcTarget or a function the object passes is a stub.
client.onRoom((room) => {
  assertType<Equal<typeof room, RpcStub<Room>>>();
});
client.onFn((inner) => {
  assertType<Equal<typeof inner, RpcStub<() => number>>>();
});

// A Map whose values (or keys) cannot be sent is refused, as the runtime refuses it (ENCODE).
// @ts-expect-error: a symbol cannot be sent as a Map value
client.takesMapSym(new Map([["a", Symbol("s")]]));
assertType<Equal<Sendable<Map<string, symbol>>, never>>();

// A subclass of a built-in arrives as the built-in (a typed-array subclass, a Node Buffer, an Error subclass).
const bytes = await client.bytes();
// @ts-expect-error: the arrived value is a Uint8Array; Bytes#hex is not there
bytes.hex();

// A result that can never arrive (the runtime refuses it with ENCODE) is `never`.
assertType<Equal<Awaited<ReturnType<typeof client.weak>>, never>>();
assertType<Equal<Awaited<ReturnType<typeof client.nested>>, never>>();

// subscribe takes clients only: a stub or plain data has no topics.
const room = await client.open();
// @ts-expect-error: a stub is not a client (runtime: BAD_OPTION)
subscribe(room, "anything", () => {});
const data = await client.cfg;
// @ts-expect-error: plain data is not a client
subscribe(data, "anything", () => {});

// A pipelined tuple element keeps its own type (and is never `undefined`).
export const first: Promise<string> = client.pair()[0];

// Recursive results (a tree, a thread, a list) stay usable when awaited.
interface TreeNode {
  id: string;
  children: TreeNode[];
}
interface Comment {
  text: string;
  replies: Comment[];
}
type Linked = { value: number; next: Linked | null };
class Shapes {
  nodes(): TreeNode {
    return { id: "", children: [] };
  }
  linked(): Linked {
    return { value: 1, next: null };
  }
  thread(): Promise<Comment[]> {
    return Promise.resolve([]);
  }
  // biome-ignore lint/suspicious/noExplicitAny: a member typed any
  get loose(): any {
    return 1;
  }
  bytes(): Uint8Array<ArrayBuffer> {
    return new Uint8Array(1);
  }
}
const shapes = createRpcClient<Shapes>("SHAPES", "x", { baseUrl });
const nodes = await shapes.nodes();
export const id: string = nodes.children[0]!.id;
const linked = await shapes.linked();
export const next: number | undefined = linked.next?.value;
const thread = await shapes.thread();
export const reply: string | undefined = thread[0]?.replies[0]?.text;
// A getter typed `any` awaits to `any`.
const loose = await shapes.loose;
// biome-ignore lint/suspicious/noExplicitAny: the type checked
assertType<Equal<typeof loose, any>>();
// A Uint8Array<ArrayBuffer> arrives as one (a Blob takes it).
const arrived = await shapes.bytes();
assertType<Equal<typeof arrived, Uint8Array<ArrayBuffer>>>();
export const blob = new Blob([arrived]);

export type Keep = RpcPromise<number>;
