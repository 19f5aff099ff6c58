/**
 * Reference counting of one client function across many calls at once and across a resend
 * (unit tier, paired transport, the real dispatcher). docs/protocol.md ("Counting"): every
 * EXPORT record a frame carries is one more reference, released when the receiver lets go, also
 * for a call its caller gave up or the receiver never ran. Checked here: one function in 60
 * concurrent calls, some timing out while the object awaits it, some refused, some keeping a
 * dup(), ends with both tables empty once the dups are disposed, and still works; and a call
 * carrying a function, cut while its first run still runs, whose resend waits for that run and
 * is answered from the delivery record, leaves nothing held on either end.
 */
import { describe, expect, it, vi } from "vitest";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { createRpcClient, RpcError, withCallOptions } from "../../packages/rpc/src/index.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";
import { pairWith } from "../support/paired-transport.js";

type Cb = ((...args: unknown[]) => unknown) & Disposable & { dup(): Cb };

class Api {
  kept: Cb[] = [];
  runs = 0;
  gates: (() => void)[] = [];
  async invoke(cb: Cb, x: number): Promise<unknown> {
    return await cb(x);
  }
  /** Keeps a dup() of `cb`, then calls it through the argument and through the dup. */
  async invokeTwiceKeep(cb: Cb, x: number): Promise<unknown> {
    const d = cb.dup();
    this.kept.push(d);
    await cb(x);
    return await d(x);
  }
  dropAll(): void {
    for (const k of this.kept.splice(0)) k[Symbol.dispose]();
  }
  /** Never reachable from a client (a `_` name): the call is refused NOT_FOUND before it runs. */
  _hidden(_cb: Cb): void {}
  /** Takes a function and returns once `gates[i]()` is called. */
  async takeSlow(_cb: Cb): Promise<string> {
    this.runs++;
    await new Promise<void>((r) => this.gates.push(r));
    return "slow";
  }
  ping(): string {
    return "pong";
  }
}

type Loose = { _hidden(f: unknown): Promise<unknown> };

function code(p: PromiseLike<unknown>): Promise<unknown> {
  return Promise.resolve(p).catch((e: unknown) => (RpcError.is(e) ? e.code : String(e)));
}

describe("one function in many concurrent calls", () => {
  it("60 calls: 20 timing out while the object awaits it, 20 keeping a dup(), 20 refused; after dropAll both ends hold nothing, and it still works", async () => {
    const api = new Api();
    const paired = pairWith(api);
    using client = createRpcClient<Api>("API", "counting-load", { transport: paired.factory, reconnect: { initialDelay: 1, maxDelay: 5 } });
    const session = getRpcSession(client);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let gated = true;
    const fn = async (x: unknown) => {
      if (gated) await gate;
      return x;
    };
    const timedOut: Promise<unknown>[] = [];
    const kept: Promise<unknown>[] = [];
    const refused: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      if (i % 3 === 0) timedOut.push(code(withCallOptions(client.invoke(fn as never, i), { timeout: 5 })));
      else if (i % 3 === 1) kept.push(client.invokeTwiceKeep(fn as never, i));
      else refused.push(code((client as unknown as Loose)._hidden(fn)));
    }
    // The object awaits every call of fn until the gate opens: these gave up meanwhile.
    expect(await Promise.all(timedOut)).toEqual(Array(20).fill("TIMEOUT"));
    expect(await Promise.all(refused)).toEqual(Array(20).fill("NOT_FOUND"));
    gated = false;
    open();
    expect(await Promise.all(kept)).toEqual(Array.from({ length: 20 }, (_, i) => 3 * i + 1));
    const server = paired.connections[0]!.server()!;
    // Only the 20 dups are held now: one import on the object, one export on the client.
    await vi.waitFor(() =>
      expect({ imports: server.imports.size, exports: session.exports.size, running: server.callee.size }).toEqual({
        imports: 1,
        exports: 1,
        running: 0,
      }),
    );
    await client.dropAll();
    await vi.waitFor(() => expect({ imports: server.imports.size, exports: session.exports.size }).toEqual({ imports: 0, exports: 0 }));
    expect(await client.invoke(fn as never, 9)).toBe(9);
  });
});

describe("a call carrying a function, cut while its first run still runs", () => {
  it("the resend waits for that run and gets its answer, the method runs once, and neither end holds the function after", async () => {
    const sql = nodeSql();
    const watch = watchWrites({ sql });
    const records = new DeliveryRecord(watch.sql, resolveDelivery({})!, watch);
    const api = new Api();
    const paired = pairWith(api, undefined, { records });
    using client = createRpcClient<Api>("A", "counting-resend", {
      transport: paired.factory,
      heartbeat: false,
      timeout: 0,
      reconnect: { initialDelay: 0, maxDelay: 0, jitter: 0 },
    });
    const session = getRpcSession(client);
    expect(await client.ping()).toBe("pong");
    const answer = client.takeSlow((() => 1) as never);
    await vi.waitFor(() => expect(api.runs).toBe(1));
    paired.connections[0]!.cut();
    // The resend reached the object over the next connection, while the first run still waits.
    await vi.waitFor(() => expect(paired.connections[1]?.sentByClient.some((f) => String(f).includes("takeSlow"))).toBe(true));
    api.gates[0]!();
    expect(await answer).toBe("slow");
    expect(api.runs).toBe(1);
    const server = paired.connections[1]!.server()!;
    await vi.waitFor(() =>
      expect(
        { exports: session.exports.size, imports: server.imports.size },
        "the function the resend carried was kept counted: the record's answer did not release it",
      ).toEqual({ exports: 0, imports: 0 }),
    );
  });
});
