/**
 * Hostile frames against sessions, resends, cancels and topics: a second hello cannot move a
 * connection (and its running calls) to another session, a cancelled resend cannot let a call run
 * twice, cancelled calls that keep running still count against maxPendingCalls, hellos of another
 * shape close the connection.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { SessionVictim } from "./session-objects.js";
import { call, calls, MARK, openRaw, routeUrl, type RawConnection } from "./raw.js";

let serial = 0;
const uniqueName = (label: string): string => `${label}-${Date.now().toString(36)}-${serial++}`;
const stubOf = (name: string) => env.SESSION_VICTIM.getByName(name);
const url = (name: string) => routeUrl("SESSION_VICTIM", name);
const hello = (session: string, resending: 0 | 1, age?: number): string =>
  `${MARK}H${JSON.stringify(age === undefined ? [session, resending] : [session, resending, age])}`;
/** A call envelope with flags (1: Retry, 2: System). */
const flagged = (id: number, chain: unknown[], flags: number): string => calls([[id, chain, 0, flags]]);

const SESSION_A = "probeSessionAAAAAAAAAA";
const SESSION_B = "probeSessionBBBBBBBBBB";

async function roundTrip(conn: RawConnection, id: number): Promise<void> {
  conn.send(call(id, "getValue", [0]));
  await conn.reply(id);
}

describe("a second hello on one connection", () => {
  it("closes the connection with 1008; its running call stays session A's: A's resend is answered from the record, B's call 1 still runs", async () => {
    const name = uniqueName("hello-twice");
    const conn1 = await openRaw(url(name));
    const conn2 = await openRaw(url(name));
    const conn3 = await openRaw(url(name));
    try {
      conn1.send(hello(SESSION_A, 0));
      conn1.send(call(1, "park", [0])); // recorded call of session A, still running
      await roundTrip(conn1, 50);
      conn1.send(hello(SESSION_B, 0)); // a second hello, while A's call 1 runs
      expect((await conn1.closedWithin(3000))?.[0]).toBe(1008);
      await runInDurableObject(stubOf(name), (instance: SessionVictim) => instance.release());

      // Session A resends call 1 (its answer was lost with the connection): answered, not run again.
      conn2.send(hello(SESSION_A, 1, 1000));
      conn2.send(flagged(1, ["park", [0]], 1));
      expect(await conn2.reply(1)).toEqual([1]);
      // Session B never made a call 1: its resend of one runs.
      conn3.send(hello(SESSION_B, 1, 1000));
      conn3.send(flagged(1, ["record", [0]], 1));
      expect(await conn3.reply(1)).toEqual([1, 0, 1]);
    } finally {
      conn1.close();
      conn2.close();
      conn3.close();
    }
  }, 30_000);

  it("cannot open a session per hello: 50 hellos on one socket leave at most one session row", async () => {
    const name = uniqueName("hello-flood");
    const conn = await openRaw(url(name));
    const other = await openRaw(url(name));
    try {
      for (let i = 0; i < 50; i++) conn.send(hello(`flood${String(i).padStart(11, "0")}`, 0));
      expect((await conn.closedWithin(3000))?.[0]).toBe(1008);
      other.send(call(1, "increment", [0, 1])); // a storage write: waiting session rows are written with it
      expect(await other.reply(1)).toEqual([1, 0, 1]);
      const rows = await runInDurableObject(
        stubOf(name),
        (_instance: SessionVictim, state) =>
          state.storage.sql.exec("SELECT count(*) AS n FROM _dorpc_sessions WHERE session LIKE 'flood%'").one().n,
      );
      expect(rows).toBeLessThanOrEqual(1);
    } finally {
      conn.close();
      other.close();
    }
  }, 30_000);
});

describe("cancels", () => {
  it("a cancel of a resend waiting for its first run does not let another waiting resend run the call a second time", async () => {
    // docs/protocol.md:721 "Retry, the same session's call id is still running … waits for it,
    // then is answered as below"; docs/reliability.md:5 every call runs exactly once.
    const name = uniqueName("cancel-gate");
    const conn1 = await openRaw(url(name));
    const connB = await openRaw(url(name));
    const connC = await openRaw(url(name));
    try {
      conn1.send(hello(SESSION_A, 0));
      conn1.send(call(1, "hold", [0])); // run 1 of call 1, held
      await roundTrip(conn1, 50);
      connB.send(hello(SESSION_A, 1, 1000));
      connB.send(flagged(1, ["hold", [0]], 1)); // waits for run 1
      await roundTrip(connB, 50);
      connC.send(hello(SESSION_A, 1, 1000));
      connC.send(flagged(1, ["hold", [0]], 1)); // waits for run 1 too
      await roundTrip(connC, 50);
      connC.send(`${MARK}K[1]`); // gives up on its resend
      await roundTrip(connC, 51);
      const runs = await runInDurableObject(stubOf(name), (instance: SessionVictim) => instance.runs);
      // (It was 2: the cancel released run 1's entry in the record, so connB's resend, decided
      // again, found no answer and ran call 1 while run 1 was still running.)
      expect(runs, "call 1 of session A started twice").toBe(1);
      await runInDurableObject(stubOf(name), (instance: SessionVictim) => instance.freeHolds());
    } finally {
      conn1.close();
      connB.close();
      connC.close();
    }
  }, 30_000);

  it("cancelled calls that keep running still count against maxPendingCalls: the 1,025th running call is LIMIT", async () => {
    // docs/security.md limits table: maxPendingCalls bounds "calls running on one connection";
    // docs/security.md (Known issues 2): slots must not be freed while calls still run, or a
    // connection holds unbounded calls (each keeps its decoded arguments alive).
    const name = uniqueName("cancel-slots");
    const conn = await openRaw(url(name));
    try {
      conn.send(calls(Array.from({ length: 1024 }, (_, i) => [i + 1, ["hold", [0]]])));
      // A frame's calls start one event apart once the first awaits (call-turns.ts): all of them run.
      await vi.waitFor(async () => expect(await runInDurableObject(stubOf(name), (instance: SessionVictim) => instance.runs)).toBe(1024), {
        timeout: 10_000,
      });
      conn.send(`${MARK}K${JSON.stringify(Array.from({ length: 1024 }, (_, i) => i + 1))}`);
      // The 1,024 holding calls ignore their signal: they are still running.
      conn.send(calls(Array.from({ length: 8 }, (_, i) => [6000 + i, ["record", [0]]])));
      const reply = await conn.reply(6000);
      expect(reply.slice(0, 3), JSON.stringify(reply)).toEqual([6000, 3, "LIMIT"]);
      await runInDurableObject(stubOf(name), (instance: SessionVictim) => instance.freeHolds());
    } finally {
      conn.close();
    }
  }, 30_000);
});

describe("topics", () => {
  it("a second subscribe to a topic on one connection is BAD_OPTION and replays nothing again (one frame cannot multiply the replay)", async () => {
    const name = uniqueName("topic-twice");
    await runInDurableObject(stubOf(name), (instance: SessionVictim) => {
      const publish = (instance as unknown as { publish(topic: string, event: unknown): number }).publish.bind(instance);
      for (let i = 0; i < 3; i++) publish("chat", `m${i}`);
    });
    const conn = await openRaw(url(name));
    try {
      conn.send(calls([1, 2].map((id) => [id, ["subscribe", [0, "chat", 0]], 0, 2])));
      expect(await conn.reply(1)).toEqual([1, 0, { seq: 3 }]);
      const second = JSON.stringify(await conn.reply(2));
      expect(second).toContain('"BAD_OPTION"');
      expect(second).toContain("already subscribes");
      const events = conn.texts.filter((t) => t.includes('"event"'));
      expect(events.join("").match(/"m\d"/g)).toEqual(['"m0"', '"m1"', '"m2"']);
    } finally {
      conn.close();
    }
  }, 30_000);

  it("subscribe to a topic given as an object (whose toString is data) is NOT_FOUND, not a raw TypeError", async () => {
    const conn = await openRaw(url(uniqueName("topic-object")));
    try {
      conn.send(flagged(1, ["subscribe", [0, { toString: 1 }, null]], 2));
      const reply = JSON.stringify(await conn.reply(1));
      expect(reply).toContain('"NOT_FOUND"');
      expect(reply).toContain("A topic is named by a string, got object");
    } finally {
      conn.close();
    }
  }, 30_000);

  for (const start of [0, -1, 1.5, 2 ** 53, "1", { toString: 1 }]) {
    it(`a subscribe whose start is ${JSON.stringify(start)} is PROTOCOL, and keeps no start`, async () => {
      const name = uniqueName("topic-start");
      const conn = await openRaw(url(name));
      try {
        conn.send(hello(SESSION_A, 0));
        conn.send(flagged(1, ["subscribe", [0, "chat", null, start]], 2));
        const reply = JSON.stringify(await conn.reply(1));
        expect(reply).toContain('"PROTOCOL"');
        expect(reply).toContain("start must be the subscription's number");
        const kept = await runInDurableObject(
          stubOf(name),
          (_instance: SessionVictim, state) =>
            state.storage.sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE name = '_dorpc_topic_starts'").one().n,
        );
        expect(kept).toBe(0);
      } finally {
        conn.close();
      }
    }, 30_000);
  }

  it("a start is its session's: the same number from another connection of the session starts there, from another session it does not", async () => {
    const name = uniqueName("topic-start-session");
    const publish = () =>
      runInDurableObject(stubOf(name), (instance: SessionVictim) => {
        (instance as unknown as { publish(topic: string, event: unknown): number }).publish("chat", "m");
      });
    const events = (conn: RawConnection) =>
      conn.texts
        .filter((t) => t.includes('"event"'))
        .flatMap((t) => JSON.parse(t.slice(2)).map((c: [0, [string, unknown[]]]) => c[1][1][2]));
    const first = await openRaw(url(name));
    const again = await openRaw(url(name));
    const other = await openRaw(url(name));
    try {
      await publish(); // 1
      first.send(hello(SESSION_A, 0));
      first.send(flagged(1, ["subscribe", [0, "chat", null, 1]], 2));
      expect(await first.reply(1)).toEqual([1, 0, { seq: 1 }]); // starts at 1, kept for session A's subscription 1
      first.close();
      await publish(); // 2
      await publish(); // 3
      // Session A's subscription 1 made again (its answer was lost): from 1.
      again.send(hello(SESSION_A, 1, 1000));
      again.send(flagged(1, ["subscribe", [0, "chat", null, 1]], 2));
      expect(await again.reply(1)).toEqual([1, 0, { seq: 3, resumed: true }]);
      expect(events(again)).toEqual([2, 3]);
      // With a since, the number is not read: since decides.
      again.send(flagged(2, ["unsubscribe", [0, "chat"]], 2));
      await again.reply(2);
      again.send(flagged(3, ["subscribe", [0, "chat", 3, 1]], 2));
      expect(await again.reply(3)).toEqual([3, 0, { seq: 3 }]);
      // Session B's subscription 1 is its own: from now, nothing replayed.
      other.send(hello(SESSION_B, 0));
      other.send(flagged(1, ["subscribe", [0, "chat", null, 1]], 2));
      expect(await other.reply(1)).toEqual([1, 0, { seq: 3 }]);
      expect(events(other)).toEqual([]);
    } finally {
      again.close();
      other.close();
    }
  }, 30_000);

  it("subscribe and unsubscribe in a loop, each a new subscription without since, keep one row for the session's topic", async () => {
    const name = uniqueName("topic-start-loop");
    const conn = await openRaw(url(name));
    try {
      conn.send(hello(SESSION_A, 0));
      const envelopes: unknown[][] = [];
      for (let n = 1; n <= 50; n++) {
        envelopes.push([2 * n - 1, ["subscribe", [0, "chat", null, n]], 0, 2], [2 * n, ["unsubscribe", [0, "chat"]], 0, 2]);
      }
      conn.send(calls(envelopes));
      await conn.reply(100);
      const rows = await runInDurableObject(stubOf(name), (_instance: SessionVictim, state) =>
        state.storage.sql.exec("SELECT session, topic, sub FROM _dorpc_topic_starts").toArray(),
      );
      expect(rows).toEqual([{ session: SESSION_A, topic: "chat", sub: 50 }]);
    } finally {
      conn.close();
    }
  }, 30_000);
});

describe("hello shape", () => {
  for (const body of [["probeSessionCCCCCCCCCC"], ["probeSessionCCCCCCCCCC", 0, 5, "extra"], ["probeSessionCCCCCCCCCC", "yes"]]) {
    it(`a hello of another shape (${JSON.stringify(body)}) closes with 1008`, async () => {
      // docs/protocol.md:638 "A body of another shape closes the connection with 1008" (the shape:
      // [sessionId, resending] or [sessionId, resending, age], resending 0 or 1).
      const conn = await openRaw(url(uniqueName("hello-shape")));
      try {
        conn.send(`${MARK}H${JSON.stringify(body)}`);
        const closed = await conn.closedWithin(3000);
        expect(closed?.[0]).toBe(1008);
      } finally {
        conn.close();
      }
    }, 30_000);
  }
});
