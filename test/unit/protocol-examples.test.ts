/**
 * The frames docs/protocol.md shows for references, pipelining, cancels and exactly once, made
 * again by the real client and dispatcher over the in-memory paired transport: each example is a
 * transcript (`client:` / `server:` lines) that must be what each end sent, and must appear on the
 * page as it is (after the session id, which is random, is replaced by the page's).
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { createRpcClient, RpcTarget, withCallOptions } from "../../packages/rpc/src/index.js";
import { nodeSql } from "../support/node-sql.js";
import { type PairedConnection, pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, settle } from "./helpers.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const protocol = readFileSync(join(ROOT, "docs/protocol.md"), "utf8");
/** The code blocks of the page, each line without the notes after two or more spaces. */
const blocks = [...protocol.matchAll(/^```\n([\s\S]*?)\n```$/gm)].map((m) =>
  m[1]!
    .split("\n")
    .map((line) => line.replace(/ {2,}\S.*$/, ""))
    .join("\n"),
);
const PAGE_SESSION = "3vv4vnGQ2QOytyrn9YY0PQ";
/** The session age the page's resending hello shows (the real one depends on timing). */
const PAGE_AGE = 48;

/** Frames as the page writes them: the control character spelled out, the page's session id and age. */
function shown(frame: unknown, session?: string): string {
  let text = String(frame).replaceAll("\u001e", "\\u001e");
  if (session) text = text.replaceAll(session, PAGE_SESSION).replace(/^(\\u001eH\["[^"]+",1),\d+\]$/, `$1,${PAGE_AGE}]`);
  return text;
}

/** Checks that `transcript` is what each end sent, in order, and that it is a code block (or a run of one) on the page. */
function expectTranscript(sent: { client: unknown[]; server: unknown[] }, transcript: string[], session?: string): void {
  const mine = (who: string) => transcript.filter((line) => line.startsWith(`${who}: `)).map((line) => line.slice(who.length + 2));
  expect(sent.client.map((f) => shown(f, session))).toEqual(mine("client"));
  expect(sent.server.map((f) => shown(f, session))).toEqual(mine("server"));
  expect(
    blocks.some((block) => `\n${block}\n`.includes(`\n${transcript.join("\n")}\n`)),
    `not on the page:\n${transcript.join("\n")}`,
  ).toBe(true);
}

/** What each end sent on `conn` since the previous call (hello frames left out). */
function since(conn: PairedConnection, marks: { client: number; server: number }) {
  const out = { client: conn.sentByClient.slice(marks.client), server: conn.sentByServer.slice(marks.server) };
  marks.client = conn.sentByClient.length;
  marks.server = conn.sentByServer.length;
  return out;
}

class Room extends RpcTarget {
  readonly members: string[] = [];
  join(id: string): number {
    return this.members.push(id);
  }
}

class Users extends RpcTarget {
  get(id: string): { id: string; name: string } {
    return { id, name: `user ${id}` };
  }
}

class Api {
  readonly rooms = new Map<string, Room>();
  get users(): Users {
    return new Users();
  }
  openRoom(title: string): Room {
    let room = this.rooms.get(title);
    if (!room) this.rooms.set(title, (room = new Room()));
    return room;
  }
  greet(user: { name: string }): string {
    return `hello ${user.name}`;
  }
  roomOf(room: Room): number {
    return room.members.length;
  }
  async callMe(cb: (n: number) => number, n: number): Promise<number> {
    return cb(n);
  }
  slow(): Promise<never> {
    return new Promise(() => {});
  }
}

describe("docs/protocol.md", () => {
  it("shows references, a callback, pipelining and a cancel as one client's session sends them", async () => {
    const paired = pairWith(new Api());
    using c = createRpcClient<Api>("API", "protocol", { transport: paired.factory });
    const room = await c.openRoom("r");
    const f = paired.connections[0]!;
    expect(f.hellos).toHaveLength(1);
    // The first connection of a session: it has sent nothing before (2).
    expect(f.hellos[0]).toMatch(/^\u001eH\["[A-Za-z0-9_-]{22}",2\]$/);
    expect(blocks.some((block) => block === 'client: \\u001eH["3vv4vnGQ2QOytyrn9YY0PQ",2]')).toBe(true);
    const marks = { client: 0, server: 0 };
    expect(await room.join("x")).toBe(1);
    expect(await c.roomOf(room)).toBe(1);
    room[Symbol.dispose]();
    await settle();
    expectTranscript(since(f, marks), [
      'client: \\u001eC[[1,["openRoom",[0,"r"]]]]',
      "server: \\u001eR[[1,1,[[31,[1,1]]]]]",
      'client: \\u001eC[[2,["join",[0,"x"]],1,0,2]]',
      "server: \\u001eR[[2,0,1]]",
      'client: \\u001eC[[3,["roomOf",[1,[[1,[1]],[32,1]]]],0,0,3]]',
      "server: \\u001eR[[3,0,1]]",
      "client: \\u001eX[[1,1]]",
    ]);

    expect(await c.callMe((n) => n * 2, 21)).toBe(42);
    await settle();
    expectTranscript(since(f, marks), [
      'client: \\u001eC[[4,["callMe",[1,[[1,[1,2]],[31,[1,0]],[0,21]]]],0,0,4]]',
      "server: \\u001eC[[1,[[0,21]],1]]",
      "client: \\u001eR[[1,0,42]]",
      "server: \\u001eR[[4,0,42]]",
      "server: \\u001eX[[1,1]]",
    ]);

    expect(await c.openRoom("q").join(c.users.get("b").id)).toBe(1);
    await settle();
    expectTranscript(since(f, marks), [
      'client: \\u001eC[[5,["openRoom",[0,"q"]],0,0,5],[6,["users","get",[0,"b"]]],[7,["join",[1,[[1,[1]],[30,[6,"id"]]]]],-5]]',
      'server: \\u001eR[[5,1,[[31,[2,1]]]],[6,0,{"id":"b","name":"user b"}],[7,0,1]]',
    ]);

    expect(await c.greet(c.users.get("a"))).toBe("hello user a");
    expectTranscript(since(f, marks), [
      'client: \\u001eC[[8,["users","get",[0,"a"]],0,0,8],[9,["greet",[1,[[1,[1]],[30,[8]]]]]]]',
      'server: \\u001eR[[8,0,{"id":"a","name":"user a"}],[9,0,"hello user a"]]',
    ]);

    await expectRejectsCode(withCallOptions(c.slow(), { timeout: 20 }), "TIMEOUT");
    await settle();
    const cancelled = since(f, marks);
    // The export of room "q" arrived with call 5 and nobody holds it: its release may join in.
    cancelled.client = cancelled.client.filter((frame) => !String(frame).startsWith("\u001eX"));
    expectTranscript(cancelled, ['client: \\u001eC[[10,["slow",[0]],0,0,10]]', "client: \\u001eK[10]"]);
    expect(f.server()!.callee.size).toBe(0);
  });

  it("shows a call resent after a dropped connection, answered from the delivery record", async () => {
    class Counter {
      n = 0;
      increment(by = 1): number {
        return (this.n += by);
      }
    }
    const counter = new Counter();
    const records = new DeliveryRecord(nodeSql(), resolveDelivery(undefined)!);
    const paired = pairWith(counter, undefined, { records });
    using client = createRpcClient<Counter>("COUNTER", "protocol", {
      transport: paired.factory,
      reconnect: { initialDelay: 1, maxDelay: 5 },
    });
    expect(await client.increment(2)).toBe(2);
    const pending = client.increment(3);
    await settle(2); // the object runs it and answers…
    expect(counter.n).toBe(5);
    paired.connections[0]!.cut(); // …and the answer is lost with the connection
    expect(await pending).toBe(5);
    expect(counter.n).toBe(5); // ran once
    const [first, second] = paired.connections;
    const session = /"([^"]+)"/.exec(first!.hellos[0]!)![1]!;
    expect(second!.hellos).toEqual([expect.stringMatching(new RegExp(`^\u001eH\\["${session}",1,\\d+\\]$`))]);
    const page = [
      'client: \\u001eH["3vv4vnGQ2QOytyrn9YY0PQ",2]',
      'client: \\u001eC[[1,["increment",[0,2]]]]',
      "server: \\u001eR[[1,0,2]]",
      'client: \\u001eC[[2,["increment",[0,3]],0,0,2]]',
      "server: \\u001eR[[2,0,5]]",
      'client: \\u001eH["3vv4vnGQ2QOytyrn9YY0PQ",1,48]',
      'client: \\u001eC[[2,["increment",[0,3]],0,1]]',
      "server: \\u001eR[[2,0,5]]",
    ];
    expectTranscript(
      {
        client: [first!.hellos[0], ...first!.sentByClient, second!.hellos[0], ...second!.sentByClient],
        server: [...first!.sentByServer, ...second!.sentByServer],
      },
      page,
      session,
    );
  });
});
