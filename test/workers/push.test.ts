/**
 * The object calls its clients (issue 11), in workerd over hibernatable WebSockets: broadcasts
 * from a method, from alarm() and after eviction; selection with except/where; calls to one
 * client with its answer, timeout and disconnect; refusal when a client exposes nothing; hostile
 * frames from the object; topics with replay after reconnects and eviction, and resync.
 */
import { rpcConnection, RpcError, subscribe, type RpcClientOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject, runAlarm, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";

type Message = Parameters<RoomClient["message"]>[0];

/** A client in room `room` named `name`, recording what the object pushes to it. */
function member(room: string, name: string, options: RpcClientOptions & { team?: string; answer?: boolean } = {}) {
  const inbox: Message[] = [];
  const errors: unknown[] = [];
  const { team = "none", answer = true, ...rest } = options;
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team },
    expose: {
      message: (m: Message) => void inbox.push(m),
      confirm: (question: string) => answer && question.length > 0,
      slow: (ms: number) => new Promise<string>((resolve) => setTimeout(() => resolve(`slept ${ms}`), ms)),
    } satisfies RoomClient,
    onError: (error) => errors.push(error),
    ...rest,
  });
  return { client, inbox, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

describe("broadcast", () => {
  it("a method's broadcast reaches every connected client, encoded once, typed both ways", async () => {
    const room = uniqueName("all");
    using a = member(room, "ann");
    using b = member(room, "bob");
    using c = member(room, "cy");
    await Promise.all([a.client.connected(), b.client.connected(), c.client.connected()]);
    expect(await a.client.say("hi")).toBe(3);
    for (const m of [a, b, c]) await vi.waitFor(() => expect(m.inbox).toEqual([{ from: "ann", text: "hi", at: new Date(0) }]));
  });

  it("except leaves the caller out; where selects by identity", async () => {
    const room = uniqueName("select");
    using a = member(room, "ann", { team: "red" });
    using b = member(room, "bob", { team: "blue" });
    using c = member(room, "cy", { team: "red" });
    await Promise.all([a.client.connected(), b.client.connected(), c.client.connected()]);
    expect(await a.client.sayToOthers("not me")).toBe(2);
    expect(await b.client.sayToTeam("red", "reds only")).toBe(2);
    await vi.waitFor(() => expect(c.inbox.map((m) => m.text)).toEqual(["not me", "reds only"]));
    await vi.waitFor(() => expect(b.inbox.map((m) => m.text)).toEqual(["not me"]));
    expect(a.inbox.map((m) => m.text)).toEqual(["reds only"]);
  });

  it("a push and the reply of the call that made it keep their order on the caller's socket", async () => {
    const room = uniqueName("order");
    using a = member(room, "ann");
    let seenWhenReplied = -1;
    await a.client.say("first").then(() => (seenWhenReplied = a.inbox.length));
    expect(seenWhenReplied).toBe(1);
  });

  it("alarm() broadcasts to the connected clients", async () => {
    const room = uniqueName("alarm");
    using a = member(room, "ann");
    await a.client.pushLater("from the alarm");
    await runAlarm(a.client);
    await vi.waitFor(() => expect(a.inbox).toEqual([{ from: "alarm", text: "from the alarm", at: new Date(0) }]));
  });

  it("after the object was evicted it still finds its clients and their identities", async () => {
    const room = uniqueName("evicted");
    using a = member(room, "ann", { team: "red" });
    using b = member(room, "bob", { team: "blue" });
    await Promise.all([a.client.connected(), b.client.connected()]);
    await evictObject(a.client);
    expect(rpcConnection(a.client).state).toBe("open");
    expect(await b.client.sayToTeam("red", "after eviction")).toBe(1);
    await vi.waitFor(() => expect(a.inbox.map((m) => m.text)).toEqual(["after eviction"]));
    expect(b.inbox).toEqual([]);
  });

  it("a client that reconnects receives broadcasts again without doing anything", async () => {
    const room = uniqueName("reconnect");
    using a = member(room, "ann");
    using b = member(room, "bob");
    await Promise.all([a.client.connected(), b.client.connected()]);
    dropConnection(a.client);
    await rpcConnection(a.client).waitForOpen();
    await vi.waitFor(async () => expect(await b.client.say("again")).toBe(2));
    await vi.waitFor(() => expect(a.inbox.map((m) => m.text)).toContain("again"));
  });

  it("a broadcast to no one returns 0; a broadcast refuses a function argument with ENCODE", async () => {
    const room = uniqueName("nobody");
    using a = member(room, "ann");
    expect(await a.client.sayToTeam("green", "x")).toBe(0);
    const error = await rpcFailure(a.client.sayFunction(), "ENCODE");
    expect(error.message).toContain("function");
    expect(a.inbox).toEqual([]);
  });
});

describe("calls to one client", () => {
  it("the object awaits the client's answer", async () => {
    using a = member(uniqueName("ask"), "ann");
    expect(await a.client.askMe("ok?")).toBe(true);
    expect(await a.client.askMe("")).toBe(false);
  });

  it("an answer that takes longer than callTimeout rejects the object's await with TIMEOUT", async () => {
    using a = member(uniqueName("timeout"), "ann");
    await rpcFailure(a.client.askSlow(5_000), "TIMEOUT");
    expect(await a.client.askSlow(1)).toBe("slept 1");
  });

  it("a client that disconnects while the object waits for its answer fails the await with DISCONNECTED", async () => {
    const room = uniqueName("gone");
    using a = member(room, "ann");
    const b = member(room, "bob", { expose: { confirm: () => new Promise<boolean>(() => {}) } });
    await Promise.all([a.client.connected(), b.client.connected()]);
    const answers = a.client.askOthers("still there?");
    await new Promise((resolve) => setTimeout(resolve, 50));
    b.client[Symbol.dispose]();
    expect(await answers).toEqual(["DISCONNECTED"]);
  });

  it("a client that exposes nothing refuses the object's calls with NOT_FOUND", async () => {
    const room = uniqueName("unexposed");
    using a = member(room, "ann");
    const silent = createTestClient<Room>(env.ROOM, room, { query: { name: "silent" } });
    using _ = silent;
    await Promise.all([a.client.connected(), silent.connected()]);
    expect(await a.client.askOthers("hello?")).toEqual(["NOT_FOUND"]);
  });

  it("an exposed object reaches only its own methods: no prototype names, no constructor", async () => {
    const room = uniqueName("probe");
    using a = member(room, "ann");
    const probes = [
      '\u001eC[[901,["constructor"]]]',
      '\u001eC[[902,["__proto__"]]]',
      '\u001eC[[903,["toString",[0]]]]',
      '\u001eC[[904,["hasOwnProperty",[0,"message"]]]]',
    ];
    for (const frame of probes) await a.client.raw(frame);
    // The client answered each with NOT_FOUND and is still usable.
    expect(await a.client.askMe("still fine?")).toBe(true);
    expect(a.errors).toEqual([]);
  });
});

describe("hostile frames from the object", () => {
  it("a malformed frame makes the client close that connection (4008), reconnect, and go on", async () => {
    using a = member(uniqueName("malformed"), "ann");
    // The call that made the object misbehave loses its connection with it; resent on the next
    // one, it is answered from the object's delivery record (the object does not run it again).
    await a.client.raw("\u001eC{not json");
    expect(testConnection(a.client).attempts.map((t) => t.closed?.code)).toEqual([4008, undefined]);
    await vi.waitFor(() => expect(rpcConnection(a.client).state).toBe("open"));
    await vi.waitFor(async () => expect(await a.client.askMe("ok")).toBe(true));
  });

  it("a call over the client's limits.maxMessageBytes is refused (answered LIMIT) without being parsed; the connection stays", async () => {
    using a = member(uniqueName("big"), "ann", { limits: { maxMessageBytes: 1_000 } });
    await a.client.raw(`\u001eC[[905,["message",[0,"${"x".repeat(2_000)}"]]]]`);
    expect(testConnection(a.client).attempts.map((t) => t.closed?.code)).toEqual([undefined]);
    expect(await a.client.askMe("ok")).toBe(true);
    expect(a.inbox).toEqual([]);
  });

  it("a frame over the client's limit whose calls cannot be made out is refused (4009) before it is parsed; the client reconnects", async () => {
    using a = member(uniqueName("big-garbage"), "ann", { limits: { maxMessageBytes: 1_000 } });
    await a.client.raw(`\u001eC${"x".repeat(2_000)}`);
    expect(testConnection(a.client).attempts.map((t) => t.closed?.code)).toEqual([4009, undefined]);
    await vi.waitFor(async () => expect(await a.client.askMe("ok")).toBe(true));
    expect(a.inbox).toEqual([]);
  });
});

describe("topics", () => {
  it("subscribers get every published event in order, with sequence numbers", async () => {
    const room = uniqueName("topic");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const seen: [number, string][] = [];
    using sub = subscribe(b.client, "chat", (event, info) => void seen.push([info.seq, event.text]));
    await sub.ready;
    await a.client.post("one");
    await a.client.post("two");
    await vi.waitFor(() =>
      expect(seen).toEqual([
        [1, "one"],
        [2, "two"],
      ]),
    );
    expect(sub.cursor).toBe(2);
  });

  it("a subscriber that was disconnected gets exactly the events it missed, in order, once", async () => {
    const room = uniqueName("missed");
    using a = member(room, "ann");
    // No automatic reconnect: b stays away while 2 and 3 are published, and comes back with a call.
    using b = member(room, "bob", { reconnect: false });
    const seen: number[] = [];
    using sub = subscribe(b.client, "chat", (_event, info) => void seen.push(info.seq));
    await sub.ready;
    await a.client.post("1");
    await vi.waitFor(() => expect(seen).toEqual([1]));
    dropConnection(b.client);
    expect(rpcConnection(b.client).state).toBe("idle");
    await a.client.post("2");
    await a.client.post("3");
    expect(seen).toEqual([1]);
    await b.client.connected(); // reconnects; the subscription resumes from cursor 1
    await vi.waitFor(() => expect(seen).toEqual([1, 2, 3]));
    await a.client.post("4");
    await vi.waitFor(() => expect(seen).toEqual([1, 2, 3, 4]));
  });

  it("subscriptions survive the object's eviction: events published after it still arrive", async () => {
    const room = uniqueName("topic-evicted");
    using a = member(room, "ann");
    const seen: number[] = [];
    using sub = subscribe(a.client, "ticks", (_event, info) => void seen.push(info.seq));
    await sub.ready;
    await evictObject(a.client);
    await a.client.pushLater("tick");
    await runAlarm(a.client);
    await vi.waitFor(() => expect(seen).toEqual([1]));
  });

  it("resuming from a saved cursor replays what was kept; too old a cursor gets a resync, never a silent gap", async () => {
    const room = uniqueName("resync");
    using a = member(room, "ann");
    for (let i = 1; i <= 8; i++) await a.client.post(`m${i}`); // chat keeps the last 5: 4..8
    const replayed: number[] = [];
    using b = member(room, "bob");
    using fromSix = subscribe(b.client, "chat", (_e, info) => void replayed.push(info.seq), { since: 6 });
    await fromSix.ready;
    expect(replayed).toEqual([7, 8]);
    using c = member(room, "cy");
    const resyncs: unknown[] = [];
    const afterResync: number[] = [];
    using tooOld = subscribe(c.client, "chat", (_e, info) => void afterResync.push(info.seq), {
      since: 1,
      onResync: (info) => resyncs.push(info),
    });
    await tooOld.ready;
    expect(resyncs).toEqual([{ topic: "chat", cursor: 1, oldest: 4, latest: 8 }]);
    await a.client.post("m9");
    await vi.waitFor(() => expect(afterResync).toEqual([9]));
  });

  it("ctx.storage.deleteAll() keeps each topic's newest event: publishing goes on, numbering never restarts, a cursor behind it resyncs", async () => {
    const room = uniqueName("topic-wipe");
    using a = member(room, "ann");
    for (let i = 1; i <= 3; i++) await a.client.post(`m${i}`);
    await evictObject(a.client); // the wipe is the new instance's first call: its log is not in use yet
    await a.client.wipe(); // drops every table, the event log's too
    expect(await a.client.post("m4")).toBe(4); // it failed with "no such table" before
    await evictObject(a.client);
    expect(await a.client.post("m5")).toBe(5); // it restarted at 1 before: cursors 1–4 would have missed events silently
    using b = member(room, "bob");
    const resyncs: unknown[] = [];
    using behind = subscribe(b.client, "chat", () => {}, { since: 1, onResync: (info) => resyncs.push(info) });
    await behind.ready;
    expect(resyncs).toEqual([{ topic: "chat", cursor: 1, oldest: 3, latest: 5 }]);
    using c = member(room, "cy");
    const replayed: number[] = [];
    using current = subscribe(c.client, "chat", (_e, info) => void replayed.push(info.seq), { since: 3 });
    await current.ready;
    expect(replayed).toEqual([4, 5]);
  });

  it("an undeclared topic is refused with NOT_FOUND; subscribing twice to one topic is BAD_OPTION", async () => {
    using a = member(uniqueName("bad-topic"), "ann");
    const sub = subscribe(a.client as never, "nope" as never, () => undefined);
    const error = await rejection(sub.ready);
    expect(RpcError.is(error) && error.code).toBe("NOT_FOUND");
    using ok = subscribe(a.client, "chat", () => undefined);
    expect(() => subscribe(a.client, "chat", () => undefined)).toThrow(/already subscribes/);
    void ok;
  });
});
