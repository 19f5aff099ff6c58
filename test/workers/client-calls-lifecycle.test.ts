/**
 * The object's calls to one client over the lives of the client and of the object: the client
 * leaving while the object awaits its answer (closed with 1000, 1001 or 4000; a dispose and a
 * cut are in push.test.ts and push-edges.test.ts), the client reconnecting (its old socket and
 * its new one), the object evicted while it awaits the client, a method awaiting a client's
 * callback when the connection is cut, and functions passed across (the object's to a client,
 * a client's to the object) used after the call that carried them returned, with and without
 * dup(), and after a reconnect. Room's callTimeout is 2 s and Composer's 30 s: an await that is
 * not ended by the event under test ends in TIMEOUT or hangs past the test's timeout, never in
 * the code these tests expect.
 */
import { rpcConnection, RpcError, withCallOptions } from "@dorpc/rpc";
import { rpcClient, rpcClients, rpcSocketInfo } from "@dorpc/rpc/server";
import { createTestClient, dropConnection, evictObject, runInObject, testConnection, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Composer } from "./compose-objects.js";
import type { Room, RoomClient } from "./push-objects.js";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";

type Keeper = { kept?: WebSocket };

/** A promise and the function that resolves it: lets a test wait until client code has run. */
function signal<T = void>() {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** The code of what `promise` rejected with, or its value. */
function outcome(promise: PromiseLike<unknown>): Promise<{ value: unknown } | { code: string }> {
  return Promise.resolve(promise).then(
    (value) => ({ value }),
    (error: unknown) => ({ code: RpcError.is(error) ? error.code : String(error) }),
  );
}

/** How many references the object holds for the client's (only) open socket. */
function socketCounts(client: Parameters<typeof runInObject>[0]) {
  return runInObject(client, (_obj, state) => {
    const info = rpcSocketInfo(state.getWebSockets().find((ws) => ws.readyState === WebSocket.OPEN)!);
    return { exports: info?.exports, imports: info?.imports };
  });
}

describe("a client that leaves while the object awaits its answer", () => {
  for (const code of [1000, 1001, 4000]) {
    it(`closed with ${code}: the object's await fails with DISCONNECTED`, async () => {
      const room = uniqueName(`leaves-${code}`);
      const asked = signal();
      using ann = createTestClient<Room>(env.ROOM, room, {
        query: { name: "ann" },
        expose: {
          confirm: () => {
            asked.resolve();
            return new Promise<boolean>(() => {});
          },
        },
      });
      using bob = createTestClient<Room>(env.ROOM, room, { query: { name: "bob" } });
      await ann.connected();
      const answers = bob.askOthers("still there?");
      await asked.promise; // ann is running the object's call
      dropConnection(ann, { code });
      expect(await answers).toEqual(["DISCONNECTED"]);
    });
  }

  it("a client that reconnected: calls through its old socket reject DISCONNECTED, through its new one are answered; a broadcast excepting the old socket reaches it", async () => {
    const heard: string[] = [];
    using client = createTestClient<Room>(env.ROOM, uniqueName("reconnected"), {
      query: { name: "ann" },
      expose: { confirm: (q: string) => q === "yes", message: (m: { text: string }) => void heard.push(m.text) },
    });
    await client.connected();
    await runInObject(client, (obj, state) => {
      (obj as unknown as Keeper).kept = state.getWebSockets()[0];
    });
    dropConnection(client);
    await waitForState(client, "open");
    await client.connected();
    const result = await runInObject(client, async (obj, state) => {
      const old = (obj as unknown as Keeper).kept!;
      const fresh = state.getWebSockets().find((ws) => ws !== old && ws.readyState === WebSocket.OPEN)!;
      return {
        viaOld: await outcome(rpcClient<RoomClient>(obj, old).confirm("yes")),
        viaNew: await outcome(rpcClient<RoomClient>(obj, fresh).confirm("yes")),
        reached: rpcClients<RoomClient>(obj, { except: old }).message({ from: "x", text: "to the new socket", at: new Date(0) }),
      };
    });
    expect(result).toEqual({ viaOld: { code: "DISCONNECTED" }, viaNew: { value: true }, reached: 1 });
    await vi.waitFor(() => expect(heard).toEqual(["to the new socket"]));
  });
});

describe("the object evicted while it awaits a client", () => {
  /** A client whose slow() runs until the test answers it, and the object's call to it, sent. */
  async function awaitedBy(webSockets: "hibernate" | "close") {
    const errors: unknown[] = [];
    const running = signal();
    const answer = signal<string>();
    const client = createTestClient<Room>(env.ROOM, uniqueName(`evicted-${webSockets}`), {
      query: { name: "ann" },
      expose: {
        slow: () => {
          running.resolve();
          return answer.promise;
        },
        confirm: (q: string) => q === "yes",
      },
      onError: (error) => errors.push(error),
    });
    await client.connected();
    // No timeout on the call (a person choosing): nothing keeps the object from being evicted.
    await runInObject(client, (obj, state) => {
      void withCallOptions(rpcClient<RoomClient>(obj, state.getWebSockets()[0]!).slow(0), { timeout: 0 }).catch(() => {});
    });
    await running.promise;
    await evictObject(client, { webSockets });
    answer.resolve("late"); // the answer to the evicted instance's call
    return { client, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
  }

  it("hibernation: the client's late answer reaches the new instance, which ignores it; the connection stays and the next call is answered", async () => {
    using t = await awaitedBy("hibernate");
    // Sent after the late answer on the same socket: the object has read that answer by now.
    expect(await t.client.askMe("yes")).toBe(true);
    expect(t.errors).toEqual([]);
    expect(testConnection(t.client).attempts).toHaveLength(1);
    expect(rpcConnection(t.client).state).toBe("open");
    expect(await runInObject(t.client, (_obj, state) => rpcSocketInfo(state.getWebSockets()[0]!)?.waiting)).toBe(0);
  });

  it("sockets closed: the client's late answer is dropped quietly; it reconnects and answers the object's next call", async () => {
    using t = await awaitedBy("close");
    expect(await t.client.askMe("yes")).toBe(true);
    expect(t.errors).toEqual([]);
    expect(testConnection(t.client).attempts.length).toBeGreaterThan(1);
  });
});

describe("a method awaiting a client's callback when the connection is cut", () => {
  it("the callback's await fails with DISCONNECTED, the resent call is answered with that error, and the new connection holds nothing", async () => {
    using client = createTestClient<Composer>(env.COMPOSER, uniqueName("callback-cut"));
    await client.frames();
    const called = signal();
    const seen: number[] = [];
    const call = client.callBack((n: number) => {
      seen.push(n);
      called.resolve();
      return new Promise<number>(() => {}); // never answers: the object awaits it at the cut
    }, 3);
    await called.promise;
    dropConnection(client);
    const error = await rpcFailure(call, "DISCONNECTED");
    expect(error.message).toContain("4006");
    expect(seen).toEqual([0]);
    await waitForState(client, "open");
    expect(await client.info()).toMatchObject({ imports: 0, exports: 0 });
  });
});

describe("the object's functions passed to a client", () => {
  type Fn = ((x: number) => Promise<number>) & { dup(): Fn; [Symbol.dispose](): void };
  type Holder = {
    use(fn: (x: number) => number): number;
    keep(fn: (x: number) => number): number;
    keepDup(fn: (x: number) => number): number;
  };

  /** A client that uses, keeps, or dups the function the object passes; `ran` lists the object's runs of it. */
  async function holder() {
    const ran: number[] = [];
    let kept: Fn | undefined;
    const client = createTestClient<Room>(env.ROOM, uniqueName("object-fn"), {
      query: { name: "ann" },
      expose: {
        use: async (fn: Fn) => (await fn(2)) + (await fn(3)),
        keep: (fn: Fn) => ((kept = fn), 1),
        keepDup: (fn: Fn) => ((kept = fn.dup()), 1),
      },
    });
    await client.connected();
    /** Has the object call `method` with a function of its own; resolves with the client's answer. */
    const pass = (method: keyof Holder) =>
      runInObject(client, (obj, state) => rpcClient<Holder>(obj, state.getWebSockets()[0]!)[method]((x: number) => (ran.push(x), x * 10)));
    return { client, ran, pass, kept: () => kept!, [Symbol.dispose]: () => client[Symbol.dispose]() };
  }

  it("called by the client during the call: answered, and released when the call returns", async () => {
    using h = await holder();
    expect(await h.pass("use")).toBe(50);
    expect(h.ran).toEqual([2, 3]);
    await vi.waitFor(async () => expect((await socketCounts(h.client)).exports).toBe(0));
  });

  it("kept without dup(): called after the call returned, it rejects RELEASED and the object's function does not run", async () => {
    using h = await holder();
    expect(await h.pass("keep")).toBe(1);
    await rpcFailure(h.kept()(1), "RELEASED");
    await vi.waitFor(async () => expect((await socketCounts(h.client)).exports).toBe(0));
    expect(h.ran).toEqual([]);
  });

  it("kept with dup(): it works after the call returned; the object's export stays until the client disposes it", async () => {
    using h = await holder();
    expect(await h.pass("keepDup")).toBe(1);
    expect(await h.kept()(4)).toBe(40);
    expect((await socketCounts(h.client)).exports).toBe(1);
    h.kept()[Symbol.dispose]();
    await vi.waitFor(async () => expect((await socketCounts(h.client)).exports).toBe(0));
    expect(h.ran).toEqual([4]);
  });

  it("kept with dup() across a reconnect: it rejects REFERENCE_LOST without being sent; the new socket holds no export", async () => {
    using h = await holder();
    expect(await h.pass("keepDup")).toBe(1);
    dropConnection(h.client);
    await waitForState(h.client, "open");
    await rpcFailure(h.kept()(5), "REFERENCE_LOST");
    expect((await socketCounts(h.client)).exports).toBe(0);
    expect(h.ran).toEqual([]);
  });
});

describe("a client's function kept by the object (dup) after the client reconnected", () => {
  it("the object's call to it fails with DISCONNECTED or REFERENCE_LOST; the new connection holds no import", async () => {
    using client = createTestClient<Composer>(env.COMPOSER, uniqueName("listener-reconnect"));
    const events: string[] = [];
    await client.listen((event) => events.push(event));
    expect(await client.emit("before")).toBe(1);
    dropConnection(client);
    await waitForState(client, "open");
    const error = await rejection(client.emit("after"));
    expect(RpcError.is(error) && ["DISCONNECTED", "REFERENCE_LOST"].includes(error.code)).toBe(true);
    expect(events).toEqual(["before"]);
    expect((await client.info())!.imports).toBe(0);
    await client.unlisten();
  });
});
