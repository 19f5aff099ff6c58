/**
 * Functions carried by HTTP batches that the Worker's route refused (onBeforeRequest answering
 * 401, worker.ts `?block=1`) are given back by the client's transport: the object never saw
 * them, so no release for them comes. Before, each stayed counted in the client's export table
 * for good; once `limits.maxExports` of them piled up, every later call passing a function failed
 * LIMIT although the route let requests through again. The fake-fetch cases (other refusals,
 * an answer carrying the object's release) are in test/unit/http-failed-references.test.ts.
 */
import { createRpcClient, httpTransport, RpcError } from "@dorpc/rpc";
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Composer } from "./compose-objects.js";
import { uniqueName } from "./helpers.js";

/** `value <v>`, or the code the call rejected with. */
async function outcome(p: PromiseLike<unknown>): Promise<string> {
  try {
    return `value ${String(await p)}`;
  } catch (e) {
    return RpcError.is(e) ? e.code : String(e);
  }
}

describe("functions in HTTP requests the route refused", () => {
  it("after maxExports (3) requests refused with 401, each passing a function, calls passing functions work once the route lets them through", async () => {
    let refuse = 3;
    await using client = createRpcClient<Composer>("COMPOSER", uniqueName("refused-exports"), {
      transport: httpTransport({
        fetch: (url, init) => {
          const u = new URL(url);
          if (refuse > 0) {
            refuse--;
            u.searchParams.set("block", "1");
          }
          return SELF.fetch(u.toString(), init);
        },
      }),
      baseUrl: "http://dorpc.test",
      limits: { maxExports: 3 },
      timeout: 3000,
    });
    // `callBack(fn, 0)` passes the function and never calls it (an HTTP batch has no way back to the client).
    const refused: string[] = [];
    for (let i = 0; i < 3; i++) refused.push(await outcome(client.callBack((n: number) => n, 0)));
    expect(refused).toEqual(["CONNECT_FAILED", "CONNECT_FAILED", "CONNECT_FAILED"]);
    const after: string[] = [];
    for (let i = 0; i < 4; i++) after.push(await outcome(client.callBack((n: number) => n, 0)));
    expect(after, "LIMIT: the refused requests' functions were still counted against the client's maxExports").toEqual([
      "value 0",
      "value 0",
      "value 0",
      "value 0",
    ]);
  });
});
