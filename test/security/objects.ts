/**
 * The Durable Objects under attack. `Victim` holds everything a hostile chain might want to
 * reach: storage (a counter in ctx.storage.kv), env (SECRET), a `_private` method that would
 * wipe storage, getters handing out `this.ctx.storage` and `this.env`, an RpcTarget-returning
 * getter, an instance field, an arrow-function field, and a method that records every call (so
 * a test can prove a refused frame ran nothing).
 *
 * The other classes are Victim with one option changed (each its own class: two bindings to
 * one class would be one namespace).
 */
import { readIdentityHeader, rpcCaller, RpcDurableObject, RpcTarget, type RpcServerOptions } from "@dorpc/rpc/server";

/** Reachable through `victim.tools`: an RpcTarget with one harmless method. */
export class Tools extends RpcTarget {
  peek(): string {
    return "peek";
  }
}

export class Victim extends RpcDurableObject<Env> {
  /** Instance field: never reachable (access rule 2). */
  secretField = "instance-field-value";
  /** Arrow-function field: never reachable (it is an instance field too). */
  arrowField = (): string => "arrow-field-ran";
  /** In-memory count of `record` calls (also persisted as kv "recorded"). */
  recorded = 0;
  private gate: Promise<void> | undefined;
  private open = false;
  private releaseGate: (() => void) | undefined;

  getValue(): number {
    return this.ctx.storage.kv.get<number>("count") ?? 0;
  }

  increment(by = 1): number {
    const next = this.getValue() + by;
    this.ctx.storage.kv.put("count", next);
    return next;
  }

  /** Records that it ran: memory and storage. A hostile frame must never reach it. */
  record(..._args: unknown[]): number {
    this.recorded++;
    this.ctx.storage.kv.put("recorded", this.recorded);
    return this.recorded;
  }

  /** Returns its argument: lets a test see what the decoder built. */
  echo(value: unknown): unknown {
    return value;
  }

  /** What the argument is, without running anything on it. */
  kindOf(value: unknown): string {
    return Object.prototype.toString.call(value);
  }

  /** Async: keeps its id in the running set for a moment. */
  async slow(): Promise<number> {
    await scheduler.wait(20);
    return this.getValue();
  }

  /** Waits until `release()` (from another connection or runInDurableObject). */
  park(): Promise<void> | void {
    if (this.open) return;
    this.gate ??= new Promise<void>((resolve) => (this.releaseGate = resolve));
    return this.gate;
  }

  release(): void {
    this.open = true;
    this.releaseGate?.();
  }

  /** Who is calling, as `options.identify` stored it; null when anonymous. */
  whoami(): unknown {
    return rpcCaller()?.identity ?? null;
  }

  // Lifecycle methods defined on the user's own class (calling super, as the base class asks):
  // they sit on a prototype rule 2 walks, so only access rule 1's name list keeps them out of
  // reach. alarm() writes storage so a breach would show in the snapshot.
  override async fetch(request: Request): Promise<Response> {
    return super.fetch(request);
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    return super.webSocketMessage(ws, message);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    return super.webSocketClose(ws, code, reason);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    return super.webSocketError(ws);
  }

  override async alarm(): Promise<void> {
    this.ctx.storage.kv.put("alarmed", true);
  }

  /** Must never be reachable: it would wipe storage. */
  _private(): void {
    this.ctx.storage.deleteAll();
  }

  /** A getter handing out storage: reachable, but nothing can be read or called on it. */
  get storage(): DurableObjectStorage {
    return this.ctx.storage;
  }

  /** A getter handing out env (a user mistake): see the test for what a chain can do with it. */
  get environment(): Env {
    return this.env;
  }

  get tools(): Tools {
    return new Tools();
  }
}

const options = <T extends RpcServerOptions>(o: T): T => o;

export class Tight extends Victim {
  static rpcOptions = options({ limits: { maxMessageBytes: 64 * 1024 } });
}

export class AllowList extends Victim {
  /** `_private` and `ctx` are listed on purpose: `allow` narrows, it never widens. */
  static rpcOptions = options({ access: { allow: ["getValue", "echo", "_private", "ctx", "tools"] } });
}

export class AllowFn extends Victim {
  /** Only one-step chains, and never `record`. */
  static rpcOptions = options({ access: { allow: (path: readonly string[]) => path.length === 1 && path[0] !== "record" } });
}

export class Trusted extends Victim {
  static rpcOptions = options({ access: { unsafeTrustedCaller: true } });
}

export class Ident extends Victim {
  static rpcOptions = options({ identify: readIdentityHeader });
}
