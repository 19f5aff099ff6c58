/** HTTP batches with identity, pushes, blobs, JSON form edge cases. */
import { createRpcClient, type FetchLike, httpTransport, type RpcError, subscribe, withCallOptions } from "@dorpc/rpc";
import { createTestClient } from "@dorpc/testing";
import { env, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";
import type { Room, RoomClient } from "./push-objects.js";

type Message = Parameters<RoomClient["message"]>[0];

function httpClient<T>(binding: string, name: string, extra: Record<string, unknown> = {}, fetch?: FetchLike) {
  return createRpcClient<T>(binding, name, {
    transport: httpTransport({ fetch: fetch ?? ((url, init) => SELF.fetch(url, init)) }),
    baseUrl: "http://dorpc.test",
    reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
    ...extra,
  });
}

function post(binding: string, name: string, body: BodyInit, type = "application/json", headers: Record<string, string> = {}) {
  return SELF.fetch(`http://dorpc.test/__rpc/${binding}/${name}`, { method: "POST", body, headers: { "Content-Type": type, ...headers } });
}

describe("identity and pushes over HTTP", () => {
  it("identify's identity reaches rpcCaller() over HTTP, and a broadcast from an HTTP caller reaches socket clients", async () => {
    const room = uniqueName("room");
    const inbox: Message[] = [];
    using ws = createTestClient<Room>(env.ROOM, room, {
      query: { name: "bob", team: "x" },
      expose: { message: (m: Message) => void inbox.push(m), confirm: () => true, slow: async () => "" } satisfies RoomClient,
    });
    expect(await ws.connected()).toBe(1);
    await using http = httpClient<Room>("ROOM", room, { query: { name: "ann", team: "y" } });
    expect(await http.say("hi")).toBe(1);
    await vi.waitFor(() => expect(inbox).toEqual([{ from: "ann", text: "hi", at: new Date(0) }]));
    expect(await http.sayToOthers("others")).toBe(1);
    expect(await http.post("p")).toBe(1);
    await rpcFailure(http.askMe("q?"), "NOT_CALLABLE");
  });

  it("subscribe over HTTP rejects NOT_FOUND (docs) rather than hanging", async () => {
    const room = uniqueName("sub");
    await using http = httpClient<Room>("ROOM", room, { query: { name: "ann" } });
    const sub = subscribe(http, "chat", () => {}, {});
    const error = await Promise.race([rejection(sub.ready), new Promise((r) => setTimeout(() => r("hang"), 3000))]);
    expect((error as RpcError).code).toBe("NOT_FOUND");
    sub.close();
  });

  it("JSON form through Room: identity from the query reaches the method", async () => {
    const room = uniqueName("json-room");
    const response = await SELF.fetch(`http://dorpc.test/__rpc/ROOM/${room}?name=zed`, {
      method: "POST",
      body: JSON.stringify([
        { method: "post", args: ["a"] },
        { method: "post", args: ["b"] },
      ]),
      headers: { "Content-Type": "application/json" },
    });
    expect(await response.json()).toEqual([{ result: 1 }, { result: 2 }]);
  });
});

describe("values over HTTP", () => {
  it("a Blob result comes back over httpTransport", async () => {
    await using client = httpClient<Counter>("COUNTER", uniqueName("blob"));
    const blob = new Blob(["hello"], { type: "text/plain" });
    const back = (await withCallOptions(client.echo(blob), { timeout: 3000 })) as Blob;
    expect(await back.text()).toBe("hello");
  });

  it("two Blob results and a plain one in one turn", async () => {
    await using client = httpClient<Counter>("COUNTER", uniqueName("blob2"));
    const [a, b, c] = await Promise.all([
      withCallOptions(client.echo(new Blob(["a"])), { timeout: 3000 }),
      withCallOptions(client.echo(new Blob(["bb"])), { timeout: 3000 }),
      withCallOptions(client.echo(3), { timeout: 3000 }),
    ]);
    expect(await (a as Blob).text()).toBe("a");
    expect(await (b as Blob).text()).toBe("bb");
    expect(c).toBe(3);
  });

  it("JSON form: a result holding a Set is ENCODE, the next call still answered", async () => {
    const response = await post(
      "COUNTER",
      uniqueName("json-bytes"),
      JSON.stringify([{ method: "users.get", args: ["a"] }, { method: "getValue" }]),
    );
    const body = (await response.json()) as { error?: { code: string }; result?: unknown }[];
    expect(body[0]!.error?.code).toBe("ENCODE");
    expect(body[1]).toEqual({ result: 0 });
  });

  it("JSON form: objects and nulls round-trip", async () => {
    const name = uniqueName("json-undef");
    const response = await post(
      "COUNTER",
      name,
      JSON.stringify([
        { method: "echo", args: [{ a: 1 }] },
        { method: "echo", args: [[null]] },
      ]),
    );
    expect(await response.json()).toEqual([{ result: { a: 1 } }, { result: [null] }]);
  });

  it("JSON form: methods reached through a getter", async () => {
    const response = await post(
      "COUNTER",
      uniqueName("json-paths"),
      JSON.stringify([{ method: "users.count" }, { method: "users.get", args: ["zz"] }]),
    );
    expect(await response.json()).toEqual([{ result: 2 }, { result: null }]);
  });
});

describe("withRpc and hand-composed objects over HTTP", () => {
  for (const binding of ["WRAPPED", "MANUAL"] as const) {
    it(`${binding}: calls, errors and the JSON form`, async () => {
      const name = uniqueName(binding);
      await using client = httpClient<{ bump(): number; fail(): never; greet(n: string): string }>(binding, name);
      expect(await client.bump()).toBe(1);
      expect(await Promise.all([client.bump(), client.bump()])).toEqual([2, 3]);
      const error = await rejection(client.fail());
      expect(error).toBeInstanceOf(RangeError);
      const response = await post(binding, name, JSON.stringify([{ method: "bump" }, { method: "greet", args: ["x"] }]));
      expect(((await response.json()) as { result: unknown }[]).map((a) => a.result)).toEqual([4, expect.stringMatching(/hello, x$/)]);
    });
  }
});

describe("rpcCaller() over HTTP", () => {
  it("rpcCaller() has no socket, a connection time and a signal", async () => {
    await using client = httpClient<Counter>("COUNTER", uniqueName("caller"));
    expect(await client.callerInfo()).toEqual({ socket: false, connectedAt: true, signal: true });
  });
});
