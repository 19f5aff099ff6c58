/**
 * `useSubscription` (packages/react/src/use-subscription.ts) in React 19's react-dom/client, in
 * Node, against a fake object served by the real dispatcher over an in-memory transport
 * (react-harness.ts): the status it shows (pending until the object confirms, ready, failed with
 * why — also when the subscription ends later or was never possible), the user's onEnd, and what
 * the object is told when the topic or `since` changes. Which handler an event reaches when the
 * client or topic switches or the component unmounts: react-subscription-switch.test.ts.
 */
import { describe, expect, it, vi } from "vitest";

// The hooks import "@dorpc/rpc": make it the sources, the same copy this file uses.
vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"));

// First: makes `window` exist before React and the hooks load, as in a browser.
import { type FakeObject, fakeContainer, fakeObject, settle } from "./react-harness.js";
import { createRpcClient, type RpcClient, rpcConnection } from "@dorpc/rpc";
import { act, createElement as h, StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { type SubscriptionState, useConnectionState, useSubscription } from "../../packages/react/src/index.js";

const fast = { initialDelay: 0, maxDelay: 0, jitter: 0 };

function clientOf(obj: FakeObject, instance: string, onError?: (e: unknown) => void): RpcClient<unknown> {
  return createRpcClient("ROOM", instance, { baseUrl: "http://x", transport: obj.factory, reconnect: fast, onError });
}

/** The `code` of an RpcError (or of anything else: undefined). */
function codeOf(error: unknown): string | undefined {
  return (error as { code?: string } | undefined)?.code;
}

/** A StrictMode component subscribed to "news" on `client`, its onEnd recording; mounted and settled. */
async function feedWithOnEnd(client: object) {
  const ended: unknown[] = [];
  const seen: { state?: SubscriptionState } = {};
  function Feed() {
    seen.state = useSubscription(client as never, "news" as never, () => {}, { onEnd: (error: unknown) => ended.push(error) });
    return null;
  }
  const root = createRoot(fakeContainer() as never);
  await act(async () => root.render(h(StrictMode, null, h(Feed))));
  await act(async () => settle());
  return { ended, seen, root };
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
  it("calls the user's options.onEnd once, with the error, when the object refuses the resubscription after a reconnect", async () => {
    const topics = ["news"];
    const obj = fakeObject(topics);
    const reported: unknown[] = [];
    const client = clientOf(obj, "refused-on-end", (e) => reported.push(e));
    const { ended, seen, root } = await feedWithOnEnd(client);
    expect(seen.state?.status).toBe("ready");

    topics.length = 0; // a deploy removed the topic: the resubscription is refused
    await act(async () => {
      obj.cutAll();
      await settle(10);
    });
    expect(seen.state?.status).toBe("failed");
    expect(ended).toHaveLength(1);
    expect(codeOf(ended[0])).toBe("NOT_FOUND");
    expect(ended[0]).toBe(seen.state?.error);
    expect(reported).toEqual([]);
    await act(async () => root.unmount());
  });

  it("is 'failed' with DISPOSED, and the user's onEnd is told once, when its client is disposed under a ready subscription", async () => {
    const obj = fakeObject(["news"]);
    const reported: unknown[] = [];
    const client = clientOf(obj, "disposed-under", (e) => reported.push(e));
    const { ended, seen, root } = await feedWithOnEnd(client);
    expect(seen.state?.status).toBe("ready");

    await act(async () => {
      rpcConnection(client).close();
      await settle();
    });
    expect(seen.state?.status).toBe("failed");
    expect(codeOf(seen.state?.error)).toBe("DISPOSED");
    expect(ended.map(codeOf)).toEqual(["DISPOSED"]);
    expect(reported).toEqual([]);
    await act(async () => root.unmount());
  });
});

describe("useSubscription refusals", () => {
  // Each shows as "failed" with why; none is thrown out of the effect (React would report it as
  // an uncaught error and unmount the tree).
  const refusals: [label: string, client: (obj: FakeObject) => unknown, topic: string, options: object | undefined, code: string][] = [
    ["a null client", () => null, "news", undefined, "BAD_OPTION"],
    ["an undefined client (one not made yet)", () => undefined, "news", undefined, "BAD_OPTION"],
    ["an object that is not a client", () => ({}), "news", undefined, "BAD_OPTION"],
    ["an empty topic", (obj: FakeObject) => clientOf(obj, "empty-topic"), "", undefined, "BAD_OPTION"],
    ["an onEnd that is not a function", (obj: FakeObject) => clientOf(obj, "bad-on-end"), "news", { onEnd: "log" }, "BAD_OPTION"],
    [
      "a disposed client",
      (obj: FakeObject) => {
        const client = clientOf(obj, "disposed-before");
        rpcConnection(client).close();
        return client;
      },
      "news",
      undefined,
      "DISPOSED",
    ],
  ];

  for (const [label, makeClient, topic, options, code] of refusals) {
    it(`${label}: "failed" with ${code}, nothing thrown`, async () => {
      const obj = fakeObject(["news"]);
      const client = makeClient(obj);
      const uncaught: unknown[] = [];
      let state: SubscriptionState | undefined;
      function Feed() {
        state = useSubscription(client as never, topic as never, () => {}, options as never);
        return null;
      }
      const root = createRoot(fakeContainer() as never, { onUncaughtError: (error) => uncaught.push(error) });
      await act(async () => root.render(h(StrictMode, null, h(Feed))));
      await act(async () => settle());
      expect(uncaught).toEqual([]);
      expect(state?.status).toBe("failed");
      expect(codeOf(state?.error)).toBe(code);
      await act(async () => root.unmount());
    });
  }
});

describe("useSubscription across renders", () => {
  it("a new topic unsubscribes the old one on the object, and only the new topic's events reach the handler", async () => {
    const obj = fakeObject(["a", "b"]);
    const client = clientOf(obj, "topic-change");
    const got: string[] = [];
    function Feed({ topic }: { topic: string }) {
      useSubscription(client as never, topic as never, (event: string) => got.push(`${topic}:${event}`));
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(StrictMode, null, h(Feed, { topic: "a" }))));
    await act(async () => settle());
    await act(async () => root.render(h(StrictMode, null, h(Feed, { topic: "b" }))));
    await act(async () => settle());
    expect(obj.subscribers("a")).toBe(0);
    expect(obj.subscribers("b")).toBe(1);
    await act(async () => {
      obj.publish("a", "x");
      obj.publish("b", "y");
      await settle();
    });
    expect(got).toEqual(["b:y"]);
    await act(async () => root.unmount());
    await act(async () => settle());
    expect(obj.subscribers("b")).toBe(0);
  });

  it("a since that changes between renders does not resubscribe: it is read when the subscription opens", async () => {
    const obj = fakeObject(["news"]);
    const client = clientOf(obj, "moving-since");
    function Feed({ since }: { since: number }) {
      useSubscription(client as never, "news" as never, () => {}, { since });
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(StrictMode, null, h(Feed, { since: 0 }))));
    await act(async () => settle());
    await act(async () => root.render(h(StrictMode, null, h(Feed, { since: 5 }))));
    await act(async () => settle());
    expect(obj.log).toEqual([["subscribe", "news"]]);
    expect(obj.subscribers("news")).toBe(1);
    await act(async () => root.unmount());
  });
});
