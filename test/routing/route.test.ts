import { describe, it, expect } from "vitest";
import {
  routeDORequest,
  resolveBinding,
  isDurableObjectNamespace,
  RoutingError,
  DEFAULT_PREFIX,
  MAX_INSTANCE_LENGTH,
  type RouteContext,
  type RouteOptions,
} from "@dorpc/routing";

// ---------------------------------------------------------------------------------------------
// Fakes: a namespace records how it was addressed; its stubs record the requests they receive.
// ---------------------------------------------------------------------------------------------

const HEX_ID = "0123456789abcdef".repeat(4);
/** Ids starting with this are "from another namespace": the fake idFromString rejects them. */
const FOREIGN_PREFIX = "ffff";

interface FakeNamespace {
  readonly ns: Record<string, unknown>;
  /** "idFromName:x", "idFromString:x", "get:x", "getByName:x", in call order. */
  readonly calls: string[];
  /** Every request a stub of this namespace received. */
  readonly seen: Request[];
}

function fakeNamespace(label: string, options: { getByName?: boolean } = {}): FakeNamespace {
  const calls: string[] = [];
  const seen: Request[] = [];
  const stub = (address: string) => ({
    fetch: async (request: Request) => {
      seen.push(request);
      return new Response(`${label} ${address}`, { headers: { "X-Stub": label } });
    },
  });
  const ns: Record<string, unknown> = {
    idFromName(name: string) {
      calls.push(`idFromName:${name}`);
      return { toString: () => `named(${name})` };
    },
    idFromString(id: string) {
      calls.push(`idFromString:${id}`);
      if (id.startsWith(FOREIGN_PREFIX)) throw new TypeError("Invalid Durable Object ID");
      return { toString: () => id };
    },
    get(id: { toString(): string }) {
      calls.push(`get:${id.toString()}`);
      return stub(`id=${id.toString()}`);
    },
  };
  if (options.getByName !== false) {
    ns.getByName = (name: string) => {
      calls.push(`getByName:${name}`);
      return stub(`name=${name}`);
    };
  }
  return { ns, calls, seen };
}

const kvLike = () => ({
  get: async () => null,
  put: async () => undefined,
  list: async () => ({ keys: [] }),
  delete: async () => undefined,
});

function req(path: string, init?: RequestInit): Request {
  return new Request(`https://worker.example${path}`, init);
}

function upgradeReq(path: string, headers: Record<string, string> = {}): Request {
  return req(path, { headers: { Upgrade: "websocket", ...headers } });
}

async function route(request: Request, env: object, options?: RouteOptions): Promise<Response> {
  const response = await routeDORequest(request, env, options);
  if (response === undefined) throw new Error(`expected a response for ${request.url}`);
  return response;
}

/** A Response stand-in for a 101 upgrade, which Node's Response cannot construct. */
function upgradeResponse(): Response {
  return { status: 101, statusText: "Switching Protocols", headers: new Headers(), webSocket: {}, body: null } as unknown as Response;
}

// ---------------------------------------------------------------------------------------------

describe("prefix", () => {
  const counter = fakeNamespace("COUNTER");
  const env = { COUNTER: counter.ns };

  it("defaults to /__rpc", () => {
    expect(DEFAULT_PREFIX).toBe("/__rpc");
  });

  it.each(["/", "/__rpcx/a/b", "/__rpcx", "/api/__rpc/COUNTER/a", "/__RPC/COUNTER/a", "/favicon.ico"])(
    "returns undefined for %s, which is outside the prefix",
    async (path) => {
      expect(await routeDORequest(req(path), env)).toBeUndefined();
    },
  );

  it("routes a path inside the prefix", async () => {
    const response = await route(req("/__rpc/COUNTER/a"), env);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("COUNTER name=a");
  });

  it("normalises a custom prefix without a leading slash and with trailing slashes", async () => {
    const options = { prefix: "api/do//" };
    expect(await (await route(req("/api/do/COUNTER/a"), env, options)).text()).toBe("COUNTER name=a");
    expect(await routeDORequest(req("/__rpc/COUNTER/a"), env, options)).toBeUndefined();
    expect(await routeDORequest(req("/api/dox/COUNTER/a"), env, options)).toBeUndefined();
  });

  it.each(["/__rpc", "/__rpc/", "/__rpc//a"])("answers %s, which has no binding, with 400", async (path) => {
    const response = await route(req(path), env);
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/^Missing binding in \/__rpc/);
  });
});

describe("binding resolution", () => {
  it("routes an exact env key", async () => {
    const counter = fakeNamespace("COUNTER");
    const response = await route(req("/__rpc/COUNTER/a"), { COUNTER: counter.ns });
    expect(await response.text()).toBe("COUNTER name=a");
    expect(counter.seen).toHaveLength(1);
  });

  it("routes my-counter to MY_COUNTER", async () => {
    const ns = fakeNamespace("MY_COUNTER");
    const response = await route(req("/__rpc/my-counter/a"), { MY_COUNTER: ns.ns });
    expect(await response.text()).toBe("MY_COUNTER name=a");
  });

  it("routes my-widget to MyWidget", async () => {
    const ns = fakeNamespace("MyWidget");
    const response = await route(req("/__rpc/my-widget/a"), { MyWidget: ns.ns });
    expect(await response.text()).toBe("MyWidget name=a");
  });

  it("routes my-gadget to myGadget", async () => {
    const ns = fakeNamespace("myGadget");
    const response = await route(req("/__rpc/my-gadget/a"), { myGadget: ns.ns });
    expect(await response.text()).toBe("myGadget name=a");
  });

  it("routes a single-word lowercase segment to its SCREAMING and Pascal spellings", async () => {
    expect(resolveBinding({ ROOM: fakeNamespace("ROOM").ns }, "room")).toBe("ROOM");
    expect(resolveBinding({ Room: fakeNamespace("Room").ns }, "room")).toBe("Room");
  });

  it("routes segments with digits, e.g. chat-room-2 to CHAT_ROOM_2", () => {
    expect(resolveBinding({ CHAT_ROOM_2: fakeNamespace("x").ns }, "chat-room-2")).toBe("CHAT_ROOM_2");
  });

  it("prefers an exact match over an alias", async () => {
    const lower = fakeNamespace("counter");
    const upper = fakeNamespace("COUNTER");
    const response = await route(req("/__rpc/counter/a"), { counter: lower.ns, COUNTER: upper.ns });
    expect(await response.text()).toBe("counter name=a");
  });

  it.each(["My-Counter", "my_counter", "MY-COUNTER", "myCounter", "my--counter", "-my-counter"])(
    "does not alias the non-kebab segment %s",
    async (segment) => {
      const response = await route(req(`/__rpc/${segment}/a`), { MY_COUNTER: fakeNamespace("x").ns });
      expect(response.status).toBe(404);
    },
  );

  it("answers an ambiguous segment with 500 naming every candidate", async () => {
    const env = { MY_COUNTER: fakeNamespace("a").ns, MyCounter: fakeNamespace("b").ns, myCounter: fakeNamespace("c").ns };
    const response = await route(req("/__rpc/my-counter/a"), env);
    expect(response.status).toBe(500);
    const body = await response.text();
    expect(body).toContain('Ambiguous binding "my-counter"');
    expect(body).toContain("MY_COUNTER");
    expect(body).toContain("MyCounter");
    expect(body).toContain("myCounter");
  });

  it("answers an unknown binding with 404 naming the segment and the Durable Object bindings", async () => {
    const response = await route(req("/__rpc/COUNTR/a"), { COUNTER: fakeNamespace("COUNTER").ns });
    expect(response.status).toBe(404);
    expect(response.headers.get("Content-Type")).toMatch(/^text\/plain/);
    expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
    const body = await response.text();
    expect(body).toContain('Unknown binding "COUNTR" in /__rpc/COUNTR/a');
    expect(body).toContain("COUNTER");
  });

  it("does not run hooks for an unknown binding", async () => {
    let called = false;
    const response = await route(
      req("/__rpc/NOPE/a"),
      { COUNTER: fakeNamespace("COUNTER").ns },
      {
        onBeforeRequest: () => {
          called = true;
        },
      },
    );
    expect(response.status).toBe(404);
    expect(called).toBe(false);
  });

  it("percent-decodes the binding segment", async () => {
    const response = await route(req("/__rpc/MY%5FCOUNTER/a"), { MY_COUNTER: fakeNamespace("MY_COUNTER").ns });
    expect(await response.text()).toBe("MY_COUNTER name=a");
  });

  describe("with secrets and other bindings in env", () => {
    const counter = fakeNamespace("COUNTER");
    const env = {
      SECRET: "hunter2-super-secret",
      secret: "lowercase-secret-value",
      API_KEY: "sk_live_abcdef",
      KV: kvLike(),
      MY_KV: kvLike(),
      COUNTER: counter.ns,
    };

    it.each(["/__rpc/SECRET/a", "/__rpc/secret/a", "/__rpc/api-key/a", "/__rpc/KV/a", "/__rpc/my-kv/a"])(
      "never routes %s to a value that is not a Durable Object namespace",
      async (path) => {
        const response = await route(req(path), env);
        expect(response.status).toBe(404);
        const body = await response.text();
        for (const hidden of ["hunter2", "lowercase-secret-value", "sk_live", "API_KEY", "MY_KV"]) {
          expect(body).not.toContain(hidden);
        }
        expect(body).toContain("Durable Object bindings: COUNTER.");
      },
    );

    it("never names non-namespace env keys in any router response", async () => {
      const paths = ["/__rpc/COUNTR/a", "/__rpc/COUNTER", "/__rpc/COUNTER/%00", "/__rpc/", "/__rpc/COUNTER/" + "x".repeat(300)];
      for (const path of paths) {
        const body = await (await route(req(path), env)).text();
        for (const hidden of ["SECRET", "secret", "hunter2", "API_KEY", "sk_live", "KV"]) {
          expect(body, `${path} -> ${body}`).not.toContain(hidden);
        }
      }
    });

    it("resolveBinding ignores non-namespace values", () => {
      expect(resolveBinding(env, "SECRET")).toBeUndefined();
      expect(resolveBinding(env, "KV")).toBeUndefined();
      expect(resolveBinding(env, "counter")).toBe("COUNTER");
    });
  });

  it("resolveBinding throws AMBIGUOUS_BINDING naming the candidates", () => {
    const env = { MY_COUNTER: fakeNamespace("a").ns, MyCounter: fakeNamespace("b").ns };
    let error: unknown;
    try {
      resolveBinding(env, "my-counter");
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RoutingError);
    expect(RoutingError.is(error)).toBe(true);
    expect((error as RoutingError).code).toBe("AMBIGUOUS_BINDING");
    expect((error as RoutingError).message).toContain("MY_COUNTER, MyCounter");
  });

  it("recognises namespaces by their idFromName, idFromString and get methods", () => {
    expect(isDurableObjectNamespace(fakeNamespace("x").ns)).toBe(true);
    expect(isDurableObjectNamespace(kvLike())).toBe(false);
    expect(isDurableObjectNamespace("idFromName")).toBe(false);
    expect(isDurableObjectNamespace(null)).toBe(false);
    expect(isDurableObjectNamespace({ idFromName() {}, idFromString() {}, get: "no" })).toBe(false);
  });

  it("reads the env bindings once per env object", async () => {
    const counter = fakeNamespace("COUNTER");
    let reads = 0;
    const env = {
      get COUNTER() {
        reads += 1;
        return counter.ns;
      },
    };
    await route(req("/__rpc/COUNTER/a"), env);
    await route(req("/__rpc/counter/b"), env);
    await route(req("/__rpc/NOPE/c"), env);
    expect(reads).toBe(1);
    expect(counter.seen).toHaveLength(2);
  });
});

describe("instance addressing", () => {
  it("addresses a 64-hex instance by id via idFromString and get", async () => {
    const counter = fakeNamespace("COUNTER");
    const response = await route(req(`/__rpc/COUNTER/${HEX_ID}`), { COUNTER: counter.ns });
    expect(await response.text()).toBe(`COUNTER id=${HEX_ID}`);
    expect(counter.calls).toEqual([`idFromString:${HEX_ID}`, `get:${HEX_ID}`]);
  });

  it("lowercases an uppercase hex id before idFromString", async () => {
    const counter = fakeNamespace("COUNTER");
    await route(req(`/__rpc/COUNTER/${HEX_ID.toUpperCase()}`), { COUNTER: counter.ns });
    expect(counter.calls).toEqual([`idFromString:${HEX_ID}`, `get:${HEX_ID}`]);
  });

  it("answers a 64-hex string that is not an id of the namespace with 400", async () => {
    const counter = fakeNamespace("COUNTER");
    const bad = FOREIGN_PREFIX + HEX_ID.slice(4);
    const response = await route(req(`/__rpc/COUNTER/${bad}`), { COUNTER: counter.ns });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("not a valid Durable Object id for binding COUNTER");
    expect(counter.seen).toHaveLength(0);
  });

  it("addresses a name via getByName when the namespace has it", async () => {
    const counter = fakeNamespace("COUNTER");
    await route(req("/__rpc/COUNTER/room-1"), { COUNTER: counter.ns });
    expect(counter.calls).toEqual(["getByName:room-1"]);
  });

  it("addresses a name via idFromName and get when the namespace lacks getByName", async () => {
    const counter = fakeNamespace("COUNTER", { getByName: false });
    const response = await route(req("/__rpc/COUNTER/room-1"), { COUNTER: counter.ns });
    expect(counter.calls).toEqual(["idFromName:room-1", "get:named(room-1)"]);
    expect(await response.text()).toBe("COUNTER id=named(room-1)");
  });

  it("percent-decodes the instance name", async () => {
    const counter = fakeNamespace("COUNTER");
    await route(req("/__rpc/COUNTER/room%20one%2Fwest%20%C3%A9/rest"), { COUNTER: counter.ns });
    expect(counter.calls).toEqual(["getByName:room one/west é"]);
  });

  it("forwards the request unchanged, so the object sees the full path and query", async () => {
    const counter = fakeNamespace("COUNTER");
    const request = req("/__rpc/COUNTER/a/deeper/path?x=1", { method: "POST", body: "payload" });
    await route(request, { COUNTER: counter.ns });
    expect(counter.seen).toEqual([request]);
    expect(counter.seen[0]).toBe(request);
    expect(new URL(counter.seen[0]!.url).pathname).toBe("/__rpc/COUNTER/a/deeper/path");
  });

  it("returns the stub's response as-is when CORS is off", async () => {
    const original = new Response("from the object", { status: 418 });
    const env = { COUNTER: { ...fakeNamespace("COUNTER").ns, getByName: () => ({ fetch: async () => original }) } };
    expect(await route(req("/__rpc/COUNTER/a"), env)).toBe(original);
  });

  it.each(["/__rpc/COUNTER", "/__rpc/COUNTER/", "/__rpc/COUNTER//rest"])(
    "answers %s, which has no instance, with 400 naming the binding",
    async (path) => {
      const counter = fakeNamespace("COUNTER");
      const response = await route(req(path), { COUNTER: counter.ns });
      expect(response.status).toBe(400);
      expect(await response.text()).toContain(`Missing instance in ${path}; expected /__rpc/COUNTER/{instance}`);
      expect(counter.calls).toEqual([]);
    },
  );

  it(`accepts names of ${MAX_INSTANCE_LENGTH} characters and rejects longer ones with 400`, async () => {
    const counter = fakeNamespace("COUNTER");
    const env = { COUNTER: counter.ns };
    expect((await route(req(`/__rpc/COUNTER/${"n".repeat(MAX_INSTANCE_LENGTH)}`), env)).status).toBe(200);
    const response = await route(req(`/__rpc/COUNTER/${"n".repeat(MAX_INSTANCE_LENGTH + 1)}`), env);
    expect(response.status).toBe(400);
    const body = await response.text();
    expect(body).toContain(`${MAX_INSTANCE_LENGTH + 1} characters long; the limit is ${MAX_INSTANCE_LENGTH}`);
    expect(body.length).toBeLessThan(400);
  });

  it.each(["a%00b", "line%0Abreak", "del%7F", "c1%C2%85"])("rejects the instance %s with control characters", async (segment) => {
    const counter = fakeNamespace("COUNTER");
    const response = await route(req(`/__rpc/COUNTER/${segment}`), { COUNTER: counter.ns });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("contains control characters");
    expect(counter.calls).toEqual([]);
  });

  it("rejects malformed percent-encoding in the instance with 400", async () => {
    const response = await route(req("/__rpc/COUNTER/%E0%A4%A"), { COUNTER: fakeNamespace("COUNTER").ns });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('Malformed percent-encoding in instance segment "%E0%A4%A"');
  });
});

describe("hooks", () => {
  function setup() {
    const counter = fakeNamespace("MY_COUNTER");
    const env = { MY_COUNTER: counter.ns };
    const log: string[] = [];
    let lastCtx: RouteContext | undefined;
    const options: RouteOptions = {
      onBeforeConnect: (_request, ctx) => {
        log.push("connect");
        lastCtx = ctx;
      },
      onBeforeRequest: (_request, ctx) => {
        log.push("request");
        lastCtx = ctx;
      },
    };
    return { counter, env, log, options, ctx: () => lastCtx };
  }

  it("runs onBeforeRequest, not onBeforeConnect, for ordinary requests", async () => {
    const { env, log, options } = setup();
    await route(req("/__rpc/my-counter/a"), env, options);
    await route(req("/__rpc/my-counter/a/files/x", { method: "POST", body: "x" }), env, options);
    expect(log).toEqual(["request", "request"]);
  });

  it("runs onBeforeConnect, not onBeforeRequest, for a POST to the RPC path itself (an HTTP batch)", async () => {
    const { env, log, options, ctx } = setup();
    await route(req("/__rpc/my-counter/a", { method: "POST", body: "x" }), env, options);
    expect(log).toEqual(["connect"]);
    expect(ctx()?.instance).toBe("a");
  });

  it.each(["websocket", "WebSocket", "WEBSOCKET"])("runs onBeforeConnect, not onBeforeRequest, for Upgrade: %s", async (value) => {
    const { env, log, options } = setup();
    await route(req("/__rpc/my-counter/a", { headers: { Upgrade: value } }), env, options);
    expect(log).toEqual(["connect"]);
  });

  it("treats Upgrade headers other than websocket as ordinary requests", async () => {
    const { env, log, options } = setup();
    await route(req("/__rpc/my-counter/a", { headers: { Upgrade: "h2c" } }), env, options);
    expect(log).toEqual(["request"]);
  });

  it("passes the env key, decoded instance, namespace and env in ctx", async () => {
    const { env, options, ctx, counter } = setup();
    await route(req("/__rpc/my-counter/room%201"), env, options);
    expect(ctx()).toEqual({ binding: "MY_COUNTER", instance: "room 1", namespace: counter.ns, env });
    expect(ctx()!.namespace).toBe(counter.ns);
    expect(ctx()!.env).toBe(env);
  });

  it("returns a Response from a hook as-is and does not forward", async () => {
    const { env, counter } = setup();
    const denied = new Response("no", { status: 401 });
    for (const options of [{ onBeforeRequest: () => denied }, { onBeforeConnect: () => denied }]) {
      const request = "onBeforeRequest" in options ? req("/__rpc/my-counter/a") : upgradeReq("/__rpc/my-counter/a");
      expect(await route(request, env, options)).toBe(denied);
    }
    expect(counter.seen).toHaveLength(0);
    expect(counter.calls).toEqual([]);
  });

  it("forwards the Request a hook returns instead of the original", async () => {
    const { env, counter } = setup();
    const options: RouteOptions = {
      onBeforeRequest: (request) => {
        const headers = new Headers(request.headers);
        headers.set("X-User", "alice");
        return new Request(request, { headers });
      },
    };
    const original = req("/__rpc/my-counter/a");
    await route(original, env, options);
    expect(counter.seen).toHaveLength(1);
    expect(counter.seen[0]).not.toBe(original);
    expect(counter.seen[0]!.headers.get("X-User")).toBe("alice");
  });

  it("awaits async hooks, for blocking and for replacing", async () => {
    const { env, counter } = setup();
    const sleep = () => new Promise((resolve) => setTimeout(resolve, 5));
    const blocked = await route(req("/__rpc/my-counter/a"), env, {
      onBeforeRequest: async () => {
        await sleep();
        return new Response("later no", { status: 403 });
      },
    });
    expect(blocked.status).toBe(403);
    expect(counter.seen).toHaveLength(0);

    const replacement = req("/__rpc/my-counter/a?replaced=1");
    await route(upgradeReq("/__rpc/my-counter/a"), env, {
      onBeforeConnect: async () => {
        await sleep();
        return replacement;
      },
    });
    expect(counter.seen).toEqual([replacement]);

    await route(req("/__rpc/my-counter/a"), env, { onBeforeRequest: async () => sleep().then(() => undefined) });
    expect(counter.seen).toHaveLength(2);
  });

  it("rejects with BAD_HOOK_RESULT when a hook returns something else", async () => {
    const { env, counter } = setup();
    const options = { onBeforeRequest: () => ({ status: 401 }) } as unknown as RouteOptions;
    await expect(routeDORequest(req("/__rpc/my-counter/a"), env, options)).rejects.toMatchObject({
      name: "RoutingError",
      code: "BAD_HOOK_RESULT",
      message: expect.stringContaining("onBeforeRequest returned object"),
    });
    expect(counter.seen).toHaveLength(0);
  });

  it("lets a hook's exception propagate", async () => {
    const { env } = setup();
    const boom = new Error("auth backend down");
    await expect(
      routeDORequest(req("/__rpc/my-counter/a"), env, {
        onBeforeRequest: () => {
          throw boom;
        },
      }),
    ).rejects.toBe(boom);
  });
});

describe("allowedOrigins for WebSocket upgrades and HTTP batches", () => {
  function setup(options: RouteOptions) {
    const counter = fakeNamespace("COUNTER");
    let hookRuns = 0;
    const withHook: RouteOptions = {
      ...options,
      onBeforeConnect: () => {
        hookRuns += 1;
      },
    };
    return {
      counter,
      hookRuns: () => hookRuns,
      run: (request: Request) => route(request, { COUNTER: counter.ns }, withHook),
    };
  }

  it("answers an upgrade from a disallowed origin with 403 before hooks run", async () => {
    const { run, counter, hookRuns } = setup({ allowedOrigins: ["https://app.example"] });
    const response = await run(upgradeReq("/__rpc/COUNTER/a", { Origin: "https://evil.example" }));
    expect(response.status).toBe(403);
    expect(await response.text()).toContain('WebSocket upgrade from origin "https://evil.example" is not allowed');
    expect(hookRuns()).toBe(0);
    expect(counter.seen).toHaveLength(0);
  });

  it("forwards an upgrade from an allowed origin", async () => {
    const { run, counter, hookRuns } = setup({ allowedOrigins: ["https://app.example"] });
    const response = await run(upgradeReq("/__rpc/COUNTER/a", { Origin: "https://app.example" }));
    expect(response.status).toBe(200);
    expect(hookRuns()).toBe(1);
    expect(counter.seen).toHaveLength(1);
  });

  it("rejects an opaque null origin unless allowed", async () => {
    const { run } = setup({ allowedOrigins: ["https://app.example"] });
    expect((await run(upgradeReq("/__rpc/COUNTER/a", { Origin: "null" }))).status).toBe(403);
  });

  it("accepts a predicate", async () => {
    const { run } = setup({ allowedOrigins: (origin) => origin.endsWith(".example.com") });
    expect((await run(upgradeReq("/__rpc/COUNTER/a", { Origin: "https://a.example.com" }))).status).toBe(200);
    expect((await run(upgradeReq("/__rpc/COUNTER/a", { Origin: "https://example.org" }))).status).toBe(403);
  });

  it("allows upgrades without an Origin header by default", async () => {
    const { run } = setup({ allowedOrigins: ["https://app.example"] });
    expect((await run(upgradeReq("/__rpc/COUNTER/a"))).status).toBe(200);
  });

  it("refuses upgrades without an Origin header when requireOrigin is set", async () => {
    const { run, counter } = setup({ allowedOrigins: ["https://app.example"], requireOrigin: true });
    const response = await run(upgradeReq("/__rpc/COUNTER/a"));
    expect(response.status).toBe(403);
    expect(await response.text()).toContain("without an Origin header");
    expect(counter.seen).toHaveLength(0);
  });

  it("does not check the origin of ordinary requests", async () => {
    const { run } = setup({ allowedOrigins: ["https://app.example"] });
    expect((await run(req("/__rpc/COUNTER/a", { headers: { Origin: "https://evil.example" } }))).status).toBe(200);
    const deeper = req("/__rpc/COUNTER/a/upload", { method: "POST", body: "x", headers: { Origin: "https://evil.example" } });
    expect((await run(deeper)).status).toBe(200);
  });

  it("checks the origin of an HTTP batch (a POST to the RPC path) like an upgrade, before hooks run", async () => {
    const { run, counter, hookRuns } = setup({ allowedOrigins: ["https://app.example"] });
    const refused = await run(req("/__rpc/COUNTER/a", { method: "POST", body: "x", headers: { Origin: "https://evil.example" } }));
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('HTTP batch from origin "https://evil.example" is not allowed');
    expect(hookRuns()).toBe(0);
    expect(counter.seen).toHaveLength(0);
    const allowed = await run(req("/__rpc/COUNTER/a", { method: "POST", body: "x", headers: { Origin: "https://app.example" } }));
    expect(allowed.status).toBe(200);
    expect(hookRuns()).toBe(1);
    expect(counter.seen).toHaveLength(1);
  });

  it("refuses an HTTP batch without an Origin header when requireOrigin is set", async () => {
    const { run, counter } = setup({ allowedOrigins: ["https://app.example"], requireOrigin: true });
    const response = await run(req("/__rpc/COUNTER/a", { method: "POST", body: "x" }));
    expect(response.status).toBe(403);
    expect(await response.text()).toContain("HTTP batch without an Origin header is not allowed");
    expect(counter.seen).toHaveLength(0);
  });

  it("allows any origin when unset", async () => {
    const { run } = setup({});
    expect((await run(upgradeReq("/__rpc/COUNTER/a", { Origin: "https://evil.example" }))).status).toBe(200);
  });
});

describe("CORS", () => {
  const APP = "https://app.example";
  const preflight = (origin: string, path = "/__rpc/COUNTER/a") =>
    req(path, {
      method: "OPTIONS",
      headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type" },
    });

  it("is off by default: preflights reach the object and responses get no CORS headers", async () => {
    const counter = fakeNamespace("COUNTER");
    const env = { COUNTER: counter.ns };
    const response = await route(preflight(APP), env);
    expect(counter.seen).toHaveLength(1);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBeNull();
    const actual = await route(req("/__rpc/COUNTER/a", { headers: { Origin: APP } }), env);
    expect(actual.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect(actual.headers.get("Vary")).toBeNull();
  });

  it("answers a preflight from an allowed origin with 204 and the Access-Control headers, without hooks or the object", async () => {
    const counter = fakeNamespace("COUNTER");
    let hookRuns = 0;
    const response = await route(
      preflight(APP),
      { COUNTER: counter.ns },
      {
        cors: { origins: [APP], credentials: true, maxAge: 600, methods: ["GET", "POST", "PUT"], headers: ["Content-Type", "X-Token"] },
        onBeforeRequest: () => {
          hookRuns += 1;
        },
      },
    );
    expect(response.status).toBe(204);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "access-control-allow-origin": APP,
      "access-control-allow-credentials": "true",
      "access-control-allow-methods": "GET, POST, PUT",
      "access-control-allow-headers": "Content-Type, X-Token",
      "access-control-max-age": "600",
      vary: "Origin",
    });
    expect(hookRuns).toBe(0);
    expect(counter.calls).toEqual([]);
  });

  it("uses default methods and headers and omits max-age and credentials unless set", async () => {
    const response = await route(preflight(APP), { COUNTER: fakeNamespace("COUNTER").ns }, { cors: { origins: [APP] } });
    expect(response.headers.get("Access-Control-Allow-Methods")).toBe("GET, POST");
    // The last two: the session headers of a page's HTTP batches (httpTransport()).
    expect(response.headers.get("Access-Control-Allow-Headers")).toBe("Content-Type, Authorization, X-Dorpc-Session, X-Dorpc-Resending");
    expect(response.headers.get("Access-Control-Max-Age")).toBeNull();
    expect(response.headers.get("Access-Control-Allow-Credentials")).toBeNull();
  });

  it("answers a preflight even for an unknown binding, so the real request's 404 is readable", async () => {
    const response = await route(
      preflight(APP, "/__rpc/NOPE/a"),
      { COUNTER: fakeNamespace("COUNTER").ns },
      {
        cors: { origins: [APP] },
      },
    );
    expect(response.status).toBe(204);
  });

  it("answers a preflight from a disallowed origin with 403 and no Allow-Origin", async () => {
    const response = await route(
      preflight("https://evil.example"),
      { COUNTER: fakeNamespace("COUNTER").ns },
      {
        cors: { origins: [APP] },
      },
    );
    expect(response.status).toBe(403);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect(await response.text()).toContain('origin "https://evil.example" is not allowed');
  });

  it("forwards OPTIONS requests that are not preflights", async () => {
    const counter = fakeNamespace("COUNTER");
    await route(req("/__rpc/COUNTER/a", { method: "OPTIONS" }), { COUNTER: counter.ns }, { cors: { origins: [APP] } });
    expect(counter.seen).toHaveLength(1);
  });

  it("adds Allow-Origin, credentials and Vary to actual responses for allowed origins, keeping status, body and headers", async () => {
    const original = new Response("made", { status: 201, headers: { "X-From": "object", Vary: "Accept-Encoding" } });
    const env = { COUNTER: { ...fakeNamespace("COUNTER").ns, getByName: () => ({ fetch: async () => original }) } };
    const response = await route(req("/__rpc/COUNTER/a", { method: "POST", headers: { Origin: APP } }), env, {
      cors: { origins: [APP], credentials: true },
    });
    expect(response.status).toBe(201);
    expect(await response.text()).toBe("made");
    expect(response.headers.get("X-From")).toBe("object");
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe(APP);
    expect(response.headers.get("Access-Control-Allow-Credentials")).toBe("true");
    expect(response.headers.get("Vary")).toBe("Accept-Encoding, Origin");
  });

  it("does not modify a stub response whose headers are immutable", async () => {
    const original = new Response("ok");
    Object.defineProperty(original.headers, "set", {
      value: () => {
        throw new TypeError("Can't modify immutable headers.");
      },
    });
    const env = { COUNTER: { ...fakeNamespace("COUNTER").ns, getByName: () => ({ fetch: async () => original }) } };
    const response = await route(req("/__rpc/COUNTER/a", { headers: { Origin: APP } }), env, { cors: { origins: [APP] } });
    expect(response).not.toBe(original);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe(APP);
    expect(await response.text()).toBe("ok");
  });

  it("adds only Vary: Origin for disallowed or missing origins, and drops the object's own Allow-Origin", async () => {
    const original = () => new Response("x", { headers: { "Access-Control-Allow-Origin": "*" } });
    const env = { COUNTER: { ...fakeNamespace("COUNTER").ns, getByName: () => ({ fetch: async () => original() }) } };
    const cases: Record<string, string>[] = [{ Origin: "https://evil.example" }, {}];
    for (const headers of cases) {
      const response = await route(req("/__rpc/COUNTER/a", { headers }), env, { cors: { origins: [APP] } });
      expect(response.headers.get("Access-Control-Allow-Origin")).toBeNull();
      expect(response.headers.get("Vary")).toBe("Origin");
    }
  });

  it('uses Allow-Origin "*" and no Vary for origins "*"', async () => {
    const response = await route(
      req("/__rpc/COUNTER/a", { headers: { Origin: "https://any.example" } }),
      {
        COUNTER: fakeNamespace("COUNTER").ns,
      },
      { cors: { origins: "*" } },
    );
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(response.headers.get("Vary")).toBeNull();
  });

  it("adds CORS headers to the router's own error responses and to hook responses", async () => {
    const env = { COUNTER: fakeNamespace("COUNTER").ns };
    const options: RouteOptions = {
      cors: { origins: [APP] },
      onBeforeRequest: () => new Response("unauthorised", { status: 401 }),
    };
    const notFound = await route(req("/__rpc/NOPE/a", { headers: { Origin: APP } }), env, options);
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get("Access-Control-Allow-Origin")).toBe(APP);
    const denied = await route(req("/__rpc/COUNTER/a", { headers: { Origin: APP } }), env, options);
    expect(denied.status).toBe(401);
    expect(denied.headers.get("Access-Control-Allow-Origin")).toBe(APP);
  });

  it("returns 101 upgrade responses unchanged, with their webSocket", async () => {
    const upgraded = upgradeResponse();
    const env = { COUNTER: { ...fakeNamespace("COUNTER").ns, getByName: () => ({ fetch: async () => upgraded }) } };
    const response = await route(upgradeReq("/__rpc/COUNTER/a", { Origin: APP }), env, { cors: { origins: [APP] } });
    expect(response).toBe(upgraded);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });

  it("accepts a predicate for origins", async () => {
    const options: RouteOptions = { cors: { origins: (origin) => origin === APP } };
    const env = { COUNTER: fakeNamespace("COUNTER").ns };
    expect((await route(preflight(APP), env, options)).status).toBe(204);
    expect((await route(preflight("https://evil.example"), env, options)).status).toBe(403);
  });
});

describe("option validation", () => {
  const env = { COUNTER: fakeNamespace("COUNTER").ns };
  const inside = () => req("/__rpc/COUNTER/a");
  const outside = () => req("/elsewhere");

  function thrown(options: unknown, request = inside()): RoutingError {
    try {
      void routeDORequest(request, env, options as RouteOptions);
    } catch (error) {
      expect(error).toBeInstanceOf(RoutingError);
      return error as RoutingError;
    }
    throw new Error(`expected ${JSON.stringify(options)} to be rejected`);
  }

  it.each<[string, unknown, RegExp]>([
    ["a non-object options value", "/__rpc", /options must be an object, got "\/__rpc"/],
    ["an unknown option", { prefx: "/x" }, /Unknown option prefx; known options are prefix, /],
    ["a non-string prefix", { prefix: 42 }, /prefix must be a string .* got 42/],
    ["a prefix without segments", { prefix: "/" }, /prefix "\/" has no path segment/],
    ["a prefix with an empty segment", { prefix: "/a//b" }, /prefix "\/a\/\/b" has the segment ""/],
    ["a prefix with a space", { prefix: "/my rpc" }, /prefix "\/my rpc" has the segment "my rpc"/],
    ["a prefix with a dot segment", { prefix: "/a/../b" }, /has the segment "\.\."/],
    ['allowedOrigins "*"', { allowedOrigins: "*" }, /allowedOrigins cannot be "\*"/],
    ["an allowedOrigins string", { allowedOrigins: "https://a.example" }, /allowedOrigins must be an array of origins or a function/],
    [
      "an origin with a trailing slash",
      { allowedOrigins: ["https://a.example/"] },
      /allowedOrigins\[0\] "https:\/\/a.example\/" is not in the form browsers send; use "https:\/\/a.example"/,
    ],
    [
      "an origin with uppercase",
      { allowedOrigins: ["https://a.example", "https://App.Example"] },
      /allowedOrigins\[1\] .* use "https:\/\/app.example"/,
    ],
    ["a wildcard origin", { allowedOrigins: ["https://*.example.com"] }, /wildcards are not supported, pass a function instead/],
    ["a non-origin", { allowedOrigins: ["app.example"] }, /allowedOrigins\[0\] "app.example" is not an origin/],
    ["requireOrigin without allowedOrigins", { requireOrigin: true }, /requireOrigin needs allowedOrigins/],
    ["a non-boolean requireOrigin", { allowedOrigins: [], requireOrigin: "yes" }, /requireOrigin must be a boolean, got "yes"/],
    ["cors: true", { cors: true }, /cors must be false or an object/],
    ["cors without origins", { cors: {} }, /cors.origins is required/],
    ["an unknown cors option", { cors: { origins: "*", origin: "*" } }, /Unknown option cors.origin;/],
    [
      'credentials with origins "*"',
      { cors: { origins: "*", credentials: true } },
      /cors.credentials cannot be combined with cors.origins "\*"/,
    ],
    ["a negative maxAge", { cors: { origins: "*", maxAge: -1 } }, /cors.maxAge must be a non-negative integer of seconds, got -1/],
    ["a bad method", { cors: { origins: "*", methods: ["GET POST"] } }, /cors.methods\[0\] must be an HTTP token/],
    ["a non-array headers", { cors: { origins: "*", headers: "Content-Type" } }, /cors.headers must be an array of strings/],
    ["a bad cors origin", { cors: { origins: ["https://a.example/path"] } }, /cors.origins\[0\] .* use "https:\/\/a.example"/],
    ["a non-function hook", { onBeforeRequest: "allow" }, /onBeforeRequest must be a function, got "allow"/],
    ["a non-function connect hook", { onBeforeConnect: {} }, /onBeforeConnect must be a function, got object/],
  ])("throws BAD_OPTION synchronously for %s", (_label, options, message) => {
    const error = thrown(options);
    expect(error.code).toBe("BAD_OPTION");
    expect(error.message).toMatch(message);
  });

  it("throws even for requests outside the prefix", () => {
    expect(thrown({ prefix: 42 }, outside()).code).toBe("BAD_OPTION");
  });

  it("throws for an env that is not an object", () => {
    expect(() => routeDORequest(inside(), null as unknown as object)).toThrow(/env must be the Worker's env object/);
  });

  it("accepts cors: false and an empty options object", async () => {
    expect((await route(inside(), env, { cors: false })).status).toBe(200);
    expect((await route(inside(), env, {})).status).toBe(200);
  });

  it("validates an options object once", async () => {
    let reads = 0;
    const options = {
      get prefix() {
        reads += 1;
        return "/rpc";
      },
    };
    for (let i = 0; i < 3; i++) await routeDORequest(req("/rpc/COUNTER/a"), env, options);
    expect(reads).toBe(1);
  });
});
