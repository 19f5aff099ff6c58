/**
 * The client facing a Durable Object that sends it broken or adversarial frames other than
 * replies: topic events with sequence numbers that are not positive safe integers (dropped and
 * reported as PROTOCOL, so the cursor is never poisoned), junk answers to subscribe, calls the
 * client must refuse (members it never exposed, ids already running), and releases, cancels,
 * hellos, pings and unknown kinds. The frames go out through `Room.raw`, which sends one frame to
 * its caller as the object would.
 */
import { RpcError, type RpcClientOptions, rpcConnection, subscribe } from "@dorpc/rpc";
import { createTestClient, type TestClient, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Room, RoomClient } from "./push-objects.js";

type Message = Parameters<RoomClient["message"]>[0];

/** A client of `room` that exposes RoomClient and collects what reaches onError as [what, code]. */
function member(room: string, options: RpcClientOptions = {}) {
  const inbox: Message[] = [];
  const errors: [string, string][] = [];
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name: "ann", team: "none" },
    expose: {
      message: (m: Message) => void inbox.push(m),
      confirm: () => true,
      slow: (ms: number) => new Promise<string>((resolve) => setTimeout(() => resolve(`slept ${ms}`), ms)),
    } satisfies RoomClient,
    onError: (error, what) => errors.push([what, RpcError.is(error) ? error.code : String(error)]),
    ...options,
  });
  return { client, inbox, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** The replies (R frames) the client sends from now on, each as its envelope [id, status, ...]. */
function repliesSent(client: TestClient<Room>): unknown[][] {
  const replies: unknown[][] = [];
  const socket = testConnection(client).socket!;
  const send = socket.send.bind(socket);
  socket.send = (data) => {
    if (typeof data === "string" && data.startsWith("\u001eR")) replies.push(...(JSON.parse(data.slice(2)) as unknown[][]));
    send(data);
  };
  return replies;
}

/** A topic event as the object sends it (a notification of the system object's `event`), `args` encoded. */
const event = (args: string) => `\u001eC[[0,["event",${args}],0,2]]`;

describe("topic events whose sequence number is not a positive safe integer", () => {
  // 1e300, 1.5, 2^53 + 2, 0 and -1 on the JSON path are in test/unit/hostile-server.test.ts.
  const bogus: [string, string][] = [
    ["Infinity (record path)", '[1,[[1,[1,2,3]],[0,"chat"],[16,"Infinity"],[2,[[4,5],[6,7]]],[0,"from"],[0,"evil"],[0,"text"],[0,"x"]]]'],
    ["NaN (record path)", '[1,[[1,[1,2,3]],[0,"chat"],[16,"NaN"],[2,[[4,5],[6,7]]],[0,"from"],[0,"evil"],[0,"text"],[0,"x"]]]'],
    ["a string", '[0,"chat","2",{"from":"evil","text":"x"}]'],
    ["2^53 + 1", '[0,"chat",9007199254740993,{"from":"evil","text":"x"}]'],
  ];
  for (const [name, args] of bogus) {
    it(`an event numbered ${name} is dropped and reported (PROTOCOL); later events arrive`, async () => {
      using a = member(uniqueName("bad-seq"));
      const seen: [number, string][] = [];
      using sub = subscribe(a.client, "chat", (e, info) => void seen.push([info.seq, e.text]));
      await sub.ready;
      await a.client.post("one");
      await a.client.raw(event(args));
      await a.client.post("two");
      await vi.waitFor(() =>
        expect(seen).toEqual([
          [1, "one"],
          [2, "two"],
        ]),
      );
      expect(sub.cursor).toBe(2);
      expect(a.errors).toEqual([['the subscription to "chat"', "PROTOCOL"]]);
    });
  }

  it("after an event numbered 1e300 and a reconnect, the subscription goes on from its real cursor", async () => {
    using a = member(uniqueName("bad-seq-reconnect"));
    const seen: number[] = [];
    const ended: unknown[] = [];
    using sub = subscribe(a.client, "chat", (_e, info) => void seen.push(info.seq), { onEnd: (e) => void ended.push(e) });
    await sub.ready;
    await a.client.raw(event('[0,"chat",1e300,{"from":"evil","text":"x"}]'));
    await a.client.raw("\u001eC{bad"); // makes the client close (4008) and reconnect
    await vi.waitFor(() => expect(rpcConnection(a.client).state).toBe("open"));
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toEqual([1]));
    expect(testConnection(a.client).attempts.map((attempt) => attempt.closed?.code)).toEqual([4008, undefined]);
    expect({ cursor: sub.cursor, ended, errors: a.errors.map(([, code]) => code) }).toEqual({ cursor: 1, ended: [], errors: ["PROTOCOL"] });
  });

  it("events of a topic never subscribed, or named __proto__, constructor, a number, null or an array, are ignored", async () => {
    using a = member(uniqueName("odd-topics"));
    const seen: number[] = [];
    using sub = subscribe(a.client, "chat", (_e, info) => void seen.push(info.seq));
    await sub.ready;
    for (const topic of ['"news"', '"__proto__"', '"constructor"', "1", "null", "[]"]) {
      await a.client.raw(event(`[0,${topic},5,"x"]`));
    }
    expect(await a.client.askMe("ok")).toBe(true);
    expect(seen).toEqual([]);
    expect(a.errors).toEqual([]);
  });
});

describe("junk answers to subscribe", () => {
  // The forged answer goes out while the object runs `raw` (call 2, after connected(), call 1),
  // for call 3: the subscribe made right after it, whose genuine answer then comes too late.
  const answers: [string, string][] = [
    ["resync null", '{"seq":5,"resync":null}'],
    ["resync without oldest", '{"seq":5,"resync":{}}'],
    ["a negative seq", '{"seq":-1}'],
    ["a fractional seq", '{"seq":1.5}'],
    ["a string", '"subscribed"'],
  ];
  for (const [name, answer] of answers) {
    it(`an answer with ${name} rejects ready with PROTOCOL; the client goes on`, async () => {
      using a = member(uniqueName("sub-answer"));
      await a.client.connected(); // call 1
      const forged = a.client.raw(`\u001eR[[3,0,${answer}]]`); // call 2
      const sub = subscribe(a.client, "chat", () => {}); // call 3
      await forged;
      const ready = await sub.ready.then(
        () => "resolved",
        (e: unknown) => (RpcError.is(e) ? e.code : String(e)),
      );
      expect(ready).toBe("PROTOCOL");
      expect(await a.client.askMe("ok")).toBe(true);
      expect(testConnection(a.client).attempts).toHaveLength(1);
    });
  }
});

describe("calls from the object that the client refuses", () => {
  it("members of an exposed function or of the system object and __proto__ are NOT_FOUND, a call on an export never made REFERENCE_LOST, a RETURN record in arguments PROTOCOL; nothing runs", async () => {
    using a = member(uniqueName("unexposed"));
    await a.client.connected();
    const replies = repliesSent(a.client);
    const calls: [number, string, string][] = [
      [901, '["message","constructor",[0,"return 1"]]', "NOT_FOUND"],
      [902, '["message","call",[0,null,{"from":"x","text":"y","at":0}]]', "NOT_FOUND"],
      [903, '["message","apply",[0,null,[]]]', "NOT_FOUND"],
      [904, '["message","bind",[0,null]]', "NOT_FOUND"],
      [905, '["event","constructor",[0,"return 1"]],0,2', "NOT_FOUND"],
      [906, '["event","call",[0,null,"chat",1,"x"]],0,2', "NOT_FOUND"],
      [907, '["subscribe",[0,"chat",null]],0,2', "NOT_FOUND"],
      [908, '["__proto__","polluted",[0,1]]', "NOT_FOUND"],
      // a call on export 5, which the client never made
      [909, '["message",[0,{"from":"x","text":"y","at":0}]],5', "REFERENCE_LOST"],
      // arguments holding a RETURN record: only replies may give a reference back
      [910, '["message",[1,[[32,1]]]]', "PROTOCOL"],
    ];
    for (const [id, call] of calls) await a.client.raw(`\u001eC[[${id},${call}]]`);
    expect(await a.client.askMe("ok")).toBe(true);
    expect(replies.filter(([id]) => (id as number) > 900).map(([id, status, code]) => [id, status, code])).toEqual(
      calls.map(([id, , code]) => [id, 3, code]),
    );
    expect(a.inbox).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("a call whose id is already running on the client is refused (PROTOCOL), and the running one still answers", async () => {
    using a = member(uniqueName("same-id"));
    await a.client.connected();
    const replies = repliesSent(a.client);
    await a.client.raw('\u001eC[[700,["slow",[0,100]]]]');
    await a.client.raw('\u001eC[[700,["slow",[0,1]]]]');
    await vi.waitFor(() =>
      expect(replies.map(([id, status, value]) => [id, status, value])).toEqual([
        [700, 3, "PROTOCOL"],
        [700, 0, "slept 100"],
      ]),
    );
  });
});

describe("releases, cancels, hellos, pings and unknown kinds", () => {
  // undefined: the client keeps the connection; 4008: it closes it as broken and reconnects.
  const frames: [string, string, number | undefined][] = [
    ["a release of an unknown export", "\u001eX[[77,1]]", undefined],
    ["an empty release", "\u001eX[]", undefined],
    ["a release with count 0", "\u001eX[[1,0]]", 4008],
    ["a release of id 0", "\u001eX[[0,1]]", 4008],
    ["a release with a negative count", "\u001eX[[1,-3]]", 4008],
    ["a release that is not an array", '\u001eX{"a":1}', 4008],
    ["a release without a body", "\u001eX", 4008],
    ["a cancel of an unknown id", "\u001eK[12345]", undefined],
    ["a cancel of id 0", "\u001eK[0]", 4008],
    ["a cancel of a string", '\u001eK["1"]', 4008],
    ["a hello sent to the client", '\u001eH["aaaaaaaaaaaaaaaaaaaa",0]', undefined],
    ["an unknown kind whose body is not a list of ids", "\u001eZ{}", 4008],
    ["an unknown kind with a list of ids", "\u001eZ[[5,1]]", undefined],
    ["a ping with a body", "\u001eP[1]", undefined],
    ["a pong with a body that is not JSON", "\u001eQxx", 4008],
    ["a lone record separator", "\u001e", 4008],
    ["an empty string", "", undefined],
    ["text without the record separator", "hello", undefined],
    ["a calls frame without a body", "\u001eC", 4008],
    ["a replies frame without a body", "\u001eR", 4008],
    ["a replies frame whose body is an object", '\u001eR{"0":[1]}', 4008],
    ["a call with id 0.5", '\u001eC[[0.5,["message"]]]', 4008],
    ["1,100 notifications in one frame (past maxPendingCalls)", `\u001eC[${Array(1_100).fill('[0,["confirm",[0,"q"]]]').join(",")}]`, 4008],
  ];
  for (const [name, frame, code] of frames) {
    it(`${name}: ${code ? `closed with ${code}` : "the connection stays"}, and the client goes on`, async () => {
      using a = member(uniqueName("control"));
      await a.client.connected();
      await a.client.raw(frame);
      await vi.waitFor(() => expect(rpcConnection(a.client).state).toBe("open"));
      expect(await a.client.askMe("ok")).toBe(true);
      expect(testConnection(a.client).attempts[0]!.closed?.code).toBe(code);
      expect(a.errors).toEqual([]);
    });
  }
});
