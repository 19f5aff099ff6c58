/**
 * A session's life in the delivery record, in workerd (docs/protocol.md, "Exactly once: hello and
 * resends"): one session on two sockets at once, a session the object forgot (idle past maxAge)
 * that comes back, and the edge of the window (a session keeps the answers of its last 4,096
 * calls). Each case speaks raw frames for a client, so it can say which call arrives where.
 */
import { createTestClient } from "@dorpc/testing";
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import { calls, hello, openSocket, resend, sessionId } from "./record-support.js";

const DAY = 24 * 3_600_000; // exactlyOnce.maxAge by default

const count = async (name: string) => {
  using client = createTestClient(env.COUNTER, name);
  return await client.getValue();
};

describe("one session on two sockets", () => {
  it("a copy of a running call on a second socket (no Retry flag, another call under the same id) waits for the run and gets its answer; it does not run", async () => {
    const name = uniqueName("session-two-sockets");
    const s = sessionId();
    const first = await openSocket("COUNTER", name);
    first.send(hello(s, 0));
    first.send(calls([[1, ["waitOrCancel", [0, 200]]]]));
    first.send(calls([[2, ["getValue", [0]]]]));
    await first.reply(2); // call 1 has started
    const second = await openSocket("COUNTER", name);
    second.send(hello(s, 0));
    second.send(calls([[1, ["increment", [0, 1]]]]));
    const [ran, copy] = await Promise.all([first.reply(1), second.reply(1)]);
    await Promise.all([first.close(), second.close()]);
    expect({ ran, copy }).toEqual({ ran: [1, 0, "finished"], copy: [1, 0, "finished"] });
    expect(await count(name)).toBe(0);
  });
});

describe("a session the object forgot", () => {
  it("is refused EXPIRED once it comes back; its new calls are recorded, and a lost answer of one is replayed after an eviction", async () => {
    const name = uniqueName("session-forgotten");
    const stub = env.COUNTER.getByName(name);
    const s = sessionId();
    const first = await openSocket("COUNTER", name);
    first.send(hello(s, 0));
    first.send(calls([[1, ["increment", [0, 1]]]]));
    expect(await first.reply(1)).toEqual([1, 0, 1]); // the answer the test treats as lost
    await first.close(4100);
    // Its row last written more than maxAge ago, and the object evicted (its sweep not due).
    await runInDurableObject(stub, (_object, state) => {
      state.storage.sql.exec("UPDATE _dorpc_sessions SET last_at = ? WHERE session = ?", Date.now() - DAY - 60_000, s);
    });
    await evictDurableObject(stub);
    const second = await openSocket("COUNTER", name);
    second.send(hello(s, 1, DAY + 120_000));
    second.send(calls([resend(1, ["increment", [0, 1]])]));
    expect(await second.reply(1)).toEqual([1, 3, "EXPIRED", expect.any(String)]);
    second.send(calls([[2, ["increment", [0, 1]]]]));
    expect(await second.reply(2)).toEqual([2, 0, 2]); // lost too
    await second.close(4100);
    await evictDurableObject(stub);
    const third = await openSocket("COUNTER", name);
    third.send(hello(s, 1, DAY + 130_000));
    third.send(calls([resend(1, ["increment", [0, 1]]), resend(2, ["increment", [0, 1]])]));
    const [again, replayed] = await Promise.all([third.reply(1), third.reply(2)]);
    await third.close();
    // Two rows hold call 1 (its answer, then the EXPIRED refusal): either may answer it.
    expect([
      [1, 3, "EXPIRED"],
      [1, 0, 1],
    ]).toContainEqual(again[1] === 3 ? again.slice(0, 3) : again);
    expect(replayed).toEqual([2, 0, 2]);
    expect(await count(name)).toBe(2);
  });
});

describe("the window's edge", () => {
  it("after calls 1 to 4,097: the resend of call 1 is EXPIRED, the resends of calls 2 and 4,097 are answered from the record", async () => {
    const name = uniqueName("session-window");
    const s = sessionId();
    const first = await openSocket("COUNTER", name);
    first.send(hello(s, 0));
    // Frames of 256 calls, one frame at a time (the record prunes every window / 4 calls).
    for (let start = 1; start <= 4097; start += 256) {
      const last = Math.min(start + 255, 4097);
      first.send(calls(Array.from({ length: last - start + 1 }, (_, i) => [start + i, ["increment", [0, 1]]])));
      await first.reply(last);
    }
    await first.close(4100);
    const second = await openSocket("COUNTER", name);
    second.send(hello(s, 1, 1_000));
    second.send(calls([1, 2, 4097].map((id) => resend(id, ["increment", [0, 1]]))));
    const replies = await Promise.all([second.reply(1), second.reply(2), second.reply(4097)]);
    await second.close();
    expect(replies).toEqual([
      [1, 3, "EXPIRED", expect.any(String)],
      [2, 0, 2],
      [4097, 0, 4097],
    ]);
    expect(await count(name)).toBe(4097);
  }, 30_000);
});
