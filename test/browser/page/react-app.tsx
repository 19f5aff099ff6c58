/**
 * The React page: `@dorpc/react` in a real React app under StrictMode (which, in React's
 * development build, mounts every component, unmounts it and mounts it again). The test drives
 * it through `window.reactProbe` and reads what the app saw from there and from the DOM.
 */
import { useConnectionState, useRpcClient } from "@dorpc/react";
import { type RpcClient, rpcConnection } from "@dorpc/rpc";
import { StrictMode, useEffect, useState } from "react";
import { createRoot, type Root } from "react-dom/client";
import type { ProbeApi } from "../probe-api.js";

export interface ReactProbe {
  /** Renders `<App instance={instance} />` under StrictMode (again, with a new instance). */
  render(instance: string): void;
  unmount(): void;
  /** Every client the hook handed to a committed render, in order. */
  readonly clients: RpcClient<ProbeApi>[];
  /** The connection state of each of `clients`, read now. */
  states(): string[];
  /** What the child's increments resolved to, and what they rejected with. */
  readonly results: { instance: string; value: number }[];
  readonly errors: string[];
}

declare global {
  interface Window {
    reactProbe: ReactProbe;
  }
}

const clients: RpcClient<ProbeApi>[] = [];
const results: ReactProbe["results"] = [];
const errors: string[] = [];

/** A child that uses the client in an effect as soon as it mounts, as real components do. */
function Counter({ client, instance }: { client: RpcClient<ProbeApi>; instance: string }) {
  const [value, setValue] = useState<number>();
  useEffect(() => {
    let mounted = true;
    client.increment().then(
      (n) => {
        results.push({ instance, value: n });
        if (mounted) setValue(n);
      },
      (error: unknown) => errors.push(String(error)),
    );
    return () => {
      mounted = false;
    };
  }, [client, instance]);
  return <output>{value ?? "…"}</output>;
}

function App({ instance }: { instance: string }) {
  const client = useRpcClient<ProbeApi>("PROBE", instance, { reconnect: false });
  const state = useConnectionState(client);
  useEffect(() => {
    if (!clients.includes(client)) clients.push(client);
  }, [client]);
  return (
    <main data-state={state} data-instance={instance}>
      <Counter client={client} instance={instance} />
    </main>
  );
}

let root: Root | undefined;

window.reactProbe = {
  render(instance) {
    root ??= createRoot(document.getElementById("root")!);
    root.render(
      <StrictMode>
        <App instance={instance} />
      </StrictMode>,
    );
  },
  unmount() {
    root?.unmount();
    root = undefined;
  },
  clients,
  states: () => clients.map((client) => rpcConnection(client).state),
  results,
  errors,
};
document.body.dataset.ready = "react";
