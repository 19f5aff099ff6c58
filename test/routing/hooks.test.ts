/**
 * routeDORequest's hooks at their edges (route.test.ts has the main cases): a hook that throws or
 * rejects fails the returned promise (never a synchronous throw) and forwards nothing; `null` is
 * not "nothing"; a hook's redirect, whose headers are immutable, still gets the CORS headers; and
 * methods other than an upgrade or a POST to the RPC path are ordinary requests even on that path
 * (onBeforeRequest runs, the origin is not checked).
 */
import { describe, expect, it } from "vitest";
import { type RouteOptions, routeDORequest } from "@dorpc/routing";

const APP = "https://app.example";

function fakeEnv() {
  const seen: Request[] = [];
  const stub = { fetch: async (request: Request) => (seen.push(request), new Response("ok")) };
  const ns = { idFromName: () => ({}), idFromString: () => ({}), get: () => stub, getByName: () => stub };
  return { seen, env: { COUNTER: ns } };
}

const req = (path: string, init?: RequestInit) => new Request(`https://worker.example${path}`, init);

describe("hook failures", () => {
  it("a hook that throws: routeDORequest returns a promise that rejects with the error, and nothing is forwarded", async () => {
    const { env, seen } = fakeEnv();
    const boom = new Error("auth backend down");
    let returned: Promise<unknown> | undefined;
    expect(() => {
      returned = routeDORequest(req("/__rpc/COUNTER/a"), env, {
        onBeforeRequest: () => {
          throw boom;
        },
      });
    }).not.toThrow();
    await expect(returned).rejects.toBe(boom);
    expect(seen).toHaveLength(0);
  });

  it("an async hook that rejects: the promise rejects with its error, and nothing is forwarded", async () => {
    const { env, seen } = fakeEnv();
    const boom = new Error("auth backend down");
    const options: RouteOptions = {
      onBeforeConnect: async () => {
        throw boom;
      },
    };
    await expect(routeDORequest(req("/__rpc/COUNTER/a", { headers: { Upgrade: "websocket" } }), env, options)).rejects.toBe(boom);
    expect(seen).toHaveLength(0);
  });

  it("a hook returning null rejects with BAD_HOOK_RESULT (only undefined means continue)", async () => {
    const { env, seen } = fakeEnv();
    const options = { onBeforeRequest: () => null } as unknown as RouteOptions;
    await expect(routeDORequest(req("/__rpc/COUNTER/a"), env, options)).rejects.toMatchObject({
      name: "RoutingError",
      code: "BAD_HOOK_RESULT",
      message: expect.stringContaining("onBeforeRequest returned null"),
    });
    expect(seen).toHaveLength(0);
  });
});

describe("a hook's redirect with cors set", () => {
  it("Response.redirect (immutable headers) is answered with its status and Location plus the CORS headers", async () => {
    const { env, seen } = fakeEnv();
    const response = await routeDORequest(req("/__rpc/COUNTER/a", { headers: { Origin: APP } }), env, {
      cors: { origins: [APP] },
      onBeforeRequest: () => Response.redirect("https://login.example/", 302),
    });
    expect(response?.status).toBe(302);
    expect(response?.headers.get("Location")).toBe("https://login.example/");
    expect(response?.headers.get("Access-Control-Allow-Origin")).toBe(APP);
    expect(response?.headers.get("Vary")).toBe("Origin");
    expect(seen).toHaveLength(0);
  });
});

describe("other methods to the RPC path itself", () => {
  it.each(["PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])(
    "%s is an ordinary request: onBeforeRequest runs, not onBeforeConnect, and allowedOrigins does not refuse it",
    async (method) => {
      const { env, seen } = fakeEnv();
      const hooks: string[] = [];
      const response = await routeDORequest(req("/__rpc/COUNTER/a", { method, headers: { Origin: "https://evil.example" } }), env, {
        allowedOrigins: [APP],
        onBeforeConnect: () => void hooks.push("connect"),
        onBeforeRequest: () => void hooks.push("request"),
      });
      expect(response?.status).toBe(200);
      expect(hooks).toEqual(["request"]);
      expect(seen.map((r) => r.method)).toEqual([method]);
    },
  );
});
