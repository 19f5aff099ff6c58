/**
 * Compile-only type tests (`tsc -p test/types`): which names a client, a pending result and a stub
 * offer. The server never lets a call path reach the names every object or function has
 * (`toString`, `hasOwnProperty`, `bind`, `call`, `name`…), so the types make using them a compile
 * error rather than a run-time NOT_FOUND (a remote method's `bind` is a path step, not
 * Function#bind). Reading one still compiles, typed `undefined`: TypeScript cannot remove the
 * members every value has. Private, protected and lifecycle members are absent too, reserved names
 * are refused at any depth of plain data, properties are read-only, and an interface's optional
 * methods are callable (NOT_FOUND at run time if the object lacks them), also where the object
 * calls its clients through `this.clients()` / `this.client(who)`.
 * Each `@ts-expect-error` claims the line does NOT compile.
 */
import { createRpcClient, type RpcStub } from "@dorpc/rpc";
import { type ClientRef, RpcDurableObject, RpcTarget } from "@dorpc/rpc/server";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

class Room extends RpcTarget {
  #secret = 1;
  join(id: string): number {
    return id.length;
  }
  private priv(): number {
    return this.#secret;
  }
  protected prot(): number {
    return this.priv();
  }
}

class Api extends RpcDurableObject {
  #hidden = 1;
  private privMethod(): number {
    return this.#hidden;
  }
  protected protMethod(): number {
    return this.privMethod();
  }
  inc(): number {
    return 1;
  }
  opt(a: string, b?: number): string {
    return a + (b ?? 0);
  }
  get user(): { id: string } {
    return { id: "a" };
  }
  get config(): { name: string; length: number; max: number; _x: number; ctx: number } {
    return { name: "a", length: 1, max: 1, _x: 1, ctx: 1 };
  }
  dict(): Record<string, { n: number }> {
    return {};
  }
  open(): Room {
    return new Room();
  }
  fnResult(): (x: number) => string {
    return (x) => String(x);
  }
  set value(v: number) {
    void v;
  }
  get value(): number {
    return 1;
  }
}

declare const baseUrl: string;
const client = createRpcClient<Api>("API", "a", { baseUrl });
const room = await client.open();
const fn = await client.fnResult();

// Object built-ins on the client, a pending result and a stub: calling one does not compile.
// @ts-expect-error: toString on the client is a call named toString, not a string
export const clientText: string = client.toString();
// @ts-expect-error: hasOwnProperty on the client returns a call handle (always truthy)
// biome-ignore lint/suspicious/noPrototypeBuiltins: calling the built-in on the client is what is checked
export const own: boolean = client.hasOwnProperty("inc");
// @ts-expect-error: toString on a pending result
client.user.toString();
// @ts-expect-error: valueOf on a pending result
client.user.valueOf();
// @ts-expect-error: hasOwnProperty on a pending result
// biome-ignore lint/suspicious/noPrototypeBuiltins: calling the built-in on a pending result is what is checked
client.user.hasOwnProperty("id");
// @ts-expect-error: toString on a stub
export const stubText: string = room.toString();
// @ts-expect-error: constructor on a stub
new room.constructor();
// Reading one compiles (TypeScript keeps every value's members) and is typed `undefined`.
assertType<Equal<typeof client.user.toString, undefined>>();
assertType<Equal<typeof room.valueOf, undefined>>();

// Function built-ins on a remote method, a function stub and a pending function result.
// @ts-expect-error: `bind` is a path step on the remote method, not Function#bind
client.opt.bind(null);
// @ts-expect-error: `call` is a path step
client.opt.call(null, "a");
// @ts-expect-error: `apply` is a path step
client.opt.apply(null, ["a"]);
// @ts-expect-error: `name` is not the method's name
export const methodName: string = client.opt.name;
// @ts-expect-error: `length` is not the method's arity
export const arity: number = client.opt.length;
// @ts-expect-error: `bind` on a function stub
fn.bind(null);
// @ts-expect-error: `call` on a pending function result
client.fnResult().call(null, 1);
// The method and the stub stay callable.
export const optResult: Promise<string> = client.opt("a", 1);
export const fnCalled: Promise<string> = fn(1);

// Reserved names are refused at any depth of plain data; other names pipeline.
export const max: Promise<number> = client.config.max;
// @ts-expect-error: `name` is a Function built-in name, never reachable
client.config.name;
// @ts-expect-error: `length` likewise
client.config.length;
// @ts-expect-error: _-prefixed names are never reachable
client.config._x;
// @ts-expect-error: `ctx` is never reachable
client.config.ctx;
// Through an index signature an ordinary name pipelines.
export const viaIndex: Promise<number> = client.dict().abc!.n;

// Private, protected (the object's own and RpcDurableObject's) and lifecycle members are absent.
// @ts-expect-error: private
client.privMethod;
// @ts-expect-error: protected
client.protMethod;
// @ts-expect-error: RpcDurableObject#clients is protected
client.clients;
// @ts-expect-error: RpcDurableObject#publish is protected
client.publish;
// @ts-expect-error: lifecycle
client.alarm;
// @ts-expect-error: lifecycle
client.webSocketClose;
// @ts-expect-error: lifecycle
client.webSocketError;
// @ts-expect-error: the base class's type brand
client.__dorpcTopics;
// @ts-expect-error: private, on a stub
room.priv;
// @ts-expect-error: protected, on a stub
room.prot;

// A setter cannot be called by assignment (the runtime refuses it: NOT_CALLABLE).
// @ts-expect-error: the client's members are read-only
client.value = 2;

// An interface's optional method is callable on a client.
interface OptionalApi {
  must(): number;
  maybe?(): number;
}
const optional = createRpcClient<OptionalApi>("API", "a", { baseUrl });
export const must: Promise<number> = optional.must();
export const maybe: Promise<number> = optional.maybe();

// ...and where the object calls its clients: broadcast (a count) and one client (its result).
interface ClientApi {
  toast(text: string): void;
  notify?(text: string): void;
  answer?(q: string): Promise<number>;
}
declare const who: ClientRef;
export class Pusher extends RpcDurableObject<Cloudflare.Env, ClientApi> {
  run(): void {
    const all = this.clients();
    const sent: number = all.notify("x");
    const one = this.client(who);
    const notified: Promise<void> = one.notify("x");
    const answered: Promise<number> = one.answer("q");
    // @ts-expect-error: no such client method
    one.missing("x");
    void [sent, notified, answered];
  }
}

export type Keep = RpcStub<Room>;
