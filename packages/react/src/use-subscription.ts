/**
 * `useSubscription`: a component's subscription to a topic of its Durable Object, over
 * `subscribe(client, topic, onEvent, options)` of `@dorpc/rpc`.
 *
 * Why a handler and not a value: events are a stream, and dorpc delivers each one once. A hook
 * that returned "the latest event" would let React's batching drop events (two that arrive
 * before a render would show as one), undoing exactly-once; a handler sees every event and the
 * component keeps what it needs (append to a list, fold into a count, show a toast).
 *
 * Invariants:
 *  - One subscription per mounted component, client and topic. Closing waits one microtask after
 *    the effect's cleanup and a remount in that time keeps the subscription, so StrictMode's
 *    simulated unmount and remount send one `subscribe` and deliver each event once.
 *  - The handlers called are those of the latest committed render: passing a new function on
 *    every render never resubscribes.
 *  - After unmount the handlers are never called again, and the object is told (`unsubscribe`),
 *    also when it has not confirmed the subscription yet (the unsubscribe follows the queued
 *    subscribe: test/workers/subscription-close.test.ts).
 *  - Another component taking over the same client and topic while this one's close is pending
 *    (a remount under a new key) closes this one at once, so the new subscription is not refused.
 */
import {
  type EventInfo,
  type ResyncInfo,
  RpcError,
  type SubscribeOptions,
  type Subscription,
  subscribe,
  type TopicEvent as RpcTopicEvent,
  type TopicName as RpcTopicName,
} from "@dorpc/rpc";
import { useEffect, useLayoutEffect, useRef, useState } from "react";

/** The topic names `client` may subscribe to (those its object declares; none for anything that is not a client). */
export type TopicName<C> = RpcTopicName<C>;

/** The event type of `topic` on `client`, as it arrives. */
export type TopicEvent<C, K extends TopicName<C>> = RpcTopicEvent<C, K>;

/** Where a component's subscription stands. */
export interface SubscriptionState {
  /**
   * `"pending"` until the object confirmed the subscription (and sent the events after `since`),
   * `"ready"` from then on (also while the connection is down: it resumes by itself), `"failed"`
   * when it was refused (an undeclared topic, a topic this client already subscribes to) or
   * ended (refused when made again after a reconnect, its client disposed).
   */
  readonly status: "pending" | "ready" | "failed";
  /** Why it failed (`RpcError` `NOT_FOUND`, `BAD_OPTION`, `LIMIT`…); `undefined` otherwise. */
  readonly error: unknown;
}

/** The latest committed render's handlers, and the client and topic that render was for. */
interface Handlers {
  client: object;
  topic: string;
  onEvent: (event: unknown, info: EventInfo) => void;
  onResync: ((info: ResyncInfo) => void) | undefined;
  onEnd: ((error: unknown) => void) | undefined;
}

interface Entry {
  readonly client: object;
  readonly topic: string;
  /** `undefined` when `subscribe` threw. */
  subscription: Subscription | undefined;
  /** Set by the effect's cleanup; a remount before the close runs clears it (StrictMode). */
  closing: boolean;
  /** Closed for the component: its handlers are no longer called. */
  closed: boolean;
}

/** `subscribe` without its per-client typing: the hook's own signature carries it. */
const subscribeTo = subscribe as unknown as (
  client: object,
  topic: string,
  onEvent: (event: unknown, info: EventInfo) => void,
  options?: SubscribeOptions,
) => Subscription;

/** Each client's subscriptions made here that still hold its topic (open, or closing). */
const holders = new WeakMap<object, Map<string, Entry>>();

function forget(entry: Entry): void {
  const byTopic = holders.get(entry.client);
  if (byTopic?.get(entry.topic) === entry) byTopic.delete(entry.topic);
}

/** Closes `entry` for good: its handlers are no longer called and the object is told. */
function finish(entry: Entry): void {
  entry.closed = true;
  entry.subscription?.close();
  forget(entry);
}

function release(entry: Entry): void {
  entry.closing = true;
  queueMicrotask(() => {
    if (entry.closing && !entry.closed) finish(entry);
  });
}

/** Runs in the browser before paint; on the server (no effects run there) nothing needs it. */
const useCommitEffect = (globalThis as { window?: unknown }).window === undefined ? useEffect : useLayoutEffect;

const PENDING: SubscriptionState = { status: "pending", error: undefined };

/**
 * Subscribes the component to `topic` of `client`'s Durable Object while it is mounted:
 * `onEvent` gets every event published on the topic, in order, each once, across reconnects and
 * the object's hibernation (events missed while away are replayed). Returns where the
 * subscription stands.
 *
 * - A new `client` or `topic` closes the old subscription and opens one for the new pair.
 * - `onEvent`, `options.onResync` and `options.onEnd` may be new functions on every render; the
 *   latest are called, and only for the client and topic of the render that passed them.
 * - `options.since` is read when the subscription is opened: give it to replay history from a
 *   saved cursor (e.g. the last sequence number you rendered). Default: events from now on.
 * - Without `options.onResync`, a resync (the events after the cursor are no longer kept) goes
 *   to the client's `onError` as `RpcError` `EXPIRED`, as with `subscribe`.
 * - One subscription per client and topic: a second component subscribing to the same topic on
 *   the same client gets `status: "failed"` (`BAD_OPTION`). Subscribe once and pass the events
 *   down, or give each its own client.
 * - Under StrictMode the component keeps one subscription: one `subscribe` to the object, each
 *   event once. Nothing subscribes during server rendering (`"pending"`).
 *
 * ```tsx
 * function Messages({ room }: { room: RpcClient<RoomApi> }) {
 *   const [messages, setMessages] = useState<Message[]>([]);
 *   const { status } = useSubscription(room, "messages", (m) => setMessages((list) => [...list, m]), { since: 0 });
 *   return status === "failed" ? <p>Cannot follow this room.</p> : <ul>{messages.map(…)}</ul>;
 * }
 * ```
 */
export function useSubscription<C extends object, K extends TopicName<C>>(
  client: C,
  topic: K,
  onEvent: (event: TopicEvent<C, K>, info: EventInfo) => void,
  options?: SubscribeOptions,
): SubscriptionState {
  const latest: Handlers = { client, topic, onEvent: onEvent as Handlers["onEvent"], onResync: options?.onResync, onEnd: options?.onEnd };
  const handlers = useRef<Handlers>(latest);
  useCommitEffect(() => {
    handlers.current = latest;
  });
  // Unmounted (its commit, before the passive cleanups run): no handler is called any more.
  const mounted = useRef(false);
  useCommitEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  // The state belongs to one subscription (`entry`): going back to a topic or client used
  // before must not show what the earlier subscription to it reached.
  const [state, setState] = useState<{ entry: Entry | undefined; value: SubscriptionState }>({ entry: undefined, value: PENDING });
  const held = useRef<Entry | undefined>(undefined);
  const since = options?.since;

  // `since` is read when the subscription opens: a cursor that moves must not resubscribe.
  // biome-ignore lint/correctness/useExhaustiveDependencies: see above
  useEffect(() => {
    const previous = held.current;
    if (previous && !previous.closed && previous.client === client && previous.topic === topic) {
      // StrictMode's remount, before the close ran: keep the subscription.
      previous.closing = false;
      return () => release(previous);
    }
    const entry: Entry = { client, topic, subscription: undefined, closing: false, closed: false };
    held.current = entry;
    const show = (value: SubscriptionState) => {
      if (!entry.closed) setState({ entry, value });
    };
    // The handlers to call for this entry: none once the component unmounted or a render for
    // another client or topic committed (its own subscription opens in this effect, later).
    const current = (): Handlers | undefined => {
      const h = handlers.current;
      return entry.closed || entry.closing || !mounted.current || h.client !== entry.client || h.topic !== entry.topic ? undefined : h;
    };
    show(PENDING);
    if ((typeof client !== "object" && typeof client !== "function") || client === null) {
      show({ status: "failed", error: new RpcError("BAD_OPTION", `useSubscription needs a client, got ${String(client)}.`) });
      return;
    }
    if (options?.onEnd !== undefined && typeof options.onEnd !== "function") {
      show({ status: "failed", error: new RpcError("BAD_OPTION", "onEnd must be a function.") });
      return;
    }
    let byTopic = holders.get(client);
    if (!byTopic) holders.set(client, (byTopic = new Map()));
    const other = byTopic.get(topic);
    if (other && (other.closing || other.closed)) {
      // Another component's subscription to this topic on its way out: close it now.
      finish(other);
    }
    try {
      const subscription = subscribeTo(
        client,
        topic,
        (event, info) => {
          // Not once its component unmounted, even for the rest of a frame of events (closing:
          // the close runs a microtask later; a StrictMode remount clears it synchronously), and
          // never to the handler of a render for another client or topic.
          current()?.onEvent(event, info);
        },
        {
          since,
          // Refused when made again after a reconnect, or its client disposed: over.
          onEnd: (error: unknown) => {
            const h = current();
            show({ status: "failed", error });
            h?.onEnd?.(error);
          },
          onResync: (info: ResyncInfo) => {
            const h = current();
            if (!h) return;
            const onResync = h.onResync;
            if (onResync) {
              onResync(info);
              return;
            }
            // Thrown into the subscription, which reports it to the client's onError, as it
            // does for a subscription made without onResync.
            throw new RpcError(
              "EXPIRED",
              `Events of "${info.topic}" after ${String(info.cursor)} are no longer kept; resync from ${info.latest}.`,
            );
          },
        },
      );
      entry.subscription = subscription;
      byTopic.set(topic, entry);
      subscription.ready.then(
        () => show({ status: "ready", error: undefined }),
        (error: unknown) => show({ status: "failed", error }),
      );
    } catch (error) {
      show({ status: "failed", error });
    }
    return () => release(entry);
  }, [client, topic]);

  const { entry } = state;
  return entry !== undefined && !entry.closed && entry.client === client && entry.topic === topic ? state.value : PENDING;
}
