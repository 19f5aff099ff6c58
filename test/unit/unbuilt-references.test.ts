/**
 * References in calls that never run (unit tier, in-memory paired transport, real dispatcher).
 * references.ts: "When the receiver no longer needs the import, it sends Release … The sender
 * subtracts; its entry goes when nothing is left." A function passed by reference in a call the
 * receiver never builds (refused by the access policy, pipelined on a failed call, cancelled
 * before it started) or in an envelope that was dropped (a Blob that could not be read) is
 * released too: otherwise the sender's export entry would stay for the life of the connection
 * (a client's table is session-wide), until limits.maxExports refused every later call that
 * passes a function. Each test expects the export table to be empty again.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, withCallOptions } from "../../packages/rpc/src/index.js";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import { currentCall } from "../../packages/rpc/src/current-call.js";
import { rootProxy } from "../../packages/rpc/src/proxy.js";
import { pairWith } from "../support/paired-transport.js";
import { rejectionOf, settle } from "./helpers.js";

class Api {
  gate: (() => void) | undefined;
  callMe(cb: (n: number) => unknown): unknown {
    return cb(1);
  }
  async slow(): Promise<number> {
    await new Promise<void>((resolve) => (this.gate = resolve));
    return 1;
  }
  _hidden(_cb: unknown): void {}
  take(_blob: unknown, cb: (n: number) => unknown): unknown {
    return cb(1);
  }
  fail(_cb: unknown): void {
    throw new Error("nope");
  }
  /** Calls the client's `method` with a function of the object's (as this.client(caller).method(fn) would). */
  async callBack(method: string): Promise<string> {
    const conn = currentCall()!.connection;
    const stub = rootProxy(
      conn.caller,
      () => undefined,
      () => undefined,
    ) as Record<string, (f: unknown) => Promise<unknown>>;
    try {
      await stub[method]!(() => 1);
      return "ok";
    } catch (error) {
      return (error as { code?: string }).code ?? "error";
    }
  }
}

function setup(options?: Parameters<typeof pairWith>[1], clientOptions?: Parameters<typeof createRpcClient>[2]) {
  const api = new Api();
  const paired = pairWith(api, options);
  const client = createRpcClient<Api>("API", "leaks", {
    transport: paired.factory,
    reconnect: { initialDelay: 1, maxDelay: 5 },
    ...clientOptions,
  });
  const session = getRpcSession(client);
  return { api, paired, client, session };
}

describe("client exports of callbacks in calls the object never ran", () => {
  it("callback passed to a method the policy refuses (_name)", async () => {
    const { client, session } = setup();
    using _ = client;
    for (let i = 0; i < 5; i++) await rejectionOf((client as any)._hidden(() => 1));
    await settle();
    expect(session.exports.size).toBe(0);
  });
  it("callback in a call pipelined on a failed call", async () => {
    const { client, session } = setup();
    using _ = client;
    for (let i = 0; i < 5; i++) await rejectionOf((client as any).nothing().x(() => 1));
    await settle();
    expect(session.exports.size).toBe(0);
  });
  it("callback in a call cancelled (timeout) while held behind a slow call (sequential)", async () => {
    const { client, session, api } = setup({ ordering: "sequential" });
    using _ = client;
    const slow = client.slow();
    await settle();
    for (let i = 0; i < 5; i++)
      await rejectionOf(
        withCallOptions(
          client.callMe(() => 1),
          { timeout: 20 },
        ),
      );
    api.gate!();
    await slow;
    await settle();
    expect(session.exports.size).toBe(0);
  });
});

describe("consequences over a long-lived connection", () => {
  it("after maxExports refused calls carrying a callback, a valid callback call fails with LIMIT", async () => {
    const { client } = setup(undefined, { limits: { maxExports: 8 } });
    using _ = client;
    for (let i = 0; i < 8; i++) await rejectionOf((client as any)._hidden(() => 1));
    await settle();
    // the object never took those callbacks, so they were released; this call works.
    expect(await client.callMe(() => 7)).toBe(7);
  });
});

describe("the object's exports of functions passed to a client that refused the call", () => {
  it("client exposes nothing: the function the object passed is released", async () => {
    const { client, paired } = setup();
    using _ = client;
    for (let i = 0; i < 3; i++) expect(await client.callBack("onEvent")).toBe("NOT_FOUND");
    await settle();
    expect(paired.connections[0]!.server()!.exports.size).toBe(0);
  });
  it("client exposes an object, the object calls a _name on it: the function is released", async () => {
    const { client, paired } = setup(undefined, { expose: { onEvent: (f: () => unknown) => f() } });
    using _ = client;
    expect(await client.callBack("onEvent")).toBe("ok");
    for (let i = 0; i < 3; i++) expect(await client.callBack("_secret")).toBe("NOT_FOUND");
    await settle();
    expect(paired.connections[0]!.server()!.exports.size).toBe(0);
  });
});

describe("a call whose Blob cannot be read is never sent", () => {
  it("the callback it carried is not counted as held by the object", async () => {
    const { client, session } = setup();
    using _ = client;
    await client.callMe(() => 1); // connected
    for (let i = 0; i < 3; i++) {
      const blob = new Blob(["abc"]);
      (blob as { arrayBuffer: () => Promise<ArrayBuffer> }).arrayBuffer = () => Promise.reject(new Error("unreadable"));
      await rejectionOf(client.take(blob, () => 1));
    }
    await settle();
    // the envelope was dropped, the object never saw the callback: nothing is held.
    expect(session.exports.size).toBe(0);
  });
});
