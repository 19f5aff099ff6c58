import { type RpcAttachment, RpcDurableObject, type RpcServerOptions, rpcCaller } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";
import type { ChatClient, RoomApi, RoomTopics, StoredMessage } from "./api.js";

interface Env {
  ROOM: DurableObjectNamespace<Room>;
}

/**
 * One chat room. Two ways of reaching the pages, each where it fits:
 *  - messages are published on the `messages` topic: stored with a sequence number, pushed to
 *    every subscribed page, and replayed to a page that was away, from where it left off;
 *  - who is online is broadcast (`this.clients().online(names)`): only the pages connected now
 *    need it, so nothing is stored.
 */
export class Room extends RpcDurableObject<Env, ChatClient, RoomTopics> implements RoomApi {
  static rpcOptions: RpcServerOptions = {
    // The page passes its name in the connect URL (`query: { name }`); it is kept with the
    // socket, so it survives hibernation. A real app would authenticate here instead.
    identify: (request) => new URL(request.url).searchParams.get("name")?.trim().slice(0, 32) || "guest",
    // A page away for longer than 500 messages is told to resync and reloads the history.
    topics: { messages: { keep: 500 } },
  };

  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, sender TEXT NOT NULL, text TEXT NOT NULL, at INTEGER NOT NULL)",
    );
  }

  say(text: string): number {
    if (typeof text !== "string" || text.trim() === "" || text.length > 2_000) {
      throw new RangeError("A message is 1 to 2,000 characters of text.");
    }
    const from = String(rpcCaller()?.identity);
    const at = new Date();
    // Published and stored in the same synchronous turn: history and topic never disagree.
    const seq = this.publish("messages", { from, text, at });
    this.sql.exec("INSERT INTO messages (seq, sender, text, at) VALUES (?, ?, ?, ?)", seq, from, text, at.getTime());
    return seq;
  }

  history(limit = 50): { messages: StoredMessage[]; latest: number } {
    const rows = this.sql
      .exec<{ seq: number; sender: string; text: string; at: number }>(
        "SELECT seq, sender, text, at FROM messages ORDER BY seq DESC LIMIT ?",
        Math.min(Math.max(1, limit), 500),
      )
      .toArray()
      .reverse();
    return {
      messages: rows.map((row) => ({ seq: row.seq, from: row.sender, text: row.text, at: new Date(row.at) })),
      latest: rows.at(-1)?.seq ?? 0,
    };
  }

  hello(): void {
    this.clients().online(this.names()); // a broadcast: every connected page, nothing stored
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    await super.webSocketClose(ws, code, reason); // keep dorpc's own close handling
    this.clients().online(this.names());
  }

  /** The names of everyone connected, sorted, each once. */
  private names(): string[] {
    const names = this.ctx
      .getWebSockets()
      .filter((ws) => ws.readyState === WebSocket.OPEN)
      .map((ws) => String((ws.deserializeAttachment() as RpcAttachment | null)?.identity));
    return [...new Set(names)].sort();
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    // The page and its socket share an origin, so only that origin may open WebSockets.
    const routed = await routeDORequest(request, env, { allowedOrigins: (origin) => origin === new URL(request.url).origin });
    return routed ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
