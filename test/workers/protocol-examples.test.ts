/**
 * The frames docs/protocol.md shows for topics and for the object's calls to its clients, made
 * again over real hibernatable WebSockets in workerd: each connection's transcript (what the
 * client sent, what it received) is recorded at the socket, and the page must show it.
 */
import { rpcConnection, subscribe } from "@dorpc/rpc";
import { createTestClient, dropConnection } from "@dorpc/testing";
import { env, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import protocol from "../../docs/protocol.md?raw";
import type { Player } from "./guide/table.js";
import { uniqueName } from "./helpers.js";
import { framesOf } from "../support/frames.js";

/** A `worker` for createTestClient that records every frame of every connection it opens. */
function recorder() {
  const connections: string[][] = [];
  const worker = {
    async fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
      const response = await SELF.fetch(input, init);
      const ws = response.webSocket;
      if (ws) {
        const log: string[] = [];
        connections.push(log);
        const send = ws.send.bind(ws);
        ws.send = (data: string | ArrayBuffer | ArrayBufferView) => {
          for (const part of framesOf(data)) log.push(`client: ${shown(part)}`); // a Hello and the frame it leads: two lines
          send(data);
        };
        ws.addEventListener("message", (event) => void log.push(`server: ${shown(event.data as string)}`));
      }
      return response;
    },
  };
  return { worker, connections };
}

/** A text frame as protocol.md writes it. */
function shown(data: unknown): string {
  return String(data).replaceAll("\u001e", "\\u001e");
}

/** True when `lines` appear in protocol.md as consecutive lines. */
function onPage(lines: string[]): boolean {
  return `\n${protocol}\n`.includes(`\n${lines.join("\n")}\n`);
}

describe("docs/protocol.md, Topics", () => {
  it("shows a subscription, an event, and the replay after a dropped connection as they travel", async () => {
    const room = uniqueName("protocol-topics");
    const { worker, connections } = recorder();
    using ann = createTestClient(env.ROOM, room, { query: { name: "ann" }, reconnect: false, worker });
    using bob = createTestClient(env.ROOM, room, { query: { name: "bob" } });
    await ann.connected(); // call 1
    const seen: number[] = [];
    using sub = subscribe(ann, "chat", (_event, info) => void seen.push(info.seq)); // call 2
    await sub.ready;
    await ann.post("one"); // call 3: event 1
    await bob.post("two"); // event 2
    await vi.waitFor(() => expect(seen).toEqual([1, 2]));
    dropConnection(ann);
    await bob.post("three"); // event 3, while ann is away
    await rpcConnection(ann).waitForOpen(); // ann resubscribes from 2: call 4
    await vi.waitFor(() => expect(seen).toEqual([1, 2, 3]));
    await vi.waitFor(() => expect(connections[1]).toHaveLength(4));

    const [first, second] = connections;
    const hello = /^client: \\u001eH\["[A-Za-z0-9_-]{22}",2\]$/; // the first connection: nothing sent before
    expect(first![0]).toMatch(hello);
    const subscribing = first!.slice(first!.findIndex((line) => line.includes('"subscribe"')));
    expect(subscribing.slice(0, 2)).toEqual([
      'client: \\u001eC[[2,["subscribe",[0,"chat",null,1]],0,2,2]]',
      'server: \\u001eR[[2,0,{"seq":0}]]',
    ]);
    const event = 'server: \\u001eC[[0,["event",[0,"chat",1,{"from":"ann","text":"one"}]],0,2]]';
    expect(first).toContain(event);
    expect(onPage([...subscribing.slice(0, 2), event])).toBe(true);

    expect(second![0]).toMatch(/^client: \\u001eH\["[A-Za-z0-9_-]{22}",0\]$/);
    const resubscribed = second!.slice(1);
    expect(resubscribed).toEqual([
      'client: \\u001eC[[4,["subscribe",[0,"chat",2]],0,2,4]]',
      'server: \\u001eC[[0,["event",[0,"chat",3,{"from":"bob","text":"three"}]],0,2]]',
      'server: \\u001eR[[4,0,{"seq":3}]]',
    ]);
    expect(onPage(resubscribed)).toBe(true);
  });
});

describe("docs/protocol.md, Broadcasts and calls to one client", () => {
  it("shows a broadcast and a call to one client as they travel", async () => {
    const table = uniqueName("protocol-table");
    const { worker, connections } = recorder();
    const expose = (move: string) => ({ seated: () => undefined, chooseMove: () => move }) satisfies Player;
    using ada = createTestClient(env.TABLE, table, { query: { name: "ada" }, expose: expose("rock"), worker });
    await ada.sit();
    using bob = createTestClient(env.TABLE, table, { query: { name: "bob" }, expose: expose("paper") });
    expect(await bob.sit()).toBe(1);
    expect(await ada.play()).toBe(1);
    const log = connections[0]!;
    const broadcast = 'server: \\u001eC[[0,["seated",[0,"bob",2]]]]';
    await vi.waitFor(() => expect(log).toContain(broadcast));
    expect(onPage([broadcast])).toBe(true);
    const asked = log.indexOf('server: \\u001eC[[1,["chooseMove",[0,["rock","paper","scissors"]]]]]');
    expect(asked).toBeGreaterThan(0);
    expect(log[asked + 1]).toBe('client: \\u001eR[[1,0,"rock"]]');
    expect(onPage(log.slice(asked, asked + 2))).toBe(true);
  });
});
