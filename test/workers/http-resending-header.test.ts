/** X-Dorpc-Resending is sent only with the request that resends (docs/protocol.md, HTTP batches). */
import { createRpcClient, type FetchLike, httpTransport } from "@dorpc/rpc";
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

describe("the resending header", () => {
  it("a resend header stays only on the request that resends", async () => {
    const name = uniqueName("sticky");
    const sent: Headers[] = [];
    let lose = 0;
    const fetch: FetchLike = async (url, init) => {
      sent.push(new Headers(init.headers));
      const response = await SELF.fetch(url, init);
      if (lose-- > 0) {
        await response.arrayBuffer();
        throw new TypeError("network connection lost");
      }
      return response;
    };
    await using client = createRpcClient<Counter>("COUNTER", name, {
      transport: httpTransport({ fetch }),
      baseUrl: "http://dorpc.test",
      reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
    });
    expect(await client.increment(1)).toBe(1);
    lose = 1;
    expect(await client.increment(1)).toBe(2);
    expect(await client.increment(1)).toBe(3);
    expect(sent).toHaveLength(4);
    expect(sent[2]!.get("X-Dorpc-Resending")).toMatch(/^1/);
    expect(sent[3]!.get("X-Dorpc-Resending")).toBeNull();
  });
});
