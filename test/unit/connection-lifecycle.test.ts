/**
 * The client's connection lifecycle (rpcConnection) over a scripted fake transport: waitForOpen
 * when the first connection fails, listeners that close the client, the reconnect timer's hold
 * on a Node process, a transport factory that throws.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, getRpcSession, rpcConnection } from "../../packages/rpc/src/client.js";
import type { ConnectionState } from "../../packages/rpc/src/session.js";
import type { RpcTransport, TransportFactory, TransportHandler } from "../../packages/rpc/src/transport.js";
import { expectRejectsCode, settle } from "./helpers.js";
import { framesOf } from "../support/frames.js";

interface FakeConn {
  handler: TransportHandler;
  sent: unknown[];
  closed: [number | undefined, string | undefined] | undefined;
  openResolve: () => void;
  openReject: (e: unknown) => void;
  /** Reports a close to the session (as the peer/network would). */
  drop(code?: number, reason?: string): void;
}

/** A fake transport: each open() waits until the test resolves or rejects it. */
function fake(opts: { autoOpen?: boolean; closeReportsClose?: boolean } = {}) {
  const conns: FakeConn[] = [];
  const factory: TransportFactory = (handler) => {
    let reported = false;
    let rejectOpen: (e: unknown) => void = () => {};
    let resolveOpen: () => void = () => {};
    const conn: FakeConn = {
      handler,
      sent: [],
      closed: undefined,
      openResolve: () => resolveOpen(),
      openReject: (e) => rejectOpen(e),
      drop(code = 1006, reason = "") {
        if (reported) return;
        reported = true;
        rejectOpen(new Error("closed"));
        handler.onClose(code, reason);
      },
    };
    conns.push(conn);
    const transport: RpcTransport = {
      open: () =>
        new Promise<void>((resolve, reject) => {
          resolveOpen = resolve;
          rejectOpen = reject;
          if (opts.autoOpen) resolve();
        }),
      send: (frame) => void conn.sent.push(...framesOf(frame)),
      close: (code, reason) => {
        if (conn.closed) return;
        conn.closed = [code, reason];
        if (opts.closeReportsClose !== false) queueMicrotask(() => conn.drop(code ?? 1000, reason ?? ""));
      },
    };
    return transport;
  };
  return { factory, conns };
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("connection lifecycle", () => {
  it("waitForOpen settles when the first connection fails (it does not hang with the client idle)", async () => {
    const t = fake();
    const client = createRpcClient("B", "i", { transport: t.factory, heartbeat: false });
    const connection = rpcConnection(client);
    let settled = false;
    const waiting = connection.waitForOpen().then(
      () => (settled = true),
      () => (settled = true),
    );
    await settle();
    expect(connection.state).toBe("connecting");
    t.conns[0]!.drop(1006, "refused");
    await settle();
    expect(connection.state).toBe("idle");
    // Nothing is connecting any more: the promise must have settled (rejected), or it never will.
    expect(settled).toBe(true);
    connection.close();
    await waiting;
  });

  it("a listener that closes the client on 'connecting' leaves no transport open", async () => {
    const t = fake();
    const client = createRpcClient("B", "i", { transport: t.factory, heartbeat: false });
    const connection = rpcConnection(client);
    connection.onStateChange((state) => {
      if (state === "connecting") connection.close();
    });
    void connection.waitForOpen().catch(() => {});
    await settle();
    expect(connection.state).toBe("disposed");
    // If a transport was made anyway, it must have been closed.
    for (const conn of t.conns) {
      conn.openResolve();
    }
    await settle();
    for (const conn of t.conns) expect(conn.closed, "transport made for a disposed client was never closed").toBeDefined();
  });

  it("every listener hears the states in order when one listener closes the client", async () => {
    const t = fake({ autoOpen: true });
    const client = createRpcClient("B", "i", { transport: t.factory, heartbeat: false });
    const connection = rpcConnection(client);
    connection.onStateChange((state) => {
      if (state === "open") connection.close();
    });
    const heard: ConnectionState[] = [];
    connection.onStateChange((state) => heard.push(state));
    await connection.waitForOpen().catch(() => {});
    await settle();
    expect(connection.state).toBe("disposed");
    expect(heard).toEqual(["connecting", "open", "disposed"]);
    expect(heard.at(-1)).toBe(connection.state);
  });

  it("a call made during the backoff delay keeps the reconnect timer ref'd (Node process stays alive for it)", async () => {
    const t = fake({ autoOpen: true });
    const client = createRpcClient<{ f(): number }>("B", "i", {
      transport: t.factory,
      heartbeat: false,
      reconnect: { initialDelay: 60_000, maxDelay: 60_000, jitter: 0 },
    });
    const connection = rpcConnection(client);
    const session = getRpcSession(client);
    await connection.waitForOpen();
    t.conns[0]!.drop(1006, "cut");
    expect(connection.state).toBe("reconnecting");
    const call = Promise.resolve(client.f());
    call.catch(() => {});
    await settle();
    expect(connection.pendingCalls).toBe(1);
    const timer = (session as unknown as { reconnectTimer: { hasRef(): boolean } }).reconnectTimer;
    expect(timer.hasRef(), "the only thing that will ever send the waiting call is unref'd").toBe(true);
    connection.close();
    await expectRejectsCode(call, "DISPOSED");
  });
});

describe("a transport factory that throws", () => {
  it("fails the call and leaves the client able to connect again (not stuck in 'connecting', no unhandled rejection)", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (error: unknown) => unhandled.push(error);
    process.on("unhandledRejection", onUnhandled);
    try {
      let throws = true;
      const good = fake({ autoOpen: true });
      const factory: TransportFactory = (handler) => {
        if (throws) throw new Error("transport constructor failed");
        return good.factory(handler);
      };
      const client = createRpcClient<{ f(): number }>("B", "i", { transport: factory, heartbeat: false, timeout: 0 });
      const connection = rpcConnection(client);
      let outcome: unknown = "pending";
      Promise.resolve(client.f()).then(
        (value) => (outcome = value),
        (error) => (outcome = error),
      );
      await settle();
      expect(unhandled).toEqual([]);
      expect(outcome, "the call neither failed nor will ever be sent").not.toBe("pending");
      expect(connection.state).toBe("idle");
      throws = false;
      await connection.waitForOpen();
      connection.close();
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
