// docs/getting-started.md "A chat room": src/api.ts verbatim, the Room (abridged, completed) and the page.
import type { WithTopics } from "@dorpc/rpc";
import { createRpcClient, rpcConnection, subscribe } from "@dorpc/rpc";
import { RpcDurableObject, rpcCaller, type RpcServerOptions } from "@dorpc/rpc/server";
import type { Env } from "./guide-worker.types.js";

export interface ChatMessage {
  from: string;
  text: string;
  at: Date;
}
export interface StoredMessage extends ChatMessage {
  seq: number;
}
export interface RoomTopics {
  messages: ChatMessage;
}

/** `WithTopics` carries the topics' types to `subscribe` (the class has them from its base). */
export interface RoomApi extends WithTopics<RoomTopics> {
  say(text: string): number;
  history(limit?: number): { messages: StoredMessage[]; latest: number };
  hello(): void;
}

/** What each page exposes: the room calls it on every connected page at once. */
export interface ChatClient {
  online(names: string[]): void;
}

export class Room extends RpcDurableObject<Env, ChatClient, RoomTopics> implements RoomApi {
  static rpcOptions: RpcServerOptions = {
    identify: (request) => new URL(request.url).searchParams.get("name")?.trim().slice(0, 32) || "guest",
    topics: { messages: { keep: 500 } },
  };
  private readonly sql = this.ctx.storage.sql;

  say(text: string): number {
    const from = String(rpcCaller()?.identity);
    const at = new Date();
    const seq = this.publish("messages", { from, text, at }); // stored, then pushed to subscribers
    this.sql.exec("INSERT INTO messages (seq, sender, text, at) VALUES (?, ?, ?, ?)", seq, from, text, at.getTime());
    return seq;
  }

  hello(): void {
    this.clients().online(this.names()); // a broadcast: every connected page, nothing stored
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    await super.webSocketClose(ws, code, reason); // keep dorpc's own close handling
    this.clients().online(this.names());
  }
  history(_limit?: number): { messages: StoredMessage[]; latest: number } {
    return { messages: [], latest: 0 };
  }
  private names(): string[] {
    return [];
  }
}

// The page, with `name` and `online` declared.
declare const name: string;
declare const online: { textContent: string | null };
const room = createRpcClient<RoomApi>("ROOM", "lobby", {
  query: { name },
  expose: { online: (names) => void (online.textContent = names.join(", ")) } satisfies ChatClient,
});
rpcConnection(room).onStateChange((state) => {
  if (state === "open") room.hello().catch(() => undefined); // after every (re)connection
});

let shown = 0; // sequence number of the last message shown
// biome-ignore lint/correctness/noUnusedFunctionParameters: the guide's function, whose body it leaves out
function show(message: ChatMessage, seq: number) {
  if (seq <= shown) return;
  shown = seq;
  // … append it to the log
}
async function loadHistory(): Promise<number> {
  const { messages, latest } = await room.history(50);
  shown = 0; // … and clear the log
  for (const message of messages) show(message, message.seq);
  return latest;
}

subscribe(room, "messages", (message, info) => show(message, info.seq), {
  since: await loadHistory(),
  onResync: () => void loadHistory(), // away longer than the room keeps: start over from history
});

// api.md: a browser-project interface with the raw member instead of WithTopics
interface Move {
  player: string;
}
interface TableApi {
  readonly __dorpcTopics?: { moves: Move };
  sit(): number;
}
declare const table: import("@dorpc/rpc").RpcClient<TableApi>;
subscribe(table, "moves", (move) => void move.player);
// @ts-expect-error: undeclared topic
subscribe(table, "nope", () => undefined);
