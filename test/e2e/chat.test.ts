/**
 * A chat room end to end (issue 11): Node clients over real WebSockets against `wrangler dev`
 * running test/chat/wrangler.toml. 50 clients in one room each say 100 messages, a few in flight
 * at a time, while the room closes random sockets; each client subscribed to the room's
 * `messages` topic from sequence 0 and is sent what it missed after every reconnect.
 *
 * The ledger: every `say` resolves exactly once (exactly-once delivery resends calls cut by a
 * drop; the object answers a resend from its record, so no message is published twice), and at
 * the end every client holds the same log: sequence numbers 1 to 5,000 in order, no gap, no
 * duplicate, each message once, each at the sequence number its `say` returned.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRpcClient, type RpcClient, type RpcError, rpcConnection, subscribe } from "@dorpc/rpc";
import type { ChatMessage, ChatRoomApi } from "../chat/api.js";
import { startWranglerDev, type WranglerDev } from "../support/wrangler-dev.js";

const CLIENTS = 50;
const MESSAGES = 100; // per client
const IN_FLIGHT = 4; // `say` calls in flight per client

/** Bounds each connection attempt, so one that hangs is retried (see reliability.test.ts). */
const CONNECT_TIMEOUT = 3_000;
const RECONNECT = { initialDelay: 20, maxDelay: 500 };

let dev: WranglerDev;
let persistTo: string;

beforeAll(async () => {
  persistTo = await mkdtemp(join(tmpdir(), "dorpc-chat-"));
  dev = await startWranglerDev({ config: "test/chat/wrangler.toml", persistTo });
});

afterAll(async () => {
  await dev?.stop();
  if (persistTo) await rm(persistTo, { recursive: true, force: true });
});

/** One client's view of the room: what its subscription delivered, in delivery order. */
interface Member {
  readonly who: string;
  readonly client: RpcClient<ChatRoomApi>;
  readonly log: { seq: number; message: ChatMessage }[];
  resyncs: number;
}

describe("a chat room under wrangler dev with sockets cut at random", () => {
  it(`${CLIENTS} clients × ${MESSAGES} messages: every say resolves once and every client ends with the same complete ordered log`, async () => {
    const room = `room-${Date.now().toString(36)}`;
    const total = CLIENTS * MESSAGES;
    let reconnects = 0;
    const members: Member[] = Array.from({ length: CLIENTS }, (_, i) => {
      const who = `c${i}`;
      const client = createRpcClient<ChatRoomApi>("CHAT", room, {
        baseUrl: dev.baseUrl,
        query: { who },
        reconnect: RECONNECT,
        connectTimeout: CONNECT_TIMEOUT,
        timeout: 120_000,
      });
      rpcConnection(client).onStateChange((state) => {
        if (state === "reconnecting") reconnects++;
      });
      return { who, client, log: [], resyncs: 0 };
    });
    const subscriptions = members.map((member) =>
      subscribe(member.client, "messages", (message, info) => void member.log.push({ seq: info.seq, message }), {
        since: 0,
        onResync: () => void member.resyncs++,
      }),
    );
    await Promise.all(subscriptions.map((subscription) => subscription.ready));

    // Chaos: at random intervals a client of its own asks the room to close 1–3 other sockets.
    const chaosClient = createRpcClient<ChatRoomApi>("CHAT", room, {
      baseUrl: dev.baseUrl,
      query: { who: "chaos" },
      reconnect: RECONNECT,
      connectTimeout: CONNECT_TIMEOUT,
    });
    let chaosOn = true;
    let socketsCut = 0;
    const chaos = (async () => {
      while (chaosOn) {
        await new Promise((resolve) => setTimeout(resolve, 40 + Math.random() * 160));
        if (!chaosOn) break;
        try {
          socketsCut += await chaosClient.dropOthers(1 + Math.floor(Math.random() * 3));
        } catch {
          // the chaos client's own call failed: skip this round
        }
      }
    })();

    // Each `say` counts its settlements, and remembers the sequence number it was given.
    const settled = new Map<string, { fulfilled: number; rejected: number; seq?: number }>();
    const failures: string[] = [];
    const began = Date.now();
    let said = 0;
    const progress = setInterval(() => {
      const open = members.filter((member) => rpcConnection(member.client).state === "open").length;
      const lengths = members.map((member) => member.log.length);
      console.log(
        `chat progress: ${said} said, ${failures.length} failed, logs ${Math.min(...lengths)}..${Math.max(...lengths)}, ${open}/${CLIENTS} open, ${reconnects} reconnects, ${socketsCut} cut, ${((Date.now() - began) / 1000).toFixed(0)} s`,
      );
    }, 5_000);
    await Promise.all(
      members.map(async (member) => {
        let next = 0;
        const lane = async () => {
          while (next < MESSAGES) {
            const text = `${member.who}:${next++}`;
            const record: { fulfilled: number; rejected: number; seq?: number } = { fulfilled: 0, rejected: 0 };
            settled.set(text, record);
            try {
              record.seq = await member.client.say(text);
              record.fulfilled++;
              said++;
            } catch (error) {
              record.rejected++;
              failures.push(`${text}: ${(error as RpcError).code}: ${(error as Error).message}`);
            }
          }
        };
        await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
      }),
    );
    const sayingSeconds = (Date.now() - began) / 1000;
    chaosOn = false;
    await chaos;

    // Every message was published: wait until every log has caught up (the test's timeout
    // bounds the wait), then a round trip on each connection, after which any event the object
    // pushed before its answer (a duplicate, an extra) has arrived too.
    while (members.some((member) => member.log.length < total)) await new Promise((resolve) => setTimeout(resolve, 50));
    const caughtUpSeconds = (Date.now() - began) / 1000;
    clearInterval(progress);
    await Promise.all(members.map((member) => member.client.ping()));

    expect(failures, "say calls that did not resolve with their sequence number").toEqual([]);
    expect(settled.size).toBe(total);
    expect([...settled.values()].filter((record) => record.fulfilled !== 1 || record.rejected !== 0)).toEqual([]);
    expect(members.map((member) => member.resyncs)).toEqual(new Array(CLIENTS).fill(0));

    // The reference log: sequence numbers 1..5000 in order; each message once; each at the
    // sequence number its say returned.
    const reference = members[0]!.log;
    expect(reference.map((entry) => entry.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(new Set(reference.map((entry) => entry.message.text)).size).toBe(total);
    for (const [text, record] of settled) {
      const entry = reference[record.seq! - 1];
      expect(entry?.message, `the event at the sequence number say("${text}") returned`).toEqual({ from: text.split(":")[0], text });
    }
    // Every other client holds exactly the same log.
    const expected = JSON.stringify(reference);
    const differing = members.filter((member) => JSON.stringify(member.log) !== expected).map((member) => member.who);
    expect(differing, "clients whose log differs from c0's").toEqual([]);

    // The faults really happened: sockets were cut and clients came back.
    expect(socketsCut).toBeGreaterThan(0);
    expect(reconnects).toBeGreaterThan(0);

    const figures = {
      clients: CLIENTS,
      messagesPerClient: MESSAGES,
      inFlightPerClient: IN_FLIGHT,
      messages: total,
      eventsDelivered: members.reduce((sum, member) => sum + member.log.length, 0),
      socketsCutByChaos: socketsCut,
      reconnects,
      sayingS: Number(sayingSeconds.toFixed(1)),
      allCaughtUpS: Number(caughtUpSeconds.toFixed(1)),
      messagesPerSecond: Math.round(total / sayingSeconds),
    };
    console.log(`chat ledger: ${JSON.stringify(figures, null, 2)}`);

    for (const subscription of subscriptions) subscription.close();
    for (const member of members) rpcConnection(member.client).close();
    rpcConnection(chaosClient).close();
  }, 300_000);
});

describe("a subscriber far behind", () => {
  // The replay of a resubscribe is more events than a client accepts in one frame
  // (limits.maxPendingCalls, default 1,024): the object's outbox sends it as several frames.
  it("a subscriber 1,500 events behind, with default limits, catches up in order without reconnecting", async () => {
    const room = `behind-${Date.now().toString(36)}`;
    const BEHIND = 1_500;
    const writer = createRpcClient<ChatRoomApi>("CHAT", room, { baseUrl: dev.baseUrl, query: { who: "writer" } });
    const reader = createRpcClient<ChatRoomApi>("CHAT", room, { baseUrl: dev.baseUrl, query: { who: "reader" }, reconnect: RECONNECT });
    try {
      for (let sent = 0; sent < BEHIND; sent += 250) {
        await Promise.all(Array.from({ length: 250 }, (_, k) => writer.say(`m${sent + k}`)));
      }
      const seen: number[] = [];
      const subscription = subscribe(reader, "messages", (_message, info) => void seen.push(info.seq), { since: 0 });
      const outcome = await new Promise<string>((resolve) => {
        subscription.ready.then(
          () => resolve("ready"),
          (error: unknown) => resolve(`failed: ${String(error)}`),
        );
        rpcConnection(reader).onStateChange((state) => {
          if (state === "reconnecting") resolve("the client refused the replay and reconnected");
        });
      });
      console.log(`far-behind subscriber: ${outcome}, ${seen.length} events`);
      expect(outcome).toBe("ready");
      expect(seen).toEqual(Array.from({ length: BEHIND }, (_, i) => i + 1));
    } finally {
      rpcConnection(writer).close();
      rpcConnection(reader).close();
    }
  });
});
