/** The demo / bench Worker: routes /__rpc/{binding}/{instance} to the Durable Objects. */
import { routeDORequest } from "@dorpc/routing";

export { Counter } from "./counter.js";

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeDORequest(request, env, { prefix: "/__rpc" })) ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
