/**
 * rpcCaller()/currentCall() after a chain resumes (an async argument schema, a getter returning a
 * promise): the call whose steps resume is made current again, not whichever call of the
 * connection started last (it was: one "entered" call per connection).
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, withCallOptions } from "../../packages/rpc/src/index.js";
import { currentCall } from "../../packages/rpc/src/current-call.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import type { StandardSchemaV1 } from "../../packages/rpc/src/standard-schema.js";
import { pairWith } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

/** An async args schema that answers when `open()` is called. */
function gatedSchema() {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const schema: StandardSchemaV1<unknown, unknown[]> = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: async (value) => {
        await gate;
        return { value: value as unknown[] };
      },
    },
  };
  return { schema, open: () => open() };
}

describe("the running call after an async argument schema", () => {
  it("a method whose async args schema settles after another call started sees its own call's signal", async () => {
    const gated = gatedSchema();
    const seen: Record<string, AbortSignal | undefined> = {};
    class Api {
      slow = rpcMethod(gated.schema, () => {
        seen.slow = currentCall()?.signal;
        return "slow";
      });
      other() {
        seen.other = currentCall()?.signal;
        return new Promise<string>(() => {}); // keeps running
      }
    }
    const paired = pairWith(new Api());
    using client = createRpcClient<Api>("API", "a", { transport: paired.factory, timeout: 0 });
    const controller = new AbortController();
    const slow = client.slow();
    const other = withCallOptions(client.other(), { signal: controller.signal });
    other.catch(() => {});
    await settle();
    expect(seen.other).toBeDefined();
    gated.open();
    expect(await slow).toBe("slow");
    expect(seen.slow).toBeDefined();
    // The slow method's signal must be its own, not the other call's.
    expect(seen.slow).not.toBe(seen.other);
    controller.abort(); // cancels `other` only
    await settle();
    expect(seen.other!.aborted).toBe(true);
    expect(seen.slow!.aborted).toBe(false);
  });
});

describe("the running call after a getter that returns a promise", () => {
  it("a method reached through an async getter sees its own call's signal, not a later call's", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const seen: Record<string, AbortSignal | undefined> = {};
    class Tools extends RpcTarget {
      run() {
        seen.run = currentCall()?.signal;
        return "ran";
      }
    }
    class Api {
      get tools(): Promise<Tools> {
        return gate.then(() => new Tools());
      }
      other() {
        seen.other = currentCall()?.signal;
        return new Promise<string>(() => {});
      }
    }
    const paired = pairWith(new Api());
    using client = createRpcClient<Api>("API", "b", { transport: paired.factory, timeout: 0 });
    const run = client.tools.run();
    const other = client.other();
    other.catch(() => {});
    await settle();
    open();
    expect(await run).toBe("ran");
    expect(seen.run).toBeDefined();
    expect(seen.run).not.toBe(seen.other);
  });
});
