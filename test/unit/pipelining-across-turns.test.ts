/**
 * A pipelined argument naming the caller's own function, echoed by an earlier call of the same
 * frame, when an async call sits between the two (unit tier, paired transport, the real
 * dispatcher). The async call makes the dependent start in a later event (call-turns.ts); the
 * echo call has ended by then. `[echo(fn), tick(), invoke(echo result, 5)]` failed RELEASED: the
 * echo call's borrowed stub of `fn` was released when it ended, before the dependent built its
 * arguments. A call's borrowed stubs are now kept until every later call of its frame that
 * pipelines on it has built its arguments or settled without running (borrowed-stubs.ts),
 * under both orderings. Also checked: both ends' tables (the object's imports, the client's
 * exports) end empty when the dependent fails, is cancelled before it starts, or its dependency
 * fails.
 */
import { describe, expect, it, vi } from "vitest";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import { createRpcClient, RpcError, withCallOptions } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";

type Cb = ((...args: unknown[]) => unknown) & Disposable;

class Api {
  log: string[] = [];
  /** Opens the pending `gate()` calls, in order. */
  gates: (() => void)[] = [];
  echo<T>(v: T): T {
    this.log.push("echo");
    return v;
  }
  async invoke(cb: Cb, x: unknown): Promise<unknown> {
    this.log.push("invoke");
    return await cb(x);
  }
  /** Goes async on a timer. */
  async tick(): Promise<string> {
    this.log.push("tick");
    await new Promise((r) => setTimeout(r, 5));
    return "ticked";
  }
  /** Goes async for one microtask. */
  async micro(): Promise<string> {
    this.log.push("micro");
    await Promise.resolve();
    return "micro";
  }
  /** Waits until the test opens it. */
  gate(): Promise<string> {
    this.log.push("gate");
    return new Promise((resolve) => this.gates.push(() => resolve("opened")));
  }
  /** Takes the caller's function (a borrowed stub) and fails. */
  refuse(_cb: Cb): never {
    this.log.push("refuse");
    throw new Error("refused");
  }
}

const orderings = ["concurrent", "sequential"] as const;

function setup(ordering: (typeof orderings)[number]) {
  const api = new Api();
  const paired = pairWith(api, { ordering });
  const client = createRpcClient<Api>("API", `across-turns-${ordering}`, {
    transport: paired.factory,
    reconnect: { initialDelay: 1, maxDelay: 5 },
    // A dependent that fails may do so before the test awaits it.
    onError: () => {},
  });
  const session = getRpcSession(client);
  const connection = () => paired.connections[0]!;
  /** Waits until neither end holds anything: the object's imports, the client's exports. */
  const tablesEmpty = () =>
    vi.waitFor(() =>
      expect({ imports: connection().server()!.imports.size, exports: session.exports.size }).toEqual({ imports: 0, exports: 0 }),
    );
  /** The frames of calls the client sent (the client's replies to the object are left out). */
  const callFrames = () => connection().sentByClient.filter((f) => typeof f === "string" && f.startsWith("\u001eC"));
  return { api, client, connection, tablesEmpty, callFrames };
}

function outcome(p: PromiseLike<unknown>): Promise<unknown> {
  return Promise.resolve(p).then(
    (value) => ({ value }),
    (e: unknown) => ({ code: RpcError.is(e) ? e.code : String(e), message: (e as Error).message }),
  );
}

const plusOne = (x: unknown) => (x as number) + 1;

describe("a pipelined own function with an async call between the echo and the dependent", () => {
  const cases = orderings.flatMap((ordering) =>
    (["tick", "micro"] as const).map((between) => ({ ordering, between, answer: between === "tick" ? "ticked" : "micro" })),
  );

  it.each(cases)(
    "$ordering ordering, [echo(fn), $between(), invoke(echo result, 5)] in one frame: fn runs, both ends hold nothing after",
    async ({ ordering, between, answer }) => {
      const { api, client, tablesEmpty, callFrames } = setup(ordering);
      using _ = client;
      const echoed = client.echo(plusOne);
      const middle = outcome(client[between]());
      const r = outcome(client.invoke(echoed as never, 5));
      expect(await middle).toEqual({ value: answer });
      expect(await r, "the echo call's stub of fn was released before the dependent built its arguments").toEqual({ value: 6 });
      expect(callFrames(), "the three calls were not sent in one frame").toHaveLength(1);
      expect(api.log).toEqual(["echo", between, "invoke"]);
      await tablesEmpty();
    },
  );
});

describe("both ends hold nothing after the calls of such a frame end without the dependent succeeding", () => {
  it.each(orderings)("%s ordering: the dependent fails (fn throws)", async (ordering) => {
    const { api, client, tablesEmpty } = setup(ordering);
    using _ = client;
    const echoed = client.echo(() => {
      throw new Error("boom");
    });
    const middle = outcome(client.tick());
    const r = outcome(client.invoke(echoed as never, 5));
    expect(await middle).toEqual({ value: "ticked" });
    expect(await r).toMatchObject({ message: expect.stringContaining("boom") });
    expect(api.log).toEqual(["echo", "tick", "invoke"]);
    await tablesEmpty();
  });

  it.each(orderings)("%s ordering: the dependent is cancelled before it starts", async (ordering) => {
    const { api, client, connection, tablesEmpty } = setup(ordering);
    using _ = client;
    expect(await client.echo(0)).toBe(0); // connected
    const conn = connection();
    conn.hold = true;
    const controller = new AbortController();
    const echoed = client.echo(plusOne);
    const middle = outcome(client.gate());
    const r = outcome(withCallOptions(client.invoke(echoed as never, 5), { signal: controller.signal }));
    await vi.waitFor(() => expect(conn.held, "the call frame").toHaveLength(1));
    controller.abort(new Error("given up"));
    await vi.waitFor(() => expect(conn.held, "the cancel frame").toHaveLength(2));
    // Both frames arrive before the dependent's turn: behind the gate (sequential), or in the
    // same timer phase as the call frame, before the next event (concurrent).
    conn.release();
    expect(await r).toEqual({ code: "Error: given up", message: "given up" });
    await vi.waitFor(() => expect(api.gates).toHaveLength(1));
    api.gates[0]!();
    expect(await middle).toEqual({ value: "opened" });
    expect(api.log, "the cancelled dependent ran").toEqual(["echo", "echo", "gate"]);
    await tablesEmpty();
  });

  it.each(orderings)("%s ordering: the dependency fails (it took fn, then threw)", async (ordering) => {
    const { api, client, tablesEmpty } = setup(ordering);
    using _ = client;
    const refused = client.refuse(plusOne as never);
    const first = outcome(refused);
    const middle = outcome(client.tick());
    const r = outcome(client.invoke(refused as never, 5));
    expect(await first).toMatchObject({ message: "refused" });
    expect(await middle).toEqual({ value: "ticked" });
    expect(await r, "the dependent settles with its dependency's error").toMatchObject({ message: "refused" });
    expect(api.log, "the dependent ran").toEqual(["refuse", "tick"]);
    await tablesEmpty();
  });
});
