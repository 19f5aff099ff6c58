/**
 * A resend (of a call whose first request may have run) that then fails "before sending" or is
 * refused by the route is DISCONNECTED (it may have run), never CONNECT_FAILED ("nothing was sent").
 */
import { createRpcClient, type FetchLike, httpTransport, RpcError } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { rejection, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

function count(name: string): Promise<number | undefined> {
  return runInDurableObject(env.COUNTER.getByName(name), (_instance, state) => state.storage.kv.get<number>("count"));
}

function client(name: string, fetch: FetchLike) {
  return createRpcClient<Counter>("COUNTER", name, {
    transport: httpTransport({ fetch }),
    baseUrl: "http://dorpc.test",
    reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
  });
}

describe("a resend that fails before reaching the object", () => {
  it("the server went away (ECONNREFUSED) on the resend: the call ran, so it is not reported as never sent", async () => {
    const name = uniqueName("refused-resend");
    let n = 0;
    const fetch: FetchLike = async (url, init) => {
      n++;
      if (n === 1) {
        const response = await SELF.fetch(url, init); // the object runs increment(4)
        await response.arrayBuffer();
        throw new TypeError("network connection lost"); // …and the answer is lost
      }
      // The resend: the server is unreachable now.
      throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
    };
    await using c = client(name, fetch);
    const error = (await rejection(c.increment(4))) as RpcError;
    expect(await count(name)).toBe(4); // it ran
    expect(error).toBeInstanceOf(RpcError);
    // docs/api.md: CONNECT_FAILED means "Nothing was sent"; a call that may have run is DISCONNECTED.
    expect({ code: error.code, message: error.message }).toMatchObject({ code: "DISCONNECTED" });
  });

  it("the route refuses the resend (e.g. a token that expired meanwhile): the call ran, so it is not reported as never sent", async () => {
    const name = uniqueName("route-refused-resend");
    let n = 0;
    const fetch: FetchLike = async (url, init) => {
      n++;
      if (n === 1) {
        const response = await SELF.fetch(url, init);
        await response.arrayBuffer();
        throw new TypeError("network connection lost");
      }
      return SELF.fetch(`${url}?block=1`, init); // onBeforeConnect answers 403
    };
    await using c = client(name, fetch);
    const error = (await rejection(c.increment(4))) as RpcError;
    expect(await count(name)).toBe(4);
    expect({ code: error.code, message: error.message }).toMatchObject({ code: "DISCONNECTED" });
  });
});
