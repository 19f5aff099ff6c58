/**
 * The caller's own functions and RpcTargets on the object: which stub each call gets, how long
 * it lives, and what a pipelined argument naming one receives (unit tier, paired transport, the
 * real dispatcher). docs/api.md (RpcStub) and docs/protocol.md (import table): as an argument,
 * each call gets a holder of its own, one stub however often it appears in that call, released
 * when the call ends; in replies the same import is the same stub.
 *  - `invoke(echo(fn), 5)` in one frame failed: the dependent call was handed the echo call's
 *    own holder, released when that call ended. It now gets a holder of its own, and both
 *    tables end empty.
 *  - A stub that was released, met in a result, was refused ENCODE saying it came over another
 *    connection; it is RELEASED now, saying it was released.
 *  - Two calls' stubs of one function are not `===` (the docs said they were); each call's
 *    holder outlives the other call's end.
 */
import { describe, expect, it } from "vitest";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import { createRpcClient, RpcError, RpcTarget } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

type Cb = ((...args: unknown[]) => unknown) & Disposable & { dup(): Cb };
type Selfish = { self(): Promise<unknown> } & Disposable;

class Api {
  held: Cb | undefined;
  kept: Cb | undefined;
  releaseHold: (() => void) | undefined;
  echo<T>(v: T): T {
    return v;
  }
  wrap(cb: Cb): { inner: { cb: Cb } } {
    return { inner: { cb } };
  }
  async invoke(cb: Cb, x: unknown): Promise<unknown> {
    return await cb(x);
  }
  /** Holds `cb` (its own holder) until `finish()`, then calls it. */
  async hold(cb: Cb): Promise<unknown> {
    this.held = cb;
    await new Promise<void>((r) => (this.releaseHold = r));
    return await cb("after");
  }
  isHeld(cb: Cb): boolean {
    return cb === this.held;
  }
  finish(): void {
    this.releaseHold?.();
  }
  same(a: unknown, b: unknown): boolean {
    return a === b;
  }
  /** Asks the caller's target for itself twice: what the replies give, against the argument. */
  async selves(t: Selfish): Promise<{ acrossReplies: boolean; asArgument: boolean }> {
    const first = (await t.self()) as Selfish;
    const second = await t.self();
    const seen = { acrossReplies: first === second, asArgument: first === t };
    first[Symbol.dispose]();
    return seen;
  }
  keep(cb: Cb): void {
    this.kept = cb.dup();
  }
  forget(): void {
    this.kept![Symbol.dispose]();
  }
  giveBack(): unknown {
    return this.kept;
  }
}

class Mine extends RpcTarget {
  self(): Mine {
    return this;
  }
}

function setup() {
  const paired = pairWith(new Api());
  const client = createRpcClient<Api>("API", "own-references", {
    transport: paired.factory,
    reconnect: { initialDelay: 1, maxDelay: 5 },
  });
  const session = getRpcSession(client);
  const connection = () => paired.connections[0]!;
  /** What each end still holds: the object's imports, the client's exports. */
  const held = async () => {
    await settle();
    return { imports: connection().server()!.imports.size, exports: session.exports.size };
  };
  /** The frames of calls the client sent (the client's replies to the object are left out). */
  const callFrames = () => connection().sentByClient.filter((f) => typeof f === "string" && f.startsWith("\u001eC"));
  return { client, callFrames, held };
}

function outcome(p: PromiseLike<unknown>): Promise<unknown> {
  return Promise.resolve(p).then(
    (value) => ({ value }),
    (e: unknown) => ({ code: RpcError.is(e) ? e.code : String(e), message: (e as Error).message }),
  );
}

const plusOne = (x: unknown) => (x as number) + 1;

describe("a pipelined argument that is the caller's own function", () => {
  it("invoke(echo(fn), 5) in one frame runs fn, as the round trip does; both ends hold nothing after", async () => {
    const { client, callFrames, held } = setup();
    using _ = client;
    const r = await outcome(client.invoke(client.echo(plusOne) as never, 5));
    expect(callFrames(), "the two calls were not sent in one frame").toHaveLength(1);
    expect(r, "the dependent call got the echo call's own holder, released when that call ended").toEqual({ value: 6 });
    expect(await held()).toEqual({ imports: 0, exports: 0 });
  });

  it("through a path, invoke(wrap(fn).inner.cb, 5) in one frame: the same", async () => {
    const { client, callFrames, held } = setup();
    using _ = client;
    const r = await outcome(client.invoke(client.wrap(plusOne as never).inner.cb as never, 5));
    expect(callFrames()).toHaveLength(1);
    expect(r, "the dependent call got the wrap call's own holder, released when that call ended").toEqual({ value: 6 });
    expect(await held()).toEqual({ imports: 0, exports: 0 });
  });

  it("the same function pipelined into three calls of one frame: each runs it; both ends hold nothing after", async () => {
    const { client, held } = setup();
    using _ = client;
    const echoed = client.echo(plusOne);
    const rs = await Promise.all([1, 2, 3].map((x) => outcome(client.invoke(echoed as never, x))));
    expect(rs).toEqual([{ value: 2 }, { value: 3 }, { value: 4 }]);
    expect(await held()).toEqual({ imports: 0, exports: 0 });
  });
});

describe("which stub a call gets for the caller's function", () => {
  it("two concurrent calls get stubs of their own (not ===); the second call's end does not release the first's", async () => {
    const { client, held } = setup();
    using _ = client;
    let runs = 0;
    const fn = (x: unknown) => ((runs += 1), x);
    const holding = outcome(client.hold(fn as never));
    expect(await client.isHeld(fn as never), "two calls' stubs of one function are each call's own holder").toBe(false);
    await client.finish();
    expect(await holding, "the other call's end released the held call's stub").toEqual({ value: "after" });
    expect(runs).toBe(1);
    expect(await held()).toEqual({ imports: 0, exports: 0 });
  });

  it("the same function twice in one call is one stub", async () => {
    const { client } = setup();
    using _ = client;
    const fn = () => 1;
    expect(await client.same(fn, fn)).toBe(true);
  });

  it("the caller's RpcTarget returned by itself twice: the same stub across replies, not the argument's; disposed, nothing is held", async () => {
    const { client, held } = setup();
    using _ = client;
    expect(await client.selves(new Mine() as never)).toEqual({ acrossReplies: true, asArgument: false });
    expect(await held(), "the reply's stub was not released when the method disposed it").toEqual({ imports: 0, exports: 0 });
  });
});

describe("a released stub of the caller's, met in a result", () => {
  it("a function the object kept with dup() and disposed, returned: RELEASED, saying it was released", async () => {
    const { client, held } = setup();
    using _ = client;
    await client.keep((() => 1) as never);
    await client.forget();
    const r = (await outcome(client.giveBack())) as { code: string; message: string };
    expect(r.message, "refused as a stub of another connection").not.toMatch(/another connection|connection it came from/);
    expect(r.code).toBe("RELEASED");
    expect(r.message).toMatch(/released/);
    expect(await held()).toEqual({ imports: 0, exports: 0 });
  });
});
