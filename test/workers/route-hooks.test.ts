/**
 * routeDORequest's hooks in workerd, where requests and stub responses are the runtime's own
 * (routing.test.ts covers the hooks through the test Worker, without `cors`). With `cors` set, an
 * upgrade a hook rebuilt still gets the object's 101 and its WebSocket, a hook's own 101 passes
 * untouched, and the object's 426 (immutable stub headers) gets the CORS headers. A hook that
 * reads the body it would forward is refused with a RoutingError BAD_HOOK_RESULT saying what to
 * do instead; it was workerd's TypeError "Cannot reconstruct a Request with a used body.".
 */
import { type RouteOptions, routeDORequest, withIdentity } from "@dorpc/routing";
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";

const APP = "https://app.example";
const CORS = { cors: { origins: [APP] } } satisfies RouteOptions;

function upgrade(name: string): Request {
  return new Request(`http://x/__rpc/COUNTER/${name}`, { headers: { Upgrade: "websocket", Origin: APP } });
}

/** A JSON-form HTTP batch calling `increment(1)` on COUNTER/`name`. */
function batch(name: string): Request {
  return new Request(`http://x/__rpc/COUNTER/${name}`, {
    method: "POST",
    body: JSON.stringify({ method: "increment", args: [1] }),
    headers: { "Content-Type": "application/json", Origin: APP },
  });
}

function count(name: string): Promise<unknown> {
  return runInDurableObject(env.COUNTER.getByName(name), (_instance, state) => state.storage.kv.get("count"));
}

describe("upgrades with cors set", () => {
  const rebuilt: [string, (request: Request) => Request][] = [
    ["a new Request built from the URL and headers", (request) => new Request(request.url, { headers: request.headers })],
    ["withIdentity(request, …)", (request) => withIdentity(request, { user: "u" })],
  ];

  it.each(rebuilt)("an upgrade onBeforeConnect replaced by %s gets the object's 101 with its WebSocket", async (_label, rebuild) => {
    const response = await routeDORequest(upgrade(uniqueName("hook-rebuilt")), env, { ...CORS, onBeforeConnect: rebuild });
    expect(response?.status).toBe(101);
    const socket = response!.webSocket!;
    expect(socket).toBeTruthy();
    socket.accept();
    socket.close(1000);
  });

  it("a 101 the hook made itself is returned untouched, with its WebSocket", async () => {
    let made: Response | undefined;
    const response = await routeDORequest(upgrade(uniqueName("hook-own-101")), env, {
      ...CORS,
      onBeforeConnect: () => {
        const pair = new WebSocketPair();
        pair[1].accept();
        made = new Response(null, { status: 101, webSocket: pair[0] });
        return made;
      },
    });
    expect(response).toBe(made);
    expect(response?.webSocket).toBeTruthy();
  });

  it("the object's 426 for a plain GET (a stub response, immutable headers) gets the CORS headers and keeps its body", async () => {
    const name = uniqueName("hook-426");
    const response = await routeDORequest(new Request(`http://x/__rpc/COUNTER/${name}`, { headers: { Origin: APP } }), env, CORS);
    expect(response?.status).toBe(426);
    expect(response?.headers.get("Access-Control-Allow-Origin")).toBe(APP);
    expect(response?.headers.get("Vary")).toBe("Origin");
    expect(response?.headers.get("Upgrade")).toBe("websocket");
    expect(await response?.text()).toContain("dorpc endpoint");
  });
});

describe("a hook that reads the request body", () => {
  it("onBeforeConnect reading an HTTP batch's body and returning nothing: BAD_HOOK_RESULT naming the hook and the fix; nothing runs", async () => {
    const name = uniqueName("hook-body");
    const outcome = routeDORequest(batch(name), env, {
      onBeforeConnect: async (request) => {
        await request.text();
      },
    });
    await expect(outcome).rejects.toMatchObject({
      name: "RoutingError",
      code: "BAD_HOOK_RESULT",
      message: expect.stringMatching(/^onBeforeConnect read the request body.*request\.clone\(\).*new Request\(request, \{ body \}\)/),
    });
    expect(await count(name)).toBeUndefined();
  });

  it("onBeforeRequest reading a body it would forward: BAD_HOOK_RESULT naming onBeforeRequest", async () => {
    const upload = new Request(`http://x/__rpc/COUNTER/${uniqueName("hook-upload")}/upload`, { method: "POST", body: "file" });
    const outcome = routeDORequest(upload, env, {
      onBeforeRequest: async (request) => {
        await request.arrayBuffer();
      },
    });
    await expect(outcome).rejects.toMatchObject({
      code: "BAD_HOOK_RESULT",
      message: expect.stringMatching(/^onBeforeRequest read the request body/),
    });
  });

  it("reading a clone, or returning a new Request with the body read, forwards the batch, which runs", async () => {
    const hooks: NonNullable<RouteOptions["onBeforeConnect"]>[] = [
      async (request) => {
        expect(await request.clone().json()).toEqual({ method: "increment", args: [1] });
      },
      async (request) => {
        const body = await request.text();
        return new Request(request, { body });
      },
    ];
    const name = uniqueName("hook-body-ok");
    for (const [index, onBeforeConnect] of hooks.entries()) {
      const response = await routeDORequest(batch(name), env, { onBeforeConnect });
      expect(response?.status).toBe(200);
      expect(await response?.json()).toEqual({ result: index + 1 });
    }
    expect(await count(name)).toBe(2);
  });
});
