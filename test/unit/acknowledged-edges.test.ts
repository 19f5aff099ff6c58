/**
 * Edges of acknowledged answers (docs/protocol.md "Acknowledged answers", "Call envelopes"): who
 * sends `answered`, an object without a record, and the HTTP batch path.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { checkServed, resolveServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { handleBatch } from "../../packages/rpc/src/http-batch.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";
import { pairWith } from "../support/paired-transport.js";

class Api {
  ran = 0;
  fast(): string {
    this.ran++;
    return "fast";
  }
}

/** The call envelopes the client sent on the first connection. */
function callEnvelopes(frames: (string | Uint8Array)[]): unknown[][] {
  return frames.filter((f) => String(f).startsWith("\u001eC")).flatMap((f) => JSON.parse((f as string).slice(2)) as unknown[][]);
}

describe("`answered` is sent only by a client with an exactly-once session", () => {
  // "`answered`, sent by a client with an exactly-once session …"
  it("exactlyOnce: false: no envelope has a fifth element", async () => {
    const paired = pairWith(new Api());
    const rpc = createRpcClient<Api>("A", "ack", { transport: paired.factory, heartbeat: false, timeout: 0, exactlyOnce: false });
    using _ = rpc;
    for (let i = 0; i < 5; i++) await rpc.fast();
    const sent = callEnvelopes(paired.connections[0]!.sentByClient);
    expect(sent).toHaveLength(5);
    for (const envelope of sent) expect(envelope.length).toBeLessThan(5);
  });

  it("an object that keeps no record runs calls that carry `answered`", async () => {
    const api = new Api();
    const paired = pairWith(api);
    const rpc = createRpcClient<Api>("A", "ack", { transport: paired.factory, heartbeat: false, timeout: 0 });
    using _ = rpc;
    for (let i = 0; i < 5; i++) expect(await rpc.fast()).toBe("fast");
    expect(callEnvelopes(paired.connections[0]!.sentByClient).some((e) => e.length === 5)).toBe(true);
    expect(api.ran).toBe(5);
  });
});

describe("`answered` over an HTTP batch with X-Dorpc-Session", () => {
  const S = "SSSSSSSSSSSSSSSSSSSSSS";
  it("acknowledges the session's waiting answers; a resend or a late copy of an acknowledged call is refused, not run", async () => {
    const sql = nodeSql();
    const watch = watchWrites({ sql });
    const records = new DeliveryRecord(watch.sql, resolveDelivery({})!, watch);
    const api = new Api();
    const options = resolveServerOptions(undefined);
    checkServed(api, options);
    const hooks = () => ({ records, onHello: (s: string, r: boolean, a?: number) => records.hello(s, r, a) });
    const post = async (body: string, headers: Record<string, string> = {}) => {
      const request = new Request("https://x/rpc", {
        method: "POST",
        body,
        headers: { "Content-Type": "application/x-dorpc", "X-Dorpc-Session": S, ...headers },
      });
      return (await handleBatch(request, api, options, undefined, hooks)).text();
    };
    expect(await post('\u001eC[[1,["fast",[0]]]]')).toBe('\u001eR[[1,0,"fast"]]');
    expect(await post('\u001eC[[2,["fast",[0]],0,0,2]]')).toBe('\u001eR[[2,0,"fast"]]');
    await new Promise((resolve) => setTimeout(resolve, 30)); // quiet: the rows are written
    // Call 1 as an acknowledged marker (kind 3, no bytes), call 2 whole.
    expect(sql.exec("SELECT ids FROM _dorpc_replies").toArray()).toEqual([{ ids: "[[1,3,0],[2,0,16]]" }]);
    const refused = /^\u001eR\[\[1,3,"DISCONNECTED","Call 1 was answered and its client acknowledged the reply/;
    expect(await post('\u001eC[[1,["fast",[0]],0,1]]', { "X-Dorpc-Resending": "1" })).toMatch(refused);
    expect(await post('\u001eC[[1,["fast",[0]]]]')).toMatch(refused); // a late copy
    expect(api.ran).toBe(2);
  });
});
