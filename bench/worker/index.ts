/**
 * The demo / bench Worker.
 *
 *  - /__rpc/{binding}/{instance}: dorpc, routed by routeDORequest (the README's quick start).
 *  - /direct/COUNTER/{instance}: the same Counter Durable Object reached by a hand-written route
 *    (the bench's routing scenario compares the two).
 *  - /capnweb/{instance}: the Cap'n Web contender (CapnwebCounter).
 *  - /floor/{instance}: the raw-WebSocket floor contender (FloorCounter, hibernatable socket).
 *  - /floor-accept/{instance}: the same floor over a non-hibernatable socket (FloorAcceptCounter).
 *  - /agents/agents-counter/{instance}: the Agents SDK contender (AgentsCounter), routed by
 *    `routeAgentRequest` as the Agents docs do it.
 *
 * All of them serve the same CounterImpl (counter-impl.ts), each class on its own instances.
 */
import { routeDORequest } from "@dorpc/routing";
import { routeAgentRequest } from "agents";

export { AgentsCounter } from "./agents-counter.js";
export { Counter, CounterAtMostOnce, CounterLive, CounterSequential } from "./counter.js";
export { CounterSchema } from "./counter-schema.js";
export { CapnwebCounter } from "./capnweb-counter.js";
export { FloorAcceptCounter, FloorCounter } from "./floor-counter.js";

/** The instance name after `prefix`, or undefined when the path is not `prefix` + one segment. */
function instanceAfter(path: string, prefix: string): string | undefined {
  if (!path.startsWith(prefix)) return undefined;
  const rest = path.slice(prefix.length);
  if (rest === "" || rest.includes("/")) return undefined;
  try {
    return decodeURIComponent(rest);
  } catch {
    return undefined;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname;
    let name: string | undefined;
    if ((name = instanceAfter(path, "/capnweb/")) !== undefined) {
      return env.CAPNWEB_COUNTER.getByName(name).fetch(request);
    }
    if ((name = instanceAfter(path, "/floor/")) !== undefined) {
      return env.FLOOR_COUNTER.getByName(name).fetch(request);
    }
    if ((name = instanceAfter(path, "/floor-accept/")) !== undefined) {
      return env.FLOOR_ACCEPT_COUNTER.getByName(name).fetch(request);
    }
    if (path.startsWith("/agents/")) {
      return (await routeAgentRequest(request, env)) ?? new Response("Not found", { status: 404 });
    }
    if ((name = instanceAfter(path, "/direct/COUNTER/")) !== undefined) {
      // The Durable Object's handleRpcRequest answers only /__rpc/{binding}/{instance}.
      url.pathname = `/__rpc/COUNTER/${encodeURIComponent(name)}`;
      return env.COUNTER.getByName(name).fetch(new Request(url, request));
    }
    return (await routeDORequest(request, env, { prefix: "/__rpc" })) ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
