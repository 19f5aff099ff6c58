/**
 * Server rendering of `@dorpc/react` (react-dom/server in Node, where there is no `window` and no
 * `location`): the docs say nothing connects or subscribes during server rendering and that
 * `useConnectionState` is "idle" there; the components of the docs must render.
 */
import { describe, expect, it, vi } from "vitest";

vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"));

import { createElement as h } from "react";
import { renderToString } from "react-dom/server";
import { useConnectionState, useRpcClient, useSubscription } from "../../packages/react/src/index.js";

describe("@dorpc/react during server rendering", () => {
  it("renders the docs' Counter (useRpcClient without baseUrl + useConnectionState) as 'idle'", () => {
    // docs/getting-started.md:1201-1211 (the Counter component, no baseUrl: the page's origin),
    // docs/api.md:1793 ("nothing connects or subscribes during server rendering") and :1834
    // ("Returns "idle" during server rendering"), use-connection-state.ts:10. A React app that
    // server-renders (Next.js, Remix, renderToString) renders this component on the server too.
    // (It threw BAD_OPTION "baseUrl is required outside browsers": the client was made as in a page.)
    expect(typeof (globalThis as { window?: unknown }).window).toBe("undefined");
    function Counter({ room }: { room: string }) {
      const counter = useRpcClient<object>("COUNTER", room);
      const state = useConnectionState(counter);
      return h("button", null, `+1 (${state})`);
    }
    expect(renderToString(h(Counter, { room: "lobby" }))).toBe("<button>+1 (idle)</button>");
  });

  it("renders useRpcClient + useSubscription on a server runtime without a global WebSocket (Node 20)", () => {
    // @dorpc/react declares engines node >= 20 (packages/react/package.json); Node 20 has no
    // global WebSocket. Nothing connects during server rendering, so nothing needs a WebSocket.
    const saved = Object.getOwnPropertyDescriptor(globalThis, "WebSocket");
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    try {
      function Messages() {
        const room = useRpcClient<object>("ROOM", "lobby", { baseUrl: "https://app.example.com" });
        const state = useConnectionState(room);
        const { status } = useSubscription(room as never, "messages" as never, () => {});
        return h("p", null, `${state} ${status}`);
      }
      expect(renderToString(h(Messages))).toBe("<p>idle pending</p>");
    } finally {
      if (saved) Object.defineProperty(globalThis, "WebSocket", saved);
    }
  });

  it("a call made during server rendering fails with CONNECT_FAILED saying why (nothing connects)", async () => {
    let call: Promise<unknown> | undefined;
    function Eager() {
      const counter = useRpcClient<{ getValue(): number }>("COUNTER", "lobby");
      call ??= counter.getValue();
      return h("p", null, "x");
    }
    renderToString(h(Eager));
    const error = await call!.then(
      () => undefined,
      (e: unknown) => e as { code?: string; message?: string },
    );
    expect(error?.code).toBe("CONNECT_FAILED");
    expect(error?.message).toContain("during server rendering");
  });
});
