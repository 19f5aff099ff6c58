/**
 * Argument and result schemas with cancellation and the exactly-once delivery record
 * (real dispatcher + DeliveryRecord on Node's SQLite, as test/reliability/exactly-once.node.test.ts):
 * a call whose async schema is still checking when the connection drops runs once; a resend
 * answered from the record gets what the first reply carried (the result schema's output, or its
 * INVALID_RESULT), never a second run.
 */
import * as v from "valibot";
import { describe, expect, it, vi } from "vitest";
import { createRpcClient, rpcConnection } from "../../packages/rpc/src/client.js";
import { withCallOptions } from "../../packages/rpc/src/index.js";
import { currentCall } from "../../packages/rpc/src/current-call.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import type { StandardSchemaV1 } from "../../packages/rpc/src/standard-schema.js";
import { nodeSql } from "../support/node-sql.js";
import { callIds, faulty } from "../reliability/fault-transport.js";
import { rejectionOf, settle } from "./helpers.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

class Gated {
  runs: string[] = [];
  gates: (() => void)[] = [];
  /** An async argument schema that accepts only when the test opens its gate. */
  slowSchema: StandardSchemaV1<unknown, unknown[]> = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: (value) => new Promise((resolve) => this.gates.push(() => resolve({ value: value as unknown[] }))),
    },
  };
  gated = rpcMethod(this.slowSchema, (x: unknown) => {
    this.runs.push(`gated ${String(x)} aborted=${String(currentCall()?.signal.aborted ?? "no call")}`);
    return x;
  });
  other = rpcMethod(v.strictTuple([]), () => {
    this.runs.push("other");
    return "other";
  });
  /** Large results: only a marker is kept in the record. */
  bulk = rpcMethod({ args: v.strictTuple([v.pipe(v.number(), v.integer(), v.minValue(1))]), record: false }, (n) => {
    this.runs.push("bulk");
    return "x".repeat(n);
  });
  /** The result schema strips `passwordHash`: what is recorded and resent is its output. */
  profile = rpcMethod({ args: v.strictTuple([]), result: v.object({ id: v.number() }) }, () => {
    this.runs.push("profile");
    return { id: 1, passwordHash: "SECRET" };
  });
  /** A result that fails its schema. */
  broken = rpcMethod({ args: v.strictTuple([]), result: v.object({ id: v.number() }) }, () => {
    this.runs.push("broken");
    return { id: "not a number" };
  });
}

function setup(target: Gated, server?: RpcServerOptions) {
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery(undefined)!, writes);
  const faults = faulty(target, server, { records });
  const client = createRpcClient<Gated>("G", "one", {
    heartbeat: false,
    reconnect: { initialDelay: 1, maxDelay: 20 },
    transport: faults.factory,
    timeout: 3000,
  });
  return { faults, client, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

describe("async argument schemas and cancellation", () => {
  // api.md (CallOptions.signal / cancellation): "a sent call is cancelled on the object (its
  // rpcCaller().signal aborts)"; a call cancelled before it started never starts (callee.ts `start`
  // checks `cancelled`; server-callee.ts `dropped` frees a call that never ran). A call whose async
  // argument schema has not answered yet has not run any of the method: after the cancel, the
  // method must not be started. It is: chain.ts runSteps resumes the step when the schema answers
  // without looking at the cancel, so the method runs for a caller that gave up (and, with ordering
  // "sequential", after calls that were sent after it, since the cancel released the queue).
  it("a call cancelled while its async argument schema is pending never runs the method", async () => {
    const g = new Gated();
    using t = setup(g, { ordering: "sequential" });
    expect(await t.client.other()).toBe("other");
    const controller = new AbortController();
    const cancelled = withCallOptions(t.client.gated(7 as never), { signal: controller.signal });
    cancelled.catch(() => undefined);
    await vi.waitFor(() => expect(g.gates).toHaveLength(1));
    controller.abort(new Error("gave up"));
    await rejectionOf(cancelled);
    // The cancel reaches the object; the call sent after it now runs (the queue was released).
    expect(await t.client.other()).toBe("other");
    for (const open of g.gates.splice(0)) open(); // the schema accepts, after the cancel
    await sleep(20);
    expect(g.runs).toEqual(["other", "other"]); // the cancelled call never ran
  });
});

describe("record: false and a refused call", () => {
  // api.md (rpcMethod, record: false): "A resend after a drop then rejects with DISCONNECTED ("its
  // result was not kept") and does not run it again" — for a call that *ran*. A call refused by its
  // argument schema never ran (INVALID_ARGUMENT: "The method did not run"), yet its lost reply is
  // stored as the not-kept marker, and the resend is told "Call N ran before the connection
  // dropped, but its result was not kept": a false claim that the method ran (the caller may now
  // assume effects that never happened). the resend gets the refusal (INVALID_ARGUMENT, a small
  // reply), or at least not an error saying the call ran.
  it("a resent call that its schema refused is not reported as having run", async () => {
    const g = new Gated();
    using t = setup(g);
    expect(await t.client.other()).toBe("other");
    t.faults.cutOnReply = 1; // the refusal is lost with the connection; the call is resent
    const error = (await rejectionOf(t.client.bulk(0))) as { code: string; message: string };
    expect(g.runs).toEqual(["other"]); // bulk never ran
    expect(error.message).not.toMatch(/ran before the connection dropped/);
    expect(error.code).toBe("INVALID_ARGUMENT");
  });
});

describe("schemas and a lost connection", () => {
  it("a call whose async argument schema is still checking when the connection drops runs once, and its resend gets the answer", async () => {
    const g = new Gated();
    using t = setup(g);
    expect(await t.client.other()).toBe("other");
    const call = t.client.gated(7 as never);
    await vi.waitFor(() => expect(g.gates).toHaveLength(1));
    const [id] = callIds(t.faults.last.paired.sentByClient).slice(-1);
    t.faults.last.paired.cut();
    await rpcConnection(t.client).waitForOpen();
    // The resend is sent on the new connection and handed to the object while the schema still checks.
    await vi.waitFor(() => expect(callIds(t.faults.last.paired.sentByClient)).toContain(id));
    await settle();
    expect(t.faults.connections).toHaveLength(2);
    g.gates.shift()!(); // only the first run's schema accepts
    expect(await call).toBe(7);
    expect(g.gates).toEqual([]); // the resend did not run the schema again
    // It ran once, and the drop did not cancel it: its resend was on the way.
    expect(g.runs).toEqual(["other", "gated 7 aborted=false"]);
  });

  it("a resend answered from the record gets the result schema's output, not the method's return value", async () => {
    const g = new Gated();
    using t = setup(g);
    expect(await t.client.other()).toBe("other");
    t.faults.cutOnReply = 1; // the reply is lost with the connection; the call is resent
    expect(await t.client.profile()).toEqual({ id: 1 });
    expect(g.runs).toEqual(["other", "profile"]);
  });

  it("an INVALID_RESULT whose reply is lost: the resend is INVALID_RESULT too, and the method ran once", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const g = new Gated();
    using t = setup(g);
    expect(await t.client.other()).toBe("other");
    t.faults.cutOnReply = 1;
    const error = (await rejectionOf(t.client.broken())) as { code: string; message: string };
    expect(error.code).toBe("INVALID_RESULT");
    expect(error.message).not.toContain("not a number");
    expect(g.runs).toEqual(["other", "broken"]);
    warn.mockRestore();
  });
});
