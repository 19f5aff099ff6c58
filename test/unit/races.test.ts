/**
 * Awkward orderings: dispose from inside user code the client is running (argument getters,
 * client-side schemas, state listeners), timeouts and aborts while a resend waits for the
 * reconnect, and cancellation of a call whose original run outlived its connection.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, getRpcSession, rpcConnection, withCallOptions } from "../../packages/rpc/src/client.js";
import { currentCall } from "../../packages/rpc/src/current-call.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import type { ConnectionState } from "../../packages/rpc/src/session.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { faulty } from "../reliability/fault-transport.js";
import { nodeSql } from "../support/node-sql.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, expectRpcError, rejectionOf, settle } from "./helpers.js";

class Api {
  gates: (() => void)[] = [];
  /** The rpcCaller().signal of every untilCancelled() run. */
  signals: AbortSignal[] = [];
  echo<T>(v: T): T {
    return v;
  }
  hold(): Promise<string> {
    return new Promise((resolve) => this.gates.push(() => resolve("held")));
  }
  /** A long job that honours cancellation: runs until its rpcCaller().signal aborts. */
  untilCancelled(): Promise<string> {
    const signal = currentCall()!.signal;
    this.signals.push(signal);
    return new Promise((resolve) => signal.addEventListener("abort", () => resolve("cancelled")));
  }
}

type Options = Parameters<typeof createRpcClient>[2];

/** A client paired in memory with the real dispatcher (no delivery record). */
function setup(opts: Options = {}) {
  const api = new Api();
  const paired = pairWith(api);
  const client = createRpcClient<Api>("API", "races", { heartbeat: false, timeout: 2000, ...opts, transport: paired.factory });
  return { api, paired, client, conn: rpcConnection(client) };
}

/** The same with the object's real delivery record (exactly-once) on node:sqlite. */
function recorded(opts: Options = {}) {
  const api = new Api();
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery(undefined)!, writes);
  const faults = faulty(api, undefined, { records });
  const client = createRpcClient<Api>("API", "races", { heartbeat: false, timeout: 0, ...opts, transport: faults.factory });
  return { api, faults, client, conn: rpcConnection(client) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("disposal from inside user code the client is running", () => {
  // docs/api.md "Disposal … rejects every waiting call with DISPOSED"; "every call settles exactly
  // once" (docs/reliability.md).
  it("dispose from inside an argument getter (re-entrant encode) settles the call with DISPOSED", async () => {
    const { client, conn } = setup({ timeout: 0 });
    await conn.waitForOpen();
    const arg = {
      get x() {
        conn.close();
        return 1;
      },
    };
    let outcome: unknown = "pending";
    Promise.resolve(client.echo(arg)).then(
      (v) => (outcome = { ok: v }),
      (e) => (outcome = e),
    );
    await settle(5);
    expect(outcome, "the call never settled").not.toBe("pending");
    expectRpcError(outcome, "DISPOSED");
    expect(conn.pendingCalls).toBe(0);
  });

  // Same cause, other trigger: the client-side schema (`validate`) runs user code in Caller.call
  // after the `refuse` check.
  it("a client-side schema whose validate disposes the client: the call settles with DISPOSED", async () => {
    let close = () => {};
    const schema = {
      "~standard": {
        version: 1 as const,
        vendor: "test",
        validate: (value: unknown) => {
          close();
          return { value: value as unknown[] };
        },
      },
    };
    const { client, conn } = setup({ timeout: 0, validate: { echo: schema } as never });
    close = () => conn.close();
    await conn.waitForOpen();
    let outcome: unknown = "pending";
    Promise.resolve(client.echo(1)).then(
      (v) => (outcome = { ok: v }),
      (e) => (outcome = e),
    );
    await settle(5);
    expect(outcome, "the call never settled").not.toBe("pending");
    expectRpcError(outcome, "DISPOSED");
  });

  // a disposed client holds nothing that keeps a Node process alive (docs/api.md "dispose the
  // client to let it exit").
  it("dispose in the 'reconnecting' listener leaves no ref'd reconnect timer", async () => {
    const { paired, client, conn } = setup({ expose: { ping: () => 1 }, reconnect: { initialDelay: 60_000, maxDelay: 60_000 } });
    await conn.waitForOpen();
    conn.onStateChange((s) => {
      if (s === "reconnecting") conn.close();
    });
    paired.connections[0]!.cut();
    expect(conn.state).toBe("disposed");
    const timer = (getRpcSession(client) as unknown as { reconnectTimer?: { hasRef(): boolean } }).reconnectTimer;
    expect(timer === undefined || !timer.hasRef(), "a disposed client keeps a ref'd reconnect timer (Node cannot exit)").toBe(true);
  });

  // onStateChange returns "the unsubscribe function"; a listener unsubscribed before it was told of
  // a change is not told of it (EventTarget semantics).
  it("a listener removed by an earlier listener during a change is not called for it", async () => {
    const { conn } = setup();
    const heard: ConnectionState[] = [];
    let offB: () => void = () => {};
    conn.onStateChange((s) => {
      if (s === "connecting") offB();
    });
    offB = conn.onStateChange((s) => heard.push(s));
    await conn.waitForOpen();
    expect(heard).toEqual([]);
    conn.close();
  });
});

describe("timeouts and aborts while a resend waits", () => {
  // the TIMEOUT message of a call that had been sent must not say "never sent" (it is running on
  // the object right now; docs/reliability.md Timeout row: "Maybe (it may still be running)").
  it("a call sent, cut, and timing out while the reconnect is pending does not claim it was never sent", async () => {
    const { api, paired, client, conn } = setup({ timeout: 0, reconnect: { initialDelay: 60_000, maxDelay: 60_000, jitter: 0 } });
    await conn.waitForOpen();
    const call = withCallOptions(client.hold(), { timeout: 100 });
    call.catch(() => {});
    await vi.waitFor(() => expect(api.gates.length).toBe(1));
    paired.connections[0]!.cut();
    expect(conn.state).toBe("reconnecting");
    const error = expectRpcError(await rejectionOf(call), "TIMEOUT");
    expect(error.message).not.toMatch(/never sent/);
    conn.close();
  });

  // (docs/api.md): "A call that times out or is aborted after it was sent is cancelled on the
  // object: the client sends a cancel frame, the object aborts the call's rpcCaller().signal".
  it("a sent call aborted while its resend waits for the reconnect is cancelled on the object", async () => {
    const { api, faults, client, conn } = recorded({ reconnect: { initialDelay: 50, maxDelay: 50, jitter: 0 } });
    await conn.waitForOpen();
    const ac = new AbortController();
    const call = withCallOptions(client.untilCancelled(), { signal: ac.signal });
    call.catch(() => {});
    await vi.waitFor(() => expect(api.signals.length).toBe(1));
    faults.last.paired.cut();
    expect(conn.state).toBe("reconnecting");
    ac.abort(new Error("user gave up"));
    expect(((await rejectionOf(call)) as Error).message).toBe("user gave up");
    await vi.waitFor(() => expect(conn.state).toBe("open"));
    await client.echo(1); // a round trip on the new connection
    await settle(5);
    expect(api.signals[0]!.aborted, "the object's run of the abandoned call was never cancelled").toBe(true);
    conn.close();
  });

  // as above — the resend is on the open connection and the client sends a cancel frame for it.
  it("a resent call aborted after the reconnect is cancelled on the object (its original run)", async () => {
    const { api, faults, client, conn } = recorded({ reconnect: { initialDelay: 1, maxDelay: 5, jitter: 0 } });
    await conn.waitForOpen();
    const ac = new AbortController();
    const call = withCallOptions(client.untilCancelled(), { signal: ac.signal });
    call.catch(() => {});
    await vi.waitFor(() => expect(api.signals.length).toBe(1));
    faults.last.paired.cut();
    await vi.waitFor(() => expect(conn.state).toBe("open"));
    await client.echo(1); // the resend has reached the object by now
    ac.abort(new Error("user gave up"));
    expect(((await rejectionOf(call)) as Error).message).toBe("user gave up");
    await client.echo(2);
    await settle(5);
    expect(api.signals[0]!.aborted, "the object's run of the abandoned call was never cancelled").toBe(true);
    conn.close();
  });

  // (docs/reliability.md, "Connection cut after send": "a cut does not abort its
  // rpcCaller().signal; a client that closes does").
  it("a client that closes after its resend reached the object aborts the original run's signal", async () => {
    const { api, faults, client, conn } = recorded({ reconnect: { initialDelay: 1, maxDelay: 5, jitter: 0 } });
    await conn.waitForOpen();
    const call = Promise.resolve(client.untilCancelled());
    call.catch(() => {});
    await vi.waitFor(() => expect(api.signals.length).toBe(1));
    faults.last.paired.cut();
    await vi.waitFor(() => expect(conn.state).toBe("open"));
    await client.echo(1); // the resend has reached the object by now
    conn.close();
    await expectRejectsCode(call, "DISPOSED");
    await settle(5);
    expect(api.signals[0]!.aborted, "the client closed, yet the object's run goes on").toBe(true);
  });
});
