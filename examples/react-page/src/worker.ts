import { RpcDurableObject } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";
import type { RoomApi } from "./api.js";

interface Env {
  ROOM: DurableObjectNamespace<Room>;
}

const OPTIONS = new Set(["tabs", "spaces"]);

export class Room extends RpcDurableObject<Env> implements RoomApi {
  vote(option: string): Record<string, number> {
    if (!OPTIONS.has(option)) throw new RangeError(`unknown option ${JSON.stringify(option)}`);
    const tally = this.tally();
    tally[option] = (tally[option] ?? 0) + 1;
    this.ctx.storage.kv.put("tally", tally);
    return tally;
  }

  tally(): Record<string, number> {
    return this.ctx.storage.kv.get<Record<string, number>>("tally") ?? { tabs: 0, spaces: 0 };
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const routed = await routeDORequest(request, env, { allowedOrigins: (origin) => origin === new URL(request.url).origin });
    return routed ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
