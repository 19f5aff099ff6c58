/**
 * Big values and backpressure, both directions (unit tier, in-memory transport): a Blob that never
 * reads holds nothing back once its call settled, grouping counts what the receiver measures, and
 * highWaterMark holds between frames too.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, rpcConnection, withCallOptions, type TransportFactory } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { rawServer, settle } from "./helpers.js";

async function outcome(p: PromiseLike<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

/** A Blob whose bytes never become readable (a stalled stream, a file on a hung network share). */
class NeverBlob extends Blob {
  override arrayBuffer(): Promise<ArrayBuffer> {
    return new Promise(() => {});
  }
}

/** A Blob whose bytes cannot be read (a browser File changed on disk). */
class BadBlob extends Blob {
  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.reject(new Error("vanished"));
  }
}

class Api {
  echo(v: unknown) {
    return v;
  }
  pair(a: unknown, b: unknown) {
    return [a, b];
  }
  bytes(n: number) {
    return new Uint8Array(n).fill(7);
  }
  text(n: number, ch = "x") {
    return ch.repeat(n);
  }
  len(v: { length?: number; size?: number }) {
    return v.size ?? v.length;
  }
  never() {
    return new NeverBlob(["x"]);
  }
  now() {
    return "now";
  }
}

describe("a Blob whose bytes never arrive blocks the connection for good", () => {
  // a call that timed out or was aborted is gone; the calls made after it go (docs/api.md: "Every
  // call settles exactly once: … timeout, abort"; limits-edges.test.ts holds the same for a call
  // held by an async schema).
  it("timing out the Blob call lets the calls made after it go", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("A", "never-timeout", { transport: paired.factory, timeout: 50 });
    try {
      const held = client.echo(new NeverBlob(["x"]) as never);
      const after = withCallOptions(client.len("abc"), { timeout: 1000 });
      expect(await outcome(held)).toBe("TIMEOUT");
      expect(await outcome(after)).toBe("ok");
    } finally {
      rpcConnection(client).close();
    }
  });

  it("aborting the Blob call lets the calls made after it go", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("A", "never-abort", { transport: paired.factory });
    try {
      const controller = new AbortController();
      const held = withCallOptions(client.echo(new NeverBlob(["x"]) as never), { signal: controller.signal });
      const after = withCallOptions(client.len("abc"), { timeout: 1000 });
      await settle();
      controller.abort(new Error("gave up"));
      expect(await outcome(held)).toBe("Error: gave up");
      expect(await outcome(after)).toBe("ok");
    } finally {
      rpcConnection(client).close();
    }
  });

  // Same on the object's side: the client cancelled the call (Cancel frame), yet the object's
  // outbox keeps every later reply on that socket behind the Blob's read, forever.
  it("a cancelled call whose result Blob never reads does not hold the replies to later calls", async () => {
    const server = rawServer(new Api());
    server.sendCalls([[1, ["never", [0]]]]);
    await settle();
    server.dispatch("\u001eK[1]"); // Cancel call 1 (FrameKind.Cancel)
    server.sendCalls([[2, ["now", [0]]]]);
    await settle(5);
    expect(await server.replies()).toContainEqual([2, 0, "now"]);
  });
});

describe("a call pipelined on a call whose Blob cannot be read", () => {
  // (docs/api.md, Pipelining: "When the call it uses fails, it rejects with the same error,
  // unchanged, and does not run"): ENCODE, like the call it uses.
  it("rejects with the same ENCODE error, not PROTOCOL", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("A", "pipe-bad-blob", { transport: paired.factory, timeout: 2000 });
    try {
      const a = client.echo(new BadBlob(["x"]) as never);
      const b = client.len(a as never);
      expect(await outcome(a)).toBe("ENCODE");
      expect(await outcome(b)).toBe("ENCODE");
    } finally {
      rpcConnection(client).close();
    }
  });
});

describe("grouping of envelopes into frames vs the receiver's maxMessageBytes", () => {
  // (docs/api.md limits table, maxMessageBytes: "Each end groups envelopes … into frames of up to
  // 64 KiB, so a limit below 64 KiB can refuse a frame whose every envelope fits it …: keep it at
  // 64 KiB or more"; workers/oversized.test.ts: "answers that each fit are not batched into a frame
  // that does not").
  it("answers that each fit are not grouped into a binary frame that does not (non-ASCII text next to bytes)", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("A", "cjk", { transport: paired.factory, limits: { maxMessageBytes: 100_000 }, timeout: 2000 });
    try {
      // Alone: ~70 bytes; 20,000 UTF-16 units = 60,000 UTF-8 bytes; same. All fit 100,000.
      const results = await Promise.all([
        outcome(client.bytes(10)),
        outcome(client.text(20_000, "語")),
        outcome(client.text(20_000, "語")),
      ]);
      expect(results).toEqual(["ok", "ok", "ok"]);
    } finally {
      rpcConnection(client).close();
    }
  });

  it("calls that each fit are not grouped into a binary frame the object refuses (non-ASCII text next to bytes)", async () => {
    const paired = pairWith(new Api(), { limits: { maxMessageBytes: 100_000 } });
    const client = createRpcClient<Api>("A", "cjk2", { transport: paired.factory, timeout: 2000 });
    try {
      const results = await Promise.all([
        outcome(client.len(new Uint8Array(10))),
        outcome(client.len("語".repeat(20_000))),
        outcome(client.len("語".repeat(20_000))),
      ]);
      expect(results).toEqual(["ok", "ok", "ok"]);
    } finally {
      rpcConnection(client).close();
    }
  });

  // Same function, ASCII only: the 64 KiB budget counts the envelopes but not the frame's own
  // characters (mark, kind, brackets, commas; for binary frames the 12-byte header, blob table and
  // padding), so a limit of exactly 64 KiB — the documented safe minimum — refuses two answers of
  // 32,768 characters each, grouped into a frame of 65,541.
  it("with maxMessageBytes = 64 KiB (the documented minimum), answers that each fit are not refused", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("A", "64k", { transport: paired.factory, limits: { maxMessageBytes: 64 * 1024 }, timeout: 2000 });
    try {
      // Each reply envelope `[id,0,"x…"]` is 32,760 + 8 = 32,768 characters: alone, a
      // 32,772-character frame.
      const results = await Promise.all([outcome(client.text(32_760)), outcome(client.text(32_760))]);
      expect(results).toEqual(["ok", "ok"]);
    } finally {
      rpcConnection(client).close();
    }
  });
});

describe("highWaterMark with calls that carry bytes", () => {
  // (docs/api.md, createRpcClient options: highWaterMark "Keep calls queued while the socket
  // reports more than this many bytes in bufferedAmount").
  it("no frame is handed to the socket while bufferedAmount is above highWaterMark", async () => {
    const paired = pairWith(new Api());
    const state = { buffered: 0, sentWhileCongested: 0 };
    const HWM = 1000;
    const factory: TransportFactory = (handler) => {
      const t = paired.factory(handler);
      const send = t.send.bind(t);
      t.send = (frame) => {
        if (state.buffered > HWM) state.sentWhileCongested++;
        state.buffered += typeof frame === "string" ? frame.length : frame.byteLength; // nothing drains
        send(frame);
      };
      Object.defineProperty(t, "bufferedAmount", { get: () => state.buffered, configurable: true });
      return t;
    };
    const client = createRpcClient<Api>("A", "hwm", { transport: factory, highWaterMark: HWM, timeout: 5000 });
    try {
      const calls = Array.from({ length: 20 }, () => client.len(new Uint8Array(1000)));
      await settle(5);
      expect(state.sentWhileCongested).toBe(0);
      // The socket drains (now and then): the rest go, each while it is not over the mark.
      const drain = setInterval(() => {
        state.buffered = 0;
      }, 2);
      try {
        expect(await Promise.all(calls)).toEqual(Array(20).fill(1000));
      } finally {
        clearInterval(drain);
      }
      expect(state.sentWhileCongested).toBe(0);
    } finally {
      rpcConnection(client).close();
    }
  });
});
