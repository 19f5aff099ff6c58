/**
 * A reply lost after the object ran the call is answered from the delivery record, in workerd
 * (docs/protocol.md, "Exactly once: hello and resends"): the resend gets the frame the call was
 * answered with, byte for byte, and nothing runs again. Covered here: values of many kinds through
 * the real client, answers just under and over maxResultBytes (counted in UTF-8 bytes), pipelined
 * chains, failures and binary answers over raw frames, an answer that held references, a method
 * that wrote and then threw, and an answer given while another call's explicit transaction was
 * open and then rolled back.
 *
 * Over raw frames a test shows that nothing ran again: the resend carries another call under the
 * same id (had the object run it, the answer would differ), or the count or field the call
 * changes is read afterwards.
 */
import { RpcError } from "@dorpc/rpc";
import { createTestClient, dropConnection, type TestClient } from "@dorpc/testing";
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Composer } from "./compose-objects.js";
import { uniqueName } from "./helpers.js";
import { Counter } from "./objects.js";
import { calls, hello, losingReplies, openSocket, resend, sessionId } from "./record-support.js";

const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error: RpcError.is(error) ? `${error.code}: ${error.message}` : String(error) }),
  );

/**
 * A real client of `name` whose second reply frame is lost (the first answers the call that
 * makes the session known to the object), its connection dropped there; it reconnects at once.
 */
function losingSecondReply<T>(binding: DurableObjectNamespace<T & Rpc.DurableObjectBranded>, name: string) {
  let replies = 0;
  const lossy = losingReplies(() => ++replies === 2);
  const client = createTestClient<T>(binding, name, { worker: lossy.worker, reconnect: { initialDelay: 20, maxDelay: 20, jitter: 0 } });
  // TestClient<T> is invariant in T, and dropConnection takes any client.
  lossy.onCut(() => dropConnection(client as unknown as TestClient<unknown>));
  const lost = () => lossy.frames.filter((frame) => frame.startsWith("lost: ")).length;
  return { client, lost, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

describe("a real client's lost answer, resent and answered from the record", () => {
  for (const [kind, value] of [
    [
      "a Map",
      new Map<unknown, unknown>([
        [1, "a"],
        ["k", new Date(0)],
      ]),
    ],
    ["bytes", new Uint8Array([1, 2, 3, 250])],
    ["a Set holding bytes and a BigInt", new Set<unknown>([new Uint8Array([9]), 10n])],
    ["an Error as a value", new RangeError("as a value")],
    ["undefined", undefined],
    ["-0 and NaN", [-0, Number.NaN]],
  ] as const) {
    it(`echo(${kind}) gets the same value back`, async () => {
      using t = losingSecondReply(env.COUNTER, uniqueName("record-value"));
      await t.client.getValue();
      const got = await settle(t.client.echo(value as unknown));
      expect(t.lost()).toBe(1);
      expect(got).toEqual({ value });
    });
  }

  // maxResultBytes is 128 KiB (131,072 bytes) by default, counted in UTF-8: é is 2 bytes, 😀 is 4.
  for (const [kind, text, kept] of [
    ["60,000 × é (120,000 bytes)", "é".repeat(60_000), true],
    ["70,000 × é (140,000 bytes)", "é".repeat(70_000), false],
    ["32,700 × 😀 (130,800 bytes)", "😀".repeat(32_700), true],
    ["33,000 × 😀 (132,000 bytes)", "😀".repeat(33_000), false],
  ] as const) {
    it(`echo(${kind}): ${kept ? "the answer is kept and replayed" : "only a marker is kept: DISCONNECTED, saying so"}`, async () => {
      using t = losingSecondReply(env.COUNTER, uniqueName("record-size"));
      await t.client.getValue();
      const got = await settle(t.client.echo(text));
      expect(t.lost()).toBe(1);
      if (kept) expect(got).toEqual({ value: text });
      else expect(got).toEqual({ error: expect.stringMatching(/^DISCONNECTED: .*not kept/) });
    });
  }

  it("a chain through a returned object (openRoom('t').join('a')): answered once, the member joined once", async () => {
    const name = uniqueName("record-chain");
    using t = losingSecondReply(env.COMPOSER, name);
    await t.client.frames();
    const joined = await settle(t.client.openRoom("t").join("a") as Promise<number>);
    expect(t.lost()).toBe(1);
    using other = createTestClient<Composer>(env.COMPOSER, name);
    expect({ joined, size: await other.openRoom("t").size }).toEqual({ joined: { value: 1 }, size: 1 });
  });

  it("a call pipelined on another call's promise, both answered in the lost frame: the stub's call is REFERENCE_LOST, the pipelined join answered once", async () => {
    const name = uniqueName("record-pipelined");
    using t = losingSecondReply(env.COMPOSER, name);
    await t.client.frames();
    const room = t.client.openRoom("u");
    const [opened, joined] = await Promise.all([settle(room as unknown as Promise<unknown>), settle(room.join("b") as Promise<number>)]);
    expect(t.lost()).toBe(1);
    using other = createTestClient<Composer>(env.COMPOSER, name);
    expect({ opened, joined, size: await other.openRoom("u").size }).toEqual({
      // The room's stub ended with the connection that received it: not kept, not run again.
      opened: { error: expect.stringMatching(/^REFERENCE_LOST: The call ran on Composer, .*It was not run again/) },
      joined: { value: 1 },
      size: 1,
    });
  });
});

/**
 * Session `s` sends `chain` as call 1 on a first socket and gets its answer, which the test
 * treats as lost; the next socket says it is resending and resends call 1 as `instead`.
 * Returns both reply frames.
 */
async function answerThenResend(binding: string, name: string, chain: unknown[], instead: unknown[], query = "") {
  const s = sessionId();
  const first = await openSocket(binding, name, query);
  first.send(hello(s, 0));
  first.send(calls([[1, chain]]));
  const answered = await first.replyFrame();
  await first.close(4100);
  const second = await openSocket(binding, name, query);
  second.send(hello(s, 1, 100));
  second.send(calls([resend(1, instead)]));
  const resent = await second.replyFrame();
  await second.close();
  return { answered, resent };
}

const count = async (name: string) => {
  using client = createTestClient(env.COUNTER, name);
  return await client.getValue();
};

describe("a resend over raw frames gets the frame the call was answered with; nothing runs", () => {
  for (const [kind, chain] of [
    ["a number (increment by 5)", ["increment", [0, 5]]],
    ["a string", ["echo", [0, "hello"]]],
    ["a thrown TypeError with a cause and properties", ["throwTypeError", [0]]],
    ["an async rejection", ["rejectLater", [0]]],
  ] as const) {
    it(`${kind}: resent as increment(100) under the same id, the original frame comes back and the count is unchanged`, async () => {
      const name = uniqueName("record-raw");
      const { answered, resent } = await answerThenResend("COUNTER", name, [...chain], ["increment", [0, 100]]);
      expect(resent).toEqual(answered);
      expect(await count(name)).toBe(chain[0] === "increment" ? 5 : 0);
    });
  }

  it("a Blob answer (a binary frame) is replayed byte for byte", async () => {
    const { answered, resent } = await answerThenResend(
      "ROOM",
      uniqueName("record-blob"),
      ["blob", [0, "some bytes"]],
      ["blob", [0, "other bytes"]],
      "?name=a",
    );
    expect(answered).toBeInstanceOf(Uint8Array);
    expect(resent).toEqual(answered);
  });

  it("an answer that held a reference (a stub) is not kept: the resend is refused REFERENCE_LOST, saying the call ran", async () => {
    const { answered, resent } = await answerThenResend(
      "COMPOSER",
      uniqueName("record-stub"),
      ["openRoom", [0, "t"]],
      ["openRoom", [0, "t"]],
    );
    expect(answered).toMatch(/^\u001eR\[\[1,[01],/);
    expect(resent).toMatch(/^\u001eR\[\[1,3,"REFERENCE_LOST","[^"]*ran/);
  });
});

/** Methods this file adds to Counter (copied onto its prototype below), for the cases they drive. */
class RecordCases extends Counter {
  declare recordMemory: number | undefined;
  declare recordBumped: (() => void) | undefined;

  /** Bumps a field in memory only (writes no storage). */
  recordBump(): number {
    this.recordMemory = (this.recordMemory ?? 0) + 1;
    this.recordBumped?.();
    return this.recordMemory;
  }

  recordMemoryValue(): number {
    return this.recordMemory ?? 0;
  }

  /**
   * Opens a transaction, writes in it, waits for a recordBump() call to answer, keeps the
   * transaction open well past flushAfter (10 ms), then throws: the transaction rolls back.
   */
  async recordRolledBack(): Promise<void> {
    await this.ctx.storage.transaction(async (txn) => {
      await txn.put("rolled back", 1);
      if (!this.recordMemory) await new Promise<void>((resolve) => (this.recordBumped = resolve));
      await new Promise((resolve) => setTimeout(resolve, 100));
      throw new Error("rolled back on purpose");
    });
  }

  /** Writes the count, then throws. */
  recordWriteThenThrow(): never {
    this.increment(1);
    throw new RangeError("after the write");
  }
}
for (const key of ["recordBump", "recordMemoryValue", "recordRolledBack", "recordWriteThenThrow"] as const) {
  Object.defineProperty(Counter.prototype, key, Object.getOwnPropertyDescriptor(RecordCases.prototype, key)!);
}

describe("the record around a method's own writes", () => {
  it("a method that wrote storage and then threw: the write stays, the resend gets the failure, the write is not repeated", async () => {
    const name = uniqueName("record-write-throw");
    const { answered, resent } = await answerThenResend("COUNTER", name, ["recordWriteThenThrow", [0]], ["recordWriteThenThrow", [0]]);
    expect(answered).toMatch(/^\u001eR\[\[1,2,.*after the write/);
    expect(resent).toEqual(answered);
    expect(await count(name)).toBe(1);
  });

  it("a call answered while another call's transaction is open: its answer is kept when that transaction rolls back (the resend is not run again)", async () => {
    const name = uniqueName("record-rollback");
    const s = sessionId();
    const first = await openSocket("COUNTER", name);
    first.send(hello(s, 0));
    // One frame: call 2 runs and is answered first, and call 1 opens its transaction in the same
    // event, before the record writes call 2's answer (it writes after the frame's calls started).
    first.send(
      calls([
        [2, ["recordBump", [0]]],
        [1, ["recordRolledBack", [0]]],
      ]),
    );
    expect(await first.reply(2)).toEqual([2, 0, 1]);
    expect(JSON.stringify(await first.reply(1))).toContain("rolled back on purpose");
    expect(first.messages.map((m) => String(m).slice(0, 6))).toEqual(["\u001eR[[2,", "\u001eR[[1,"]);
    await first.close(4100);
    const second = await openSocket("COUNTER", name);
    second.send(hello(s, 1, 500));
    second.send(calls([resend(2, ["recordBump", [0]])]));
    expect(await second.reply(2)).toEqual([2, 0, 1]);
    second.send(calls([[3, ["recordMemoryValue", [0]]]]));
    expect(await second.reply(3)).toEqual([3, 0, 1]);
    await second.close();
  });
});
