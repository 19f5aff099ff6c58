/**
 * A subscription made without `since` whose first `subscribe` answer is lost with its connection,
 * across harder cuts than topics-first-answer.test.ts covers: several first subscribes in one
 * frame with an eviction between, a client that does not reconnect by itself, an eviction
 * followed at once by the object's deleteAll(), and a replay from the kept start that is itself
 * cut after its first frame. Each time the subscription goes on from where its first subscribe
 * started: every event published since arrives once, in order.
 */
import { rpcConnection, subscribe } from "@dorpc/rpc";
import { dropConnection, evictObject, testConnection, waitForState } from "@dorpc/testing";
import { describe, expect, it, vi } from "vitest";
import { cutAtSubscribe, member, objectLet } from "./first-answer-support.js";
import { uniqueName } from "./helpers.js";

describe("a first subscribe that ran, its answer lost", () => {
  it("three topics subscribed in one frame, the object evicted before the reconnect: each gets the events published since, once", async () => {
    const room = uniqueName("first-three-evicted");
    using a = member(room, "ann");
    await a.client.post("before");
    await a.client.postNews("n-before");
    using b = member(room, "bob", { reconnect: { initialDelay: 500, maxDelay: 500, jitter: 0 } });
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b);
    const chat: string[] = [];
    const news: string[] = [];
    const ticks: number[] = [];
    using chatSub = subscribe(b.client, "chat", (event) => void chat.push(event.text));
    using newsSub = subscribe(b.client, "news", (event) => void news.push(event));
    using ticksSub = subscribe(b.client, "ticks", (event) => void ticks.push(event));
    await cut;
    await objectLet(b, 1);
    await a.client.post("away");
    await a.client.postNews("n-away");
    await evictObject(a.client);
    await Promise.all([chatSub.ready, newsSub.ready, ticksSub.ready]);
    await a.client.post("after");
    await a.client.postNews("n-after");
    await vi.waitFor(() => expect(chat).toContain("after"));
    await vi.waitFor(() => expect(news).toContain("n-after"));
    expect({ chat, news, ticks, errors: b.errors }).toEqual({
      chat: ["away", "after"],
      news: ["n-away", "n-after"],
      ticks: [],
      errors: [],
    });
  });

  it("reconnect: false: the subscription goes on from its start when the app's next call opens a connection", async () => {
    const room = uniqueName("first-no-reconnect");
    using a = member(room, "ann");
    await a.client.post("before");
    using b = member(room, "bob", { reconnect: false });
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b);
    const seen: string[] = [];
    const resyncs: unknown[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text), { onResync: (info) => resyncs.push(info) });
    await cut;
    await objectLet(b, 1);
    await waitForState(b.client, "idle");
    await a.client.post("while away");
    expect(await b.client.connected()).toBe(2); // this call opens the next connection
    await sub.ready;
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ seen, resyncs, errors: b.errors }).toEqual({ seen: ["while away", "after"], resyncs: [], errors: [] });
  });

  it("the object evicted, then deleteAll() as the first thing its new instance does, before the reconnect: the start holds", async () => {
    const room = uniqueName("first-evicted-wiped");
    using a = member(room, "ann");
    await a.client.post("before");
    using b = member(room, "bob", { reconnect: { initialDelay: 600, maxDelay: 600, jitter: 0 } });
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b);
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    await cut;
    await objectLet(b, 1);
    await a.client.post("while away");
    await evictObject(a.client);
    await a.client.wipe(); // the new instance's first call: the starts are only in storage
    await sub.ready;
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ seen, errors: b.errors }).toEqual({ seen: ["while away", "after"], errors: [] });
  });

  it("its replay of 300 events cut after the first frame arrived: the next resend delivers the rest, each once, in order", async () => {
    const room = uniqueName("first-replay-cut");
    using a = member(room, "ann");
    await a.client.postNews("before");
    using b = member(room, "bob", { reconnect: { initialDelay: 300, maxDelay: 300, jitter: 0 } });
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b);
    const seen: string[] = [];
    using sub = subscribe(b.client, "news", (event) => void seen.push(event));
    await cut;
    await objectLet(b, 1);
    await Promise.all(Array.from({ length: 300 }, (_, i) => a.client.postNews(`e${i}`)));
    // On the next connection, cut as soon as the first frame of events has been handled.
    const seenAtCut = await new Promise<number>((resolve) => {
      const off = rpcConnection(b.client).onStateChange((state) => {
        if (state !== "open") return;
        off();
        let cutDone = false;
        testConnection(b.client).socket!.addEventListener("message", (message: MessageEvent) => {
          if (cutDone || typeof message.data !== "string" || !message.data.includes('"event"')) return;
          cutDone = true;
          queueMicrotask(() => {
            dropConnection(b.client);
            resolve(seen.length);
          });
        });
      });
    });
    await sub.ready;
    await a.client.postNews("after");
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect(seenAtCut, "the cut came after part of the replay, not all of it").toBeGreaterThan(0);
    expect(seenAtCut).toBeLessThan(300);
    expect({ seen, errors: b.errors }).toEqual({ seen: [...Array.from({ length: 300 }, (_, i) => `e${i}`), "after"], errors: [] });
  });
});
