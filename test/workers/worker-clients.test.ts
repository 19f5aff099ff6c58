/**
 * The dorpc client inside a Worker's fetch handler (ClientWorker in worker-clients.ts, reached
 * through ctx.exports so that each fetch is its own request context, as in production): per
 * request, under waitUntil, and kept in module scope across requests.
 */
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Outcome } from "./worker-clients.js";

const clientWorker = () => (exports as unknown as { ClientWorker: Fetcher }).ClientWorker;

/** GETs `path` on ClientWorker: the handler's JSON, or how the request itself failed. */
async function request(path: string): Promise<Outcome | { requestFailed: string }> {
  try {
    return (await (await clientWorker().fetch(`http://worker${path}`)).json()) as Outcome;
  } catch (error) {
    return { requestFailed: String(error) };
  }
}

const count = (name: string) => env.COUNTER.getByName(name).getValue();

describe("a client made in the request that uses it", () => {
  it("with `using`: the call is answered, the socket closed with the request", async () => {
    const name = uniqueName("worker-using");
    expect(await request(`/ws-using?name=${name}`)).toEqual({ value: 1 });
    expect(await request(`/ws-using?name=${name}`)).toEqual({ value: 2 });
  });

  it("a call left to ctx.waitUntil after the response runs to its end", async () => {
    const name = uniqueName("worker-wait-until");
    const response = await clientWorker().fetch(`http://worker/ws-wait-until?name=${name}`);
    expect(await response.text()).toBe("accepted");
    await vi.waitFor(async () => expect(await count(name)).toBe(5));
  });
});

describe("a client kept in module scope across requests", () => {
  it("a WebSocket client used by a later request disposes itself: its calls fail DISPOSED saying why (no hang)", async () => {
    const name = uniqueName("worker-ws-module");
    expect(await request(`/ws-module?name=${name}`)).toEqual({ value: 1 });
    for (let i = 0; i < 2; i++) {
      const outcome = await request(`/ws-module?name=${name}`);
      expect(outcome).toMatchObject({ error: { code: "DISPOSED", isRpcError: true } });
      expect((outcome as { error: { message: string } }).error.message).toMatch(
        /made in another request of this Worker.*Create the client inside the request that uses it/,
      );
    }
    expect(await count(name)).toBe(1);
  });

  it("an httpTransport() client serves request after request", async () => {
    const name = uniqueName("worker-http-module");
    expect(await request(`/http-module?name=${name}`)).toEqual({ value: 1 });
    expect(await request(`/http-module?name=${name}`)).toEqual({ value: 2 });
  });

  it("an httpTransport() client: a call times out (TIMEOUT) while another request's call is in flight", async () => {
    // Request A's call answers in 0.6 s; request B's call (1 s timeout) waits 4 s on the object.
    const name = uniqueName("worker-http-timeout");
    const a = request(`/http-module-call?name=${name}&call=add`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const b = request(`/http-module-call?name=${name}&call=wait`);
    expect(await a).toEqual({ value: 3 });
    expect(await b).toMatchObject({ error: { code: "TIMEOUT", isRpcError: true } });
  });
});
