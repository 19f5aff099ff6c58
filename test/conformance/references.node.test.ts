/**
 * Values by reference (references.ts) through dorpc's codec, the runtime's structuredClone,
 * Cap'n Web over a real session (a MessageChannel in this process: its RPC, not its serializer)
 * and @ungap/structured-clone. Recorded for docs/conformance.md; the codec's refusals asserted.
 */
import { deserialize as ungapDeserialize, serialize as ungapSerialize } from "@ungap/structured-clone";
import { newMessagePortRpcSession, RpcTarget as CapnTarget } from "capnweb";
import { describe, expect, it } from "vitest";
import { decode, encodeAsync, RpcError } from "../../packages/rpc/src/index.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import { observe, REFERENCE_CASES, type ReferenceObservations } from "./references.js";

class Adder extends RpcTarget {
  constructor(private readonly base: number) {
    super();
  }
  add(n: number): number {
    return this.base + n;
  }
}

/** Clones through one contender and tries each case on the copy. */
async function observeClone(clone: (value: unknown) => Promise<unknown>): Promise<ReferenceObservations> {
  return {
    function: await observe(async () => {
      const copy = (await clone((x: number) => x + 1)) as (x: number) => number;
      return typeof copy === "function" ? `copied; calling the copy gives ${copy(2)}` : `arrives as ${JSON.stringify(copy)}`;
    }),
    target: await observe(async () => {
      const copy = (await clone(new Adder(1))) as { add?: (n: number) => number };
      return typeof copy.add === "function"
        ? `copied; add(2) gives ${copy.add(2)}`
        : `copied without its methods (${JSON.stringify(copy)})`;
    }),
    pending: await observe(async () => {
      const copy = await clone(Promise.resolve(5));
      return `arrives as ${JSON.stringify(copy)}`;
    }),
  };
}

describe("values by reference, outside a Durable Object", () => {
  it("dorpc's codec refuses them with ENCODE: they travel only over a connection", async ({ task }) => {
    const observed = await observeClone(async (value) => decode(await encodeAsync(value)));
    for (const [name, value] of [
      ["function", () => 1],
      ["target", new Adder(1)],
      ["pending", Promise.resolve(5)],
    ] as const) {
      const error = await encodeAsync(value).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(RpcError.is(error) && error.code, name).toBe("ENCODE");
    }
    task.meta.references = { column: "codec", observed, cases: REFERENCE_CASES };
  });

  it("the runtime's structuredClone", async ({ task }) => {
    task.meta.references = {
      column: "native",
      observed: await observeClone(async (value) => structuredClone(value)),
      cases: REFERENCE_CASES,
    };
  });

  it("@ungap/structured-clone", async ({ task }) => {
    task.meta.references = {
      column: "ungap",
      observed: await observeClone(async (value) => ungapDeserialize(JSON.parse(JSON.stringify(ungapSerialize(value))))),
      cases: REFERENCE_CASES,
    };
  });

  it("Cap'n Web over a session (a MessageChannel)", async ({ task }) => {
    class CapnAdder extends CapnTarget {
      constructor(private readonly base: number) {
        super();
      }
      add(n: number): number {
        return this.base + n;
      }
    }
    class Api extends CapnTarget {
      echo<T>(value: T): T {
        return value;
      }
      async callBack(fn: (x: number) => Promise<number>, x: number): Promise<number> {
        return await fn(x);
      }
      adder(base: number): CapnAdder {
        return new CapnAdder(base);
      }
    }
    const channel = new MessageChannel();
    newMessagePortRpcSession(channel.port1 as never, new Api());
    // biome-ignore lint/suspicious/noExplicitAny: Cap'n Web's stub type is not needed to observe it
    const api = newMessagePortRpcSession(channel.port2 as never) as any;
    const observed: ReferenceObservations = {
      function: await observe(async () => `by reference: the receiver called it and got ${await api.callBack((x: number) => x + 1, 2)}`),
      target: await observe(async () => `a stub: add(2) ran at the sender and gave ${await api.adder(1).add(2)}`),
      pending: await observe(async () => `pipelined: the receiver resolved it (${await api.echo(api.echo(5))})`),
    };
    api[Symbol.dispose]();
    channel.port1.close();
    channel.port2.close();
    task.meta.references = { column: "capnweb", observed, cases: REFERENCE_CASES };
  });
});
