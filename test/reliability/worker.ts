/**
 * The reliability test Worker: routes /__rpc/{binding}/{instance} to `Reliable`, a Durable
 * Object built on RpcDurableObject whose methods let tests inject faults from inside the object
 * (abort, close sockets, slow calls, a constructor that throws) and observe what ran (counters in
 * storage, a call log, webSocketMessage invocations).
 *
 * Served twice: by the "reliability" Vitest project in workerd, and by `wrangler dev` in
 * test/e2e/reliability.test.ts (the load ledger).
 */
import { routeDORequest } from "@dorpc/routing";
import { RpcDurableObject, rpcCaller, type RpcServerOptions } from "@dorpc/rpc/server";

interface Env {
  RELIABLE: DurableObjectNamespace<Reliable>;
}

/**
 * Instance names whose constructor throws (the "broken deploy" fault). A module-level set: in
 * the Vitest pool the object runs in the test's isolate, so tests toggle it directly; over
 * `wrangler dev` it stays empty.
 */
export const brokenConstructors = new Set<string>();

export class Reliable extends RpcDurableObject<Env> {
  static rpcOptions: RpcServerOptions = {
    // Sequential: the ordering tests (and the restart test's "queued behind" call) rely on it.
    ordering: "sequential",
    // `?who=` on the connect URL becomes the connection's identity (kept in the attachment).
    identify: (request) => new URL(request.url).searchParams.get("who") ?? undefined,
  };

  private readonly kv: SyncKvStorage;
  private readonly sql: SqlStorage;
  /** This instance's own (memory-only) id, to tell a re-created instance from the old one. */
  readonly instanceId = crypto.randomUUID();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.kv = ctx.storage.kv;
    this.sql = ctx.storage.sql;
    this.kv.put("constructions", (this.kv.get<number>("constructions") ?? 0) + 1);
    const name = ctx.id.name;
    if (name !== undefined && brokenConstructors.has(name)) {
      throw new Error(`Reliable constructor failed on purpose for ${name}`);
    }
    this.sql.exec("CREATE TABLE IF NOT EXISTS ops (id TEXT PRIMARY KEY)");
  }

  // ---- counters ----------------------------------------------------------------------------

  /** Plain, not idempotent: every run adds `by`. */
  increment(by = 1): number {
    const value = (this.kv.get<number>("value") ?? 0) + by;
    this.kv.put("value", value);
    return value;
  }

  getValue(): number {
    return this.kv.get<number>("value") ?? 0;
  }

  /**
   * Idempotent increment: applies `opId` at most once, however often it is delivered (a retry
   * after a lost reply, an `idempotent` re-send after reconnecting). Returns the count of
   * distinct ops applied. Runs synchronously, so the check and the write are one atomic step.
   */
  incrementOnce(opId: string): number {
    this.kv.put("runs", (this.kv.get<number>("runs") ?? 0) + 1);
    let applied = this.kv.get<number>("applied") ?? 0;
    if (this.sql.exec("SELECT 1 FROM ops WHERE id = ?", opId).toArray().length === 0) {
      this.sql.exec("INSERT INTO ops (id) VALUES (?)", opId);
      applied++;
      this.kv.put("applied", applied);
    }
    return applied;
  }

  /** What the ledger checks: distinct ops applied, runs of incrementOnce, and the op ids. */
  ledger(): { applied: number; runs: number; ops: string[] } {
    const ops = this.sql
      .exec<{ id: string }>("SELECT id FROM ops")
      .toArray()
      .map((row) => row.id);
    return { applied: this.kv.get<number>("applied") ?? 0, runs: this.kv.get<number>("runs") ?? 0, ops };
  }

  // ---- lifecycle observations ----------------------------------------------------------------

  constructions(): number {
    return this.kv.get<number>("constructions") ?? 0;
  }

  whoami(): string {
    return this.instanceId;
  }

  /** The caller's attachment as rpcCaller() reads it (survives hibernation). */
  callerInfo(): { identity: unknown; connectedAt: number } | undefined {
    const caller = rpcCaller();
    return caller && { identity: caller.identity, connectedAt: caller.connectedAt };
  }

  socketCount(): number {
    return this.ctx.getWebSockets().length;
  }

  /** How many times webSocketMessage ran on this object (stored: survives eviction). */
  messageCount(): number {
    return this.kv.get<number>("messages") ?? 0;
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    this.kv.put("messages", (this.kv.get<number>("messages") ?? 0) + 1);
    return super.webSocketMessage(ws, message);
  }

  // ---- ordering ------------------------------------------------------------------------------

  private append(tag: string): string[] {
    const log = [...(this.kv.get<string[]>("log") ?? []), tag];
    this.kv.put("log", log);
    return log;
  }

  /** Appends `tag` to the log at once. */
  log(tag: string): number {
    return this.append(tag).length;
  }

  /** Waits `ms` (a timer), then appends `tag`. */
  async logAfter(tag: string, ms: number): Promise<number> {
    await scheduler.wait(ms);
    return this.append(tag).length;
  }

  /** Awaits an asynchronous storage operation, then appends `tag`. */
  async logAfterStorage(tag: string): Promise<number> {
    await this.ctx.storage.put(`touched-${tag}`, Date.now());
    await this.ctx.storage.get(`touched-${tag}`);
    return this.append(tag).length;
  }

  getLog(): string[] {
    return this.kv.get<string[]>("log") ?? [];
  }

  // ---- faults --------------------------------------------------------------------------------

  /** Replies after `ms`: a call that is in flight for a while. */
  async sleep(ms: number): Promise<string> {
    await scheduler.wait(ms);
    return "slept";
  }

  /** Resets the object mid-call: ctx.abort() ends it and closes its sockets. */
  abortMe(): never {
    this.ctx.abort("reliability test: abortMe");
    throw new Error("unreachable: ctx.abort() did not throw");
  }

  /**
   * Increments, then closes the caller's socket before the answer can leave: the call ran and
   * wrote, and its answer is lost with the connection (the case exactly-once exists for).
   */
  incrementThenDrop(by = 1): number {
    const value = this.increment(by);
    rpcCaller()?.socket?.close(1011, "reliability test: answer lost");
    return value;
  }

  /** Sleeps `ms`, counting its runs under `tag` in storage (a second run would show). */
  async countedSleep(tag: string, ms: number): Promise<number> {
    const runs = (this.kv.get<number>(`runs:${tag}`) ?? 0) + 1;
    this.kv.put(`runs:${tag}`, runs);
    await scheduler.wait(ms);
    return runs;
  }

  /**
   * Deletes all of the object's storage (`ctx.storage.deleteAll()`, the delivery record's tables
   * with it), then makes the table the constructor makes.
   */
  async wipe(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.sql.exec("CREATE TABLE IF NOT EXISTS ops (id TEXT PRIMARY KEY)");
  }

  runsOf(tag: string): number {
    return this.kv.get<number>(`runs:${tag}`) ?? 0;
  }

  /** Closes the caller's own socket with 1011 (the call gets no reply). */
  dropMe(): void {
    rpcCaller()?.socket?.close(1011, "reliability test: dropMe");
  }

  /** Chaos: closes up to `count` sockets other than the caller's, with 1011. Returns how many. */
  dropOthers(count: number): number {
    const mine = rpcCaller()?.socket;
    const others = this.ctx.getWebSockets().filter((ws) => ws !== mine && ws.readyState === 1);
    let closed = 0;
    while (closed < count && others.length > 0) {
      const [ws] = others.splice(Math.floor(Math.random() * others.length), 1);
      try {
        ws!.close(1011, "reliability test: chaos");
        closed++;
      } catch {
        // already closing
      }
    }
    return closed;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeDORequest(request, env)) ?? new Response("reliability test worker", { status: 200 });
  },
} satisfies ExportedHandler<Env>;
