/**
 * Compile-only type tests (`tsc -p test/types`): what arguments accept and how results arrive,
 * where the types follow the runtime's encoding rules. Optional, rest and readonly parameters; a
 * `void` callback takes a lambda that returns a value (the object ignores it, as TypeScript
 * allows for `void`); Map and Set arguments may hold functions, RpcTargets, stubs and pending
 * results (they travel by reference); a Set of objects or a Map with object keys is not taken for
 * a WeakSet/WeakMap; a native promise is refused; an Error subclass arrives as an `Error` with its
 * own data fields (its methods stay behind); a broadcast takes data only, one client's call
 * takes references too; `withCallOptions` keeps a call's result type and takes only `CallOptions`.
 * Each `@ts-expect-error` claims the line does NOT compile.
 */
import { type Arrived, createRpcClient, type Param, type RpcStub, type RpcTarget as RpcTargetType, withCallOptions } from "@dorpc/rpc";
import { type ClientRef, RpcDurableObject, RpcTarget } from "@dorpc/rpc/server";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

class Room extends RpcTarget {
  join(id: string): number {
    return id.length;
  }
}
class QuotaError extends Error {
  retryAfter = 5;
  describe(): string {
    return `retry in ${this.retryAfter}`;
  }
}

class Api extends RpcDurableObject {
  opt(a: string, b?: number): string {
    return a + (b ?? 0);
  }
  rest(...xs: number[]): number {
    return xs.length;
  }
  restTuple(a: string, ...more: [number, boolean?]): string {
    return a + more.length;
  }
  sum(xs: readonly number[]): number {
    return xs.length;
  }
  pair(): readonly [string, number] {
    return ["a", 1];
  }
  takesNumber(n: number): number {
    return n;
  }
  takesPromise(p: Promise<number>): void {
    void p;
  }
  get value(): number {
    return 1;
  }
  onEvent(cb: (e: string) => void): void {
    cb("x");
  }
  onEventAsync(cb: (e: string) => Promise<void>): void {
    void cb("x");
  }
  listen(listener: RpcStub<(e: string) => void>): void {
    void listener;
  }
  nestedCb(opts: { name: string; onEvent: (e: string) => void }): void {
    opts.onEvent(opts.name);
  }
  optionalCb(cb?: (n: number) => void): void {
    cb?.(1);
  }
  onRooms(cb: (rooms: Map<string, Room>) => void): void {
    cb(new Map());
  }
  mapOfFns(m: Map<string, () => number>): number {
    return m.size;
  }
  mapOfRooms(m: Map<string, Room>): number {
    return m.size;
  }
  setOfFns(s: Set<() => void>): number {
    return s.size;
  }
  mapOfNumbers(m: Map<string, number>): number {
    return m.size;
  }
  setOfObjects(s: Set<{ a: number }>): number {
    return s.size;
  }
  mapWithObjectKeys(m: Map<object, number>): number {
    return m.size;
  }
  returnsMapOfRooms(): Map<string, Room> {
    return new Map();
  }
  returnsSetOfObjects(): Set<{ a: number }> {
    return new Set();
  }
  stubParam(room: RpcStub<Room>): void {
    void room;
  }
  later(): Promise<Room> {
    return Promise.resolve(new Room());
  }
  who(): { id: string } {
    return { id: "a" };
  }
  nestedPending(u: { id: string; at: Date }): string {
    return u.id;
  }
  withThis(this: Api, x: number): number {
    return x;
  }
  lastError(): QuotaError {
    return new QuotaError("q");
  }
  typeError(): TypeError {
    return new TypeError("t");
  }
  maybeRoom(): Room | undefined {
    return undefined;
  }
  rooms(): Room[] {
    return [];
  }
  unk(): unknown {
    return 1;
  }
  dataWithFn(): { n: number; f: () => number } {
    return { n: 1, f: () => 1 };
  }
}

declare const baseUrl: string;
const client = createRpcClient<Api>("API", "a", { baseUrl });

// Optional and rest parameters, pending results among them.
client.opt("a");
client.opt("a", undefined);
client.opt("a", client.takesNumber(1));
// @ts-expect-error: too many arguments
client.opt("a", 1, 2);
client.rest();
client.rest(1, client.takesNumber(2), 3);
// @ts-expect-error: a rest element of the wrong type
client.rest(1, "2");
client.restTuple("a", 1);
client.restTuple("a", 1, true);
// @ts-expect-error: the rest tuple requires a number
client.restTuple("a");
// A readonly array parameter takes a const array; a readonly tuple result arrives as a plain one.
client.sum([1, 2] as const);
const pair = await client.pair();
assertType<Equal<typeof pair, [string, number]>>();
// @ts-expect-error: no element 2 in the tuple
client.pair()[2];

// Pending values go where their arrived type fits; a native promise cannot be sent.
client.takesNumber(client.value);
// @ts-expect-error: a native promise cannot be sent
client.takesNumber(Promise.resolve(1));
// @ts-expect-error: not even where the object declares a promise
client.takesPromise(Promise.resolve(1));
client.nestedPending({ id: client.who().id, at: new Date() });
// A this-parameter is not an argument.
export const withThis: Promise<number> = client.withThis(1);

// A stub parameter takes a stub, an arrived stub or a local target.
client.stubParam(await client.later());
client.stubParam(new Room());

// A `void` callback takes a lambda that returns a value, as TypeScript allows locally.
const events: string[] = [];
const local: (e: string) => void = (e) => events.push(e);
client.onEvent(local);
client.onEvent((e) => events.push(e));
client.onEvent((e) => events.push(e) > 0);
client.listen((e) => events.push(e));
client.onEventAsync(async (e) => void events.push(e));
client.nestedCb({
  name: "a",
  onEvent: (e) => {
    assertType<Equal<typeof e, string>>();
  },
});
client.optionalCb();
client.optionalCb((n) => {
  assertType<Equal<typeof n, number>>();
});
// A Map a callback receives holds stubs of the targets the object put in it.
client.onRooms((rooms) => {
  assertType<Equal<typeof rooms, Map<string, RpcStub<Room>>>>();
});

// Map and Set arguments may hold functions, targets, stubs and pending results (by reference).
const room = await client.later();
client.mapOfFns(new Map([["a", () => 1]]));
client.mapOfRooms(new Map([["a", new Room()]]));
client.mapOfRooms(new Map([["a", room]]));
client.setOfFns(new Set([() => {}]));
client.mapOfNumbers(new Map([["a", client.takesNumber(1)]]));
// @ts-expect-error: the values must still be numbers
client.mapOfNumbers(new Map([["a", "1"]]));
const mapOfRooms = await client.returnsMapOfRooms();
assertType<Equal<typeof mapOfRooms, Map<string, RpcStub<Room>>>>();

// A Set of objects and a Map with object keys are data, not a WeakSet / WeakMap (never).
client.setOfObjects(new Set([{ a: 1 }]));
client.mapWithObjectKeys(new Map([[{}, 1]]));
const setOfObjects = await client.returnsSetOfObjects();
assertType<Equal<typeof setOfObjects, Set<{ a: number }>>>();
assertType<Equal<Arrived<Set<{ a: number }>>, Set<{ a: number }>>>();
assertType<Equal<Arrived<Map<{ k: 1 }, number>>, Map<{ k: 1 }, number>>>();
export const setParam: Param<Set<{ a: number }>> = new Set([{ a: 1 }]);
export const mapParam: Param<Map<object, number>> = new Map([[{}, 1]]);
// A real WeakSet / WeakMap still cannot travel.
assertType<Equal<Arrived<WeakSet<{ a: number }>>, never>>();
assertType<Equal<Arrived<WeakMap<{ k: 1 }, number>>, never>>();

// An Error subclass arrives as an Error with its own data fields; a standard error as itself.
const err = await client.lastError();
assertType<Equal<typeof err, Error & { retryAfter: number }>>();
// @ts-expect-error: its methods do not travel
err.describe();
const typeError = await client.typeError();
assertType<Equal<typeof typeError, TypeError>>();

// Other results: a target or undefined, an array of targets, unknown, data holding a function.
const maybe = await client.maybeRoom();
assertType<Equal<typeof maybe, RpcStub<Room> | undefined>>();
export const joinedMaybe: Promise<number> = client.maybeRoom().join("x");
const rooms = await client.rooms();
assertType<Equal<typeof rooms, RpcStub<Room>[]>>();
export const joinedFirst: Promise<number> = client.rooms()[0]!.join("a");
const u = await client.unk();
assertType<Equal<typeof u, unknown>>();
// @ts-expect-error: nothing to pipeline through on unknown
client.unk().x;
const dataWithFn = await client.dataWithFn();
assertType<Equal<typeof dataWithFn.f, RpcStub<() => number>>>();

// A types-only API: an interface extending RpcTarget arrives as its stub.
interface RoomApi extends RpcTargetType {
  join(id: string): number;
}
interface TypesOnlyApi {
  save(doc: object): void;
  openRoom(name: string): RoomApi;
}
const typesOnly = createRpcClient<TypesOnlyApi>("API", "a", { baseUrl });
const roomApi = await typesOnly.openRoom("a");
assertType<Equal<typeof roomApi, RpcStub<RoomApi>>>();
typesOnly.save({ a: 1 });
// @ts-expect-error: a string is not an object
typesOnly.save("str");
// @ts-expect-error: a symbol cannot be sent
typesOnly.save(Symbol("s"));

// The object calling its clients: a broadcast takes data only (functions and targets throw ENCODE),
// one client's call takes them by reference.
interface ClientApi {
  toast(text: string): void;
  withFn(cb: () => void): void;
  withTarget(t: Room): void;
  answer(q: string): Promise<number>;
}
declare const who: ClientRef;
export class Pusher extends RpcDurableObject<Cloudflare.Env, ClientApi> {
  run(): void {
    const all = this.clients();
    const count: number = all.toast("a");
    // @ts-expect-error: a function among broadcast arguments
    all.withFn(() => {});
    // @ts-expect-error: an RpcTarget among broadcast arguments
    all.withTarget(new Room());
    const one = this.client(who);
    const answer: Promise<number> = one.answer("q");
    one.withFn(() => {});
    one.withTarget(new Room());
    void [count, answer];
  }
}

// --- withCallOptions: keeps the call's result type; only CallOptions' own keys and types ---
const timed: Promise<number> = withCallOptions(client.takesNumber(1), { timeout: 1_000, idempotent: true, retries: 2 });
const signalled: Promise<string> = withCallOptions(client.opt("a"), { signal: new AbortController().signal });
// @ts-expect-error: a misspelt option
withCallOptions(client.takesNumber(1), { timout: 1 });
// @ts-expect-error: the controller, not its signal
withCallOptions(client.takesNumber(1), { signal: new AbortController() });
void [timed, signalled];
