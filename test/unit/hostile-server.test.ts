/** A hostile server feeding frames to createRpcClient through a fake transport. */
import { describe, expect, it } from "vitest";
import type { RpcError, RpcTransport, TransportFactory, TransportHandler } from "../../packages/rpc/src/index.js";
import { subscribe } from "../../packages/rpc/src/index.js";
import { binaryFrame } from "../support/binary-frame.js";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { readFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import { framesOf } from "../support/frames.js";

interface Hostile {
  factory: TransportFactory;
  sent: (string | Uint8Array)[];
  closes: [number, string][];
  errors: [unknown, string][];
  /** Feeds one message to the client; returns what onMessage threw, if anything. */
  feed(data: string | ArrayBuffer | Uint8Array): unknown;
  /** Ids of the calls the client sent (C frames), in order, with their envelopes. */
  calls(): unknown[][];
  /** Every frame the client sent of `kind` ("X", "K", "R", "C"), bodies parsed. */
  bodies(kind: string): unknown[];
  opens: number;
}

function hostile(): Hostile {
  let handler: TransportHandler | undefined;
  const h: Hostile = {
    factory: undefined as never,
    sent: [],
    closes: [],
    errors: [],
    opens: 0,
    feed(data) {
      try {
        handler!.onMessage(data);
        return undefined;
      } catch (error) {
        return error ?? new Error("threw undefined");
      }
    },
    calls() {
      return h.bodies("C").flat() as unknown[][];
    },
    bodies(kind) {
      const out: unknown[] = [];
      for (const frame of h.sent) {
        const raw = readFrame(frame, DEFAULT_LIMITS);
        if (raw && raw.kind === kind.charCodeAt(0)) out.push(raw.body);
      }
      return out;
    },
  };
  h.factory = (hd: TransportHandler): RpcTransport => {
    handler = hd;
    h.opens++;
    let closed = false;
    return {
      open: () => Promise.resolve(),
      send(frame) {
        if (!closed) h.sent.push(...framesOf(frame));
      },
      close(code = 1000, reason = "") {
        if (closed) return;
        closed = true;
        h.closes.push([code, reason]);
        hd.onClose(code, reason);
      },
    };
  };
  return h;
}

// biome-ignore lint/suspicious/noExplicitAny: probes call anything
function hostileClient(h: Hostile, options: Record<string, unknown> = {}): any {
  return createRpcClient<unknown>("X", "y", {
    transport: h.factory,
    reconnect: false,
    heartbeat: false,
    onError: (error: unknown, what: string) => h.errors.push([error, what]),
    ...options,
  } as never);
}

const tick = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setTimeout(r, 0));
};

const R = (body: unknown) => "\u001eR" + JSON.stringify(body);

async function fresh(options: Record<string, unknown> = {}) {
  const h = hostile();
  const client = hostileClient(h, options);
  return { h, client };
}

function track(p: PromiseLike<unknown>) {
  const state: { s: "pending" | "ok" | "err"; v?: unknown } = { s: "pending" };
  p.then(
    (v) => Object.assign(state, { s: "ok", v }),
    (e) => Object.assign(state, { s: "err", v: e }),
  );
  return state;
}

describe("hostile server → client", () => {
  it("a result holding a function stub under `then` neither hangs the call nor makes the client call the server", async () => {
    const { h, client } = await fresh({ timeout: 0 });
    const state = track(client.a());
    await tick();
    expect(h.calls().map((c) => c[0])).toEqual([1]);
    // { then: <the server's export 7, a function> }
    expect(
      h.feed(
        R([
          [
            1,
            1,
            [
              [2, [[1, 2]]],
              [0, "then"],
              [31, [7, 0]],
            ],
          ],
        ]),
      ),
    ).toBeUndefined();
    await tick(5);
    // The reply arrived: the call must have settled (with the object, or refused as DECODE)…
    expect(state.s).not.toBe("pending");
    // …and the client must not have called export 7 with its own resolve/reject functions.
    expect(h.calls().filter((c) => c[2] === 7)).toEqual([]);
    // Refused once built: the stub made for export 7 is nobody's, so it is released at once.
    expect((state.v as RpcError).code).toBe("DECODE");
    expect(h.bodies("X").flat()).toEqual([[7, 1]]);
  });

  it("a subscribe answered with { seq: <function stub> } rejects ready (PROTOCOL) and releases that export at once", async () => {
    const { h, client } = await fresh({ timeout: 0 });
    const sub = subscribe(client as never, "t" as never, () => {});
    const ready = track(sub.ready);
    await tick();
    h.feed(
      R([
        [
          1,
          1,
          [
            [2, [[1, 2]]],
            [0, "seq"],
            [31, [8, 0]],
          ],
        ],
      ]),
    );
    await tick(5);
    expect(ready.s).toBe("err");
    expect((ready.v as RpcError).code).toBe("PROTOCOL");
    expect(h.bodies("X").flat()).toEqual([[8, 1]]);
  });

  for (const seq of [1e300, 2 ** 53 + 2, 1.5, 0, -1]) {
    it(`a topic event numbered ${seq} is dropped and reported; the cursor stays and later events arrive`, async () => {
      const { h, client } = await fresh({ timeout: 0 });
      const seen: number[] = [];
      const sub = subscribe(client as never, "t" as never, (_e: unknown, info: { seq: number }) => void seen.push(info.seq));
      await tick();
      h.feed(R([[1, 0, { seq: 1 }]]));
      await tick();
      const event = (n: number) => "\u001eC" + JSON.stringify([[0, ["event", [0, "t", n, "e"]], 0, 2]]);
      h.feed(event(seq));
      h.feed(event(2));
      await tick();
      expect({ seen, cursor: sub.cursor }).toEqual({ seen: [2], cursor: 2 });
      expect(h.errors.map(([e]) => (e as RpcError).code)).toEqual(["PROTOCOL"]);
    });
  }

  it("a subscribe answered with null does not throw out of onMessage nor drop the other replies of its frame", async () => {
    const { h, client } = await fresh({ timeout: 0 });
    const other = track(client.other());
    const sub = subscribe(client as never, "t" as never, () => {});
    const ready = track(sub.ready);
    await tick();
    expect(h.calls().map((c) => [c[0], c[1]])).toEqual([
      [1, ["other", [0]]],
      [2, ["subscribe", [0, "t", null, 1]]],
    ]);
    const thrown = h.feed(
      R([
        [2, 0, null],
        [1, 0, "fine"],
      ]),
    );
    await tick();
    expect(thrown).toBeUndefined();
    expect(other).toEqual({ s: "ok", v: "fine" });
    expect(ready.s).not.toBe("pending");
  });

  it("a reply frame over the client's maxBlobs fails the call (LIMIT) instead of closing and resending it", async () => {
    const { h, client } = await fresh({ timeout: 0, limits: { maxBlobs: 1 }, reconnect: { initialDelay: 0, maxDelay: 0, jitter: 0 } });
    const state = track(client.a());
    await tick();
    // What a legitimate server sends for a result holding two ArrayBuffers; the delivery record
    // replays the same answer to every resend.
    const header = JSON.stringify([
      [
        1,
        1,
        [
          [1, [1, 2]],
          [17, 0],
          [17, 1],
        ],
      ],
    ]);
    h.feed(binaryFrame(header, [new Uint8Array([1]), new Uint8Array([2])], { kind: 0x52 }));
    await tick(5);
    expect(state.s).toBe("err");
    expect((state.v as RpcError).code).toBe("LIMIT");
    expect(h.calls().filter((c) => c[3] === 1)).toEqual([]);
  });
});

describe("onMessage never throws, whatever the transport hands it", () => {
  // undefined: the input is ignored and the call's reply still arrives; a code: the client closes
  // the connection as broken (and, with reconnect off, the waiting call fails DISCONNECTED).
  const inputs: [string, unknown, number | undefined][] = [
    ["a Blob (binaryType not arraybuffer)", new Blob(["\u001eR[]"]), 4008],
    ["a DataView, read as a binary frame", new DataView(new TextEncoder().encode("\u001eR[[99,0,1]]").buffer), 4009],
    ["an empty ArrayBuffer", new ArrayBuffer(0), undefined],
    ["a lone record separator as bytes", new Uint8Array([0x1e]), 4008],
    ["a reply to an unknown id holding a lone surrogate", '\u001eR[[99,0,"\ud800"]]', undefined],
    ["a replies frame of 100,000 nulls", `\u001eR[${Array(100_000).fill("null").join(",")}]`, undefined],
  ];
  for (const [name, data, code] of inputs) {
    it(`${name}: ${code ? `closed with ${code}` : "ignored"}, and the call settles`, async () => {
      const { h, client } = await fresh({ timeout: 0 });
      const state = track(client.a());
      await tick();
      expect(h.feed(data as string)).toBeUndefined();
      h.feed(R([[1, 0, "ok"]]));
      await tick();
      expect(h.closes.map(([closed]) => closed)).toEqual(code ? [code] : []);
      expect(state).toEqual(code ? { s: "err", v: expect.objectContaining({ code: "DISCONNECTED" }) } : { s: "ok", v: "ok" });
      expect(h.errors).toEqual([]);
    });
  }
});
