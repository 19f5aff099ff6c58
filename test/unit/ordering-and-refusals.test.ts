/**
 * Found by reviewing the latest changes: a failed plain-JSON reply gives back no references it
 * did not carry, a refused withCallOptions does not run its call, backpressure arms one retry
 * timer, and stubs are not coerced into calls.
 */

import { describe, expect, it, vi } from "vitest";
import { currentCall } from "../../packages/rpc/src/current-call.js";
import { createRpcClient, RpcTarget, type RpcTransport, type TransportHandler, withCallOptions } from "../../packages/rpc/src/index.js";
import { rootProxy } from "../../packages/rpc/src/proxy.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, rejectionOf, settle } from "./helpers.js";

class Item extends RpcTarget {
  get value(): number {
    return 7;
  }
}

class Api {
  readonly shared = new Item();
  same(): Item {
    return this.shared;
  }
  /** Plain JSON data whose first element happens to look like an EXPORT record ([31, [id, kind]]). */
  data(): unknown {
    return [[31, [1, 1]], [[[[[0]]]]]];
  }
}

describe("a reply whose plain-JSON result fails to decode", () => {
  // connection.ts receiveReplies: on a decode failure it calls releaseExports on reply[2] even for
  // ReplyStatus.OkJson, where reply[2] is the result itself (plain JSON), not a record table. A
  // JSON array shaped like [[31,[id,kind]],…] is then "given back" as if it were an EXPORT record:
  // the client counts (and later releases) a reference the peer never sent in that reply, and the
  // object collects export 1 while another reply still carries it to the client. (protocol.md
  // "Counting": a release gives back exactly the EXPORT records received): a stub received after
  // the failed reply still works.
  it("does not release the object's export named by data that merely looks like an EXPORT record", async () => {
    const api = new Api();
    const paired = pairWith(api);
    const client = createRpcClient<Api>("API", "review", {
      transport: paired.factory,
      reconnect: false,
      limits: { maxDepth: 3 }, // the result below is deeper: its decode fails on the client
    });
    using _ = client;
    const first = (await client.same()) as unknown as Item & Disposable; // export 1, received once
    await rejectionOf(client.data()); // decode fails (too deep)
    const conn = paired.connections[0]!;
    conn.hold = true;
    const again = client.same(); // the object sends export 1 again (its count: 2)
    await settle(2); // the call is queued (held) before the release below
    first[Symbol.dispose](); // the client releases what it received of export 1 (should be 1)
    await settle(2);
    conn.release();
    const second = (await again) as unknown as Item;
    expect(await second.value).toBe(7);
  });
});

type ClientSide = { slow(): Promise<string>; log(v: unknown): void };

class Caller2 {
  jobs = 0;
  job(): number {
    return ++this.jobs;
  }
  /** Calls the client (as rpcClient(this, rpcCaller()) would): a slow call, then one pipelined on it, then answers. */
  async ordered(): Promise<string> {
    const conn = currentCall()!.connection;
    const c = rootProxy(
      conn.caller,
      () => undefined,
      () => undefined,
    ) as unknown as ClientSide;
    const a = c.slow(); // leaves at the end of this turn and waits for the client
    await new Promise<void>((resolve) => setTimeout(resolve, 5));
    void Promise.resolve(c.log(a)).catch(() => undefined); // made before the reply: pipelines on a call already sent
    return "reply";
  }
}

describe("withCallOptions refusing its options", () => {
  // client-controls.ts withCallOptions: a signal that is not an AbortSignal returns a promise rejected with
  // BAD_OPTION, but the call passed in was already made (queued) and is still sent and run by the
  // object: the caller is told its call failed while it ran (a retry runs it twice). a call whose
  // options are refused is not sent (api.md withCallOptions: options "reach it before its frame
  // leaves"; a refusal should stop it, as an aborted signal does).
  it("a call whose withCallOptions is refused (signal not an AbortSignal) is not run", async () => {
    const api = new Caller2();
    const paired = pairWith(api);
    const client = createRpcClient<Caller2>("API", "review-opts", { transport: paired.factory, reconnect: false });
    using _ = client;
    const controller = new AbortController();
    await expectRejectsCode(withCallOptions(client.job(), { signal: controller as unknown as AbortSignal }), "BAD_OPTION");
    await settle(5);
    expect(api.jobs).toBe(0);
  });
});

class Pinger {
  client: { tick(): Promise<void> } | undefined;
  arm(): void {
    const conn = currentCall()!.connection;
    this.client = rootProxy(
      conn.caller,
      () => undefined,
      () => undefined,
    ) as unknown as { tick(): Promise<void> };
  }
  job(): void {}
  /** Calls the client `n` times in one turn (one frame). */
  fire(n: number): void {
    for (let i = 0; i < n; i++) void this.client!.tick().catch(() => undefined);
  }
}

describe("a client under backpressure answering the object", () => {
  // caller.ts flush(): it clears flushScheduled first, then, while congested, arms a 5 ms retry
  // timer unless one is scheduled. callee.ts complete() now calls caller.flush() before every reply
  // while calls are queued: with the client congested (reliability.md "Backpressure": calls stay
  // queued), each reply to the object arms ANOTHER 5 ms retry chain, and every chain re-arms itself
  // until the backlog drains: N calls from the object → N timers firing every 5 ms. one retry timer
  // however many replies are written while congested.
  it("answering 50 calls from the object while congested arms at most one flush retry timer", async () => {
    const api = new Pinger();
    const paired = pairWith(api);
    let congested = false;
    let armedInMessage = 0;
    let inMessage = false;
    const realSetTimeout = globalThis.setTimeout;
    const spy = vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, ms?: number) => {
      if (inMessage && ms === 5) armedInMessage++;
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout);
    try {
      const factory = (handler: TransportHandler): RpcTransport => {
        const wrapped: TransportHandler = {
          onMessage(data) {
            inMessage = true;
            try {
              handler.onMessage(data);
            } finally {
              inMessage = false;
            }
          },
          onClose: (code, reason) => handler.onClose(code, reason),
        };
        const t = paired.factory(wrapped);
        return {
          open: () => t.open(),
          send: (frame) => t.send(frame),
          close: (code, reason) => t.close(code, reason),
          get bufferedAmount() {
            return congested ? Number.MAX_SAFE_INTEGER : 0;
          },
        };
      };
      const client = createRpcClient<Pinger>("API", "review-bp", {
        transport: factory,
        reconnect: false,
        expose: { tick: () => undefined },
      });
      using _ = client;
      await client.arm();
      congested = true;
      void Promise.resolve(client.job()).catch(() => undefined); // stays queued (backpressure)
      await settle(2);
      armedInMessage = 0;
      api.fire(50);
      await settle(3);
      expect(armedInMessage).toBeLessThanOrEqual(1);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("a stub serialised or coerced", () => {
  // proxy.ts: the latest changes made toJSON undefined and Symbol.toPrimitive local on the client
  // proxy and on paths (api.md RpcStub section: "A client, a path and a call handle are not
  // serialised or coerced into calls"), but makeStub's proxy was left out: JSON.stringify(stub)
  // reads stub.toJSON (a path), calls it, and so sends a call "toJSON" to the object (and `${stub}`
  // sends toString and valueOf, then throws a TypeError). like a client or a path, a stub is
  // skipped by JSON.stringify and nothing is sent.
  it("JSON.stringify of a stub sends nothing to the object", async () => {
    const api = new Api();
    const paired = pairWith(api);
    const errors: unknown[] = [];
    const client = createRpcClient<Api>("API", "review-stub", {
      transport: paired.factory,
      reconnect: false,
      onError: (e) => void errors.push(e),
    });
    using _ = client;
    const stub = (await client.same()) as unknown as object;
    await settle(2);
    const sent = paired.connections[0]!.sentByClient.length;
    const json = JSON.stringify({ stub });
    await settle(5);
    expect(json).toBe("{}");
    expect(paired.connections[0]!.sentByClient.slice(sent).map(String)).toEqual([]);
  });
});
