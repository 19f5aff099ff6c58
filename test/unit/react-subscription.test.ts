/**
 * Probes of `useSubscription` (packages/react/src/use-subscription.ts) in React 19's
 * react-dom/client under StrictMode, in Node, against a fake object served by the real
 * dispatcher over an in-memory transport (react-harness.ts). Each test fails on a defect.
 */
import { describe, expect, it, vi } from "vitest";

// The hooks import "@dorpc/rpc": make it the sources, the same copy this file uses.
vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"));

// First: makes `window` exist before React and the hooks load, as in a browser.
import { fakeContainer, fakeObject, settle } from "./react-harness.js";
import { createRpcClient, type RpcClient } from "@dorpc/rpc";
import { act, createElement as h, StrictMode, useEffect, useState } from "react";
import { flushSync } from "react-dom";
import { createRoot } from "react-dom/client";
import { useConnectionState, useSubscription } from "../../packages/react/src/index.js";

const fast = { initialDelay: 0, maxDelay: 0, jitter: 0 };

function clientOf(obj: ReturnType<typeof fakeObject>, instance: string, onError?: (e: unknown) => void): RpcClient<unknown> {
  return createRpcClient("ROOM", instance, { baseUrl: "http://x", transport: obj.factory, reconnect: fast, onError });
}

describe("useSubscription status", () => {
  it("is pending, not a stale 'ready', when the component returns to a topic it left (new subscription not confirmed yet)", async () => {
    // Docs (api.md:1865, use-subscription.ts:43): status is "pending" until the object
    // confirmed the subscription. Going a -> b -> a closes a's subscription and opens a new one
    // (the object gets unsubscribe "a", then subscribe "a"); until the object answers it, the
    // component must not be told it is "ready".
    const obj = fakeObject(["a", "b"]);
    const client = clientOf(obj, "stale-topic");
    const rendered: string[] = [];
    function Feed({ topic }: { topic: string }) {
      const { status } = useSubscription(client as never, topic as never, () => {});
      rendered.push(`${topic}:${status}`);
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    const app = (topic: string) => h(StrictMode, null, h(Feed, { topic }));
    await act(async () => root.render(app("a")));
    await act(async () => settle());
    expect(rendered.at(-1)).toBe("a:ready");

    obj.holdSubscribes = true; // the object does not answer subscribes for now
    await act(async () => root.render(app("b")));
    await act(async () => settle());
    expect(rendered.at(-1)).toBe("b:pending");
    await act(async () => root.render(app("a")));
    await act(async () => settle());
    // The new subscribe to "a" reached the object and is still unanswered…
    expect(obj.log.filter(([kind, topic]) => kind === "subscribe" && topic === "a")).toHaveLength(2);
    expect(obj.subscribers("a")).toBe(0);
    // …so the component sees "pending" (it saw "a:ready", what the first subscription reached).
    expect(rendered.at(-1)).toBe("a:pending");
    await act(async () => root.unmount());
  });

  it("is pending, not a stale 'ready', when the component goes back to a client it had before", async () => {
    // Same promise as above, for a new `client` (docs/api.md: "reopened for a new client or
    // topic"): a parent switching rooms A -> B -> A with clients it keeps in a map.
    const obj = fakeObject(["news"]);
    const clientA = clientOf(obj, "room-a");
    const clientB = clientOf(obj, "room-b");
    const rendered: string[] = [];
    function Feed({ client, name }: { client: RpcClient<unknown>; name: string }) {
      const { status } = useSubscription(client as never, "news" as never, () => {});
      rendered.push(`${name}:${status}`);
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    const app = (client: RpcClient<unknown>, name: string) => h(StrictMode, null, h(Feed, { client, name }));
    await act(async () => root.render(app(clientA, "A")));
    await act(async () => settle());
    expect(rendered.at(-1)).toBe("A:ready");
    obj.holdSubscribes = true;
    await act(async () => root.render(app(clientB, "B")));
    await act(async () => settle());
    await act(async () => root.render(app(clientA, "A")));
    await act(async () => settle());
    expect(obj.log.filter(([kind]) => kind === "subscribe")).toHaveLength(3); // A, B, A again (unanswered)
    expect(rendered.at(-1)).toBe("A:pending"); // actual: "A:ready"
    await act(async () => root.unmount());
  });

  it("does not stay 'ready' when the object refuses the resubscription after a reconnect", async () => {
    // Docs (api.md:1865-1868, use-subscription.ts:43-45): "ready" from then on "also
    // while the connection is down: it resumes by itself"; "failed" when it was refused, with
    // the error. Here the connection drops and, on the new connection, the object refuses the
    // topic (e.g. a deploy removed it): the subscription is over for good — @dorpc/rpc drops it
    // (subscriptions.ts:141-147, the error only goes to onError) and no event will ever come.
    const topics = ["news"];
    const obj = fakeObject(topics);
    const reported: unknown[] = [];
    const client = clientOf(obj, "refused-later", (e) => reported.push(e));
    const rendered: { status: string; error: unknown; connection: string }[] = [];
    function Feed() {
      const connection = useConnectionState(client);
      const { status, error } = useSubscription(client as never, "news" as never, () => {});
      rendered.push({ status, error, connection });
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(StrictMode, null, h(Feed))));
    await act(async () => settle());
    expect(rendered.at(-1)?.status).toBe("ready");

    topics.length = 0; // the object no longer declares "news"
    await act(async () => {
      obj.cutAll();
      await settle(10);
    });
    // The resubscription was refused (NOT_FOUND) on an open connection: the component learns it
    // ("failed", with that error; the hook handles it, so the client's onError is not told).
    expect(rendered.at(-1)?.connection).toBe("open");
    expect(obj.log.filter(([kind]) => kind === "subscribe")).toHaveLength(2);
    expect(reported).toEqual([]);
    expect(rendered.at(-1)?.status).toBe("failed");
    expect((rendered.at(-1)?.error as { code?: string } | undefined)?.code).toBe("NOT_FOUND");
    await act(async () => root.unmount());
  });
});

describe("useSubscription handlers after unmount", () => {
  it("never calls the handler of a component that unmounted, also for the rest of a frame of events", async () => {
    // Docs (api.md:1871 "After unmount neither is called again"; use-subscription.ts:16
    // "After unmount the handlers are never called again"). A handler that unmounts its own
    // component synchronously (flushSync: React runs the effect cleanups at once) while the object
    // sent several events in one frame (a replay after a reconnect, or events published in one
    // turn, batched by the object's outbox). The rest of that frame is delivered before the
    // hook's deferred close (a microtask).
    const obj = fakeObject(["news"]);
    const client = clientOf(obj, "unmount-in-frame");
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
