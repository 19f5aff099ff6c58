/**
 * A subscription made without `since` and closed before its first `subscribe` was answered, when
 * that answer is lost with its connection: the object ends with the topic unsubscribed, and a new
 * subscription to the same topic gets only its own events, never the closed one's replay. The two
 * `exactlyOnce: false` cases failed before the fix: the cut first subscribe was resent, its cut
 * unsubscribe was not, so the object kept the closed subscription. Subscriptions that stay open
 * are in topics-first-answer.test.ts.
 */
import { rpcConnection, subscribe } from "@dorpc/rpc";
import { runInObject } from "@dorpc/testing";
import { describe, expect, it, vi } from "vitest";
import { cutAtSubscribe, member, type Member, objectLet } from "./first-answer-support.js";
import { uniqueName } from "./helpers.js";

/** The topics each of the object's sockets is subscribed to (fewest first), and the starts it keeps. */
function objectState(m: Member) {
  return runInObject(m.client, (_instance, state) => ({
    topics: state
      .getWebSockets()
      .map((ws) => (ws.deserializeAttachment() as { topics?: string[] } | null)?.topics ?? [])
      .sort((x, y) => x.length - y.length),
    starts: state.storage.sql
      .exec("SELECT topic, sub, seq FROM _dorpc_topic_starts ORDER BY topic, sub")
      .toArray()
      .map((row) => ({ ...row })),
  }));
}

/**
 * Ann, who posted `first`, and bob, connected, whose subscription to "chat" (made without
 * `since`) sends its first subscribe in the frame `cut` cuts (delivered to the object or not).
 */
async function bobSubscribing(label: string, first: string, options: { deliver?: boolean; exactlyOnce?: boolean } = {}) {
  const room = uniqueName(label);
  const a = member(room, "ann");
  await a.client.post(first);
  const b = member(room, "bob", options.exactlyOnce === undefined ? {} : { exactlyOnce: options.exactlyOnce });
  await rpcConnection(b.client).waitForOpen();
  const cut = cutAtSubscribe(b, options.deliver ?? true);
  const closedSeen: string[] = [];
  const closed = subscribe(b.client, "chat", (event) => void closedSeen.push(event.text));
  return {
    a,
    b,
    cut,
    closed,
    closedSeen,
    [Symbol.dispose]: () => {
      b[Symbol.dispose]();
      a[Symbol.dispose]();
    },
  };
}

describe("closed while its first subscribe waits to be resent, and subscribed again", () => {
  it("at once, without since: the new subscription gets only what follows it; the object keeps only its start", async () => {
    using setup = await bobSubscribing("first-closed-resub", "before"); // 1
    const { a, b, cut, closed, closedSeen } = setup;
    await cut;
    await objectLet(b, 1); // ran on the object: its start is 1
    await a.client.post("away"); // 2: the closed one's replay would carry it
    closed.close();
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    await sub.ready;
    await a.client.post("after"); // 3
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ closedSeen, seen, cursor: sub.cursor, errors: b.errors, state: await objectState(b) }).toEqual({
      closedSeen: [],
      seen: ["after"],
      cursor: 3,
      errors: [],
      state: { topics: [[], ["chat"]], starts: [{ topic: "chat", sub: 2, seq: 2 }] },
    });
  });

  it("from since 0: the new subscription gets its own replay from 0, once", async () => {
    using setup = await bobSubscribing("first-closed-since", "one"); // 1
    const { a, b, cut, closed, closedSeen } = setup;
    await cut;
    await objectLet(b, 1);
    await a.client.post("two"); // 2
    closed.close();
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text), { since: 0 });
    await sub.ready;
    await a.client.post("three");
    await vi.waitFor(() => expect(seen).toContain("three"));
    expect({ closedSeen, seen, errors: b.errors }).toEqual({ closedSeen: [], seen: ["one", "two", "three"], errors: [] });
  });

  it("closed once the next connection opens, with the resent subscribe already on its way: the same", async () => {
    using setup = await bobSubscribing("first-closed-inflight", "before"); // 1
    const { a, b, cut, closed, closedSeen } = setup;
    await cut;
    await objectLet(b, 1);
    await a.client.post("away 1"); // 2
    await a.client.post("away 2"); // 3
    // The resends go out in the turn the connection opens; close right after, in a microtask.
    const seen: string[] = [];
    using sub = await new Promise<ReturnType<typeof subscribe>>((resolve) => {
      const off = rpcConnection(b.client).onStateChange((state) => {
        if (state !== "open") return;
        off();
        queueMicrotask(() => {
          closed.close();
          resolve(subscribe(b.client, "chat", (event) => void seen.push(event.text)));
        });
      });
    });
    await sub.ready;
    await a.client.post("after"); // 4
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ closedSeen, seen, errors: b.errors, topics: (await objectState(b)).topics }).toEqual({
      closedSeen: [],
      seen: ["after"],
      errors: [],
      topics: [[], ["chat"]],
    });
  });
});

describe("closed in the frame of its first subscribe, and that frame cut", () => {
  for (const exactlyOnce of [false, true]) {
    it(`exactlyOnce: ${exactlyOnce}, the frame never arrived: the object ends with the topic unsubscribed; a new subscription works`, async () => {
      using setup = await bobSubscribing(`first-closed-swallowed-${exactlyOnce}`, "before", { deliver: false, exactlyOnce });
      const { a, b, cut, closed, closedSeen } = setup;
      closed.close(); // the connection is open: the unsubscribe joins the subscribe's frame
      expect(await cut).toContain('"unsubscribe"');
      await expect(closed.ready).rejects.toMatchObject({ code: "DISPOSED" });
      await b.client.connected(); // on the next connection, after the resends: they have run
      const topics = (await objectState(b)).topics;
      const seen: string[] = [];
      using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
      await sub.ready;
      await a.client.post("after");
      await vi.waitFor(() => expect(seen).toContain("after"));
      expect({ topicsAfterReconnect: topics.flat(), closedSeen, seen, errors: b.errors }).toEqual({
        topicsAfterReconnect: [],
        closedSeen: [],
        seen: ["after"],
        errors: [],
      });
    });
  }

  it("exactlyOnce: false, the frame ran on the object: a new subscription made before the reconnect gets only its own events", async () => {
    using setup = await bobSubscribing("first-closed-ran", "before", { exactlyOnce: false });
    const { a, b, cut, closed, closedSeen } = setup;
    closed.close();
    await cut;
    await objectLet(b, 1);
    await a.client.post("while away"); // after the closed one's start, before the new one was made
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    await sub.ready;
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ closedSeen, seen, errors: b.errors, topics: (await objectState(b)).topics }).toEqual({
      closedSeen: [],
      seen: ["after"],
      errors: [],
      topics: [[], ["chat"]],
    });
  });
});
