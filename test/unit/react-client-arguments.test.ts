/**
 * Bad arguments to `useRpcClient` and `useConnectionState` (packages/react/src) in React 19's
 * react-dom/client, in Node: the hooks throw during render the same RpcError `BAD_OPTION` that
 * `createRpcClient` / `rpcConnection` throw for them (an error boundary shows it), never another
 * error from the hook's own handling of the arguments (a `query` value or `baseUrl` that is not a
 * string once made `JSON.stringify` throw a TypeError). A component that switches to a bad
 * instance still closes the client it had.
 */
import { describe, expect, it, vi } from "vitest";

// The hooks import "@dorpc/rpc": make it the sources, the same copy this file uses.
vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"));

// First: makes `window` exist before React and the hooks load, as in a browser.
import { fakeContainer, fakeObject, settle } from "./react-harness.js";
import { createRpcClient, type RpcClient, type RpcClientOptions, rpcConnection } from "@dorpc/rpc";
import { act, Component, createElement as h, type ReactNode, useEffect } from "react";
import { createRoot } from "react-dom/client";
import { useConnectionState, useRpcClient } from "../../packages/react/src/index.js";
import { expectRpcError, thrownBy } from "./helpers.js";

const fast = { initialDelay: 0, maxDelay: 0, jitter: 0 };

/** Shows nothing once a child threw during render; records what it caught. */
class Boundary extends Component<{ children?: ReactNode; caught: unknown[] }, { failed: boolean }> {
  override state = { failed: false };
  static getDerivedStateFromError() {
    return { failed: true };
  }
  override componentDidCatch(error: unknown) {
    this.props.caught.push(error);
  }
  override render() {
    return this.state.failed ? null : this.props.children;
  }
}

/** Renders `App` in a Boundary; returns what the boundary caught. */
async function caughtRendering(App: () => null): Promise<unknown[]> {
  const caught: unknown[] = [];
  // onCaughtError: React would log the caught error to the console.
  const root = createRoot(fakeContainer() as never, { onCaughtError: () => {} });
  await act(async () => root.render(h(Boundary, { caught }, h(App))));
  await act(async () => root.unmount());
  return caught;
}

function circular(): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  query.self = query;
  return query;
}

describe("useRpcClient with arguments createRpcClient refuses", () => {
  const cases: [label: string, binding: string, options: unknown][] = [
    ["an empty binding", "", { baseUrl: "http://x" }],
    ["a bigint query value", "ROOM", { baseUrl: "http://x", query: { t: 1n } }],
    ["a circular query", "ROOM", { baseUrl: "http://x", query: circular() }],
    ["a bigint baseUrl", "ROOM", { baseUrl: 1n }],
  ];
  for (const [label, binding, options] of cases) {
    it(`${label}: throws createRpcClient's RpcError BAD_OPTION during render`, async () => {
      const direct = expectRpcError(
        thrownBy(() => createRpcClient(binding, "x", options as RpcClientOptions<unknown>)),
        "BAD_OPTION",
      );
      const caught = await caughtRendering(() => {
        useRpcClient(binding, "x", options as RpcClientOptions<unknown>);
        return null;
      });
      expect(caught).toHaveLength(1);
      expect(expectRpcError(caught[0], "BAD_OPTION").message).toBe(direct.message);
    });
  }

  it("switching to an empty instance throws BAD_OPTION to the error boundary and closes the old client", async () => {
    const obj = fakeObject([]);
    const caught: unknown[] = [];
    const committed: RpcClient<{ ping(): string }>[] = [];
    function App({ instance }: { instance: string }) {
      const client = useRpcClient<{ ping(): string }>("ROOM", instance, { baseUrl: "http://x", transport: obj.factory, reconnect: fast });
      useEffect(() => {
        committed.push(client);
        void client.ping();
      }, [client]);
      return null;
    }
    const root = createRoot(fakeContainer() as never, { onCaughtError: () => {} });
    await act(async () => root.render(h(Boundary, { caught }, h(App, { instance: "a" }))));
    await act(async () => settle());
    expect(obj.openLinks()).toBe(1);
    await act(async () => root.render(h(Boundary, { caught }, h(App, { instance: "" }))));
    await act(async () => settle());
    expect(caught).toHaveLength(1);
    expectRpcError(caught[0], "BAD_OPTION");
    expect(committed).toHaveLength(1);
    expect(rpcConnection(committed[0]!).state).toBe("disposed");
    expect(obj.openLinks()).toBe(0);
    await act(async () => root.unmount());
  });
});

describe("useConnectionState with something that is not a client", () => {
  const obj = fakeObject([]);
  const client = createRpcClient<{ users: { get(): string } }>("ROOM", "paths", { baseUrl: "http://x", transport: obj.factory });
  const cases: [label: string, value: () => unknown][] = [
    ["null", () => null],
    ["a plain object", () => ({})],
    ["a path of a client (client.users)", () => client.users],
  ];
  for (const [label, value] of cases) {
    it(`${label}: throws rpcConnection's RpcError BAD_OPTION during render`, async () => {
      const direct = expectRpcError(
        thrownBy(() => rpcConnection(value() as object)),
        "BAD_OPTION",
      );
      const caught = await caughtRendering(() => {
        useConnectionState(value() as object);
        return null;
      });
      expect(caught).toHaveLength(1);
      expect(expectRpcError(caught[0], "BAD_OPTION").message).toBe(direct.message);
    });
  }
});
