/**
 * A client's Hello travels in the same WebSocket message as the frame it sends next (its first
 * calls), so a new connection costs a Durable Object one message event, not two
 * (`Outbox.lead`, packages/rpc/src/outbox.ts; docs/protocol.md, "Frames"). The object, and the
 * HTTP transport, read the two apart at the second frame mark (`helloEnd`, frame.ts).
 */
import { describe, expect, it } from "vitest";
import { FrameKind } from "../../packages/rpc/src/envelopes.js";
import { HELLO_MAX, helloEnd, writeFrame } from "../../packages/rpc/src/frame.js";
import { resolveLimits } from "../../packages/rpc/src/limits.js";
import { Outbox } from "../../packages/rpc/src/outbox.js";
import { rawServer } from "./helpers.js";
import { lastSocket, ScriptedSocket, scriptedClient } from "./scripted-websocket.js";

const HELLO = '\u001eH["AAAAAAAAAAAAAAAAAAAAAA",2]';
const CALL = '\u001eC[[1,["getValue",[0]]]]';

class Counter {
  value = 7;
  getValue(): number {
    return this.value;
  }
}

function capture() {
  const sent: (string | Uint8Array)[] = [];
  return { sent, outbox: new Outbox((frame) => sent.push(frame)) };
}

describe("Outbox.lead", () => {
  it("puts the leading frame in front of the next text frame: one message", async () => {
    const { sent, outbox } = capture();
    outbox.lead(HELLO);
    outbox.add(FrameKind.Calls, '[1,["getValue",[0]]]');
    await Promise.resolve();
    expect(sent).toEqual([HELLO + CALL]);
  });

  it("sends it alone at the end of the turn when nothing follows, and before a binary frame in a message of its own", async () => {
    const alone = capture();
    alone.outbox.lead(HELLO);
    await Promise.resolve();
    expect(alone.sent).toEqual([HELLO]);
    const binary = capture();
    binary.outbox.lead(HELLO);
    binary.outbox.add(FrameKind.Calls, '[1,["echo",[1,[[4,["Uint8Array",0]]]]]]', [new Uint8Array([1, 2, 3])]);
    await Promise.resolve();
    expect(binary.sent[0]).toBe(HELLO);
    expect(binary.sent[1]).toBeInstanceOf(Uint8Array);
    expect(binary.sent).toHaveLength(2);
  });

  it("lets what was queued before it leave first, and is dropped with the queue when the connection ends", async () => {
    const before = capture();
    before.outbox.add(FrameKind.Cancel, "4");
    before.outbox.lead(HELLO);
    before.outbox.add(FrameKind.Calls, '[1,["getValue",[0]]]');
    await Promise.resolve();
    expect(before.sent).toEqual(["\u001eK[4]", HELLO + CALL]);
    const cleared = capture();
    cleared.outbox.lead(HELLO);
    cleared.outbox.clear();
    cleared.outbox.flush();
    expect(cleared.sent).toEqual([]);
  });
});

describe("helloEnd", () => {
  it("finds the end of a leading Hello followed by a frame, and nothing else", () => {
    expect(helloEnd(HELLO + CALL)).toBe(HELLO.length);
    expect(helloEnd(HELLO)).toBe(-1); // a Hello alone
    expect(helloEnd(CALL + HELLO)).toBe(-1); // not a Hello first
    expect(helloEnd(`x${HELLO}${CALL}`)).toBe(-1); // not a frame
    // A Hello is at most HELLO_MAX characters: a longer first "frame" is not split (it is refused whole).
    const long = `\u001eH["${"A".repeat(HELLO_MAX)}",0]`;
    expect(helloEnd(long + CALL)).toBe(-1);
    // JSON escapes U+001E inside strings, so a frame mark in a session id cannot end the Hello early.
    expect(JSON.stringify("a\u001eb")).toBe('"a\\u001eb"');
  });
});

describe("the object reads a Hello and the frame after it from one message", () => {
  it("answers the call and keeps the session (a second hello on the connection is refused)", async () => {
    const server = rawServer(new Counter());
    expect(server.dispatch(HELLO + CALL)).toBe(true);
    expect(await server.replies()).toEqual([[1, 0, 7]]);
    expect(server.closes).toEqual([]);
    server.dispatch(HELLO);
    expect(server.closes[0]?.[0]).toBe(1008);
  });

  it("a malformed Hello in front of calls closes the connection with 1008 and the calls do not run", async () => {
    const target = new Counter();
    let runs = 0;
    target.getValue = () => ++runs;
    const server = rawServer(target);
    server.dispatch(`\u001eH["short",0]${CALL}`);
    await server.replies();
    expect(server.closes[0]?.[0]).toBe(1008);
    expect(runs).toBe(0);
  });

  it("splits a message once: a Hello followed by 100,000 more is refused (1008, a second hello), without recursing into them", async () => {
    const target = new Counter();
    let runs = 0;
    target.getValue = () => ++runs;
    const server = rawServer(target);
    expect(() => server.dispatch(HELLO.repeat(100_000) + CALL)).not.toThrow();
    await server.replies();
    expect(server.closes[0]?.[0]).toBe(1008);
    expect(runs).toBe(0);
  });

  it("checks the frame after the Hello against maxMessageBytes on its own, as if it had come alone", async () => {
    const limits = resolveLimits({ maxMessageBytes: 1024 });
    const call = writeFrame(FrameKind.Calls, `[[1,["getValue",[0,"${"x".repeat(1024 - 30)}"]]]]`, []) as string;
    expect(call.length).toBeLessThanOrEqual(1024);
    expect((HELLO + call).length).toBeGreaterThan(1024);
    const server = rawServer(new Counter(), { limits });
    server.dispatch(HELLO + call);
    expect(await server.replies()).toEqual([[1, 0, 7]]);
    expect(server.closes).toEqual([]);
  });
});

describe("dorpc's client", () => {
  it("sends its Hello and its first calls as one message, and later calls without a Hello", async () => {
    ScriptedSocket.reset();
    using client = scriptedClient({ timeout: 60_000 });
    const first = client.f();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const socket = lastSocket();
    socket.accept();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(socket.raw).toHaveLength(1);
    const message = socket.raw[0] as string;
    expect(message.slice(0, helloEnd(message))).toMatch(/^\u001eH\["[\w-]{22}",2\]$/);
    expect(message.slice(helloEnd(message))).toBe('\u001eC[[1,["f",[0]]]]');
    socket.deliver("\u001eR[[1,0,7]]");
    expect(await first).toBe(7);
    const second = client.g();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(socket.raw.slice(1)).toEqual(['\u001eC[[2,["g",[0]],0,0,2]]']);
    socket.deliver("\u001eR[[2,0,7]]");
    expect(await second).toBe(7);
  });
});
