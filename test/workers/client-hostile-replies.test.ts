/**
 * The client facing a Durable Object that sends broken or adversarial reply frames. A reply to a
 * call the client is not waiting for is ignored (what it carries by reference is given back); a
 * reply of the wrong shape or status fails only the call it names; a reply frame whose layout
 * cannot be read closes the connection, and the waiting call is resent and answered on the next.
 * References in replies are given back when the reply is not used, and a frame past the client's
 * receive limits is refused without stopping the client.
 * The frames are sent on the client's own socket from inside the object (runInObject), so they
 * reach the real client exactly as a hostile object would send them.
 */
import { RpcError, type RpcClientOptions, rpcConnection } from "@dorpc/rpc";
import { createTestClient, runInObject, type TestClient, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { binaryFrame } from "../support/binary-frame.js";
import { rejection, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

const REPLIES = 0x52; // "R"

type Outcome = { value: unknown } | { code: string };

const outcome = (promise: PromiseLike<unknown>): Promise<Outcome> =>
  Promise.resolve(promise).then(
    (value) => ({ value }),
    (error: unknown) => ({ code: RpcError.is(error) ? error.code : `not an RpcError: ${String(error)}` }),
  );

/** A Counter client whose call 1 (getValue) was answered and whose call 2 (addLater, which the
 * object answers after `ms`) waits: a forged reply for id 2 reaches a call that is waiting. */
async function waitingCall(label: string, options: RpcClientOptions = {}, ms = 1_000) {
  const errors: string[] = [];
  const client = createTestClient<Counter>(env.COUNTER, uniqueName(label), {
    onError: (error, what) => errors.push(`${what}: ${RpcError.is(error) ? error.code : String(error)}`),
    ...options,
  });
  await client.getValue(); // call 1
  const call = client.addLater(1, 2, ms); // call 2
  const waiting = outcome(call);
  return { client, errors, call, waiting, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** Sends `frames` from the object on every socket it has, as if the object had written them. */
async function inject(client: TestClient<Counter>, ...frames: (string | Uint8Array)[]): Promise<void> {
  await runInObject(client, (_obj, state) => {
    for (const ws of state.getWebSockets()) for (const frame of frames) ws.send(frame);
  });
}

/** The [export id, count] pairs of every release frame (X) the client sends from now on. */
function releasesSent(client: TestClient<Counter>): [number, number][] {
  const released: [number, number][] = [];
  const socket = testConnection(client).socket!;
  const send = socket.send.bind(socket);
  socket.send = (data) => {
    if (typeof data === "string" && data.startsWith("\u001eX")) released.push(...(JSON.parse(data.slice(2)) as [number, number][]));
    send(data);
  };
  return released;
}

const closeCodes = (client: TestClient<Counter>) => testConnection(client).attempts.map((attempt) => attempt.closed?.code);

describe("replies the client was not waiting for", () => {
  it("replies to ids never used, malformed ids and a second reply to an answered call are ignored; the connection stays", async () => {
    using t = await waitingCall("unknown-ids");
    const { client, errors } = t;
    await inject(
      client,
      "\u001eR[[999,0,1]]",
      "\u001eR[[1,0,77]]", // call 1 was answered already
      "\u001eR[[0,0,1]]",
      "\u001eR[[-1,0,1]]",
      "\u001eR[[1.5,0,1]]",
      '\u001eR[["1",0,1]]',
      "\u001eR[null,1,[999]]",
    );
    expect(await client.increment(1)).toBe(1);
    expect(await t.waiting).toEqual({ value: 3 }); // call 2 gets its own answer
    expect(closeCodes(client)).toEqual([undefined]);
    expect(errors).toEqual([]);
  });

  it("a reply to an unknown id carrying an EXPORT record gives that reference back (X frame), not keeps it", async () => {
    using t = await waitingCall("unknown-exports");
    const released = releasesSent(t.client);
    await inject(t.client, "\u001eR[[999,1,[[31,[5,1]]]]]");
    await vi.waitFor(() => expect(released).toEqual([[5, 1]]));
    expect(t.errors).toEqual([]);
  });
});

describe("a reply of the wrong shape or status fails only the call it names", () => {
  const cases: [string, string | Uint8Array, string][] = [
    ["an unknown status", "\u001eR[[2,7,1]]", "PROTOCOL"],
    ["a status given as a string", '\u001eR[[2,"0",1]]', "PROTOCOL"],
    ["records that are not an array", '\u001eR[[2,1,{"a":1}]]', "DECODE"],
    ["a record of an unknown type", "\u001eR[[2,1,[[99,1]]]]", "DECODE"],
    ["a record index out of range", '\u001eR[[2,1,[[2,[[1,5]]],[0,"k"]]]]', "DECODE"],
    ["an own __proto__ key on the JSON path", '\u001eR[[2,0,{"__proto__":{"polluted":1}}]]', "DECODE"],
    ["an own __proto__ key in an object record", '\u001eR[[2,1,[[2,[[1,2]]],[0,"__proto__"],[2,[[3,4]]],[0,"polluted"],[0,1]]]]', "DECODE"],
    ["a bytes record in a text frame", '\u001eR[[2,4,["Uint8Array",0]]]', "DECODE"],
    ["a bytes record of type __proto__", binaryFrame('[[2,4,["__proto__",0]]]', [new Uint8Array(4)], { kind: REPLIES }), "DECODE"],
    ["a bytes record of type constructor", binaryFrame('[[2,4,["constructor",0]]]', [new Uint8Array(4)], { kind: REPLIES }), "DECODE"],
    ["a Float64Array over 3 bytes", binaryFrame('[[2,4,["Float64Array",0]]]', [new Uint8Array(3)], { kind: REPLIES }), "DECODE"],
    [
      "a bytes record naming a blob past the last",
      binaryFrame('[[2,4,["Uint8Array",3]]]', [new Uint8Array(3)], { kind: REPLIES }),
      "DECODE",
    ],
    ["a PIPELINE record", "\u001eR[[2,1,[[30,[1]]]]]", "DECODE"],
    ["an EXPORT record of an unknown kind", "\u001eR[[2,1,[[31,[5,9]]]]]", "DECODE"],
    ["a RETURN of an export the client never made", "\u001eR[[2,1,[[32,7]]]]", "REFERENCE_LOST"],
    ["a throw whose value is not a record table", '\u001eR[[2,2,"boom"]]', "DECODE"],
    ["a failure with an unknown code", '\u001eR[[2,3,"__proto__",7]]', "INTERNAL"],
    ["a failure with a malformed cause", '\u001eR[[2,3,"ENCODE","m",[[99]]]]', "DECODE"],
    ["a BigInt over maxBigIntDigits", `\u001eR[[2,1,[[8,"${"9".repeat(10_001)}"]]]]`, "LIMIT"],
  ];
  for (const [name, frame, code] of cases) {
    it(`${name}: the call fails with ${code}, the connection goes on`, async () => {
      using t = await waitingCall("shape");
      await inject(t.client, frame);
      expect(await t.waiting).toEqual({ code });
      expect(await t.client.increment(5)).toBe(5);
      expect(closeCodes(t.client)).toEqual([undefined]);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(t.errors).toEqual([]);
    });
  }

  it("a thrown RpcError record whose props set name to a number still rejects as an RpcError with its code", async () => {
    using t = await waitingCall("error-props");
    const errorRecord = '[7,{"name":"RpcError","message":"x","props":[[1,2],[3,4]]}],[0,"code"],[0,"TIMEOUT"],[0,"name"],[0,5]';
    await inject(t.client, `\u001eR[[2,2,[${errorRecord}]]]`);
    const error = await rejection(t.call);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe("TIMEOUT");
    expect(await t.client.increment(1)).toBe(1);
  });

  it("constructor, toString, hasOwnProperty and then keys arrive as own data properties", async () => {
    using t = await waitingCall("proto-keys");
    const keys = '{"constructor":1,"toString":2,"hasOwnProperty":3,"then":4}';
    await inject(t.client, `\u001eR[[2,0,${keys}]]`);
    const answer = await t.waiting;
    expect(answer).toEqual({ value: JSON.parse(keys) });
    expect("value" in answer && Object.keys(answer.value as object)).toEqual(["constructor", "toString", "hasOwnProperty", "then"]);
    expect(Object.hasOwn({}, "constructor")).toBe(false);
  });
});

describe("references in replies", () => {
  it("a reply that fails to decode after a stub was built gives that reference back at once", async () => {
    using t = await waitingCall("partway");
    const released = releasesSent(t.client);
    // record 1 (export 5) is built, then record 2 (a RETURN of an export the client never made) fails
    await inject(t.client, "\u001eR[[2,1,[[1,[1,2]],[31,[5,0]],[32,99]]]]");
    expect(await t.waiting).toEqual({ code: "REFERENCE_LOST" });
    await vi.waitFor(() => expect(released).toEqual([[5, 1]]));
  });

  it("the same EXPORT record used 50 times in one reply is one stub, released once", async () => {
    using t = await waitingCall("same-export");
    const released = releasesSent(t.client);
    await inject(t.client, `\u001eR[[2,1,[[1,[${Array(50).fill(1).join(",")}]],[31,[9,0]]]]]`);
    const result = await t.waiting;
    const stubs = "value" in result ? (result.value as Disposable[]) : [];
    expect(stubs).toHaveLength(50);
    expect(new Set(stubs).size).toBe(1);
    stubs[0]![Symbol.dispose]();
    await vi.waitFor(() => expect(released).toEqual([[9, 1]]));
  });

  it("a reply with 10,001 EXPORT records (past maxImports) fails LIMIT, gives every one back, and leaves the import table empty", {
    timeout: 20_000,
  }, async () => {
    using t = await waitingCall("imports");
    const released = releasesSent(t.client);
    const exports = Array.from({ length: 10_001 }, (_, i) => `[31,[${i + 1},0]]`);
    const root = `[1,[${exports.map((_, i) => i + 1).join(",")}]]`;
    await inject(t.client, `\u001eR[[2,1,[${root},${exports.join(",")}]]]`);
    expect(await t.waiting).toEqual({ code: "LIMIT" });
    await vi.waitFor(() => expect(released.reduce((n, [, count]) => n + count, 0)).toBe(10_001));
    expect(new Set(released.map(([id]) => id)).size).toBe(10_001);
    // The import table was not left full: a reply with one more reference is accepted.
    const next = outcome(t.client.addLater(1, 2, 1_000)); // call 3
    await inject(t.client, "\u001eR[[3,1,[[31,[20000,0]]]]]");
    const answer = await next;
    expect("value" in answer ? typeof answer.value : answer).toBe("function");
  });
});

describe("limits of what the client receives", () => {
  it("a frame over maxMessageBytes naming more calls than maxPendingCalls closes with 4009; the client goes on", async () => {
    // An oversized calls frame is answered LIMIT call by call when its ids can be made out (see
    // push.test.ts); 1,100 of them are more answers than one frame may ask for: the client closes.
    using t = await waitingCall("big-many", { limits: { maxMessageBytes: 100_000 } });
    const calls = Array.from({ length: 1_100 }, (_, i) => `[${i + 1},["x",[0,"${"y".repeat(100)}"]]]`).join(",");
    await inject(t.client, `\u001eC[${calls}]`);
    expect(await t.waiting).toEqual({ value: 3 }); // resent on the next connection and answered
    expect(closeCodes(t.client)[0]).toBe(4009);
    expect(await t.client.increment(1)).toBe(1);
  });
});

describe("a reply frame whose binary layout cannot be read", () => {
  const json = (text: string) => new TextEncoder().encode(text);
  const cases: [string, () => Uint8Array, number][] = [
    ["shorter than the fixed header", () => new Uint8Array([0x1e, REPLIES, 0, 0, 0]), 4008],
    ["a header length past the end", () => binaryFrame("[[2,0,1]]", [], { kind: REPLIES, headerLength: 1_000 }), 4008],
    [
      "blob lengths that do not add up",
      () => binaryFrame('[[2,4,["Uint8Array",0]]]', [new Uint8Array(4)], { kind: REPLIES, lengths: [5] }),
      4008,
    ],
    ["a blob count past maxBlobs, with no length table", () => binaryFrame("[[2,0,1]]", [], { kind: REPLIES, blobCount: 5_000 }), 4009],
    ["a blob count of 2^32 - 1", () => binaryFrame("[[2,0,1]]", [], { kind: REPLIES, blobCount: 0xffffffff }), 4009],
    [
      "a header that is not UTF-8",
      () => {
        const header = json('[[2,0,"xx"]]');
        header.set([0xff, 0xfe], 7);
        return binaryFrame(header, [], { kind: REPLIES });
      },
      4008,
    ],
  ];
  for (const [name, frame, code] of cases) {
    it(`${name}: closed with ${code}; the waiting call is resent and answered`, async () => {
      using t = await waitingCall("layout");
      await inject(t.client, frame());
      expect(await t.waiting).toEqual({ value: 3 });
      expect(closeCodes(t.client)[0]).toBe(code);
      await vi.waitFor(() => expect(rpcConnection(t.client).state).toBe("open"));
      expect(await t.client.increment(1)).toBe(1);
    });
  }
});
