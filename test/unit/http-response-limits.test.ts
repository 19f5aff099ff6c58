/**
 * httpTransport reads a response body no further than a frame within the client's limits can
 * take: a hostile or broken endpoint cannot make a client buffer an endless body. Frames of a
 * list are delivered as each arrives whole (one frame held at a time), across any chunking.
 */
import { describe, expect, it } from "vitest";
import { joinFrames } from "../../packages/rpc/src/http-frames.js";
import { createRpcClient, type FetchLike, httpTransport } from "../../packages/rpc/src/index.js";
import { expectRejectsCode } from "./helpers.js";

interface Api {
  a(): number;
  b(): number;
}

const FRAME_TYPE = "application/x-dorpc";
const FRAMES_TYPE = "application/x-dorpc-frames";
const MAX = 1024;
const encoder = new TextEncoder();

/** The ids of the calls in a request's text frame (`\u001eC[[id, …], …]`). */
async function callIds(init: RequestInit): Promise<number[]> {
  const body = init.body;
  const text = typeof body === "string" ? body : new TextDecoder().decode(body as Uint8Array);
  expect(text.slice(0, 2)).toBe("\u001eC");
  return (JSON.parse(text.slice(2)) as unknown[][]).map((call) => call[0] as number).filter((id) => id > 0);
}

/** A text reply frame answering `id` with `value` (ReplyStatus.OkJson). */
const reply = (id: number, value: unknown) => encoder.encode(`\u001eR${JSON.stringify([[id, 0, value]])}`);

/** `frames` as a frame list (u32 little-endian length before each), as the object writes one. */
const list = (frames: Uint8Array[]): Uint8Array => joinFrames(frames);

/** A body of `bytes` split into `size`-byte chunks, and then (when `endless`) 1 KiB chunks forever; counts what was pulled. */
function stream(bytes: Uint8Array, size: number, endless = false) {
  const seen = { pulls: 0, cancelled: false };
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      seen.pulls++;
      if (at < bytes.byteLength) {
        controller.enqueue(bytes.slice(at, at + size));
        at += size;
      } else if (endless) controller.enqueue(new Uint8Array(1024).fill(0x20));
      else controller.close();
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { body, seen };
}

function client(fetch: FetchLike) {
  return createRpcClient<Api>("API", "x", {
    baseUrl: "https://x.test",
    timeout: 5_000,
    limits: { maxMessageBytes: MAX },
    transport: httpTransport({ fetch }),
  });
}

describe("httpTransport: response bodies are read within the client's limits", () => {
  it("an endless single-frame body fails the call with LIMIT after at most the cap is read, and the body is cancelled", async () => {
    let seen = { pulls: 0, cancelled: false };
    using api = client(async () => {
      const s = stream(new Uint8Array(0), 1, true);
      seen = s.seen;
      return new Response(s.body, { headers: { "Content-Type": FRAME_TYPE } });
    });
    const error = await expectRejectsCode(api.a(), "LIMIT");
    expect(error.message).toContain("maxMessageBytes");
    expect(error.message).toContain("not sent again");
    expect(seen.cancelled).toBe(true);
    // 3 × 1,024 bytes (the most a text frame of 1,024 UTF-16 units can take), 1 KiB per pull.
    expect(seen.pulls).toBeLessThanOrEqual(5);
  });

  it("a frame list: the frame before an oversized one is delivered, the call it would have answered fails LIMIT, the rest is never read", async () => {
    let seen = { pulls: 0, cancelled: false };
    using api = client(async (_url, init) => {
      const [first, second] = await callIds(init);
      const head = list([reply(first!, 1)]);
      const huge = new Uint8Array(4);
      new DataView(huge.buffer).setUint32(0, 1 << 30, true); // declares 1 GiB
      const s = stream(new Uint8Array([...head, ...huge]), 16, true);
      seen = s.seen;
      expect(second).toBeGreaterThan(0);
      return new Response(s.body, { headers: { "Content-Type": FRAMES_TYPE } });
    });
    const [a, b] = await Promise.allSettled([api.a(), api.b()]);
    expect(a).toEqual({ status: "fulfilled", value: 1 });
    expect(b.status).toBe("rejected");
    expect(((b as PromiseRejectedResult).reason as { code: string }).code).toBe("LIMIT");
    expect(seen.cancelled).toBe(true);
  });

  it("a frame list arriving one byte at a time is reassembled: every call gets its answer", async () => {
    using api = client(async (_url, init) => {
      const [first, second] = await callIds(init);
      return new Response(stream(list([reply(first!, 10), reply(second!, 20)]), 1).body, { headers: { "Content-Type": FRAMES_TYPE } });
    });
    expect(await Promise.all([api.a(), api.b()])).toEqual([10, 20]);
  });

  it("a text frame within maxMessageBytes in UTF-16 units but over it in UTF-8 bytes still arrives", async () => {
    const text = "é".repeat(900); // 900 units, 1,800 bytes of UTF-8
    using api = client(async (_url, init) => {
      const [first] = await callIds(init);
      return new Response(stream(reply(first!, text), 100).body, { headers: { "Content-Type": FRAME_TYPE } });
    });
    expect(await api.a()).toBe(text);
  });

  it("a frame list cut inside a frame is a lost answer: the call is resent and answered once", async () => {
    let requests = 0;
    using api = client(async (_url, init) => {
      requests++;
      const [first] = await callIds(init);
      const whole = list([reply(first!, 7)]);
      const body = requests === 1 ? whole.slice(0, whole.byteLength - 3) : whole;
      return new Response(stream(body, 8).body, { headers: { "Content-Type": FRAMES_TYPE } });
    });
    expect(await api.a()).toBe(7);
    expect(requests).toBe(2);
  });

  it("an endless refusal body is read no further than its start: the call fails at once, saying what came", async () => {
    let seen = { pulls: 0, cancelled: false };
    using api = client(async () => {
      const s = stream(encoder.encode("no such route"), 64, true);
      seen = s.seen;
      return new Response(s.body, { status: 404, headers: { "Content-Type": "text/plain" } });
    });
    const error = await expectRejectsCode(api.a(), "CONNECT_FAILED");
    expect(error.message).toContain("HTTP 404");
    expect(error.message).toContain("more than 64 KiB");
    expect(seen.cancelled).toBe(true);
    expect(seen.pulls).toBeLessThanOrEqual(66);
  });
});

describe("httpTransport: a complete answer that leaves calls of its request unanswered", () => {
  // The object answers every call of a request in its response: once the body is read whole,
  // a call it left waiting can get no answer later (a broken endpoint, a proxy dropping the last
  // frames). It fails at once, saying it may have run, instead of waiting for its timeout.
  const answering =
    (count: number, type = FRAME_TYPE): FetchLike =>
    async (_url, init) => {
      const ids = (await callIds(init!)).slice(0, count);
      const frames = ids.map((id) => reply(id, id * 10));
      const body = type === FRAMES_TYPE ? list(frames) : frames.length ? frames[0]! : encoder.encode("\u001eR[]");
      return new Response(body, { headers: { "Content-Type": type } });
    };

  const client = (fetch: FetchLike) =>
    createRpcClient<Api>("API", "x", { baseUrl: "https://x.test", timeout: 0, transport: httpTransport({ fetch }) });

  it("an empty reply frame: the call fails DISCONNECTED at once", async () => {
    using api = client(answering(0));
    const error = await expectRejectsCode(api.a(), "DISCONNECTED");
    expect(error.message).toMatch(/ended without an answer to this call; it may have run/);
  });

  it.each([
    ["a frame answering one of two calls", FRAME_TYPE],
    ["a frame list that ends cleanly after its first frame", FRAMES_TYPE],
  ])("%s: the answered call resolves, the other fails DISCONNECTED", async (_name, type) => {
    using api = client(answering(1, type));
    const a = api.a();
    const b = api.b();
    expect(await a).toBe(10);
    await expectRejectsCode(b, "DISCONNECTED");
  });

  it("an answer to every call settles each with its own result", async () => {
    using api = client(answering(2, FRAMES_TYPE));
    expect(await Promise.all([api.a(), api.b()])).toEqual([10, 20]);
  });
});
