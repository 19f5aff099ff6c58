/**
 * `Room`: the Durable Object behind the workerd tests of the object calling its clients
 * (push.test.ts): broadcasts, calls to one client with a reply, pushes from alarm(), topics.
 */
import { RpcDurableObject, rpcCaller } from "@dorpc/rpc/server";

/** What a room's clients expose. */
export interface RoomClient {
  message(m: { from: string; text: string; at: Date }): void;
  confirm(question: string): boolean;
  slow(ms: number): Promise<string>;
}

/** The room's topics and their event types. */
export interface RoomTopics {
  chat: { from: string; text: string };
  ticks: number;
  /** Events older than a minute are dropped (topics-over-time.test.ts). */
  news: string;
}

export class Room extends RpcDurableObject<Env, RoomClient, RoomTopics> {
  static rpcOptions = {
    identify: (request: Request) => ({
      name: new URL(request.url).searchParams.get("name") ?? "anon",
      team: new URL(request.url).searchParams.get("team") ?? "none",
    }),
    callTimeout: 2_000,
    topics: { chat: { keep: 5 }, ticks: {}, news: { maxAge: 60_000 } },
  };

  /** Broadcast to everyone; returns how many it reached. */
  say(text: string): number {
    const me = rpcCaller()!;
    return this.clients().message({ from: (me.identity as { name: string }).name, text, at: new Date(0) });
  }
  sayToOthers(text: string): number {
    const me = rpcCaller()!;
    return this.clients({ except: me }).message({ from: (me.identity as { name: string }).name, text, at: new Date(0) });
  }
  sayToTeam(team: string, text: string): number {
    return this.clients({ where: (c) => (c.identity as { team: string }).team === team }).message({
      from: "system",
      text,
      at: new Date(0),
    });
  }
  /** Tries to broadcast a function: refused, a broadcast carries values only. */
  sayFunction(): number {
    return this.clients().message((() => "no") as never);
  }
  /** Asks the caller itself and returns its answer. */
  async askMe(question: string): Promise<boolean> {
    return this.client(rpcCaller()!).confirm(question);
  }
  /** Waits `ms`, then asks its caller (who may have left meanwhile). */
  async askLater(ms: number, question: string): Promise<boolean> {
    const me = rpcCaller()!;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.client(me).confirm(question);
  }
  async askSlow(ms: number): Promise<string> {
    return this.client(rpcCaller()!).slow(ms);
  }
  /** Asks every other connected client and collects the answers (or the errors' codes). */
  async askOthers(question: string): Promise<unknown[]> {
    const me = rpcCaller()!.socket;
    const others = this.ctx.getWebSockets().filter((ws) => ws !== me);
    return Promise.all(
      others.map((ws) =>
        this.client(ws)
          .confirm(question)
          .then(
            (a) => a,
            (e: { code?: string }) => e.code ?? String(e),
          ),
      ),
    );
  }
  /** Schedules an alarm that broadcasts `text`. */
  async pushLater(text: string): Promise<void> {
    await this.ctx.storage.put("alarmText", text);
    await this.ctx.storage.setAlarm(Date.now() + 10);
  }
  override async alarm(): Promise<void> {
    const text = (await this.ctx.storage.get<string>("alarmText")) ?? "tick";
    this.clients().message({ from: "alarm", text, at: new Date(0) });
    this.publish("ticks", 1);
  }
  postNews(text: string): number {
    return this.publish("news", text);
  }
  post(text: string): number {
    return this.publish("chat", { from: (rpcCaller()!.identity as { name: string }).name, text });
  }
  /** Deletes all of the room's storage (`ctx.storage.deleteAll()`): the topic log goes with it. */
  async wipe(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }
  /** Sends a raw frame to the caller: lets tests play a hostile object. */
  raw(frame: string): void {
    rpcCaller()!.socket!.send(frame);
  }
  /** A Blob result: its reply waits in the outbox while the bytes are read (push-order.test.ts). */
  blob(text: string): Blob {
    return new Blob([text]);
  }
  connected(): number {
    return this.ctx.getWebSockets().length;
  }
}
