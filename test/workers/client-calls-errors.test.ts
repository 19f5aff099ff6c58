/**
 * How the object's calls to a client fail, and what the object sees then: per-call options
 * (`withCallOptions` timeout, an AbortSignal, an already-aborted signal), what the client's
 * exposed code throws (rebuilt on the object as docs/api.md, "Thrown values", says), an answer
 * the client cannot send, and more calls than the client's or the object's
 * `limits.maxPendingCalls` (docs/protocol.md: a client refuses a frame of more calls than its
 * limit with 4008, and a call past it with LIMIT).
 */
import { rpcConnection, RpcError, withCallOptions } from "@dorpc/rpc";
import { rpcClient, rpcSocketInfo } from "@dorpc/rpc/server";
import { createTestClient, runInObject, testConnection, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Room } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

/** What the object saw of its call: the value, or what was thrown, described field by field. */
type Seen = {
  value?: unknown;
  code?: string;
  name?: string;
  /** The rebuilt error's class. */
  ctor?: string;
  message?: string;
  isRpc?: boolean;
  isError?: boolean;
  cause?: unknown;
  thrown?: unknown;
};

function seen(promise: PromiseLike<unknown>): Promise<Seen> {
  return Promise.resolve(promise).then(
    (value) => ({ value }),
    (e: unknown) =>
      e instanceof Error
        ? {
            code: (e as { code?: string }).code,
            name: e.name,
            ctor: e.constructor.name,
            message: e.message,
            isRpc: RpcError.is(e),
            isError: true,
            cause: e.cause,
          }
        : { thrown: e, isError: false },
  );
}

/** Tallies settled calls by outcome: "ok" or the RpcError code. */
function tally(results: PromiseSettledResult<unknown>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const key = r.status === "fulfilled" ? "ok" : RpcError.is(r.reason) ? r.reason.code : String(r.reason);
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** A client of a new Room exposing `expose`; `errors` collects what it reports to onError. */
async function clientExposing(label: string, expose: object, limits?: { maxPendingCalls: number }) {
  const errors: unknown[] = [];
  const client = createTestClient<Room>(env.ROOM, uniqueName(label), {
    query: { name: "ann" },
    expose,
    limits,
    onError: (e) => errors.push(e),
  });
  await client.connected();
  return { client, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** What the clients of the per-call options tests expose. */
type Waiter = { wait(): Promise<never>; count(q: string): boolean };

describe("per-call options on the object's calls to a client", () => {
  const expose = (asked: string[]) => ({
    wait: () => new Promise<never>(() => {}),
    count: (q: string) => (asked.push(q), true),
    confirm: () => true,
  });

  it("withCallOptions timeout: the call rejects TIMEOUT naming it, nothing stays waiting, the connection goes on", async () => {
    using t = await clientExposing("timeout", expose([]));
    const result = await runInObject(t.client, async (obj, state) => {
      const ws = state.getWebSockets()[0]!;
      const r = await seen(withCallOptions(rpcClient<Waiter>(obj, ws).wait(), { timeout: 50 }));
      return { ...r, waiting: rpcSocketInfo(ws)?.waiting };
    });
    expect(result).toMatchObject({ code: "TIMEOUT", isRpc: true, waiting: 0 });
    expect(result.message).toContain("50 ms");
    expect(await t.client.askMe("still?")).toBe(true);
    expect(t.errors).toEqual([]);
  });

  it("an AbortSignal aborted while the call runs on the client: it rejects with the signal's reason, nothing stays waiting", async () => {
    using t = await clientExposing("abort", expose([]));
    const result = await runInObject(t.client, async (obj, state) => {
      const ws = state.getWebSockets()[0]!;
      const controller = new AbortController();
      const call = seen(withCallOptions(rpcClient<Waiter>(obj, ws).wait(), { signal: controller.signal }));
      await rpcClient<Waiter>(obj, ws).count("sent after"); // a round trip: the call is on the client now
      controller.abort("stop it");
      return { ...(await call), waiting: rpcSocketInfo(ws)?.waiting };
    });
    expect(result).toEqual({ thrown: "stop it", isError: false, waiting: 0 });
    expect(await t.client.askMe("still?")).toBe(true);
  });

  it("an already-aborted signal: the call rejects with its reason and is never sent", async () => {
    const asked: string[] = [];
    using t = await clientExposing("aborted", expose(asked));
    const result = await runInObject(t.client, (obj, state) =>
      seen(withCallOptions(rpcClient<Waiter>(obj, state.getWebSockets()[0]!).count("aborted"), { signal: AbortSignal.abort("no") })),
    );
    expect(result).toEqual({ thrown: "no", isError: false });
    await runInObject(t.client, (obj, state) => rpcClient<Waiter>(obj, state.getWebSockets()[0]!).count("after"));
    expect(asked).toEqual(["after"]);
  });
});

describe("what the client's exposed code throws, as the object sees it", () => {
  class QuotaExceededError extends Error {}
  const throwing = (value: unknown) => () => {
    throw value;
  };
  const rejecting = (value: unknown) => () => Promise.reject(value);
  const cases: [string, () => unknown, Seen][] = [
    ["an RpcError keeps its code", throwing(new RpcError("LIMIT", "too much")), { code: "LIMIT", isRpc: true, message: "too much" }],
    ["an Error", throwing(new Error("plain")), { name: "Error", ctor: "Error", message: "plain", isRpc: false }],
    ["a TypeError is rebuilt as a TypeError", throwing(new TypeError("typed")), { name: "TypeError", ctor: "TypeError", message: "typed" }],
    [
      "a subclass arrives as an Error with its class name",
      throwing(new QuotaExceededError("mine")),
      { name: "QuotaExceededError", ctor: "Error", message: "mine" },
    ],
    [
      "an error keeps a code property",
      throwing(Object.assign(new Error("c"), { code: "E42" })),
      { code: "E42", message: "c", isRpc: false },
    ],
    ["a rejection with a RangeError", rejecting(new RangeError("r")), { name: "RangeError", ctor: "RangeError", message: "r" }],
    [
      "an error's cause is kept",
      throwing(new Error("outer", { cause: new Error("inner") })),
      { message: "outer", cause: new Error("inner") },
    ],
    [
      "an error whose cause cannot be sent keeps name and message",
      throwing(new Error("x", { cause: new (class Handle {})() })),
      { name: "Error", message: "x", cause: undefined },
    ],
    ["a string arrives as that value", throwing("str"), { thrown: "str", isError: false }],
    ["a number arrives as that value", throwing(7), { thrown: 7 }],
    ["null arrives as null", throwing(null), { thrown: null }],
    ["undefined arrives as undefined", throwing(undefined), { thrown: undefined, isError: false }],
    ["a plain object arrives as that value", throwing({ a: 1 }), { thrown: { a: 1 } }],
    ["a rejection with undefined", rejecting(undefined), { thrown: undefined, isError: false }],
  ];
  for (const [label, fail, expected] of cases) {
    it(label, async () => {
      using t = await clientExposing("throws", { fail });
      const result = await runInObject(t.client, (obj, state) =>
        seen(rpcClient<{ fail(): unknown }>(obj, state.getWebSockets()[0]!).fail()),
      );
      expect(result).toMatchObject(expected);
    });
  }

  it("a thrown value that cannot be sent (a function) still arrives as an error; the connection goes on", async () => {
    using t = await clientExposing("throws-fn", {
      fail: () => {
        throw () => 1;
      },
      confirm: () => true,
    });
    const result = await runInObject(t.client, (obj, state) => seen(rpcClient<{ fail(): unknown }>(obj, state.getWebSockets()[0]!).fail()));
    expect(result.isError).toBe(true);
    expect(await t.client.askMe("still?")).toBe(true);
    expect(testConnection(t.client).attempts).toHaveLength(1);
  });
});

describe("answers the client cannot send", () => {
  it("a class instance: the object's call rejects ENCODE; a Blob answer arrives with its bytes", async () => {
    class Handle {}
    using t = await clientExposing("answers", { bad: () => new Handle(), blob: () => new Blob(["abc"]) });
    const result = await runInObject(t.client, async (obj, state) => {
      const client = rpcClient<{ bad(): unknown; blob(): Blob }>(obj, state.getWebSockets()[0]!);
      const bad = await seen(client.bad());
      const blob = await client.blob();
      return { bad: bad.code, blob: blob instanceof Blob ? await blob.text() : typeof blob };
    });
    expect(result).toEqual({ bad: "ENCODE", blob: "abc" });
  });
});

describe("more of the object's calls than maxPendingCalls", () => {
  type Slow = { slow(i: number): Promise<string>; confirm(q: string): boolean };
  type Tallied = { tallied?: Promise<Record<string, number>> };
  /** A client with maxPendingCalls 4 whose slow() calls run until `release()` answers them all. */
  async function busyClient(label: string) {
    const waiting: (() => void)[] = [];
    let running = 0;
    const t = await clientExposing(
      label,
      {
        slow: (i: number) => (running++, new Promise<string>((r) => waiting.push(() => r(`s${i}`)))),
        confirm: () => true,
      },
      { maxPendingCalls: 4 },
    );
    return {
      ...t,
      running: () => running,
      release: () => {
        for (const answer of waiting.splice(0)) answer();
      },
    };
  }

  it("calls made one by one past the client's limit are refused with LIMIT; those within it are answered", async () => {
    using t = await busyClient("limit-turns");
    await runInObject(t.client, async (obj, state) => {
      const client = rpcClient<Slow>(obj, state.getWebSockets()[0]!);
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < 10; i++) {
        calls.push(client.slow(i));
        calls[i]!.catch(() => {}); // tallied below: not reported as unawaited
        await new Promise((r) => setTimeout(r, 0)); // each call in its own frame
      }
      const all = Promise.allSettled(calls).then(tally);
      (obj as unknown as Tallied).tallied = all;
      // The 6 refused ones are answered while the first 4 still run.
      await Promise.allSettled(calls.slice(4));
    });
    expect(t.running()).toBe(4);
    t.release();
    expect(await runInObject(t.client, (obj) => (obj as unknown as Tallied).tallied)).toEqual({ ok: 4, LIMIT: 6 });
    expect(testConnection(t.client).attempts).toHaveLength(1);
  });

  it("more calls in one frame than the client's limit: the client closes 4008, each call rejects DISCONNECTED naming the limit, and it reconnects", async () => {
    using t = await busyClient("limit-frame");
    const results = await runInObject(t.client, async (obj, state) => {
      const client = rpcClient<Slow>(obj, state.getWebSockets()[0]!);
      return Promise.allSettled(Array.from({ length: 10 }, (_, i) => client.slow(i)));
    });
    expect(tally(results)).toEqual({ DISCONNECTED: 10 });
    expect(String((results[0] as PromiseRejectedResult).reason.message)).toContain("limits.maxPendingCalls (4)");
    expect(t.running()).toBe(0);
    await waitForState(t.client, "open");
    expect(await t.client.askMe("still?")).toBe(true);
    expect(rpcConnection(t.client).state).toBe("open");
    expect(t.errors).toEqual([]);
  });

  it("past the object's own limit (1,024 calls waiting on one socket): LIMIT at once on the object, the others answered", {
    timeout: 20_000,
  }, async () => {
    using t = await clientExposing("limit-object", { confirm: () => true }, { maxPendingCalls: 2_000 });
    const result = await runInObject(t.client, async (obj, state) => {
      const ws = state.getWebSockets()[0]!;
      const client = rpcClient<Slow>(obj, ws);
      const out = tally(await Promise.allSettled(Array.from({ length: 1_030 }, () => client.confirm("q"))));
      return { out, waiting: rpcSocketInfo(ws)?.waiting };
    });
    expect(result).toEqual({ out: { ok: 1_024, LIMIT: 6 }, waiting: 0 });
  });
});
