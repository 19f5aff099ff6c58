/**
 * The test Worker: routes /__rpc/{binding}/{instance} to the Durable Objects in objects.ts.
 *
 * Hooks, driven by the query string so tests can choose:
 *  - onBeforeConnect (WebSocket upgrades): `?block=1` → 403; `?replace=1` → forwards a copy of
 *    the request with `x-test-replaced: yes`, which Counter records in storage.
 *  - onBeforeRequest (everything else): `?block=1` → 401; `?replace=1` → same header.
 * Block responses name the binding and instance the router resolved, so tests can check them.
 */
import { routeDORequest, type RouteOptions } from "@dorpc/routing";
import { REPLACED_HEADER } from "./objects.js";

export { Counter, KvCounter, KvDefaults, LiveCounter, Manual, MyCounter, PatientCounter, Wrapped } from "./objects.js";
export { Composer } from "./compose-objects.js";
export { Room } from "./push-objects.js";
export { StrictVault, Unchecked, Vault } from "./schema-objects.js";
export { Directory } from "./guide/directory.js";
export { Ledger } from "./guide/ledger.js";
export { Table } from "./guide/table.js";
export {
  ErrorHandlingWrapped,
  HandComposed,
  HandUndeclared,
  LiveWrapped,
  NoErrorHandlerWrapped,
  OwnSocketsWrapped,
  SubclassOfWrapped,
  SubclassWithStatic,
} from "./compose-own-objects.js";
export { ClientWorker } from "./worker-clients.js";
export { HttpE2e, HttpWorker } from "./http-objects.js";

function withHeader(request: Request): Request {
  const headers = new Headers(request.headers);
  headers.set(REPLACED_HEADER, "yes");
  return new Request(request, { headers });
}

const routeOptions: RouteOptions<Env> = {
  prefix: "/__rpc",
  onBeforeConnect(request, ctx) {
    const query = new URL(request.url).searchParams;
    if (query.get("block") === "1") {
      return new Response(`connect blocked for ${ctx.binding}/${ctx.instance}`, { status: 403 });
    }
    if (query.get("replace") === "1") return withHeader(request);
    return undefined;
  },
  onBeforeRequest(request, ctx) {
    const query = new URL(request.url).searchParams;
    if (query.get("block") === "1") {
      return new Response(`request blocked for ${ctx.binding}/${ctx.instance}`, { status: 401 });
    }
    if (query.get("replace") === "1") return withHeader(request);
    return undefined;
  },
};

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeDORequest(request, env, routeOptions)) ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
