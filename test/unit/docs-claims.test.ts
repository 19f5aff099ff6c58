/**
 * What docs/api.md and docs/getting-started.md state about the client and the router, checked
 * against the code in Node: the CONNECT_FAILED message the guide prints for a wrong binding (made
 * by the real router behind a Node HTTP server), the tables and unions api.md lists
 * (DEFAULT_LIMITS, RpcErrorCode, RoutingErrorCode), the connect URL a transport factory reads
 * (`handler.url`), and the refusals api.md lists that no other test covers.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ROUTING_ERROR_CODES, routeDORequest } from "@dorpc/routing";
import { describe, expect, it } from "vitest";
import {
  createRpcClient,
  DEFAULT_LIMITS,
  RPC_ERROR_CODES,
  RpcError,
  rpcConnection,
  type TransportFactory,
  type TransportHandler,
  withCallOptions,
} from "../../packages/rpc/src/index.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const api = readFileSync(join(root, "docs/api.md"), "utf8");
const guide = readFileSync(join(root, "docs/getting-started.md"), "utf8");

/** The `RpcError` code `f` throws, or "no throw". */
function thrownCode(f: () => unknown): string {
  try {
    f();
    return "no throw";
  } catch (error) {
    return RpcError.is(error) ? error.code : `not an RpcError: ${String(error)}`;
  }
}

/** The string members of the union `type name = "A" | "B";` as api.md declares it. */
function unionIn(text: string, name: string): string[] {
  const declared = new RegExp(`type ${name} = (.*);`).exec(text);
  expect(declared, `api.md declares type ${name}`).not.toBeNull();
  return [...declared![1]!.matchAll(/"(\w+)"/g)].map((m) => m[1]!);
}

/** The part of api.md from the heading `from` to the next heading of the same level. */
function section(from: string): string {
  const start = api.indexOf(`\n${from}\n`);
  expect(start, `api.md has the heading ${from}`).toBeGreaterThanOrEqual(0);
  const level = /^#+ /.exec(from)![0];
  const end = api.indexOf(`\n${level}`, start + from.length + 2);
  return api.slice(start, end === -1 ? undefined : end);
}

/** A Durable Object namespace as the router sees it: every object answers "object". */
function fakeNamespace() {
  return {
    idFromName: (name: string) => ({ name, toString: () => name }),
    idFromString: (hex: string) => ({ toString: () => hex }),
    newUniqueId: () => ({}),
    get: () => ({ fetch: async () => new Response("object") }),
  };
}

describe("getting-started.md §8: the CONNECT_FAILED message for a wrong binding", () => {
  it("is, word for word, the one the guide prints, from a Worker routing with routeDORequest", async () => {
    const env = { COUNTER: fakeNamespace() };
    let port = 0;
    const routed = async (req: IncomingMessage) => {
      const headers = new Headers();
      for (const [key, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(key, value);
      const request = new Request(`http://127.0.0.1:${port}${req.url}`, { method: req.method, headers });
      return (await routeDORequest(request, env)) ?? new Response("Not found", { status: 404 });
    };
    const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
      const response = await routed(req);
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(await response.text());
    });
    // The upgrade gets the router's answer too (a 404 for an unknown binding), as from wrangler dev.
    server.on("upgrade", async (req: IncomingMessage, socket: Socket) => {
      const response = await routed(req);
      const body = await response.text();
      socket.end(
        `HTTP/1.1 ${response.status} ${response.statusText || "Not Found"}\r\nContent-Type: text/plain\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    try {
      const counter = createRpcClient<{ increment(): number }>("COUNTR", "room-1", { baseUrl: `http://127.0.0.1:${port}` });
      const error = await counter.increment().catch((e: unknown) => e);
      counter[Symbol.dispose]();
      const printed = /^CONNECT_FAILED: (Could not connect to ws:\/\/127\.0\.0\.1:8787\/.*)$/m.exec(guide);
      expect(printed, "the guide prints a CONNECT_FAILED message for ws://127.0.0.1:8787").not.toBeNull();
      expect(RpcError.is(error) && error.code).toBe("CONNECT_FAILED");
      expect((error as RpcError).message).toBe(printed![1]!.replace("127.0.0.1:8787", `127.0.0.1:${port}`));
    } finally {
      server.close();
    }
  });
});

describe("api.md's tables and unions are the code's", () => {
  it("DEFAULT_LIMITS: the limits table lists every limit, each with its default", () => {
    const rows = [...section("### `DEFAULT_LIMITS`, `RpcLimits`").matchAll(/^\| `(\w+)`\s*\| ([\d,]+)/gm)];
    expect(Object.fromEntries(rows.map((m) => [m[1]!, Number(m[2]!.replace(/,/g, ""))]))).toEqual({ ...DEFAULT_LIMITS });
  });

  it("RpcErrorCode: the union api.md declares is RPC_ERROR_CODES, and its table has one row per code", () => {
    expect(unionIn(api, "RpcErrorCode")).toEqual([...RPC_ERROR_CODES]);
    const rows = [...section("### `RpcError`").matchAll(/^\| `([A-Z_]+)`\s+\|/gm)].map((m) => m[1]!);
    expect(rows.sort()).toEqual([...RPC_ERROR_CODES].sort());
  });

  it("RoutingErrorCode: the union api.md declares is ROUTING_ERROR_CODES", () => {
    expect(unionIn(api, "RoutingErrorCode")).toEqual([...ROUTING_ERROR_CODES]);
  });
});

describe("api.md: the connect URL a transport factory reads", () => {
  /** The `handler.url` the client gives `factory` on its first connection attempt. */
  async function urlGiven(options: { baseUrl?: string; query?: Record<string, string> }, usesUrl: boolean) {
    let given: (url: string | undefined) => void = () => undefined;
    const url = new Promise<string | undefined>((resolve) => (given = resolve));
    const factory = Object.assign(
      (handler: TransportHandler) => {
        given(handler.url);
        return { open: () => new Promise<void>(() => undefined), send: () => undefined, close: () => undefined };
      },
      usesUrl ? { usesUrl: true } : {},
    ) as TransportFactory;
    const client = createRpcClient<{ f(): void }>("COUNTER", "room 1/ä", { ...options, transport: factory, onError: () => undefined });
    client.f().catch(() => undefined);
    try {
      return await url;
    } finally {
      client[Symbol.dispose]();
    }
  }

  it("a factory declaring usesUrl gets {baseUrl path}{prefix}/{binding}/{instance}?{query}: ws(s), segments percent-encoded, baseUrl's query and fragment dropped", async () => {
    expect(await urlGiven({ baseUrl: "https://app.example.com/api?x=1#f", query: { token: "a b" } }, true)).toBe(
      "wss://app.example.com/api/__rpc/COUNTER/room%201%2F%C3%A4?token=a+b",
    );
  });

  it("a factory that does not declare usesUrl needs no baseUrl, and gets no URL", async () => {
    expect(await urlGiven({}, false)).toBeUndefined();
  });
});

describe("refusals api.md lists", () => {
  const ok = { baseUrl: "http://127.0.0.1:1" };

  it.each([".", "%2E", "%2e%2E"])("createRpcClient: the binding %j, which a URL resolves away, is BAD_OPTION", (binding) => {
    expect(thrownCode(() => createRpcClient(binding, "a", ok))).toBe("BAD_OPTION");
  });

  it("createRpcClient: highWaterMark 0 is BAD_OPTION (it must be > 0)", () => {
    expect(thrownCode(() => createRpcClient("A", "a", { ...ok, highWaterMark: 0 }))).toBe("BAD_OPTION");
  });

  it('rpcConnection: BAD_OPTION "Not a dorpc client." for a plain object and for a chain made on a client', () => {
    const client = createRpcClient<{ config: { x: number } }>("A", "a", ok);
    try {
      for (const value of [{}, client.config]) {
        let error: unknown;
        try {
          rpcConnection(value);
        } catch (e) {
          error = e;
        }
        expect(RpcError.is(error) && error.code).toBe("BAD_OPTION");
        expect((error as RpcError).message).toBe("Not a dorpc client.");
      }
    } finally {
      client[Symbol.dispose]();
    }
  });

  it("withCallOptions: options that are not an object give a promise rejected with BAD_OPTION", async () => {
    const client = createRpcClient<{ f(): number }>("A", "a", { ...ok, reconnect: false, onError: () => undefined });
    try {
      const error = await withCallOptions(client.f(), null as never).catch((e: unknown) => e);
      expect(RpcError.is(error) && error.code).toBe("BAD_OPTION");
    } finally {
      client[Symbol.dispose]();
    }
  });
});
