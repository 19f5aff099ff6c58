/**
 * Hooks see the canonical (lower-case) id in workerd too (test/routing/route-hostile.test.ts),
 * through the real test Worker (worker.ts), whose onBeforeConnect `?block=1` answer echoes
 * ctx.instance.
 */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("hook context for 64-hex ids in workerd", () => {
  // /__rpc/COUNTER/<id> and /__rpc/COUNTER/<ID> reach the same object (routing.test.ts checks
  // that), but onBeforeConnect is told two different instances for it. the canonical lowercase id
  // (what newUniqueId().toString() and the object's ctx.id.toString() give), so a hook deciding by
  // instance decides the same for the same object.
  it("onBeforeConnect sees the lowercase id for an upper-case id in the URL", async () => {
    const hex = env.COUNTER.newUniqueId().toString();
    const response = await SELF.fetch(`http://x/__rpc/COUNTER/${hex.toUpperCase()}?block=1`, { headers: { Upgrade: "websocket" } });
    expect(response.status).toBe(403);
    expect(await response.text()).toBe(`connect blocked for COUNTER/${hex}`);
  });
});
