/**
 * Found by reviewing the forgotten-session and reply changes: a forgotten session's own later
 * calls are decided as any session's, its marker survives a full in-memory cache, EXPIRED answers
 * reach storage when the object is quiet, a resending hello reads one statement, a short refusal
 * fits maxResultBytes, a cancelled reply whose Blob then fails releases once, and an HTTP call
 * made during the backoff of a request that ended is still sent.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { CallFlags } from "../../packages/rpc/src/envelopes.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { createRpcClient, httpTransport, rpcConnection, withCallOptions } from "../../packages/rpc/src/index.js";
import { nodeSql } from "../support/node-sql.js";
import { pairWith } from "../support/paired-transport.js";
import { faulty } from "../reliability/fault-transport.js";
import { Service } from "../reliability/service.js";
import { settle } from "./helpers.js";

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const HOUR = 3_600_000;
const S = "AAAAAAAAAAAAAAAAAAAAAA";

/** A record (maxAge 2 h) in which session S ran calls 5 and 6 and was then swept (idle 3 h); returns it and the clock. */
function forgottenSetup() {
  const now = vi.spyOn(Date, "now").mockReturnValue(1_000 * HOUR);
  const sql = nodeSql();
  const records = new DeliveryRecord(sql, resolveDelivery({ maxAge: 2 * HOUR })!);
  records.hello(S, false);
  for (const id of [5, 6]) {
    records.decide(S, id, 0, true, false);
    records.started(S, id);
    records.save(S, id, `\u001eR[[${id},0,1]]`, true);
  }
  now.mockReturnValue(1_003 * HOUR);
  records.hello("BBBBBBBBBBBBBBBBBBBBBB", false); // its row write sweeps S
  expect(sql.exec("SELECT count(*) AS n FROM _dorpc_replies WHERE session = ?", S).one().n).toBe(0);
  return { records, now, sql };
}

describe("a forgotten session's NEW calls (made after the forget) that never arrived", () => {
  // docs/reliability.md (deciding a resend): "the session's newest recorded call is older than it,
  // or there is none → it never ran, run it"; protocol.md table: "Retry, the session's newest
  // recorded call is older than `id` … it never ran: runs". The forget is about calls made BEFORE
  // the session was swept (ids ≤ 6 here). delivery.ts decide() treats every resend of a forgotten
  // session that finds no row as EXPIRED, forever for this instance (the in-memory `forgotten` set
  // is never cleared; the marker row for maxAge): call 8, made after the forget and lost with its
  // connection before it reached the object, is refused EXPIRED although it never ran — every later
  // network blip of that client fails its in-flight calls.
  it("call 8 (sent after the forget, never arrived) is run when resent, not refused EXPIRED", () => {
    const { records, now } = forgottenSetup();
    const age = 3 * HOUR + 1_000;
    const first = records.hello(S, true, age); // refused: S was swept
    expect(first).toBe(false);
    expect(records.decide(S, 6, CallFlags.Retry, true, !first)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    // The client goes on with new calls on this connection: 7 runs and is recorded.
    expect(records.decide(S, 7, 0, true, !first)).toEqual({ kind: "run", record: true });
    records.started(S, 7);
    records.save(S, 7, "\u001eR[[7,0,1]]", true);
    // Call 8 is sent, and the connection drops before it reaches the object.
    now.mockReturnValue(1_003 * HOUR + 60_000);
    const second = records.hello(S, true, age + 60_000);
    expect(second).toBe(true); // known again (its row was written with 6's and 7's answers)
    // 8 is newer than the newest recorded call (7): it never ran.
    expect(records.decide(S, 8, CallFlags.Retry, true, !second)).toEqual({ kind: "run", record: true }); // got refuse EXPIRED
  });
});

describe("the in-memory `forgotten` set (capped at 4096) is the only thing decide() consults", () => {
  // delivery.ts: hello() reads the `<session>#forgotten` marker back only into the capped set;
  // decide() looks only at the set. 4096 refused resending hellos of other (made-up) sessions
  // between S's accepted hello and the arrival of S's resend evict S, and the resend of call 6 —
  // which RAN before S was swept — runs a second time. reliability.md: "Never run twice"; the fifth
  // round's commit: "a later resend with no answer is EXPIRED on any connection, never run".
  it("S's resend of 6 stays EXPIRED however many other sessions are refused meanwhile", () => {
    const { records, now } = forgottenSetup();
    const age = 3 * HOUR + 1_000;
    const first = records.hello(S, true, age);
    expect(first).toBe(false);
    expect(records.decide(S, 5, CallFlags.Retry, true, !first)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    records.flush();
    // The connection drops before resend 6; S comes back and is known (5's EXPIRED answer wrote its
    // row).
    now.mockReturnValue(1_003 * HOUR + 1_000);
    const second = records.hello(S, true, age + 1_000);
    expect(second).toBe(true);
    // Meanwhile many stale (or made-up) sessions say hello resending, each refused.
    for (let i = 0; i < 4100; i++) records.hello(`Z${String(i).padStart(21, "0")}`, true);
    expect(records.decide(S, 6, CallFlags.Retry, true, !second)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } }); // got run
  });
});

describe("EXPIRED answers saved with inFlush are never written", () => {
  // delivery.ts decide() now saves a forgotten session's EXPIRED answer with save(…, "always",
  // true): `due` is set and the row waits for flushDue(), which only the outbox's afterAll calls —
  // and afterAll runs only after `afterFlush` work, which a refused call never registers
  // (refuseCall adds its reply directly). No timer is armed either once the session's row was
  // written recently. So the EXPIRED answer of a resend in a later frame sits in memory until some
  // unrelated write, and is lost if the object is evicted first. docs/api.md (flushAfter): rows
  // wait "until the object has answered no recorded call for this many ms".
  it("the EXPIRED answer of a resend in a second frame reaches storage once the object is quiet", async () => {
    const service = new Service();
    const sql = nodeSql();
    const writes = watchWrites({ sql });
    const records = new DeliveryRecord(writes.sql, resolveDelivery({ maxAge: 2 * HOUR })!, writes); // flushAfter 10
    const faults = faulty(service, undefined, { records });
    const client = createRpcClient<Service>("S", "expired-flush", {
      heartbeat: false,
      timeout: 5_000,
      reconnect: { initialDelay: 1, maxDelay: 20 },
      transport: faults.factory,
    });
    try {
      await client.increment();
      const realNow = Date.now.bind(Date);
      let offset = 0;
      vi.spyOn(Date, "now").mockImplementation(() => realNow() + offset); // the clock keeps running
      const fresh = async () => {
        faults.halfOpen = true;
        const count = faults.connections.length;
        faults.last.peerClose(1006);
        await vi.waitFor(() => expect(faults.connections.length).toBe(count + 1));
        return faults.last.paired;
      };
      const rowIds = () =>
        sql
          .exec("SELECT ids FROM _dorpc_replies WHERE session = ?", S)
          .toArray()
          .flatMap((row) => (JSON.parse(row.ids as string) as [number][]).map((e) => e[0]));
      let conn = await fresh();
      conn.inject(`\u001eH["${S}",0]`);
      conn.inject('\u001eC[[5,["increment",[0]],0,0],[6,["increment",[0]],0,0]]');
      await vi.waitFor(() => expect(service.runsOf("increment")).toBe(3));
      await vi.waitFor(() => expect(rowIds()).toEqual([5, 6])); // written once the object was quiet
      offset = 3 * HOUR;
      conn = await fresh();
      conn.inject('\u001eH["BBBBBBBBBBBBBBBBBBBBBB",0]');
      conn.inject('\u001eC[[1,["increment",[0]],0,0]]'); // its write sweeps S
      await vi.waitFor(() => expect(service.runsOf("increment")).toBe(4));
      await vi.waitFor(() => expect(rowIds()).toEqual([])); // swept with B's row
      conn = await fresh();
      conn.inject(`\u001eH["${S}",1,${3 * HOUR}]`); // refused
      conn.inject('\u001eC[[5,["increment",[0]],0,1]]'); // frame 1: EXPIRED (its session row arms the timer)
      await new Promise((r) => setTimeout(r, 50)); // quiet: the timer writes 5's answer
      expect(rowIds()).toContain(5);
      const before = conn.sentByServer.length;
      conn.inject('\u001eC[[6,["increment",[0]],0,1]]'); // frame 2: EXPIRED
      await vi.waitFor(() => expect(conn.sentByServer.length).toBeGreaterThan(before));
      await new Promise((r) => setTimeout(r, 100)); // 10× flushAfter, nothing else happens
      expect(rowIds()).toContain(6); // got [5]: 6's EXPIRED answer is still only in memory
    } finally {
      client[Symbol.dispose]();
    }
  });
});

describe("a resending hello of a known session costs one read (docs/reliability.md cost table)", () => {
  // reliability.md "What it costs": "new connection (its Hello) | 1 read at the Hello". hello() now
  // also runs `SELECT 1 … WHERE session = '<S>#forgotten'` on every accepted resending hello of a
  // session not in the in-memory set — every reconnect of every client (and every HTTP request
  // carrying resends) reads twice. One statement can read both rows (`WHERE session IN (?, ?)`).
  it("the second resending hello of a known session in this instance runs one statement", () => {
    vi.spyOn(Date, "now").mockReturnValue(1_000 * HOUR);
    const sql = nodeSql();
    const writes = watchWrites({ sql });
    const records = new DeliveryRecord(writes.sql, resolveDelivery({ maxAge: 2 * HOUR })!, writes);
    records.hello(S, false);
    records.decide(S, 1, 0, true, false);
    records.started(S, 1);
    records.save(S, 1, "\u001eR[[1,0,1]]", true);
    records.flush();
    records.hello(S, true, 1_000); // first resending hello in this instance (reads #wiped once)
    records.flush(); // its session row is written (as after flushAfter ms)
    const before = sql.statements.length;
    records.hello(S, true, 2_000);
    expect(sql.statements.slice(before), sql.statements.slice(before).join(" ; ")).toHaveLength(1); // got 2: the session row, then its #forgotten marker
  });
});

describe("a refusal cut by shortRefusal is still larger than maxResultBytes", () => {
  // docs/security.md "The record takes storage": every recorded call stores its reply frame "(up to
  // `maxResultBytes`)". delivery.ts shortRefusal keeps the first 500 UTF-16 units of the message
  // whatever maxResultBytes is (up to ~1.5 KB of UTF-8, ~3 KB with JSON escapes), so with
  // maxResultBytes 256 every refused call of a client stores more than twice the bound.
  it("a long INVALID_ARGUMENT refusal is stored within maxResultBytes 256", () => {
    vi.spyOn(Date, "now").mockReturnValue(1_000 * HOUR);
    const sql = nodeSql();
    const records = new DeliveryRecord(sql, resolveDelivery({ maxResultBytes: 256 })!);
    records.hello(S, false);
    records.decide(S, 1, 0, true, false);
    records.started(S, 1);
    const message = `Invalid arguments: ${"received something long ".repeat(100)}`;
    records.save(S, 1, `\u001eR[${JSON.stringify([1, 3, "INVALID_ARGUMENT", message, []])}]`, "always");
    const stored = sql.exec("SELECT length(frames) AS n FROM _dorpc_replies WHERE session = ?", S).one().n as number;
    expect(stored).toBeLessThanOrEqual(256); // got ≈ 530
  });
});

/** A Blob whose read fails when the test says so. */
let failRead: (() => void) | undefined;
class LateBadBlob extends Blob {
  override arrayBuffer(): Promise<ArrayBuffer> {
    return new Promise((_, reject) => {
      failRead = () => reject(new Error("vanished"));
    });
  }
}

class Shared {
  readonly fn = () => 42;
  get() {
    return this.fn;
  }
  both() {
    return { fn: this.fn, blob: new LateBadBlob(["x"]) };
  }
}

describe("a cancelled reply whose Blob then fails releases its references twice", () => {
  // callee.ts droppable(): a cancel gives back what the reply handed out (release ×1, resolve
  // null); when the Blob read then fails, `ready` settles with the ENCODE string and the new code
  // releases the same exports AGAIN (it does not check that the cancel already did). A function the
  // client still holds from an earlier call (same export entry) loses its count and is collected:
  // the client's stub fails REFERENCE_LOST (docs/api.md: a stub works until released).
  it("the stub kept from an earlier call still works after the cancelled call's Blob failed", async () => {
    const paired = pairWith(new Shared());
    const client = createRpcClient<Shared>("H", "double-release", { transport: paired.factory, timeout: 2000 });
    try {
      const fn = (await client.get()) as unknown as () => Promise<number>;
      expect(await fn()).toBe(42);
      const controller = new AbortController();
      const cut = withCallOptions(client.both(), { signal: controller.signal }).then(
        () => "ok",
        () => "rejected",
      );
      await vi.waitFor(() => expect(failRead).toBeDefined());
      await settle();
      controller.abort(new Error("gave up")); // Cancel frame: the waiting reply is dropped
      expect(await cut).toBe("rejected");
      await settle(5);
      failRead!(); // then its Blob fails
      await settle(5);
      expect(await fn().catch((e: { code?: string }) => e.code)).toBe(42); // got "REFERENCE_LOST"
    } finally {
      rpcConnection(client).close();
    }
  });
});

describe("a Worker's module-scope HTTP client, a call made during the backoff of a request that ended", () => {
  // 710c329 fixed "a module-scope client with calls queued while it waits to reconnect sends them
  // at once (its backoff timer may belong to a request that ended)". session.ts onQueued now only
  // connects at once when the backoff is over; a call queued before that waits for the old timer —
  // which workerd never runs once its request ended — so it is never sent and times out, even
  // though the backoff ended long before its timeout. (Simulated: the ended request's timers are
  // cleared, as workerd drops them.) a timer of the current request for what is left of the
  // backoff, then the call goes.
  it("the call is sent once the backoff is over, not left to time out", async () => {
    vi.useFakeTimers();
    let posts = 0;
    const fetch = async (): Promise<Response> => {
      posts++;
      return new Response("overloaded", { status: 503 });
    };
    const client = createRpcClient<{ ping(): string }>("A", "module-scope", {
      baseUrl: "http://example.test",
      transport: httpTransport({ fetch }),
      reconnect: { initialDelay: 1_000, maxDelay: 1_000, jitter: 0 },
      timeout: 100, // request 1's call gives up before the backoff ends: the request ends
      heartbeat: false,
    });
    try {
      const first = client.ping().then(
        () => "ok",
        (e: { code?: string }) => e.code,
      );
      await vi.advanceTimersByTimeAsync(150);
      expect(await first).toBe("TIMEOUT");
      expect(posts).toBe(1);
      expect(rpcConnection(client).state).toBe("reconnecting");
      vi.clearAllTimers(); // request 1 ended: workerd never runs the timers it armed
      // Request 2, 200 ms later (backoff ends at 1,000 ms): a call with a generous timeout.
      await vi.advanceTimersByTimeAsync(50);
      const second = withCallOptions(client.ping(), { timeout: 10_000 }).catch(() => undefined);
      await vi.advanceTimersByTimeAsync(2_000); // well past the backoff, well before the timeout
      expect(posts).toBeGreaterThanOrEqual(2); // got 1: the call waits for a timer that will never run
      void second;
    } finally {
      rpcConnection(client).close();
    }
  });
});
