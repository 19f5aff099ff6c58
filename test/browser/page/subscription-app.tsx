/**
 * The subscription page: `useSubscription` of `@dorpc/react` in a real React app under
 * StrictMode (React's development build mounts every component, unmounts it and mounts it again).
 * The test drives it through `window.subscriptionProbe` and reads what the handlers saw from there
 * and the subscription's status from the DOM.
 */
import { useRpcClient, useSubscription } from "@dorpc/react";
import { createRpcClient, type RpcClient, rpcConnection } from "@dorpc/rpc";
import { StrictMode } from "react";
import { flushSync } from "react-dom";
import { createRoot, type Root } from "react-dom/client";
import type { ProbeApi } from "../probe-api.js";

/** What the page renders: a client for `instance`, and a feed of `topic` while `feed` is true. */
interface View {
  instance: string;
  topic: string;
  feed: boolean;
  /** Tags the events the current handler sees: a new label is a new handler function. */
  label: string;
  /** The feed's `since` option. */
  since?: number;
}

export interface SubscriptionProbe {
  /** Renders `view` (merged over the current one) under StrictMode, committed before it returns. */
  render(view: Partial<View>): void;
  unmount(): void;
  /** Every event a feed handler was called with, in order. */
  readonly events: { label: string; seq: number; text: string }[];
  /** Publishes on the object's `news` topic from a client of its own; resolves to the sequence number. */
  announce(instance: string, text: string): Promise<number>;
  /** The object's count of sockets subscribed to `topic`. */
  subscribers(instance: string, topic: string): Promise<number>;
}

declare global {
  interface Window {
    subscriptionProbe: SubscriptionProbe;
  }
}

const events: SubscriptionProbe["events"] = [];

function Feed({ client, topic, label, since }: { client: RpcClient<ProbeApi>; topic: string; label: string; since?: number }) {
  // A new handler on every render (it closes over `label`): the hook must call the latest one
  // without subscribing again.
  const { status, error } = useSubscription(
    client,
    topic as "news",
    (event, info) => {
      events.push({ label, seq: info.seq, text: event.text });
    },
    { since },
  );
  return (
    <output data-status={status} data-error={error ? String((error as { code?: string }).code ?? error) : undefined}>
      {status}
    </output>
  );
}

function App({ instance, topic, feed, label, since }: View) {
  const client = useRpcClient<ProbeApi>("PROBE", instance);
  return <main>{feed && <Feed client={client} topic={topic} label={label} since={since} />}</main>;
}

let root: Root | undefined;
let view: View = { instance: "", topic: "news", feed: true, label: "a" };

/** One plain client per instance for the test's own calls, so the page's clients stay as the app made them. */
const helpers = new Map<string, RpcClient<ProbeApi>>();
function helper(instance: string): RpcClient<ProbeApi> {
  let client = helpers.get(instance);
  if (!client) helpers.set(instance, (client = createRpcClient<ProbeApi>("PROBE", instance)));
  return client;
}

window.subscriptionProbe = {
  render(next) {
    view = { ...view, ...next };
    root ??= createRoot(document.getElementById("root")!);
    flushSync(() =>
      root!.render(
        <StrictMode>
          <App {...view} />
        </StrictMode>,
      ),
    );
  },
  unmount() {
    root?.unmount();
    root = undefined;
  },
  events,
  announce: (instance, text) => helper(instance).announce(text),
  subscribers: (instance, topic) => helper(instance).subscribers(topic),
};
window.addEventListener("pagehide", () => {
  for (const client of helpers.values()) rpcConnection(client).close();
});
document.body.dataset.ready = "subscription";
