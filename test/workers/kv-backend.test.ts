/**
 * Durable Objects on the key-value storage backend (`new_classes`: `ctx.storage.sql` exists, and
 * every statement throws "SQL is not enabled"). dorpc serves them without the delivery record,
 * whether or not `exactlyOnce: false` is set: calls and the object's own storage work, and a
 * resend is refused with DISCONNECTED (it may have run).
 */
import { createTestClient } from "@dorpc/testing";
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";

/** The next text message on `ws`. */
function next(ws: WebSocket): Promise<string> {
  return new Promise((resolve) => ws.addEventListener("message", (event) => resolve(String(event.data)), { once: true }));
}

describe("an object on the key-value storage backend", () => {
  for (const [label, binding] of [
    ["with exactlyOnce: false", "KV_COUNTER"],
    ["with dorpc's defaults (the record on)", "KV_DEFAULTS"],
  ] as const) {
    it(`${label}: calls and its own storage work, its own routes too`, async () => {
      const name = uniqueName("kv");
      using client = createTestClient(env[binding], name);
      expect(await client.increment()).toBe(1);
      expect(await client.increment(2)).toBe(3);
      const plain = await env[binding].getByName(name).fetch("http://x/plain");
      expect(await plain.text()).toBe("plain");
    });
  }

  it("with dorpc's defaults: a resend is refused with DISCONNECTED, not run again (no record to answer it from)", async () => {
    const name = uniqueName("kv-resend");
    const response = await SELF.fetch(`http://x/__rpc/KV_DEFAULTS/${name}`, { headers: { Upgrade: "websocket" } });
    const ws = response.webSocket!;
    ws.accept();
    ws.send('\u001eH["kvkvkvkvkvkvkvkvkvkvkv",1,50]');
    const reply = next(ws);
    ws.send('\u001eC[[1,["increment",[0]],0,1]]');
    expect(await reply).toMatch(/^\u001eR\[\[1,3,"DISCONNECTED",/);
    ws.close(1000);
    using client = createTestClient(env.KV_DEFAULTS, name);
    expect(await client.increment()).toBe(1); // the resend did not run
  });
});
