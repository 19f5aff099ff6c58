/**
 * Hellos a dorpc client would never send, against a real object in workerd (docs/protocol.md: a
 * hello is `[sessionId, resending, age?]`, the id 16 to 64 characters of base64url, `resending`
 * 0 or 1, `age` a non-negative integer; any other shape closes the connection with 1008). The
 * record keeps its own rows under ids holding "#" (`#wiped`, `<session>#forgotten`), so a session
 * id must not reach it with one. Shapes already covered elsewhere (a short id, a negative,
 * fractional or string age, too many or too few elements) are in test/unit/dispatcher.test.ts and
 * test/security/sessions.workers.test.ts.
 */
import { createTestClient } from "@dorpc/testing";
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import { calls, hello, openSocket, resend, sessionId } from "./record-support.js";

const ID = "aaaaaaaaaaaaaaaaaaaaaa";

describe("a hello out of shape closes the connection with 1008", () => {
  for (const [kind, frame] of [
    ["resending 3", `\u001eH["${ID}",3]`],
    ["a session id holding #", '\u001eH["aaaaaaaaaaaaaaaa#forgotten",0]'],
    ["a session id of 65 characters", `\u001eH["${"a".repeat(65)}",0]`],
    ["an age above 2^53 (1e300)", `\u001eH["${ID}",1,1e300]`],
  ] as const) {
    it(kind, async () => {
      const socket = await openSocket("COUNTER", uniqueName("hello-shape"));
      socket.send(frame);
      const closed = await Promise.race([socket.closed, new Promise<undefined>((resolve) => setTimeout(resolve, 5_000, undefined))]);
      expect(closed?.code, "the connection was not closed within 5 s").toBe(1008);
      expect(socket.messages).toEqual([]);
    });
  }
});

describe("the largest age a hello can say", () => {
  it("a session the object does not know, saying it began 2^53 − 1 ms ago, is expired: its resend is refused EXPIRED and not run", async () => {
    const name = uniqueName("hello-oldest");
    const socket = await openSocket("COUNTER", name);
    socket.send(hello(sessionId(), 1, Number.MAX_SAFE_INTEGER));
    socket.send(calls([resend(1, ["increment", [0, 1]])]));
    expect(await socket.reply(1)).toEqual([1, 3, "EXPIRED", expect.any(String)]);
    await socket.close();
    using client = createTestClient(env.COUNTER, name);
    expect(await client.getValue()).toBe(0);
  });
});

describe("what follows a refused frame on the same connection", () => {
  it("a call sent right behind a hello out of shape is not run: the connection closes without reading it", async () => {
    const name = uniqueName("hello-then-call");
    const socket = await openSocket("COUNTER", name);
    socket.send(`\u001eH["${ID}",3]`);
    socket.send(calls([[1, ["increment", [0, 1]]]]));
    const closed = await Promise.race([socket.closed, new Promise<undefined>((resolve) => setTimeout(resolve, 5_000, undefined))]);
    expect(closed?.code, "the connection was not closed within 5 s").toBe(1008);
    expect(socket.messages).toEqual([]);
    using client = createTestClient(env.COUNTER, name);
    expect(await client.getValue()).toBe(0);
  });
});
