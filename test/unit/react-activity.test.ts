/**
 * `useRpcClient` under React 19's `<Activity>`, in react-dom/client in Node against the fake
 * object of react-harness.ts. Hiding an Activity runs the effect cleanups of its subtree, so the
 * component's client is closed (its socket goes away while hidden); showing it again keeps the
 * component's state and mounts its effects again, possibly WITHOUT rendering it again (a stable
 * element passed as children, a `memo` component). The hook promises a component never hands out
 * a closed client: closing it asks the hidden component for a render with a new one, which React
 * does before showing it. Each case runs plain and under StrictMode, with the page re-rendered on
 * reveal, passed as the same element, and as `memo(Page)`: the page's own layout effect, its
 * child's effects, a call from such an effect and the child's `useSubscription` all get the new
 * client, never the closed one.
 */
import { describe, expect, it, vi } from "vitest";

// The hooks import "@dorpc/rpc": make it the sources, the same copy this file uses.
vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"));

// First: makes `window` exist before React and the hooks load, as in a browser.
import { fakeContainer, fakeObject, settle } from "./react-harness.js";
import { type ConnectionState, type RpcClient, rpcConnection } from "@dorpc/rpc";
import {
  Activity,
  type ActivityProps,
  act,
  createElement as h,
  memo,
  type ReactElement,
  StrictMode,
  useEffect,
  useLayoutEffect,
} from "react";
import { createRoot } from "react-dom/client";
import { useRpcClient, useSubscription } from "../../packages/react/src/index.js";

const fast = { initialDelay: 0, maxDelay: 0, jitter: 0 };

type Api = { ping(): string };

/** A client an effect was given, and its state then. */
interface Given {
  where: string;
  client: RpcClient<Api>;
  state: ConnectionState;
}

type PageAs = "re-rendered" | "the same element" | "memo(Page)";

/**
 * Mounts a Page (useRpcClient) with a Child (effects using the client, and useSubscription) in a
 * visible Activity, hides it, then shows it again; returns what was seen around the reveal.
 */
async function hideAndShow(strict: boolean, pageAs: PageAs) {
  const obj = fakeObject(["news"]);
  const given: Given[] = [];
  const results: string[] = [];
  const statuses: string[] = [];
  const ended: unknown[] = [];
  /** Every client the page's layout effect got, in order (the clients it committed). */
  const committed: RpcClient<Api>[] = [];

  function Child({ client }: { client: RpcClient<Api> }) {
    useLayoutEffect(() => {
      given.push({ where: "child layout effect", client, state: rpcConnection(client).state });
    }, [client]);
    useEffect(() => {
      given.push({ where: "child effect", client, state: rpcConnection(client).state });
      client.ping().then(
        (value) => results.push(value),
        (error: unknown) => results.push(`failed: ${(error as { code?: string }).code}`),
      );
    }, [client]);
    const { status } = useSubscription(client as never, "news" as never, () => {}, { onEnd: (error: unknown) => ended.push(error) });
    statuses.push(status);
    return null;
  }
  function Page() {
    const client = useRpcClient<Api>("ROOM", "activity", { baseUrl: "http://x", transport: obj.factory, reconnect: fast });
    // The component's own layout effect: the first effect of the reveal to see its client.
    useLayoutEffect(() => {
      given.push({ where: "page layout effect", client, state: rpcConnection(client).state });
      if (!committed.includes(client)) committed.push(client);
    }, [client]);
    return h(Child, { client });
  }

  const MemoPage = memo(Page);
  const pageElement = h(Page);
  const page = (): ReactElement => (pageAs === "the same element" ? pageElement : pageAs === "memo(Page)" ? h(MemoPage) : h(Page));
  const root = createRoot(fakeContainer() as never);
  const render = async (mode: "visible" | "hidden") => {
    // (The cast: ActivityProps declares children, given here as createElement's third argument.)
    const tree = h(Activity, { mode } as ActivityProps, page());
    await act(async () => root.render(strict ? h(StrictMode, null, tree) : tree));
    await act(async () => settle());
  };

  await render("visible");
  expect(results).toContain("pong");
  expect(statuses.at(-1)).toBe("ready");
  const first = committed[0]!;
  let firstDisposals = 0;
  rpcConnection(first).onStateChange((state) => state === "disposed" && firstDisposals++);

  await render("hidden");
  const whileHidden = { openLinks: obj.openLinks(), firstState: rpcConnection(first).state };
  given.length = 0;
  results.length = 0;
  statuses.length = 0;
  await render("visible");
  return { obj, root, first, committed, given, results, statuses, ended, whileHidden, firstDisposals: () => firstDisposals };
}

const cases: [strict: boolean, pageAs: PageAs][] = [
  [false, "re-rendered"],
  [false, "the same element"],
  [false, "memo(Page)"],
  [true, "re-rendered"],
  [true, "the same element"],
  [true, "memo(Page)"],
];

for (const [strict, pageAs] of cases) {
  describe(`useRpcClient in an Activity hidden and shown again${strict ? " under StrictMode" : ""}, the page ${pageAs}`, () => {
    it("the page's layout effect and its child's effects get a new client, never the closed one, and a call from them succeeds", async () => {
      const { root, first, committed, given, results } = await hideAndShow(strict, pageAs);
      expect(rpcConnection(first).state).toBe("disposed");
      const fresh = committed.at(-1)!;
      // (Booleans: a failure message that printed a client would make calls on it.)
      expect(fresh === first).toBe(false);
      expect(new Set(given.map((g) => g.where))).toEqual(new Set(["page layout effect", "child layout effect", "child effect"]));
      for (const g of given) {
        expect(g.client === fresh, `${g.where} got the closed client`).toBe(true);
        expect(g.state, g.where).not.toBe("disposed");
      }
      // One call per mount of the child's effect (StrictMode mounts it twice), all answered.
      expect(results.length).toBeGreaterThan(0);
      expect(results.every((r) => r === "pong")).toBe(true);
      await act(async () => root.unmount());
    });

    it("the child's useSubscription goes back to ready on the new client, never failed and without calling onEnd", async () => {
      const { obj, root, statuses, ended } = await hideAndShow(strict, pageAs);
      expect(statuses).not.toContain("failed");
      expect(statuses.at(-1)).toBe("ready");
      expect(ended).toEqual([]);
      expect(obj.subscribers("news")).toBe(1);
      // Once per socket: the old one's subscription ended with its socket, the new one's is open.
      expect(obj.log).toEqual([
        ["subscribe", "news"],
        ["subscribe", "news"],
      ]);
      await act(async () => root.unmount());
    });

    it("hiding closes the client and its socket once; showing opens one socket for the new client; unmounting closes it", async () => {
      const { obj, root, committed, whileHidden, firstDisposals } = await hideAndShow(strict, pageAs);
      expect(whileHidden).toEqual({ openLinks: 0, firstState: "disposed" });
      expect(committed).toHaveLength(2);
      expect(obj.opens).toBe(2);
      expect(obj.openLinks()).toBe(1);
      await act(async () => root.unmount());
      await act(async () => settle());
      expect(obj.openLinks()).toBe(0);
      expect(committed.map((client) => rpcConnection(client).state)).toEqual(["disposed", "disposed"]);
      expect(firstDisposals()).toBe(1);
    });
  });
}
