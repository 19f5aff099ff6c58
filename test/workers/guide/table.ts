import { RpcDurableObject, rpcCaller, type RpcServerOptions } from "@dorpc/rpc/server";
import type { Env } from "./index";

/** What each client exposes to the table. */
export interface Player {
  seated(name: string, players: number): void;
  chooseMove(options: string[]): string;
}

/** The table's topics, with the type of their events. */
export interface TableTopics {
  moves: { player: string; move: string };
}

export class Table extends RpcDurableObject<Env, Player, TableTopics> {
  static rpcOptions: RpcServerOptions = {
    // For the example: a real app authenticates (see "Securing the endpoint").
    identify: (request) => new URL(request.url).searchParams.get("name") ?? "guest",
    callTimeout: 10_000,
    topics: { moves: { keep: 100 } },
  };

  sit(): number {
    const me = rpcCaller()!;
    // A broadcast to every other client: no answers; returns how many clients it was sent to.
    return this.clients({ except: me }).seated(String(me.identity), this.ctx.getWebSockets().length);
  }

  async play(): Promise<number> {
    const me = rpcCaller()!; // read it before the first await
    // One client, with its answer (TIMEOUT after callTimeout, DISCONNECTED if it leaves first).
    const move = await this.client(me).chooseMove(["rock", "paper", "scissors"]);
    // Stored with the topic's next sequence number, which it returns, and pushed to subscribers.
    return this.publish("moves", { player: String(me.identity), move });
  }
}
