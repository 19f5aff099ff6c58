/**
 * `useRpcClient` and `useConnectionState` (packages/react/src) in React 19's react-dom/client,
 * in Node, against the fake object of react-harness.ts: which client a component gets and how
 * many sockets that costs — under StrictMode (one client, one socket, closed once), with options
 * written inline, when the instance changes (also a → b → a), and in renders React throws away
 * (Suspense, a suspended transition) — and the connection state a component shows, in order.
 * Hiding and showing with <Activity>: react-activity.test.ts. Bad arguments:
 * react-client-arguments.test.ts.
 */
import { describe, expect, it, vi } from "vitest";

// The hooks import "@dorpc/rpc": make it the sources, the same copy this file uses.
vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"));

// First: makes `window` exist before React and the hooks load, as in a browser.
import { type FakeObject, fakeContainer, fakeObject, settle } from "./react-harness.js";
import { createRpcClient, type RpcClient, type RpcClientOptions, rpcConnection } from "@dorpc/rpc";
import { act, createElement as h, type ReactNode, StrictMode, Suspense, startTransition, useEffect } from "react";
import { createRoot, type Root } from "react-dom/client";
import { useConnectionState, useRpcClient } from "../../packages/react/src/index.js";

type Api = { ping(): string };

const fast = { initialDelay: 0, maxDelay: 0, jitter: 0 };

function optionsFor(obj: FakeObject): RpcClientOptions<Api> {
  return { baseUrl: "http://x", transport: obj.factory, reconnect: fast };
}

/** Renders `node` and lets the effects, calls and answers that follow run. */
async function show(root: Root, node: ReactNode): Promise<void> {
  await act(async () => root.render(node));
  await act(async () => settle());
}

/** Counts how many times `client` became "disposed". */
function countDisposals(client: object): () => number {
  let count = 0;
  rpcConnection(client).onStateChange((state) => state === "disposed" && count++);
  return () => count;
}

describe("useRpcClient", () => {
  it("under StrictMode, a mounted component keeps one client and one socket across renders, closed once on unmount", async () => {
    const obj = fakeObject([]);
    const committed: RpcClient<Api>[] = [];
    function App() {
      const client = useRpcClient<Api>("ROOM", "strict", optionsFor(obj));
      useEffect(() => {
        if (!committed.includes(client)) committed.push(client);
        void client.ping();
      }, [client]);
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await show(root, h(StrictMode, null, h(App)));
    await show(root, h(StrictMode, null, h(App)));
    expect(committed).toHaveLength(1);
    expect(obj.opens).toBe(1);
    expect(rpcConnection(committed[0]!).state).toBe("open");
    const disposals = countDisposals(committed[0]!);
    await act(async () => root.unmount());
    await act(async () => settle());
    expect(rpcConnection(committed[0]!).state).toBe("disposed");
    expect(disposals()).toBe(1);
    expect(obj.openLinks()).toBe(0);
  });

  it("keeps the client when the options are a new literal on every render (query keys in any order)", async () => {
    const obj = fakeObject([]);
    const seen = new Set<object>();
    let flip = false;
    function App() {
      flip = !flip;
      const query = flip ? { a: "1", b: "2" } : { b: "2", a: "1" };
      seen.add(useRpcClient("ROOM", "inline", { ...optionsFor(obj), query, onError: () => {} }));
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    for (let i = 0; i < 5; i++) await show(root, h(App));
    expect(seen.size).toBe(1);
    await act(async () => root.unmount());
  });

  it("a new instance gives a new client and closes the old one once; one socket stays open", async () => {
    const obj = fakeObject([]);
    const committed: RpcClient<Api>[] = [];
    function App({ instance }: { instance: string }) {
      const client = useRpcClient<Api>("ROOM", instance, optionsFor(obj));
      useEffect(() => {
        committed.push(client);
        void client.ping();
      }, [client]);
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await show(root, h(App, { instance: "a" }));
    expect(rpcConnection(committed[0]!).state).toBe("open");
    const disposals = countDisposals(committed[0]!);
    await show(root, h(App, { instance: "b" }));
    expect(committed).toHaveLength(2);
    expect(committed[1] === committed[0]).toBe(false);
    expect(committed.map((client) => rpcConnection(client).state)).toEqual(["disposed", "open"]);
    expect(disposals()).toBe(1);
    expect(obj.openLinks()).toBe(1);
    await act(async () => root.unmount());
    await act(async () => settle());
    expect(obj.openLinks()).toBe(0);
  });

  it("under StrictMode, switching a -> b -> a: the child's effects never get a closed client; each old client is closed once", async () => {
    const obj = fakeObject([]);
    const log: string[] = [];
    const committed: RpcClient<Api>[] = [];
    const disposals: (() => number)[] = [];
    function Child({ client, instance }: { client: RpcClient<Api>; instance: string }) {
      useEffect(() => {
        log.push(`${instance}: ${rpcConnection(client).state}`);
        client.ping().then(
          () => {},
          (error: unknown) => log.push(`${instance}: failed with ${(error as { code?: string }).code}`),
        );
      }, [client, instance]);
      return null;
    }
    function App({ instance }: { instance: string }) {
      const client = useRpcClient<Api>("ROOM", instance, optionsFor(obj));
      useEffect(() => {
        if (committed.includes(client)) return;
        committed.push(client);
        disposals.push(countDisposals(client));
      }, [client]);
      return h(Child, { client, instance });
    }
    const root = createRoot(fakeContainer() as never);
    for (const instance of ["a", "b", "a"]) await show(root, h(StrictMode, null, h(App, { instance })));
    expect(log.filter((line) => line.includes("failed") || line.includes("disposed"))).toEqual([]);
    expect(committed).toHaveLength(3);
    expect(disposals.map((count) => count())).toEqual([1, 1, 0]);
    expect(obj.openLinks()).toBe(1);
    await act(async () => root.unmount());
    await act(async () => settle());
    expect(obj.openLinks()).toBe(0);
  });

  it("a render that Suspense throws away opens no socket, and no client is left open after unmount", async () => {
    const obj = fakeObject([]);
    let release!: () => void;
    let ready = false;
    const gate = new Promise<void>((resolve) => (release = resolve)).then(() => {
      ready = true;
    });
    const made = new Set<RpcClient<Api>>();
    function App() {
      const client = useRpcClient<Api>("ROOM", "suspended", optionsFor(obj));
      made.add(client);
      if (!ready) throw gate;
      useEffect(() => {
        void client.ping();
      }, [client]);
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await show(root, h(Suspense, { fallback: null }, h(App)));
    expect(obj.opens).toBe(0);
    await act(async () => {
      release();
      await settle();
    });
    await act(async () => settle());
    expect(obj.opens).toBe(1);
    await act(async () => root.unmount());
    await act(async () => settle());
    expect(obj.openLinks()).toBe(0);
    const live = [...made].filter((client) => !["idle", "disposed"].includes(rpcConnection(client).state));
    expect(live).toHaveLength(0);
  });

  it("a suspended transition to another instance keeps the old client working and opens nothing until it commits", async () => {
    const obj = fakeObject([]);
    let release!: () => void;
    let ready = false;
    const gate = new Promise<void>((resolve) => (release = resolve)).then(() => {
      ready = true;
    });
    const committed: RpcClient<Api>[] = [];
    const errors: string[] = [];
    function Slow({ instance }: { instance: string }) {
      if (instance === "b" && !ready) throw gate;
      return null;
    }
    function App({ instance }: { instance: string }) {
      const client = useRpcClient<Api>("ROOM", instance, optionsFor(obj));
      useEffect(() => {
        committed.push(client);
        client.ping().catch((error: unknown) => errors.push(String((error as { code?: string }).code)));
      }, [client]);
      return h(Slow, { instance });
    }
    const root = createRoot(fakeContainer() as never);
    const app = (instance: string) => h(Suspense, { fallback: null }, h(App, { instance }));
    await show(root, app("a"));
    expect(committed).toHaveLength(1);
    await act(async () => {
      startTransition(() => root.render(app("b")));
      await settle();
    });
    expect(rpcConnection(committed[0]!).state).toBe("open");
    expect(obj.opens).toBe(1);
    await act(async () => expect(await committed[0]!.ping()).toBe("pong"));
    await act(async () => {
      release();
      await settle();
    });
    await act(async () => settle());
    expect(committed).toHaveLength(2);
    expect(committed.map((client) => rpcConnection(client).state)).toEqual(["disposed", "open"]);
    expect(errors).toEqual([]);
    expect(obj.openLinks()).toBe(1);
    await act(async () => root.unmount());
    await act(async () => settle());
    expect(obj.openLinks()).toBe(0);
  });
});

describe("useConnectionState", () => {
  it("the first render reads the state the client is in, then every change renders, up to 'disposed' when closed elsewhere", async () => {
    const obj = fakeObject([]);
    const client = createRpcClient<Api>("ROOM", "states", optionsFor(obj));
    await client.ping();
    const rendered: string[] = [];
    function App() {
      rendered.push(useConnectionState(client));
      return null;
    }
    const root = createRoot(fakeContainer() as never);
    await act(async () => root.render(h(App)));
    expect(rendered).toEqual(["open"]);
    await act(async () => {
      obj.cutAll();
      await settle();
    });
    expect(rendered).toEqual(["open", "reconnecting", "open"]);
    await act(async () => rpcConnection(client).close());
    expect(rendered).toEqual(["open", "reconnecting", "open", "disposed"]);
    await act(async () => root.unmount());
  });

  it("follows a new client from its first render, in the component and in a child given it: never the old client's state", async () => {
    const obj = fakeObject([]);
    const parent: string[] = [];
    const child: string[] = [];
    function Child({ client, instance }: { client: object; instance: string }) {
      child.push(`${instance}: ${useConnectionState(client)}`);
      return null;
    }
    function App({ instance }: { instance: string }) {
      const client = useRpcClient<Api>("ROOM", instance, optionsFor(obj));
      parent.push(`${instance}: ${useConnectionState(client)}`);
      useEffect(() => {
        void client.ping();
      }, [client]);
      return h(Child, { client, instance });
    }
    const root = createRoot(fakeContainer() as never);
    await show(root, h(StrictMode, null, h(App, { instance: "a" })));
    expect([parent.at(-1), child.at(-1)]).toEqual(["a: open", "a: open"]);
    parent.length = 0;
    child.length = 0;
    await show(root, h(StrictMode, null, h(App, { instance: "b" })));
    // The render that switches reads the new client ("idle": it has not called yet).
    expect(parent[0]).toBe("b: idle");
    expect(child[0]).toBe("b: idle");
    expect([...parent, ...child].filter((line) => !line.startsWith("b: ") || line.endsWith("disposed"))).toEqual([]);
    expect([parent.at(-1), child.at(-1)]).toEqual(["b: open", "b: open"]);
    await act(async () => root.unmount());
  });
});
