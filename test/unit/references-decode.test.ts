/**
 * Objects and functions by reference when a decode or a call fails part-way (unit tier, paired
 * transport and the real dispatcher): what was not built is given back, a stub with a call
 * queued on it is not collected, and the messages say why a stub ended.
 */
import { describe, expect, it } from "vitest";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { createRpcClient, RpcTarget, withCallOptions } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRpcError, rejectionOf, settle } from "./helpers.js";

class Item extends RpcTarget {
  constructor(readonly n: number) {
    super();
  }
  get value(): number {
    return this.n;
  }
  child(): number {
    return this.n + 1;
  }
}

type Cb = ((n: number) => unknown) & Disposable & { dup(): Cb };

class Api {
  readonly shared = new Item(1);
  gate: (() => void) | undefined;
  leaked: Cb | undefined;
  same(): Item {
    return this.shared;
  }
  many(k: number): Item[] {
    return Array.from({ length: k }, (_, i) => new Item(i));
  }
  async gated(): Promise<Item> {
    await new Promise<void>((resolve) => (this.gate = resolve));
    return new Item(9);
  }
  note(_value: unknown): void {}
  async callAll(fns: ((n: number) => unknown)[]): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const f of fns) out.push(await f(1));
    return out;
  }
  leak(cb: Cb): void {
    this.leaked = cb;
  }
}

function setup(options?: RpcServerOptions, clientOptions?: Parameters<typeof createRpcClient>[2]) {
  const api = new Api();
  const paired = pairWith(api, options);
  const client = createRpcClient<Api>("API", "refs", {
    transport: paired.factory,
    reconnect: { initialDelay: 1, maxDelay: 5 },
    ...clientOptions,
  });
  return { api, paired, client };
}

async function collectGarbage(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    (globalThis as { gc?: () => void }).gc?.();
    await settle(2);
  }
}

describe("references a failed decode never gives back", () => {
  // a reply whose result would exceed the client's maxImports fails with LIMIT (api.md limits
  // table) and, like any reply the client does not use (protocol.md "Counting": its EXPORT records
  // "are counted and released at once"), gives back every reference it carried, so the object's
  // export table returns to empty.
  it("a reply over the client's maxImports fails LIMIT and the object's exports return to empty", async () => {
    const { client, paired } = setup(undefined, { limits: { maxImports: 1 } });
    using _ = client;
    expectRpcError(await rejectionOf(client.many(3)), "LIMIT");
    await collectGarbage();
    expect(paired.connections[0]!.server()!.exports.size).toBe(0);
  });

  // a reply that arrives after its call was given up has its EXPORT records "counted and released
  // at once" (protocol.md "Counting").
  it("a late reply arriving while the client is at maxImports is still released", async () => {
    const { client, paired, api } = setup(undefined, { limits: { maxImports: 1 } });
    using _ = client;
    const held = await client.same(); // the client's one import
    const controller = new AbortController();
    const late = withCallOptions(client.gated(), { signal: controller.signal });
    const lateFailed = rejectionOf(late);
    await settle(3); // the call left and runs
    paired.connections[0]!.hold = true; // the Cancel will cross the reply
    controller.abort(new Error("gave up"));
    api.gate!();
    await settle(5); // the reply (export 2) reaches the client, which no longer waits for it
    paired.connections[0]!.release();
    await settle(5);
    expect(((await lateFailed) as Error).message).toBe("gave up");
    // Only `held` (export 1) should still be exported.
    expect(paired.connections[0]!.server()!.exports.size).toBe(1);
    void held;
  });

  // a call whose arguments would exceed the object's maxImports fails with LIMIT and nothing it
  // handed out stays held (api.md maxImports; protocol.md: references of "a call the receiver never
  // runs" are released).
  it("arguments over the object's maxImports fail LIMIT and the client's exports return to empty", async () => {
    const { client } = setup({ limits: { maxImports: 1 } });
    using _ = client;
    expectRpcError(await rejectionOf(client.callAll([(n) => n, (n) => n + 1, (n) => n + 2])), "LIMIT");
    await settle(5);
    expect(getRpcSession(client).exports.size).toBe(0);
  });
});

describe("a call on a stub that waits to be sent", () => {
  // a call made on a live stub reaches the object (api.md RpcStub: only a stub released "in the
  // same turn as a call on it" loses the call; a stub is released when disposed or garbage-
  // collected).
  it("a call made on a stub, then queued behind a held call, survives the stub being garbage-collected", async () => {
    const { client, api } = setup();
    using _ = client;
    const slow = client.gated();
    await settle(3); // `slow` left and runs
    const made = (async () => {
      const stub = await client.same();
      void client.note(slow); // held until `slow` answers, and every later call with it
      return stub.child(); // made while the stub is held; the stub is dropped after this
    })();
    await settle(3);
    await collectGarbage();
    api.gate!();
    expect(await made).toBe(2);
  });
});

describe("what a callback used after its call says", () => {
  // api.md RpcStub: "A stub a method received as an argument is released when the method's call
  // ends … keep stub.dup() to hold it longer"; the RELEASED error should say that.
  it("dup() on an argument stub after its call ended says the call ended, not that it was disposed", async () => {
    const { client, api } = setup();
    using _ = client;
    await client.leak((n) => n);
    let thrown: unknown;
    try {
      api.leaked!.dup();
    } catch (error) {
      thrown = error;
    }
    const error = expectRpcError(thrown, "RELEASED");
    expect(error.message).not.toContain("was disposed");
  });
});
