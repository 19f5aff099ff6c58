/**
 * `useSubscription` in a Vite-style React app (no ESNext.Disposable): topic names and event types
 * come from the client's type (never `any`); an undeclared topic or a wrong handler does not
 * compile.
 */
import { type SubscriptionState, useRpcClient, useSubscription } from "@dorpc/react";
import type { EventInfo, RpcClient, WithTopics } from "@dorpc/rpc";
import { useState } from "react";
import { assertNotAny, assertSame } from "../shared/client-checks.js";

/** A types-only API with topics, as a page imports it (the object's class declares the same member). */
interface FeedApi extends WithTopics<{ news: { title: string; at: Date }; count: number }> {
  post(text: string): number;
}

/** An API without topics. */
interface PlainApi {
  ping(): void;
}

export function Feed({ name }: { name: string }) {
  const feed = useRpcClient<FeedApi>("FEED", name);
  const [titles, setTitles] = useState<string[]>([]);
  const news = useSubscription(feed, "news", (event, info) => {
    assertNotAny<typeof event>();
    assertSame<typeof event, { title: string; at: Date }>();
    assertSame<typeof info, EventInfo>();
    setTitles((list) => [...list, event.title]);
  });
  assertSame<typeof news, SubscriptionState>();
  useSubscription(feed, "count", (n) => assertSame<typeof n, number>(), { since: 0, onResync: (info) => void info.latest });

  // @ts-expect-error: "weather" is not a topic of FeedApi
  useSubscription(feed, "weather", () => undefined);
  // @ts-expect-error: news events are objects, not numbers
  useSubscription(feed, "news", (event: number) => event);
  // @ts-expect-error: since is a sequence number
  useSubscription(feed, "count", () => undefined, { since: "0" });
  const plain = useRpcClient<PlainApi>("PLAIN", name);
  // @ts-expect-error: an object without topics has none to subscribe to
  useSubscription(plain, "news", () => undefined);

  return <p data-status={news.status}>{titles.join(", ")}</p>;
}

// An optional member of the API (here the `__dorpcTopics?` of WithTopics) adds no `undefined` to the client's keys.
assertSame<Extract<keyof RpcClient<FeedApi>, undefined>, never>();
