/**
 * The security test Worker: routes /__rpc/{binding}/{instance} to objects.ts with
 *  - `allowedOrigins: ["https://good.example"]` (cross-site WebSocket hijacking protection),
 *  - an `onBeforeConnect` hook that authenticates `?token=`: a known token becomes an identity
 *    with `withIdentity`, an unknown one gets 401, no token connects anonymously.
 * `routeDORequest` strips any client-sent X-Dorpc-Identity before the hook runs.
 */
import { routeDORequest, withIdentity, type RouteOptions } from "@dorpc/routing";

export { AllowFn, AllowList, Ident, Tight, Trusted, Victim } from "./objects.js";
export { SessionVictim } from "./session-objects.js";

/** The test's stand-in for a session store. */
export const TOKENS: Readonly<Record<string, { user: string }>> = Object.freeze({
  "token-alice": { user: "alice" },
  "token-bob": { user: "bob" },
});

const routeOptions: RouteOptions<Env> = {
  allowedOrigins: ["https://good.example"],
  onBeforeConnect(request) {
    const token = new URL(request.url).searchParams.get("token");
    if (token === null) return undefined;
    const identity = Object.hasOwn(TOKENS, token) ? TOKENS[token] : undefined;
    if (!identity) return new Response("Unknown token.", { status: 401 });
    return withIdentity(request, identity);
  },
};

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeDORequest(request, env, routeOptions)) ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
