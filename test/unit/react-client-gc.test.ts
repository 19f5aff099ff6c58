/**
 * Clients `useRpcClient` made are released once the tree is gone: those of committed renders and
 * those of renders React threw away (StrictMode's double render, the render that switches to a
 * new instance), in React 19's react-dom/client in Node against the fake object of
 * react-harness.ts. Nothing in dorpc or the hook may keep one reachable (a closed client holds
 * its options, transport and handlers). Every client made is tracked with a WeakRef and must be
 * collected; needs `gc` (the unit project runs Node with --expose-gc).
 */
import { describe, expect, it, vi } from "vitest";

const made = vi.hoisted(() => [] as WeakRef<object>[]);

// The hooks import "@dorpc/rpc": make it the sources, with createRpcClient recording each client.
vi.mock("@dorpc/rpc", async () => {
  const rpc = await import("../../packages/rpc/src/index.js");
  return {
    ...rpc,
    createRpcClient: (...args: Parameters<typeof rpc.createRpcClient>) => {
      const client = rpc.createRpcClient(...args);
      made.push(new WeakRef(client));
      return client;
    },
  };
});

// First: makes `window` exist before React and the hooks load, as in a browser.
import { fakeContainer, fakeObject, settle } from "./react-harness.js";
import { act, createElement as h, StrictMode, useEffect } from "react";
import { createRoot } from "react-dom/client";
import { useConnectionState, useRpcClient } from "../../packages/react/src/index.js";

const fast = { initialDelay: 0, maxDelay: 0, jitter: 0 };

describe("clients made by useRpcClient", () => {
  it("are all collectable after a StrictMode tree that switched instances a -> b -> c unmounts", async () => {
    const collect = globalThis.gc;
    if (typeof collect !== "function") throw new Error("gc is not exposed: run Node with --expose-gc (test/vitest.config.ts)");
    const obj = fakeObject([]);
    function App({ instance }: { instance: string }) {
      const client = useRpcClient<{ ping(): string }>("ROOM", instance, { baseUrl: "http://x", transport: obj.factory, reconnect: fast });
      useConnectionState(client);
      useEffect(() => {
        void client.ping();
      }, [client]);
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    for (const instance of ["a", "b", "c"]) {
      await act(async () => root.render(h(StrictMode, null, h(App, { instance }))));
      await act(async () => settle());
    }
    await act(async () => root.unmount());
    await act(async () => settle(20));
    expect(obj.openLinks()).toBe(0);
    // More than the three committed clients: StrictMode's second renders made some too.
    expect(made.length).toBeGreaterThan(3);

    // After an unmount React keeps the last update queued for the unmounted component (here the
    // one the closed client asked for, to render with a new client) until it renders anything,
    // in any root: the client is collectable after React's next render, so render one.
    const other = createRoot(fakeContainer() as never);
    await act(async () => other.render(h(() => null)));
    await act(async () => other.unmount());

    // A WeakRef read in a turn keeps its target alive to the end of that turn: collect and
    // read again on later turns.
    await vi.waitFor(
      () => {
        collect();
        expect(made.filter((ref) => ref.deref() !== undefined).length, `of ${made.length} clients made`).toBe(0);
      },
      { timeout: 10_000, interval: 20 },
    );
  });
});
