/**
 * The delivery record across `ctx.storage.deleteAll()` in workerd (docs/protocol.md: a resending
 * session that may be older than the wipe is refused EXPIRED when no row holds its call, never run
 * again on the wiped state). test/reliability/wipe.workers.test.ts covers RpcDurableObject with a
 * session that had replies before; this file covers the two cases that went wrong:
 *  - a session whose very first reply was lost: its next hello says "resending", with its age, so
 *    the wipe's protection applies to it (its hello said resending 0 before, and the resend ran);
 *  - a wipe in a fresh instance before any dorpc message reached it, on objects composed with
 *    RpcDurableObject, withRpc, and by hand (handleRpcRequest / handleRpcMessage, which call
 *    `watchRpcStorage(this, options)` in their constructor to see such a wipe).
 */
import { createTestClient, dropConnection, runInObject } from "@dorpc/testing";
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { rpcFailure, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";
import { calls, hello, losingReplies, openSocket, resend, sessionId } from "./record-support.js";

describe("a session whose first reply was lost, then the object's storage wiped", () => {
  it("its reconnect says it is resending, with its age; the resend is refused EXPIRED and does not run on the wiped state", async () => {
    const name = uniqueName("wipe-first-reply");
    let lose = true;
    const lossy = losingReplies(() => {
      const lost = lose;
      lose = false;
      return lost;
    });
    // Connections after the first wait until the test has wiped the object.
    let release!: () => void;
    const wiped = new Promise<void>((resolve) => (release = resolve));
    let connections = 0;
    const worker = {
      async fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
        if (++connections > 1) await wiped;
        return lossy.worker.fetch(input, init);
      },
    };
    using client = createTestClient<Counter>(env.COUNTER, name, { worker, reconnect: { initialDelay: 10, maxDelay: 10, jitter: 0 } });
    lossy.onCut(() => dropConnection(client));
    const lost = rpcFailure(client.increment(1), "EXPIRED");
    await vi.waitFor(() => expect(connections).toBe(2)); // it ran, its answer was lost, the client reconnects
    expect(await runInObject(client, (_object, state) => state.storage.kv.get("count"))).toBe(1);
    await runInObject(client, (_object, state) => state.storage.deleteAll());
    release();
    expect((await lost).message).toContain("deleteAll");
    expect(await client.getValue()).toBe(0);
    const hellos = lossy.frames.filter((frame) => frame.startsWith("client: \u001eH"));
    expect(hellos).toEqual([
      expect.stringMatching(/^client: \u001eH\["[\w-]+",2\]$/), // its first connection: nothing sent before
      expect.stringMatching(/^client: \u001eH\["[\w-]+",1,\d+\]$/),
    ]);
  });
});

for (const [binding, composed] of [
  ["COUNTER", "RpcDurableObject"],
  ["WRAPPED", "withRpc"],
  ["MANUAL", "by hand, with watchRpcStorage in its constructor"],
] as const) {
  describe(`a wipe in a fresh instance before any dorpc message: ${binding} (${composed})`, () => {
    const method = binding === "COUNTER" ? "increment" : "bump";

    it("a call answered before the wipe and resent after it is refused EXPIRED; the session's next call runs on the wiped state", async () => {
      const name = uniqueName(`wipe-fresh-${binding.toLowerCase()}`);
      const s = sessionId();
      const first = await openSocket(binding, name);
      first.send(hello(s, 0));
      first.send(calls([[1, [method, [0]]]]));
      expect(await first.reply(1)).toEqual([1, 0, 1]);
      first.send(calls([[2, [method, [0]]]]));
      expect(await first.reply(2)).toEqual([2, 0, 2]); // the answer the test treats as lost
      await first.close(4100);
      const stub = env[binding].getByName(name);
      await evictDurableObject(stub);
      // The new instance deletes its storage first thing, as its alarm() or fetch() could.
      await runInDurableObject(stub, (_object, state) => state.storage.deleteAll());
      const second = await openSocket(binding, name);
      second.send(hello(s, 1, 300));
      second.send(calls([resend(2, [method, [0]])]));
      const refused = await second.reply(2);
      second.send(calls([[3, [method, [0]]]]));
      const next = await second.reply(3);
      await second.close();
      expect({ refused, next }).toEqual({ refused: [2, 3, "EXPIRED", expect.stringContaining("deleteAll")], next: [3, 0, 1] });
    });
  });
}
