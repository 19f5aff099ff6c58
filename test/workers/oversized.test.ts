/**
 * Frames larger than the receiver's `limits.maxMessageBytes`: refused envelope by envelope, on a
 * connection that stays open. Closing it instead looped: the resent call was answered from the
 * delivery record with the same frame, a resubscribe replayed the same event.
 */
import { type RpcError, subscribe, withCallOptions } from "@dorpc/rpc";
import { rpcPublish } from "@dorpc/rpc/server";
import { createTestClient, runInObject, testConnection } from "@dorpc/testing";
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { rejection, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";
import type { Room } from "./push-objects.js";

describe("a frame over the receiver's maxMessageBytes", () => {
  it("an answer over the client's limit fails its call with LIMIT saying it ran; nothing is resent, the connection stays", async () => {
    const name = uniqueName("big-answer");
    using client = createTestClient<Counter>(env.COUNTER, name, { limits: { maxMessageBytes: 1000 } });
    await client.getValue();
    const error = (await rejection(withCallOptions(client.saveSnapshot("x".repeat(990)), { timeout: 30_000 }))) as RpcError;
    expect(error.code).toBe("LIMIT");
    expect(error.message).toContain("the call ran, but its answer could not be read");
    // It ran once, on the first connection, which is still the only one.
    expect(await runInDurableObject(env.COUNTER.getByName(name), (_i, state) => state.storage.kv.get<string>("snapshot"))).toBe(
      "x".repeat(990),
    );
    expect(await client.getValue()).toBe(0);
    expect(testConnection(client).attempts).toHaveLength(1);
  });

  it("a topic event over the subscriber's limit is reported once and skipped; later events arrive on the same connection", async () => {
    const room = uniqueName("big-event");
    const errors: [string, string][] = [];
    using poster = createTestClient<Room>(env.ROOM, room, { query: { name: "p" } });
    using small = createTestClient<Room>(env.ROOM, room, {
      query: { name: "s" },
      limits: { maxMessageBytes: 2000 },
      onError: (e, what) => errors.push([what, (e as Error).message]),
    });
    const seen: { seq: number; text: string }[] = [];
    using sub = subscribe(small, "chat", (event, info) => void seen.push({ seq: info.seq, text: event.text }));
    await sub.ready;
    await poster.post("x".repeat(3000));
    await poster.post("small");
    await vi.waitFor(() => expect(seen).toEqual([{ seq: 2, text: "small" }]));
    expect(errors).toEqual([["a push from the object", expect.stringContaining("more than this end's limits.maxMessageBytes (2000)")]]);
    expect(testConnection(small).attempts).toHaveLength(1);
  });

  it("the same for an event published straight from the object", async () => {
    const errors: string[] = [];
    using c = createTestClient<Room>(env.ROOM, uniqueName("event-size"), {
      query: { name: "ann" },
      limits: { maxMessageBytes: 2_000 },
      onError: (e) => errors.push((e as Error).message),
    });
    const seen: number[] = [];
    using sub = subscribe(c, "chat", (_e, info) => void seen.push(info.seq));
    await sub.ready;
    await runInObject(c, (obj) => rpcPublish(obj, "chat", { from: "x", text: "y".repeat(5_000) }));
    await runInObject(c, (obj) => rpcPublish(obj, "chat", { from: "x", text: "short" }));
    await vi.waitFor(() => expect(seen).toEqual([2]));
    expect(errors).toHaveLength(1);
    expect(testConnection(c).attempts).toHaveLength(1);
  });

  it("answers that each fit are not batched into a frame that does not: ten 20 KB answers to a client with a 100 KB limit", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("batched"), { limits: { maxMessageBytes: 100_000 } });
    const text = "x".repeat(20_000);
    const answers = await Promise.all(Array.from({ length: 10 }, () => client.echo(text)));
    expect(answers).toEqual(Array.from({ length: 10 }, () => text));
    expect(testConnection(client).attempts).toHaveLength(1);
  });

  it("(for contrast) an answer over another limit, maxNodes, is read and refused as that call's LIMIT", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("nodes"), { limits: { maxNodes: 100 } });
    const error = (await rejection(client.echo(new Array(200).fill(1)))) as RpcError;
    expect(error.code).toBe("LIMIT");
    expect(await client.echo(5)).toBe(5);
  });

  it("a call over the object's limit is answered LIMIT and not run; the connection stays and the next call works", async () => {
    const name = uniqueName("big-call");
    using client = createTestClient<Counter>(env.COUNTER, name);
    await client.getValue();
    const tooBig = "x".repeat(33 * 1024 * 1024); // over the object's default 32 MiB
    const error = (await rejection(client.saveSnapshot(tooBig))) as RpcError;
    expect(error.code).toBe("LIMIT");
    expect(error.message).toContain("it was not run");
    expect(await runInDurableObject(env.COUNTER.getByName(name), (_i, state) => state.storage.kv.get<string>("snapshot"))).toBeUndefined();
    expect(await client.increment(1)).toBe(1);
    expect(testConnection(client).attempts).toHaveLength(1);
  });
});
