/** Exactly once over HTTP batches when requests race: an original that arrives after its resend does not run again. */
import { createRpcClient, type FetchLike, httpTransport } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

function count(name: string): Promise<number | undefined> {
  return runInDurableObject(env.COUNTER.getByName(name), (_instance, state) => state.storage.kv.get<number>("count"));
}

interface Sent {
  headers: Headers;
  body: string;
}

describe("HTTP exactly once with racing requests", () => {
  it("a request still in flight when another request fails is not run twice (resend arrives first, then the original)", async () => {
    const name = uniqueName("race");
    const sent: Sent[] = [];
    let hold: (() => void) | undefined;
    let held: Promise<void> | undefined;
    let original: Promise<Response> | undefined;
    let failNext = false;
    const fetch: FetchLike = async (url, init) => {
      const body = init.body as string;
      sent.push({ headers: new Headers(init.headers), body });
      if (body.includes('"increment",[0,5]') && !body.includes(",0,1]") && held === undefined) {
        // The original request of increment(5): delayed on the way (slow network). Already on
        // the wire: the client's abort (its transport ends when turn B's request fails) cannot
        // recall it, so it is forwarded without the signal.
        held = new Promise<void>((resolve) => (hold = resolve));
        original = held.then(() => SELF.fetch(url, { ...init, signal: undefined }));
        return original;
      }
      if (failNext) {
        failNext = false;
        throw new TypeError("network connection lost"); // a gateway / network failure, nothing reached the object
      }
      return SELF.fetch(url, init);
    };
    using client = createRpcClient<Counter>("COUNTER", name, {
      transport: httpTransport({ fetch }),
      baseUrl: "http://dorpc.test",
      reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
    });
    expect(await client.increment(1)).toBe(1); // the session is known
    const slow = client.increment(5); // turn A: its request is held on the way
    await new Promise((r) => setTimeout(r, 5));
    failNext = true;
    const other = client.getValue(); // turn B: its request fails (network) → resends of A and B
    expect(await other).toBe(6); // answered on the new transport, with the resend of increment(5) that ran
    expect(await slow).toBe(6);
    // The original request of increment(5) now reaches the object.
    hold!();
    await original; // the object has answered it (an HTTP batch answers once its calls have)
    expect(await client.getValue()).toBe(6);
    expect(await count(name)).toBe(6); // ran once
  });
});
