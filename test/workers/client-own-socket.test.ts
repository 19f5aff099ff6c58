/**
 * The object calling one client, given one of its own sockets (one dorpc never accepted, e.g. from
 * `ctx.getWebSockets()`): refused, and the socket stays the app's.
 */
import { RpcError } from "@dorpc/rpc";
import { rpcClient, RPC_SOCKET_TAG } from "@dorpc/rpc/server";
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { nextMessage, uniqueName } from "./helpers.js";

describe("rpcClient on a socket dorpc never accepted", () => {
  // docs/getting-started.md §5: handleRpcMessage resolves false "for any message on a socket dorpc
  // did not accept (your own sockets, whatever they carry)"; compose-own-code.test.ts checks that
  // an RS-prefixed message (RFC 7464) on such a socket reaches Base's webSocketMessage. docs/api.md
  // (rpcClient): `who` is "one of ctx.getWebSockets()", which lists the object's own sockets too.
  // Calling rpcClient on one must not turn it into a dorpc socket: the object's own protocol must
  // keep receiving its messages (and the call should be refused, not sent as a dorpc frame into
  // another protocol to wait out callTimeout).
  it("after rpcClient(this, ownSocket) was tried, the own socket's RS-prefixed messages still reach Base's webSocketMessage", {
    timeout: 10_000,
  }, async () => {
    const stub = env.OWN_SOCKETS_WRAPPED.getByName(uniqueName("own-sock"));
    const response = await stub.fetch("http://x/own", { headers: { Upgrade: "websocket" } });
    const ws = response.webSocket!;
    ws.accept();
    const received: string[] = [];
    ws.addEventListener("message", (e) => received.push(String(e.data)));
    const closed = new Promise<string>((resolve) => ws.addEventListener("close", (e) => resolve(`closed ${e.code}: ${e.reason}`)));
    const tried = await runInDurableObject(stub, (obj, state) => {
      const own = state.getWebSockets().filter((s) => !state.getTags(s).includes(RPC_SOCKET_TAG));
      try {
        void rpcClient<{ hello(): string }>(obj, own[0]!)
          .hello()
          .catch(() => undefined);
        return `not refused (${own.length} own socket)`;
      } catch (error) {
        return RpcError.is(error) ? error.code : String(error);
      }
    });
    const answer = nextMessage(ws, (d) => d.startsWith("base got"));
    ws.send('\u001e{"a":1}\n');
    const got = await Promise.race([answer, closed]);
    ws.close();
    expect({ got, tried, dorpcFramesSentToOwnSocket: received.filter((m) => m.startsWith("\u001eC")) }).toEqual({
      got: `base got ${JSON.stringify('\u001e{"a":1}\n')}`,
      tried: "BAD_OPTION",
      dorpcFramesSentToOwnSocket: [],
    });
  });
});
