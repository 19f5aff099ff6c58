/**
 * The chat test Worker: one `ChatRoom` Durable Object per room. `say` publishes on the room's
 * `messages` topic, so every message gets the next sequence number and is stored with it; the
 * clients subscribe from sequence 0 and, after each reconnect, are sent what they missed.
 * `dropOthers` is the fault: the object itself closes random sockets of the room.
 */
import { RpcDurableObject, type RpcServerOptions, rpcCaller } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";
import type { ChatRoomApi, ChatTopics } from "./api.js";

interface Env {
  CHAT: DurableObjectNamespace<ChatRoom>;
}

export class ChatRoom extends RpcDurableObject<Env, unknown, ChatTopics> implements ChatRoomApi {
  static rpcOptions: RpcServerOptions = {
    identify: (request) => new URL(request.url).searchParams.get("who") ?? "anonymous",
    // Every message of a run stays replayable: a client cut off for a while must be sent what
    // it missed, never told to resync.
    topics: { messages: { keep: 10_000 } },
  };

  say(text: string): number {
    return this.publish("messages", { from: String(rpcCaller()?.identity), text });
  }

  ping(): void {}

  dropOthers(count: number): number {
    const mine = rpcCaller()?.socket;
    const others = this.ctx.getWebSockets().filter((ws) => ws !== mine && ws.readyState === WebSocket.OPEN);
    let closed = 0;
    while (closed < count && others.length > 0) {
      const [ws] = others.splice(Math.floor(Math.random() * others.length), 1);
      try {
        ws!.close(1011, "chat test: chaos");
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
    return (await routeDORequest(request, env)) ?? new Response("chat test worker", { status: 200 });
  },
} satisfies ExportedHandler<Env>;
