/**
 * A function the client passed over HTTP and the object kept (dup) ends with the request; the
 * answer releases it, so the client's export entry is freed too (it leaked, one per call).
 */
import { createRpcClient, httpTransport, withCallOptions } from "@dorpc/rpc";
import { SELF } from "cloudflare:test";
import { describe, it } from "vitest";
import type { Composer } from "./compose-objects.js";
import { uniqueName } from "./helpers.js";

describe("client exports over HTTP", () => {
  it("functions the object kept (dup) over HTTP do not pile up in the client once their request ended", async () => {
    await using client = createRpcClient<Composer>("COMPOSER", uniqueName("exports-kept"), {
      transport: httpTransport({ fetch: (url, init) => SELF.fetch(url, init) }),
      baseUrl: "http://dorpc.test",
      limits: { maxExports: 5 },
    });
    for (let i = 0; i < 8; i++) {
      await withCallOptions(
        client.listen((e: string) => e.length),
        { timeout: 3000 },
      );
    }
  });
});
