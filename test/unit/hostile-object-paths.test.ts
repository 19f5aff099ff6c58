/**
 * Paths the client follows through what an object sent it, with the object's frames written by
 * hand (a fake transport; the object is assumed hostile). These failed before their fixes:
 *  - A path read on a result that already arrived (`await r.x`), or that left in an earlier frame,
 *    adopted a `{ then: <the object's function> }` found there: the client called the object's
 *    function with its own settle functions. It is refused DECODE now, and nothing is sent.
 *  - A PIPELINE path (in a call from the object) through a stub the client's exposed method
 *    returned made a call on that stub (to this object, or to another client's object), and a
 *    borrowed stub's failure escaped as an unhandled rejection that ended a Node process. The
 *    path is NOT_FOUND now, and no call is made.
 *  - A path through an object stub nested in plain data that arrived (`r.x.m()`, `r.x.foo`) now
 *    reaches that stub, as the same path pipelined does.
 * Also: PIPELINE records in a thrown value or an error's cause fail only their call (DECODE), and
 * a RETURN record in the object's arguments gives the client's exposed method its own function.
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { readFrame } from "../../packages/rpc/src/frame.js";
import type { RpcError, RpcTransport, TransportHandler } from "../../packages/rpc/src/index.js";
import { createRpcClient, rpcConnection } from "../../packages/rpc/src/index.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import { framesOf } from "../support/frames.js";

/** A client over a fake transport: `feed` hands it a frame as the object would, `sent` is what it sent. */
function fresh(options: Record<string, unknown> = {}) {
  let handler: TransportHandler | undefined;
  const sent: (string | Uint8Array)[] = [];
  const factory = (hd: TransportHandler): RpcTransport => {
    handler = hd;
    return {
      open: () => Promise.resolve(),
      send: (frame) => void sent.push(...framesOf(frame)),
      close: (code = 1000, reason = "") => hd.onClose(code, reason),
    };
  };
  // biome-ignore lint/suspicious/noExplicitAny: the hostile object's API is whatever a test calls on it
  const client: any = createRpcClient<unknown>("X", "y", {
    transport: factory,
    reconnect: false,
    heartbeat: false,
    timeout: 0,
    onError: () => {},
    ...options,
  } as never);
  /** Every frame the client sent of `kind` ("C", "R", "X"), bodies parsed and flattened to envelopes. */
  const bodies = (kind: string) =>
    sent.flatMap((frame) => {
      const raw = readFrame(frame, DEFAULT_LIMITS);
      return raw && raw.kind === kind.charCodeAt(0) ? (raw.body as unknown[][]) : [];
    });
  return {
    client,
    sent,
    feed: (data: string) => handler!.onMessage(data),
    /** The calls the client sent: [id, chain, target?]. */
    calls: () => bodies("C"),
    /** The replies the client sent to the object's calls, as [id, status, value or code]. */
    replies: () => bodies("R").map((r) => r.slice(0, 3)),
  };
}

const tick = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setTimeout(r, 0));
};

/** The state of a promise, read without awaiting it. */
function track(p: PromiseLike<unknown>) {
  const state: { s: "pending" | "ok" | "err"; v?: unknown } = { s: "pending" };
  p.then(
    (v) => Object.assign(state, { s: "ok", v }),
    (e) => Object.assign(state, { s: "err", v: e }),
  );
  return state;
}

/** "ok", "pending", or the code of the error it rejected with. */
const outcome = (t: { s: string; v?: unknown }) => (t.s === "err" ? (t.v as RpcError).code : t.s);

/** Collects unhandled rejections while `body` runs. */
async function unhandledDuring(body: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const onUnhandled = (reason: unknown) => void seen.push(String(reason).slice(0, 80));
  process.on("unhandledRejection", onUnhandled);
  try {
    await body();
    await tick(5);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
  return seen;
}

/** Call 1's reply: `{ x: { then: <the object's export 7, a function> } }`. */
const THEN_UNDER_X = '\u001eR[[1,1,[[2,[[1,2]]],[0,"x"],[2,[[3,4]]],[0,"then"],[31,[7,0]]]]]';
/** Call 1's reply: `{ x: <the object's export 7, of kind k> }`. */
const STUB_UNDER_X = (kind: number) => `\u001eR[[1,1,[[2,[[1,2]]],[0,"x"],[31,[7,${kind}]]]]]`;

/** The read was refused (DECODE) and the client sent nothing but the first call: the object's `then` (export 7) was never called. */
function expectThenableRefused(t: ReturnType<typeof fresh>, read: Parameters<typeof outcome>[0]): void {
  expect(
    t.calls().filter((c) => c[2] === 7),
    "the client called the object's `then` with its own settle functions",
  ).toEqual([]);
  expect(outcome(read), "the read adopted the object's thenable").toBe("DECODE");
  expect(t.calls()).toHaveLength(1);
}

describe("a path read that reaches a { then: <the object's function> }", () => {
  it("on a result that already arrived: DECODE, and the client calls nothing", async () => {
    const t = fresh();
    const r = t.client.get();
    const first = track(r);
    await tick();
    t.feed(THEN_UNDER_X);
    await tick();
    expect(first.s).toBe("ok");
    const read = track(r.x);
    await tick(5);
    expectThenableRefused(t, read);
  });

  it("on a result that left in an earlier frame and arrives after the read: the same", async () => {
    const t = fresh();
    const r = t.client.get();
    await tick();
    const read = track(r.x);
    await tick();
    t.feed(THEN_UNDER_X);
    await tick(5);
    expectThenableRefused(t, read);
  });
});

describe("a path through a stub nested in a result that arrived", () => {
  it("{ x: <an object stub> }: r.x is the stub with nothing sent; r.x.foo and r.x.m() are calls to it, as pipelined paths would be", async () => {
    const t = fresh();
    const r = t.client.get();
    await tick();
    t.feed(STUB_UNDER_X(1));
    await tick();
    const x = track(r.x);
    await tick(5);
    expect(outcome(x)).toBe("ok");
    expect(t.calls(), "reading r.x made a call").toHaveLength(1);
    const foo = track(r.x.foo);
    const m = track(r.x.m());
    await tick(5);
    expect(
      { foo: outcome(foo), m: outcome(m), targets: t.calls().map((c) => c[2] ?? 0) },
      "the path was read as plain data (NOT_FOUND) instead of going to the stub",
    ).toEqual({ foo: "pending", m: "pending", targets: [0, 7, 7] });
    // The object answers each with the name its chain starts with.
    t.feed(
      `\u001eR${JSON.stringify(
        t
          .calls()
          .slice(1)
          .map((c) => [c[0], 0, (c[1] as string[])[0]]),
      )}`,
    );
    await tick();
    expect([foo.v, m.v]).toEqual(["foo", "m"]);
  });
});

describe("PIPELINE records where a reply cannot have them", () => {
  const cases: [string, string][] = [
    ["in a thrown value", "[1,2,[[30,[1]]]]"],
    ["in an ENCODE failure's cause", '[1,3,"ENCODE","x",[[30,[1]]]]'],
  ];
  for (const [name, reply] of cases) {
    it(`${name}: only that call fails (DECODE); the other reply of the frame arrives and the connection stays`, async () => {
      const t = fresh();
      const a = track(t.client.a());
      const b = track(t.client.b());
      await tick();
      t.feed(`\u001eR[${reply},[2,0,"fine"]]`);
      await tick();
      expect({ a: outcome(a), b }).toEqual({ a: "DECODE", b: { s: "ok", v: "fine" } });
      expect(rpcConnection(t.client).state).toBe("open");
    });
  }
});

describe("the object's calls to the client", () => {
  it("a RETURN record in the arguments naming the client's own function: the exposed method gets that very function", async () => {
    const got: unknown[] = [];
    const fn = () => 1;
    const t = fresh({ expose: { take: (x: unknown) => void got.push(x) } });
    track(t.client.keep(fn)); // exports fn as 1
    await tick();
    t.feed('\u001eC[[5,["take",[1,[[1,[1]],[32,1]]]]]]');
    await tick();
    expect(got).toEqual([fn]);
    expect(t.replies()).toEqual([[5]]);
  });

  it("a pipelined target on a result that is the object's own stub: NOT_FOUND and NOT_CALLABLE, and nothing leaves the client", async () => {
    const t = fresh({ expose: { echo: (x: unknown) => x } });
    track(t.client.open());
    await tick();
    t.feed('\u001eC[[1,["echo",[1,[[1,[1]],[31,[9,1]]]]]],[2,["foo",[0]],-1],[3,[[0]],-1]]');
    await tick(5);
    expect(t.replies()).toEqual([
      [1, 1, [[32, 9]]],
      [2, 3, "NOT_FOUND"],
      [3, 3, "NOT_CALLABLE"],
    ]);
    expect(t.calls()).toHaveLength(1);
  });
});

/** Calls 1 and 2 from the object: 1 runs `method` (with `arg`), 2 passes `take` a PIPELINE path through 1's result. */
const pipelinedThrough = (first: string, path: string) => `\u001eC[[1,${first}],[2,["take",[1,[[1,[1]],[30,[1,"${path}"]]]]]]]`;

describe("a PIPELINE path through a stub an exposed method returned", () => {
  it("the object's own stub, echoed back (the echo call's borrowed holder): the path is NOT_FOUND, nothing is rejected unhandled", async () => {
    const t = fresh({ expose: { echo: (x: unknown) => x, take: (x: unknown) => typeof x } });
    track(t.client.open());
    await tick();
    const unhandled = await unhandledDuring(async () => {
      t.feed(pipelinedThrough('["echo",[1,[[1,[1]],[31,[9,1]]]]]', "foo"));
      await tick(5);
    });
    expect(unhandled, "the borrowed stub's failure escaped as an unhandled rejection").toEqual([]);
    expect(t.replies()).toEqual([
      [1, 1, [[32, 9]]],
      [2, 3, "NOT_FOUND"],
    ]);
    expect(t.calls(), "the path made a call on the stub").toHaveLength(1);
  });

  it("a live stub of the object's the client keeps: the path is NOT_FOUND, and the client sends no call for it", async () => {
    let held: unknown;
    const t = fresh({ expose: { current: () => held, take: (x: unknown) => typeof x } });
    const p = t.client.get();
    await tick();
    t.feed("\u001eR[[1,1,[[31,[9,1]]]]]");
    held = await p;
    const unhandled = await unhandledDuring(async () => {
      t.feed(pipelinedThrough('["current",[0]]', "foo"));
      await tick(5);
    });
    expect(t.calls().slice(1), "the path made a call on the stub, to the object").toEqual([]);
    expect({ replies: t.replies(), pending: rpcConnection(t.client).pendingCalls, unhandled }).toEqual({
      replies: [
        [1, 1, [[32, 9]]],
        [2, 3, "NOT_FOUND"],
      ],
      pending: 0,
      unhandled: [],
    });
  });

  it("another client's stub (object B pipelining through client A's stub): nothing is sent on A, nothing rejected unhandled", async () => {
    const a = fresh();
    const p = a.client.get();
    await tick();
    a.feed("\u001eR[[1,1,[[31,[9,1]]]]]");
    const stubOfA = await p;
    const b = fresh({ expose: { current: () => stubOfA, take: (x: unknown) => typeof x } });
    track(b.client.open());
    await tick();
    const sentOnA = a.sent.length;
    const unhandled = await unhandledDuring(async () => {
      b.feed(pipelinedThrough('["current",[0]]', "secret"));
      await tick(5);
    });
    expect(a.sent.slice(sentOnA).map(String), "B's path made a call on A's stub, over A's connection").toEqual([]);
    expect({ replies: b.replies(), unhandled }).toEqual({
      replies: [
        [1, 3, "ENCODE"],
        [2, 3, "NOT_FOUND"],
      ],
      unhandled: [],
    });
  });

  it("in a Node process (the built package): one such frame does not end it", () => {
    const dist = pathToFileURL(resolve(__dirname, "../../packages/rpc/dist/index.js")).href;
    const frame = pipelinedThrough('["echo",[1,[[1,[1]],[31,[9,1]]]]]', "foo");
    const script = `
      import { createRpcClient } from ${JSON.stringify(dist)};
      let handler;
      const factory = (h) => { handler = h; return { open: () => Promise.resolve(), send() {}, close: (c = 1000, r = "") => h.onClose(c, r) }; };
      const client = createRpcClient("X", "y", { transport: factory, reconnect: false, heartbeat: false, timeout: 0, onError: () => {},
        expose: { echo: (x) => x, take: (x) => typeof x } });
      client.hello().catch(() => {});
      await new Promise((r) => setTimeout(r, 10));
      handler.onMessage(${JSON.stringify(frame)});
      await new Promise((r) => setTimeout(r, 50));
      console.log("alive");
      process.exit(0);
    `;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    expect(
      { status: run.status, stdout: run.stdout.trim(), rejection: run.stderr.split("\n").find((l) => l.startsWith("RpcError")) },
      "the process died of an unhandled rejection",
    ).toEqual({ status: 0, stdout: "alive", rejection: undefined });
  });
});
