/**
 * Edges found by reviewing the changes to references, pipelining and options: a Blob read failing
 * while its call waits to be resent, a pipelined path into what env holds, a large pipelined
 * array, a Map given as `query`, and a table refused part-way giving back what it did not build.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, withCallOptions } from "../../packages/rpc/src/index.js";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import { connectUrl } from "../../packages/rpc/src/client-url.js";
import { pairWith } from "../support/paired-transport.js";
import { rawServer, rejectionOf, settle } from "./helpers.js";

class Api {
  callMe(cb: (n: number) => unknown): unknown {
    return cb(1);
  }
  take(_blob: unknown, cb: (n: number) => unknown): unknown {
    return cb(1);
  }
}

describe("caller.ts put(): Blob read failing while the call waits to be resent", () => {
  // a call whose Blob cannot be read releases what it handed out exactly once; the export table is
  // empty afterwards and the same callback works in a later call (references.ts: "The sender
  // subtracts; its entry goes when nothing is left").
  it("the callback's export entry is freed and the callback still works afterwards", async () => {
    const api = new Api();
    const paired = pairWith(api);
    const client = createRpcClient<Api>("API", "refs", {
      transport: paired.factory,
      heartbeat: false,
      timeout: 2000,
      reconnect: { initialDelay: 1, maxDelay: 5, jitter: 0 },
    });
    using _ = client;
    const session = getRpcSession(client);
    const cb = (n: number) => n + 1;
    expect(await client.callMe(cb)).toBe(2); // connected, cb exported and released after
    await settle();
    let fail!: (e: Error) => void;
    const blob = new Blob(["abc"]);
    (blob as { arrayBuffer: () => Promise<ArrayBuffer> }).arrayBuffer = () =>
      new Promise<ArrayBuffer>((_resolve, reject) => (fail = reject));
    const call = withCallOptions(client.take(blob, cb), { idempotent: true });
    call.catch(() => {});
    await settle(1); // flushed: put() counted cb as sent on connection 0
    paired.connections[0]!.cut(); // queued again for the resend (repinned), peer's refs zeroed
    fail(new Error("unreadable")); // before the reconnect re-puts it
    await rejectionOf(call);
    await settle(5);
    // the same function passed again must reach the object and be callable back
    const again = await Promise.resolve(withCallOptions(client.callMe(cb), { timeout: 1000 })).catch((e) => e);
    expect(again, "the object could not call the callback back (its export entry has refs 0 after being sent)").toBe(2);
    await settle(5);
    expect(session.exports.size, "export entry left with negative refs and a pin").toBe(0);
  });
});

describe("chain.ts / proxy.ts followData: a pipelined path into what env holds", () => {
  // docs/security.md (references): "Pipelining gives nothing a round trip would not: … a PIPELINE
  // path into it, is checked as a chain on the value would be (… never into the object, its env or
  // its ctx)". A round trip of deepConfig() is refused ENCODE (its result holds env.CONFIG.db), yet
  // a pipelined read of .db.host on it steps into env.CONFIG.db (it is plain data, and only
  // env/ctx/the object themselves are guarded) and sends the value. the path read is refused
  // (NOT_FOUND or ENCODE) and "db.internal" never leaves.
  class Leaky {
    readonly env = { CONFIG: { db: { host: "db.internal" } } };
    readonly ctx = {};
    deepConfig() {
      return { db: this.env.CONFIG.db };
    }
  }
  it("deepConfig().db.host in one frame does not send what deepConfig() may not", async () => {
    const server = rawServer(new Leaky());
    server.sendCalls([
      [1, ["deepConfig", [0]]],
      [2, ["db", "host"], -1],
    ]);
    const first = await server.outcome(1);
    expect(first).toMatchObject({ kind: "failed", code: "ENCODE" }); // the round trip is refused
    const second = await server.outcome(2);
    expect(second).not.toEqual({ kind: "ok", value: "db.internal" });
  });
});

describe("callee-references.ts heldForbidden: a large pipelined array", () => {
  // docs/security.md: a pipelined result passed as an argument is refused only when it "is or holds
  // what a result may not carry". client.count(client.ids()) with a result of 200,000 numbers (1.4
  // MB, within every default limit, and fine as a round trip) runs.
  class Big {
    ids(): number[] {
      return new Array(200_000).fill(7);
    }
    count(ids: number[]): number {
      return ids.length;
    }
  }
  it("client.count(client.ids()) pipelined with 200,000 elements answers 200000", async () => {
    const client = createRpcClient<Big>("BIG", "refs", { transport: pairWith(new Big()).factory, heartbeat: false });
    using _ = client;
    expect((await client.ids()).length).toBe(200_000); // the round trip works
    const outcome = await Promise.resolve(client.count(client.ids() as never)).catch((e) => String(e));
    expect(outcome).toBe(200_000);
  });
});

describe("client.ts queryString: query given as an iterable of pairs", () => {
  // client.ts queryString says "a record (or pairs) of strings; anything else is refused, naming
  // it". A Map (which URLSearchParams took before this change, sending ?token=abc) now goes through
  // Object.entries, which is empty: the token is dropped silently and the connect goes out without
  // it. the pairs are sent, or BAD_OPTION — never a silently empty query.
  it("a Map query is sent or refused, never dropped", () => {
    let url: string | undefined;
    let code: string | undefined;
    try {
      url = connectUrl("B", "i", { baseUrl: "https://x.test", query: new Map([["token", "abc"]]) as never });
    } catch (error) {
      code = (error as { code?: string }).code;
    }
    expect(code === "BAD_OPTION" || url?.endsWith("?token=abc"), `connect URL: ${url}`).toBe(true);
  });
});

describe("chain.ts buildArgs: a table refused part-way", () => {
  // references.ts: every EXPORT record is one reference the receiver must give back; callee.ts /
  // references.ts releaseUnbuilt release those of arguments never built. a call refused while its
  // arguments are built (here: a pipelined argument holding env, refused ENCODE before the callback
  // after it is reached) leaves nothing in the client's export table.
  class Holder {
    readonly env = { SECRET: "s3cr3t" };
    readonly ctx = {};
    holder() {
      return { e: this.env };
    }
    take(_v: unknown, cb: () => unknown): unknown {
      return cb();
    }
  }
  it("the callback after a refused pipelined argument is released", async () => {
    const client = createRpcClient<Holder>("H", "refs", { transport: pairWith(new Holder()).factory, heartbeat: false });
    using _ = client;
    const session = getRpcSession(client);
    for (let i = 0; i < 3; i++) {
      const error = await rejectionOf(client.take(client.holder() as never, () => 1));
      expect((error as { code?: string }).code).toBe("ENCODE");
    }
    await settle(5);
    expect(session.exports.size).toBe(0);
  });
});
