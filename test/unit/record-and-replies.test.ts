/**
 * Found by reviewing the record and reply changes: a forgotten session stays forgotten after one
 * of its resends was answered EXPIRED, and a reply whose Blob cannot be read gives back what it
 * handed out.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { CallFlags } from "../../packages/rpc/src/envelopes.js";
import { nodeSql } from "../support/node-sql.js";
import { createRpcClient, rpcConnection } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a forgotten session stays forgotten after one of its resends was answered EXPIRED", () => {
  // reliability.md: an unknown session that resends and is not younger than 0.9 × maxAge → EXPIRED,
  // "Never run twice". delivery.ts hello() no longer writes the row of a refused session ("a later
  // resending hello must find it forgotten still"), but decide() saves the EXPIRED answer of its
  // first resend with save(), whose touch() writes the session's row: the next resending hello
  // finds the session "known", and a resend not decided on the first connection (call 6, in a frame
  // that did not arrive before the drop) RUNS AGAIN although it ran before the sweep.
  it("calls 5 and 6 ran, session swept; resend 5 EXPIRED, drop; the resend of 6 on the next connection must be EXPIRED, not run", () => {
    const HOUR = 3_600_000;
    const now = vi.spyOn(Date, "now").mockReturnValue(1_000 * HOUR);
    const sql = nodeSql();
    const records = new DeliveryRecord(sql, resolveDelivery({ maxAge: 2 * HOUR })!);
    const S = "AAAAAAAAAAAAAAAAAAAAAA";
    records.hello(S, false);
    for (const id of [5, 6]) {
      expect(records.decide(S, id, 0, true, false)).toEqual({ kind: "run", record: true });
      records.started(S, id);
      records.save(S, id, `\u001eR[[${id},0,1]]`, true); // ran; answers lost with the connection
    }
    // Three hours later another session's write sweeps S (idle > maxAge) with its answers.
    now.mockReturnValue(1_003 * HOUR);
    records.hello("BBBBBBBBBBBBBBBBBBBBBB", false);
    expect(sql.exec("SELECT count(*) AS n FROM _dorpc_replies WHERE session = ?", S).one().n).toBe(0);
    // S comes back resending: refused as forgotten; its resend of 5 is EXPIRED (and saved)...
    const age = 3 * HOUR + 1_000;
    const first = records.hello(S, true, age);
    expect(first).toBe(false);
    expect(records.decide(S, 5, CallFlags.Retry, true, !first)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    // ...and the connection drops before the frame carrying the resend of 6 arrives.
    now.mockReturnValue(1_003 * HOUR + 1_000);
    const second = records.hello(S, true, age + 1_000);
    // still forgotten, 6 is EXPIRED.
    expect(records.decide(S, 6, CallFlags.Retry, true, !second)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
  });
});

/** A Blob whose bytes cannot be read (a File changed on disk). */
class BadBlob extends Blob {
  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.reject(new Error("vanished"));
  }
}

class Handout {
  /** A result handing out a function by reference next to a Blob that cannot be read. */
  both() {
    return { fn: () => 1, blob: new BadBlob(["x"]) };
  }
}

describe("a reply whose Blob cannot be read gives back what it handed out", () => {
  // callee.ts complete(): the exports of a reply are counted as sent (exports.sent) before its Blob
  // bytes are read; `droppable` gives them back when the call is cancelled, but when the Blob fails
  // `ready` settles with an ENCODE failure envelope that carries no reference, and the count is
  // never given back: the object holds the function (against maxExports) for the rest of the
  // connection. The client's side does give them back (caller.ts whenReady).
  it("after the ENCODE failure the object's connection holds no export", async () => {
    const paired = pairWith(new Handout());
    const client = createRpcClient<Handout>("H", "bad-blob-result", { transport: paired.factory, timeout: 2000 });
    try {
      const error = (await client.both().then(
        () => undefined,
        (e: unknown) => e,
      )) as { code?: string };
      expect(error?.code).toBe("ENCODE");
      await settle(5);
      expect(paired.connections[0]!.server()!.exports.size).toBe(0); // got 1
    } finally {
      rpcConnection(client).close();
    }
  });
});
