/** The conformance test Worker: routes /__rpc/ECHO/{instance} to the Echo Durable Object. */
import { routeDORequest } from "@dorpc/routing";

export { Echo } from "./objects.js";

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeDORequest(request, env, { prefix: "/__rpc" })) ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
