/**
 * Which handler an event (or the end of a subscription) reaches when `useSubscription`'s client
 * or topic switches, or its component unmounts, in React 19's react-dom/client in Node against
 * the fake object of react-harness.ts. The hook calls the handlers of the latest committed
 * render, and only for the client and topic that render was for: between the commit that
 * switches (or unmounts) and the passive effect that closes the old subscription, the old one
 * still delivers — a message from the object can land in that window (a macrotask runs between
 * a non-urgent commit and its passive effects). Those tests inject the message from a layout
 * effect of that commit, so the window is hit every time, without timing.
 */
import { describe, expect, it, vi } from "vitest";

// The hooks import "@dorpc/rpc": make it the sources, the same copy this file uses.
vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"));

// First: makes `window` exist before React and the hooks load, as in a browser.
import { type FakeObject, fakeContainer, fakeObject, settle } from "./react-harness.js";
import { createRpcClient, type RpcClient, type TransportHandler } from "@dorpc/rpc";
import { CallFlags, FrameKind } from "../../packages/rpc/src/envelopes.js";
import { writeFrame } from "../../packages/rpc/src/frame.js";
import { act, createElement as h, StrictMode, useEffect, useLayoutEffect, useState } from "react";
import { flushSync } from "react-dom";
import { createRoot } from "react-dom/client";
import { useRpcClient, useSubscription } from "../../packages/react/src/index.js";

const fast = { initialDelay: 0, maxDelay: 0, jitter: 0 };

/**
 * A client of `obj` and `deliver`, which hands the client the object's event notification at
 * once (synchronously, as the socket's message handler would), on its latest connection.
 */
function spiedClient(
  obj: FakeObject,
  instance: string,
): { client: RpcClient<unknown>; deliver(topic: string, seq: number, event: unknown): void } {
  let handler: TransportHandler | undefined;
  const client = createRpcClient("ROOM", instance, {
    baseUrl: "http://x",
    reconnect: fast,
    transport: (h2) => {
      handler = h2;
      return obj.factory(h2);
    },
  });
  return {
    client,
    deliver(topic, seq, event) {
      if (!handler) throw new Error(`${instance} has not connected yet`);
      const frame = writeFrame(FrameKind.Calls, `[${JSON.stringify([0, ["event", [0, topic, seq, event]], 0, CallFlags.System])}]`, []);
      handler.onMessage(typeof frame === "string" ? frame : frame.slice().buffer);
    },
  };
}

describe("useSubscription's handlers when the client or topic switches", () => {
  it("an event of the old topic arriving after the commit of a new topic reaches no handler; the new topic's do", async () => {
    const obj = fakeObject(["a", "b"]);
    const { client, deliver } = spiedClient(obj, "topic-window");
    const got: string[] = [];
    let injectOnCommit = false;
    function Feed({ topic }: { topic: string }) {
      useSubscription(client as never, topic as never, (event: string, info: { topic: string }) =>
        got.push(`handler for ${topic} got ${event} (of ${info.topic})`),
      );
      useLayoutEffect(() => {
        if (injectOnCommit) deliver("a", 1, "late-a");
      });
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(Feed, { topic: "a" })));
    await act(async () => settle());
    expect(obj.subscribers("a")).toBe(1);

    injectOnCommit = true;
    await act(async () => root.render(h(Feed, { topic: "b" })));
    injectOnCommit = false;
    await act(async () => settle());
    // (It was ["handler for b got late-a (of a)"]: room A's message shown in room B.)
    expect(got).toEqual([]);
    await act(async () => {
      obj.publish("b", "y");
      await settle();
    });
    expect(got).toEqual(["handler for b got y (of b)"]);
    await act(async () => root.unmount());
  });

  it("an event of the old client arriving after the commit of a new client reaches no handler; the new client's do", async () => {
    const objA = fakeObject(["news"]);
    const objB = fakeObject(["news"]);
    const roomA = spiedClient(objA, "A");
    const clientB = createRpcClient("ROOM", "B", { baseUrl: "http://x", transport: objB.factory, reconnect: fast });
    const got: string[] = [];
    let injectOnCommit = false;
    function Feed({ room, client }: { room: string; client: object }) {
      useSubscription(client as never, "news" as never, (event: string) => got.push(`room ${room} shows ${event}`));
      useLayoutEffect(() => {
        if (injectOnCommit) roomA.deliver("news", 1, "posted in A");
      });
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(Feed, { room: "A", client: roomA.client })));
    await act(async () => settle());
    expect(objA.subscribers("news")).toBe(1);

    injectOnCommit = true;
    await act(async () => root.render(h(Feed, { room: "B", client: clientB })));
    injectOnCommit = false;
    await act(async () => settle());
    expect(got).toEqual([]); // (It was ["room B shows posted in A"].)
    expect(objA.subscribers("news")).toBe(0);
    await act(async () => {
      objB.publish("news", "posted in B");
      await settle();
    });
    expect(got).toEqual(["room B shows posted in B"]);
    await act(async () => root.unmount());
  });

  it("a new client from useRpcClient: the old client's disposal ends the old subscription without reaching the new render's onEnd or status", async () => {
    // useRpcClient closes the old client a microtask after its cleanup, while the old
    // subscription is still open: its end (DISPOSED) belongs to the render that is gone.
    const obj = fakeObject(["news"]);
    const got: string[] = [];
    const ended: unknown[] = [];
    const statuses: string[] = [];
    function Feed({ instance }: { instance: string }) {
      const client = useRpcClient("ROOM", instance, { baseUrl: "http://x", transport: obj.factory, reconnect: fast });
      const { status } = useSubscription(client as never, "news" as never, (event: string) => got.push(`${instance}:${event}`), {
        onEnd: (error: unknown) => ended.push(error),
      });
      statuses.push(`${instance}:${status}`);
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(StrictMode, null, h(Feed, { instance: "one" }))));
    await act(async () => settle());
    expect(statuses.at(-1)).toBe("one:ready");
    await act(async () => root.render(h(StrictMode, null, h(Feed, { instance: "two" }))));
    await act(async () => settle());

    expect(ended).toEqual([]);
    expect(statuses.filter((s) => s.startsWith("two:"))).not.toContain("two:failed");
    expect(statuses.at(-1)).toBe("two:ready");
    expect(obj.subscribers("news")).toBe(1);
    expect(obj.openLinks()).toBe(1);
    await act(async () => {
      obj.publish("news", "hi");
      await settle();
    });
    expect(got).toEqual(["two:hi"]);
    await act(async () => root.unmount());
    await act(async () => settle());
    expect(obj.openLinks()).toBe(0);
    expect(ended).toEqual([]);
  });
});

describe("useSubscription's handlers after unmount", () => {
  it("an event arriving after the unmount commit, before the passive cleanup, reaches no handler", async () => {
    const obj = fakeObject(["news"]);
    const { client, deliver } = spiedClient(obj, "unmount-window");
    const got: string[] = [];
    let injectOnUnmount = false;
    function Feed() {
      useSubscription(client as never, "news" as never, (event: string) => got.push(event));
      // Declared after the hook: its cleanup runs in the unmount commit, after the hook's own.
      useLayoutEffect(
        () => () => {
          if (injectOnUnmount) deliver("news", 2, "after the unmount commit");
        },
        [],
      );
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(StrictMode, null, h(Feed))));
    await act(async () => settle());
    await act(async () => {
      obj.publish("news", "while mounted");
      await settle();
    });
    expect(got).toEqual(["while mounted"]);

    injectOnUnmount = true;
    await act(async () => root.render(null));
    await act(async () => settle());
    expect(got).toEqual(["while mounted"]); // (It was […, "after the unmount commit"].)
    expect(obj.subscribers("news")).toBe(0);
    await act(async () => root.unmount());
  });

  it("never calls the handler of a component that unmounted, also for the rest of a frame of events", async () => {
    // A handler that unmounts its own component synchronously (flushSync: React runs the effect
    // cleanups at once) while the object sent several events in one frame (a replay after a
    // reconnect, or events published in one turn, batched by the object's outbox). The rest of
    // that frame is delivered before the hook's deferred close (a microtask).
    const obj = fakeObject(["news"]);
    const client = createRpcClient("ROOM", "unmount-in-frame", { baseUrl: "http://x", transport: obj.factory, reconnect: fast });
    const seen: string[] = [];
    let hide: () => void = () => {};
    let mounted = false;
    function Feed() {
      useEffect(() => {
        mounted = true;
        return () => {
          mounted = false;
        };
      }, []);
      useSubscription(client as never, "news" as never, (event: string) => {
        seen.push(`${event}${mounted ? "" : " (after unmount)"}`);
        if (event === "leave") flushSync(hide);
      });
      return null;
    }
    function App() {
      const [show, setShow] = useState(true);
      hide = () => setShow(false);
      return show ? h(Feed) : null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(StrictMode, null, h(App))));
    await act(async () => settle());
    await act(async () => {
      obj.publishBatch("news", ["hello", "leave", "later"]);
      await settle();
    });
    // (It was ["hello", "leave", "later (after unmount)"].)
    expect(seen).toEqual(["hello", "leave"]);
    await act(async () => root.unmount());
  });
});
