/** Functions passed by reference over HTTP batches are released with their call. */
import { createRpcClient, httpTransport, withCallOptions } from "@dorpc/rpc";
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Composer } from "./compose-objects.js";
import { uniqueName } from "./helpers.js";

describe("client exports over HTTP", () => {
  it("functions passed as arguments over HTTP do not pile up in the client (maxExports)", async () => {
    await using client = createRpcClient<Composer>("COMPOSER", uniqueName("exports"), {
      transport: httpTransport({ fetch: (url, init) => SELF.fetch(url, init) }),
      baseUrl: "http://dorpc.test",
      limits: { maxExports: 5 },
    });
    for (let i = 0; i < 8; i++) {
      expect(
        await withCallOptions(
          client.callBack((n: number) => n, 0),
          { timeout: 3000 },
        ),
      ).toBe(0);
    }
  });
});
