/**
 * A chain never calls a stub (a function of another end), and the access policy's `allow`
 * keeps its own errors. A getter or method of the object returning a client's callback it kept
 * with dup() made the object call that client's function for whoever sent the chain — another
 * client included — under the name "apply" (the stub read `apply` as a remote member); a round
 * trip refuses to hand such a stub to another client (ENCODE). Now the step is NOT_CALLABLE and
 * nothing is sent. An `allow` function that throws refuses the call as a forbidden name would,
 * and its message stays on the object.
 */
import { describe, expect, it, vi } from "vitest";
import { createRpcClient, RpcError } from "../../packages/rpc/src/index.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, rejectionOf, settle } from "./helpers.js";

type Callback = ((value: unknown) => unknown) & Disposable & { dup(): Callback };

class Api {
  listener: Callback | undefined;
  listen(callback: Callback): void {
    this.listener = callback.dup();
  }
  /** Hands back the kept stub (as "who is listening"). */
  get current(): Callback | undefined {
    return this.listener;
  }
  getListener(): Callback | undefined {
    return this.listener;
  }
  /** A function of the object's own, by reference. */
  get triple(): (n: number) => number {
    return (n) => n * 3;
  }
  ping(): string {
    return "pong";
  }
}

function twoClients(options?: RpcServerOptions) {
  const api = new Api();
  const pa = pairWith(api, options);
  const pb = pairWith(api, options);
  const a = createRpcClient<Api>("API", "a", { transport: pa.factory });
  const b = createRpcClient<Api>("API", "b", { transport: pb.factory });
  const callsToA = () => pa.connections[0]!.sentByServer.filter((f) => typeof f === "string" && f.startsWith("\u001eC"));
  return {
    a,
    b,
    callsToA,
    [Symbol.dispose]() {
      a[Symbol.dispose]();
      b[Symbol.dispose]();
    },
  };
}

describe("a chain step that calls a stub", () => {
  it("B calling A's kept callback through a getter: NOT_CALLABLE, and nothing is sent to A", async () => {
    using t = twoClients();
    const seen: unknown[] = [];
    await t.a.listen(((x: unknown) => void seen.push(x)) as never);
    const before = t.callsToA().length;
    const current = (t.b as unknown as { current(x: string): Promise<unknown> }).current;
    const error = await expectRejectsCode(current("from B"), "NOT_CALLABLE");
    expect(error.message).not.toContain("apply");
    await settle();
    expect({ seen, sent: t.callsToA().slice(before) }).toEqual({ seen: [], sent: [] });
  });

  it("B pipelining a call on a method's result that is A's callback: NOT_CALLABLE, nothing sent to A", async () => {
    using t = twoClients();
    const seen: unknown[] = [];
    await t.a.listen(((x: unknown) => void seen.push(x)) as never);
    const before = t.callsToA().length;
    const handle = t.b.getListener() as unknown as (x: string) => Promise<unknown>;
    await expectRejectsCode(handle("from B"), "NOT_CALLABLE");
    await settle();
    expect({ seen, sent: t.callsToA().slice(before) }).toEqual({ seen: [], sent: [] });
  });

  it("the caller's own callback pipelined: NOT_CALLABLE; awaited, it comes back as the caller's function", async () => {
    using t = twoClients();
    const add = (n: unknown) => (n as number) + 1;
    await t.a.listen(add as never);
    const handle = t.a.getListener() as unknown as (n: number) => Promise<unknown>;
    await expectRejectsCode(handle(5), "NOT_CALLABLE");
    const back = (await t.a.getListener()) as unknown as typeof add;
    expect(back).toBe(add);
    expect(back(5)).toBe(6);
  });

  it("a function of the object's own, returned by a getter, is still called in the chain", async () => {
    using t = twoClients();
    expect(await (t.a as unknown as { triple(n: number): Promise<number> }).triple(2)).toBe(6);
  });
});

describe("an access.allow function that throws", () => {
  it("refuses the call with NOT_FOUND; its message is logged on the object, never sent", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const p = pairWith(new Api(), {
        access: {
          allow: () => {
            throw new Error("allow-internal-detail");
          },
        },
      });
      using client = createRpcClient<Api>("API", "allow", { transport: p.factory });
      const error = await rejectionOf(client.ping());
      expect(RpcError.is(error) && error.code).toBe("NOT_FOUND");
      expect((error as Error).message).not.toContain("allow-internal-detail");
      expect(logged.mock.calls.some((c) => c.some((x) => String(x).includes("allow-internal-detail")))).toBe(true);
    } finally {
      logged.mockRestore();
    }
  });

  it("an allow function's verdict is taken as truthy or falsy", async () => {
    const p = pairWith(new Api(), { access: { allow: (path) => (path[0] === "ping" ? 1 : 0) as never } });
    using client = createRpcClient<Api>("API", "allow-truthy", { transport: p.factory });
    expect(await client.ping()).toBe("pong");
    await expectRejectsCode(client.getListener() as PromiseLike<unknown>, "NOT_FOUND");
  });
});
