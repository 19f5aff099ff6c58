/**
 * @dorpc/routing attacked and misused: hooks see the canonical id a request is routed to, a
 * preflight reaches a hook only when the router does not answer it, and an odd hook Response
 * with `cors` set is a typed error or passes through.
 */
import { describe, expect, it } from "vitest";
import { routeDORequest, type RouteContext, type RouteOptions } from "@dorpc/routing";

const HEX = "0123456789abcdef".repeat(4);

function fakeNamespace() {
  const seen: Request[] = [];
  const addressed: string[] = [];
  const stub = (address: string) => ({
    fetch: async (request: Request) => {
      seen.push(request);
      return new Response(`ok ${address}`);
    },
  });
  const ns = {
    idFromName: (name: string) => ({ toString: () => `named(${name})` }),
    idFromString: (id: string) => ({ toString: () => id }),
    get: (id: { toString(): string }) => {
      addressed.push(`id:${id.toString()}`);
      return stub(id.toString());
    },
    getByName: (name: string) => {
      addressed.push(`name:${name}`);
      return stub(name);
    },
  };
  return { ns, seen, addressed };
}

const req = (path: string, init?: RequestInit) => new Request(`https://worker.example${path}`, init);

describe("hook context for 64-hex ids", () => {
  // The router reads a 64-hex instance case-insensitively and lowercases it before idFromString
  // ("one URL cannot mean two objects", route.ts), so /COUNTER/<hex> and /COUNTER/<HEX> reach the
  // SAME object. But ctx.instance handed to onBeforeConnect / onBeforeRequest is the raw decoded
  // segment, so the hook that gates access sees two different strings for one object. A hook that
  // refuses a given object by its id (`ctx.instance === adminRoomId`, ids being lowercase as
  // newUniqueId().toString() and ctx.id.toString() give them) is bypassed by upper-casing the id in
  // the URL; an allowlist wrongly refuses. ctx.instance is the canonical (lowercase) id the request
  // is routed to, so one object <=> one ctx.instance.
  it("gives the hook the canonical lowercase id for an upper-case 64-hex instance", async () => {
    const counter = fakeNamespace();
    const seenByHook: string[] = [];
    const options: RouteOptions = {
      onBeforeConnect: (_request, ctx: RouteContext) => {
        seenByHook.push(ctx.instance);
        // An operator protecting one object by its id:
        if (ctx.instance === HEX) return new Response("admin room: forbidden", { status: 403 });
        return undefined;
      },
    };
    const env = { COUNTER: counter.ns };
    // Without hooks, both spellings address the same object (id:<lowercase>).
    await routeDORequest(req(`/__rpc/COUNTER/${HEX}`), env);
    await routeDORequest(req(`/__rpc/COUNTER/${HEX.toUpperCase()}`), env);
    expect(counter.addressed).toEqual([`id:${HEX}`, `id:${HEX}`]);
    counter.addressed.length = 0;

    const lower = await routeDORequest(req(`/__rpc/COUNTER/${HEX}`, { headers: { Upgrade: "websocket" } }), env, options);
    expect(lower?.status).toBe(403);
    const upper = await routeDORequest(req(`/__rpc/COUNTER/${HEX.toUpperCase()}`, { headers: { Upgrade: "websocket" } }), env, options);
    // Same object, so the same decision: refused, and the hook saw the same instance.
    expect(seenByHook).toEqual([HEX, HEX]);
    expect(upper?.status).toBe(403);
    expect(counter.addressed).toEqual([]);
  });
});

describe("documented hook coverage", () => {
  // docs/api.md, RouteOptions: `onBeforeRequest` runs for every other request, except CORS
  // preflights when `cors` is set (the router answers those itself). Without `cors` the router does
  // not answer preflights, so a preflight is an ordinary request and reaches the hook.
  it("runs onBeforeRequest for a CORS preflight only when cors is unset", async () => {
    const counter = fakeNamespace();
    const hookRuns: string[] = [];
    const onBeforeRequest = (request: Request) => {
      hookRuns.push(request.method);
      return undefined;
    };
    const preflight = () =>
      req("/__rpc/COUNTER/a", {
        method: "OPTIONS",
        headers: {
          Origin: "https://app.example",
          "Access-Control-Request-Method": "POST",
          "Access-Control-Request-Headers": "content-type",
        },
      });
    const answered = await routeDORequest(
      preflight(),
      { COUNTER: counter.ns },
      { onBeforeRequest, cors: { origins: ["https://app.example"] } },
    );
    expect(answered?.status).toBe(204);
    expect(hookRuns).toEqual([]);
    await routeDORequest(preflight(), { COUNTER: counter.ns }, { onBeforeRequest });
    expect(hookRuns).toEqual(["OPTIONS"]);
  });
});

describe("hook returning an odd Response with cors set", () => {
  // A hook may return any Response "to answer instead". With `cors` set, withCors rebuilds it with
  // `new Response(body, response)`, which throws a raw RangeError for a network-error Response
  // (Response.error(), status 0), so routeDORequest rejects with an untyped RangeError that names
  // neither the hook nor the problem. a typed RoutingError BAD_HOOK_RESULT naming the hook (as for
  // other unusable hook results), or the Response passed through untouched as it is when `cors` is
  // unset.
  it("refuses Response.error() from a hook with a typed RoutingError, not a raw RangeError", async () => {
    const counter = fakeNamespace();
    const options: RouteOptions = {
      cors: { origins: ["https://app.example"] },
      onBeforeRequest: () => Response.error(),
    };
    const outcome = await routeDORequest(
      req("/__rpc/COUNTER/a", { headers: { Origin: "https://app.example" } }),
      { COUNTER: counter.ns },
      options,
    ).then(
      (response) => ({ response }),
      (error: unknown) => ({ error }),
    );
    if ("error" in outcome) {
      expect(outcome.error).toMatchObject({ name: "RoutingError", code: "BAD_HOOK_RESULT" });
    } else {
      expect(outcome.response?.type).toBe("error");
    }
  });
});
