/**
 * A subscription made without `since` whose first `subscribe` answer is lost with its connection:
 * it starts where the first subscribe started (the object keeps that start under the
 * subscription's token), or, when the first never arrived, in its place among the calls resent
 * after the drop. Events published in between are delivered, once each.
 */
import { rpcConnection, subscribe } from "@dorpc/rpc";
import { evictObject, runInObject, testConnection, waitForState } from "@dorpc/testing";
import { describe, expect, it, vi } from "vitest";
import { cutAtSubscribe, type Member, member, objectLet } from "./first-answer-support.js";
import { uniqueName } from "./helpers.js";

describe("a subscription whose first answer was lost", () => {
  it("the first subscribe ran, its answer was lost: events published before the client is back are delivered", async () => {
    const room = uniqueName("first-ran");
    using a = member(room, "ann");
    await a.client.post("before"); // 1: published before the subscription: never delivered
    using b = member(room, "bob");
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b, true);
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    await cut;
    await objectLet(b, 1); // the object ran bob's subscribe, then saw his socket close
    await a.client.post("while away 1");
    await a.client.post("while away 2");
    await sub.ready;
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ seen, cursor: sub.cursor, errors: b.errors }).toEqual({
      seen: ["while away 1", "while away 2", "after"],
      cursor: 4,
      errors: [],
    });
  });

  it.each([
    ["an eviction (the start is in storage)", (ann: Member) => evictObject(ann.client)],
    ["the object's deleteAll() (the log keeps its newest event, and the starts are written back)", (ann: Member) => ann.client.wipe()],
  ] as const)("the same across %s between the drop and the reconnect", async (_label, between) => {
    const room = uniqueName("first-ran-between");
    using a = member(room, "ann");
    await a.client.post("before");
    using b = member(room, "bob", { reconnect: { initialDelay: 500, maxDelay: 500, jitter: 0 } });
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b, true);
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    await cut;
    await objectLet(b, 1);
    await a.client.post("while away");
    await between(a);
    await sub.ready;
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ seen, errors: b.errors }).toEqual({ seen: ["while away", "after"], errors: [] });
  });

  it("the first subscribe ran with a call made after it: that call's event is delivered, once", async () => {
    const room = uniqueName("first-ran-own");
    using a = member(room, "ann");
    await a.client.post("before");
    using b = member(room, "bob");
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b, true);
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    const posted = b.client.post("mine"); // same frame: it ran, its answer was lost too
    await cut;
    await objectLet(b, 1);
    expect(await posted).toBe(2); // answered from the delivery record: it ran once
    await sub.ready;
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ seen, errors: b.errors }).toEqual({ seen: ["mine", "after"], errors: [] });
  });

  it("the first subscribe never arrived: it is made again before the calls made after it, whose events it gets", async () => {
    const room = uniqueName("first-lost");
    using a = member(room, "ann");
    await a.client.post("before");
    using b = member(room, "bob");
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b, false);
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    const posted = b.client.post("mine"); // same frame, swallowed with it: resent after the drop
    await cut;
    expect(await posted).toBe(2);
    await sub.ready;
    await vi.waitFor(() => expect(seen).toEqual(["mine"]));
    expect({ seen, cursor: sub.cursor, errors: b.errors }).toEqual({ seen: ["mine"], cursor: 2, errors: [] });
  });

  it("answer lost twice: the start of the first subscribe holds on the third connection", async () => {
    const room = uniqueName("first-ran-twice");
    using a = member(room, "ann");
    await a.client.post("before");
    using b = member(room, "bob");
    await rpcConnection(b.client).waitForOpen();
    const first = cutAtSubscribe(b, true);
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    // The next connection is cut at its first subscribe too (hooked as it opens, before it sends).
    const second = new Promise<void>((resolve) => {
      const off = rpcConnection(b.client).onStateChange((state) => {
        if (state !== "open") return;
        off();
        void cutAtSubscribe(b, true).then(() => resolve());
      });
    });
    await first;
    await objectLet(b, 1);
    await a.client.post("away 1");
    await second;
    await objectLet(b, 1);
    await a.client.post("away 2");
    await sub.ready;
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toContain("after"));
    expect({ seen, errors: b.errors, connections: testConnection(b.client).attempts.length }).toEqual({
      seen: ["away 1", "away 2", "after"],
      errors: [],
      connections: 3,
    });
  });

  it("a subscription closed while its first subscribe waits to be resent is undone on the object", async () => {
    const room = uniqueName("first-closed");
    using a = member(room, "ann");
    using b = member(room, "bob");
    await rpcConnection(b.client).waitForOpen();
    const cut = cutAtSubscribe(b, true);
    const seen: string[] = [];
    const sub = subscribe(b.client, "chat", (event) => void seen.push(event.text));
    await cut;
    sub.close();
    await expect(sub.ready).rejects.toMatchObject({ code: "DISPOSED" });
    await waitForState(b.client, "open");
    await b.client.connected();
    const topics = await runInObject(b.client, (_instance, state) =>
      state.getWebSockets().map((ws) => (ws.deserializeAttachment() as { topics?: string[] } | null)?.topics ?? []),
    );
    expect(topics.flat()).toEqual([]);
    await a.client.post("after");
    await b.client.connected();
    expect({ seen, errors: b.errors }).toEqual({ seen: [], errors: [] });
  });
});
