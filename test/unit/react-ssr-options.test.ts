/**
 * `useRpcClient` during server rendering (react-dom/server in Node, no `window`): only the
 * transport differs from the browser, so options the browser refuses are refused on the server
 * too, with the same RpcError `BAD_OPTION` (a mistake shows in server logs, not only once the page
 * hydrates) — and rendering leaves no timer behind (a heartbeat or reconnect timer would keep a
 * server process busy per request). What renders and what a call does there: react-ssr.test.ts.
 */
import { describe, expect, it, vi } from "vitest";

// The hooks import "@dorpc/rpc": make it the sources, the same copy this file uses.
vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"));

// No react-harness.js here: it would make `window` exist.
import { createRpcClient, type RpcClientOptions } from "@dorpc/rpc";
import { createElement as h } from "react";
import { renderToString } from "react-dom/server";
import { useConnectionState, useRpcClient } from "../../packages/react/src/index.js";
import { expectRpcError, thrownBy } from "./helpers.js";

/** Timers alive in this process now. */
function timers(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length;
}

describe("useRpcClient during server rendering", () => {
  const refused: [label: string, options: unknown][] = [
    ["options: null", null],
    ['a baseUrl that is not http(s) or ws(s) ("ftp://nope")', { baseUrl: "ftp://nope" }],
  ];
  for (const [label, options] of refused) {
    it(`${label}: throws createRpcClient's RpcError BAD_OPTION, as in the browser`, () => {
      expect(typeof (globalThis as { window?: unknown }).window).toBe("undefined");
      const direct = expectRpcError(
        thrownBy(() => createRpcClient("COUNTER", "lobby", options as RpcClientOptions<object>)),
        "BAD_OPTION",
      );
      function Counter() {
        useRpcClient<object>("COUNTER", "lobby", options as RpcClientOptions<object>);
        return h("p", null, "x");
      }
      const error = expectRpcError(
        thrownBy(() => renderToString(h(Counter))),
        "BAD_OPTION",
      );
      expect(error.message).toBe(direct.message);
    });
  }

  it("leaves no timer behind, also with heartbeat options", () => {
    const before = timers();
    function Counter() {
      const counter = useRpcClient<object>("COUNTER", "lobby", { heartbeat: { interval: 1000, timeout: 1000 } });
      return h("p", null, useConnectionState(counter));
    }
    for (let i = 0; i < 5; i++) expect(renderToString(h(Counter))).toBe("<p>idle</p>");
    expect(timers()).toBe(before);
  });
});
