/**
 * The Durable Objects of the test Worker, one per way of serving dorpc:
 *  - `Counter`: `class … extends RpcDurableObject<Env>` (COUNTER; its subclass MyCounter is
 *    MY_COUNTER);
 *  - `Wrapped`: `withRpc(PlainBase, …)` around a DurableObject with its own fetch and
 *    webSocketMessage;
 *  - `Manual`: a DurableObject calling `handleRpcRequest` / `handleRpcMessage` itself.
 */
import { DurableObject } from "cloudflare:workers";
import {
  handleRpcMessage,
  handleRpcRequest,
  RpcDurableObject,
  RpcTarget,
  rpcCaller,
  watchRpcStorage,
  withRpc,
  type RpcServerOptions,
} from "@dorpc/rpc/server";

/** Header the worker's onBeforeConnect / onBeforeRequest hooks add when they replace a request. */
export const REPLACED_HEADER = "x-test-replaced";

export interface User {
  id: string;
  name: string;
  tags: Set<string>;
}

/** Reachable through `client.users.get("a")`: an RpcTarget returned by a getter. */
export class Users extends RpcTarget {
  /** An instance field: never reachable, even on an RpcTarget. */
  readonly hidden = "instance field";

  constructor(private readonly table: ReadonlyMap<string, User>) {
    super();
  }

  get(id: string): User | null {
    return this.table.get(id) ?? null;
  }

  count(): number {
    return this.table.size;
  }

  _internal(): string {
    return "underscore method on an RpcTarget";
  }
}

/** A custom error with a cause and own properties. */
export class QuotaExceededError extends Error {
  constructor(
    message: string,
    readonly limit: number,
    readonly used: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A custom error whose name is set explicitly (not derived from the class). */
export class ExplicitNameError extends Error {
  override name = "ExplicitName";
}

export class Counter extends RpcDurableObject<Env> {
  static rpcOptions = { exposeErrorStack: true } satisfies RpcServerOptions;

  /** Changes on every construction: tells whether an eviction really happened. */
  readonly instanceId = crypto.randomUUID();
  /** Instance fields are never reachable over RPC. */
  readonly secretField = this.env.SECRET;
  readonly arrowField = (): string => this.env.SECRET;

  /** Records what the routing hooks added to the request that reached the object. */
  override async fetch(request: Request): Promise<Response> {
    const upgrade = request.headers.get("Upgrade")?.toLowerCase() === "websocket";
    this.ctx.storage.kv.put(upgrade ? "lastUpgradeHeader" : "lastRequestHeader", request.headers.get(REPLACED_HEADER));
    return super.fetch(request);
  }

  increment(by = 1): number {
    const value = this.getValue() + by;
    this.ctx.storage.kv.put("count", value);
    return value;
  }

  getValue(): number {
    return this.ctx.storage.kv.get<number>("count") ?? 0;
  }

  /** `increment`, from an `async` method that does no I/O: it answers a few microtasks after its write. */
  async incrementSoon(by = 1): Promise<number> {
    return this.increment(by);
  }

  reset(): void {
    this.ctx.storage.kv.delete("count");
  }

  echo<T>(value: T): T {
    return value;
  }

  /** Stores `value` in KV storage and returns what storage gives back. */
  saveSnapshot<T>(value: T): T {
    this.ctx.storage.kv.put("snapshot", value);
    return this.ctx.storage.kv.get<T>("snapshot")!;
  }

  /**
   * Waits up to `ms`, or until the caller cancels (rpcCaller().signal), and records which: a
   * cancelled call stops its work.
   */
  async waitOrCancel(ms: number): Promise<string> {
    const signal = rpcCaller()!.signal;
    const outcome = await new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve("finished"), ms);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve(`cancelled: ${(signal.reason as Error).name}`);
      });
    });
    this.ctx.storage.kv.put("waitOutcome", outcome);
    return outcome;
  }

  waitOutcome(): string | undefined {
    return this.ctx.storage.kv.get<string>("waitOutcome");
  }

  async addLater(a: number, b: number, ms = 5): Promise<number> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return a + b;
  }

  /** What `rpcCaller()` tells about the caller (an HTTP batch caller has no socket). */
  callerInfo(): { socket: boolean; connectedAt: boolean; signal: boolean } {
    const caller = rpcCaller()!;
    return { socket: caller.socket !== undefined, connectedAt: caller.connectedAt > 0, signal: caller.signal instanceof AbortSignal };
  }

  /** The class serving the call (Counter or MyCounter). */
  className(): string {
    return this.constructor.name;
  }

  whoami(): string {
    return this.instanceId;
  }

  /** Number of dorpc sockets the object holds (hibernated ones included). */
  socketCount(): number {
    return this.ctx.getWebSockets().length;
  }

  lastUpgradeHeader(): string | null {
    return this.ctx.storage.kv.get<string | null>("lastUpgradeHeader") ?? null;
  }

  lastRequestHeader(): string | null {
    return this.ctx.storage.kv.get<string | null>("lastRequestHeader") ?? null;
  }

  get users(): Users {
    return new Users(
      new Map([
        ["a", { id: "a", name: "Ada", tags: new Set(["admin"]) }],
        ["b", { id: "b", name: "Bob", tags: new Set<string>() }],
      ]),
    );
  }

  get config(): { limits: { max: number }; names: string[] } {
    return { limits: { max: 10 }, names: ["x", "y"] };
  }

  /** A getter that hands out a platform object: nothing behind it may be reachable. */
  get storageGetter(): DurableObjectStorage {
    return this.ctx.storage;
  }

  throwTypeError(): never {
    const error = new TypeError("expected a number", { cause: new RangeError("inner cause") });
    Object.assign(error, { code: "E_BAD_INPUT", details: { field: "by", at: new Date(0) } });
    throw error;
  }

  throwCustom(): never {
    throw new QuotaExceededError("quota exceeded", 10, 11, { cause: "string cause" });
  }

  throwExplicitName(): never {
    throw new ExplicitNameError("explicitly named");
  }

  async rejectLater(): Promise<never> {
    await new Promise((resolve) => setTimeout(resolve, 1));
    throw new QuotaExceededError("async quota exceeded", 1, 2);
  }

  /** A thrown value that is not an Error. */
  throwString(): never {
    throw "plain string thrown";
  }

  _private(): string {
    return `private ${this.env.SECRET}`;
  }
}

/**
 * Counter under another binding (MY_COUNTER), to tell routes apart; it also runs the calls of one
 * connection one after another (`ordering: "sequential"`) instead of concurrently (the default).
 */
export class MyCounter extends Counter {
  static override rpcOptions = { exposeErrorStack: true, ordering: "sequential" } satisfies RpcServerOptions;
}

/** A plain Durable Object that knows nothing of dorpc; `Wrapped` adds RPC to it. */
export class PlainBase extends DurableObject<Env> {
  override async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path.endsWith("/hello")) return new Response(`hello from PlainBase at ${path}`);
    return new Response(`PlainBase has no route for ${path}`, { status: 404 });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (message === "ping") ws.send("pong");
    else ws.send(`PlainBase got ${typeof message === "string" ? JSON.stringify(message) : `${message.byteLength} bytes`}`);
  }

  greet(name: string): string {
    return `hello, ${name}`;
  }

  bump(): number {
    const value = (this.ctx.storage.kv.get<number>("n") ?? 0) + 1;
    this.ctx.storage.kv.put("n", value);
    return value;
  }

  fail(): never {
    throw new RangeError("wrapped failure");
  }
}

export const Wrapped = withRpc(PlainBase, { exposeErrorStack: true });

const manualOptions: RpcServerOptions = { exposeErrorStack: true };

/** Composes dorpc by hand and keeps its own handling for everything else. */
export class Manual extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    watchRpcStorage(this, manualOptions); // a wipe before the first dorpc message is noted too
  }

  override async fetch(request: Request): Promise<Response> {
    const rpc = await handleRpcRequest(request, this, manualOptions);
    if (rpc) return rpc;
    return new Response(`Manual fetch: ${new URL(request.url).pathname}`);
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (await handleRpcMessage(ws, message, this, manualOptions)) return;
    if (message === "ping") ws.send("manual-pong");
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  greet(name: string): string {
    return `manual hello, ${name}`;
  }

  bump(): number {
    const value = (this.ctx.storage.kv.get<number>("n") ?? 0) + 1;
    this.ctx.storage.kv.put("n", value);
    return value;
  }

  fail(): never {
    throw new RangeError("manual failure");
  }
}

/** Counter served with `hibernation: false`: sockets are accept()ed, not hibernatable. */
export class LiveCounter extends Counter {
  static override rpcOptions = { exposeErrorStack: true, hibernation: false } satisfies RpcServerOptions;

  /** How many sockets the hibernation API holds for this object (0 for accepted sockets). */
  hibernatableSockets(): number {
    return this.ctx.getWebSockets().length;
  }
}

/**
 * Counter whose delivery record keeps the rows of calls that wrote nothing for a minute unless a
 * storage write comes first (record-cost.test.ts): the timer cannot write them during a test.
 */
export class PatientCounter extends Counter {
  static override rpcOptions = { exposeErrorStack: true, exactlyOnce: { flushAfter: 60_000 } } satisfies RpcServerOptions;

  /** `kv.put` taken out of `ctx.storage` while the object is built (after `super()`). */
  private readonly boundPut = this.ctx.storage.kv.put.bind(this.ctx.storage.kv);

  /** Writes through the method taken out at construction. */
  putBound(key: string, value: number): void {
    this.boundPut(key, value);
  }
}

/** On the key-value storage backend (no SQL), configured as the docs say: no delivery record. */
export class KvCounter extends RpcDurableObject<Env> {
  static rpcOptions: RpcServerOptions = { exactlyOnce: false };

  async increment(by = 1): Promise<number> {
    const value = ((await this.ctx.storage.get<number>("count")) ?? 0) + by;
    await this.ctx.storage.put("count", value);
    return value;
  }

  /** A route of its own, besides RPC. */
  override async fetch(request: Request): Promise<Response> {
    if (new URL(request.url).pathname === "/plain") return new Response("plain");
    return super.fetch(request);
  }
}

/** On the key-value backend with dorpc's defaults (the delivery record on): what a user meets who missed the docs. */
export class KvDefaults extends KvCounter {
  static override rpcOptions: RpcServerOptions = {};
}
