/** Envelopes that each fit the receiver's limit are never grouped into a frame over it (a real socket). */
import type { RpcError } from "@dorpc/rpc";
import { createTestClient } from "@dorpc/testing";
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

describe("grouping envelopes into frames, over a real socket", () => {
  it("answers that each fit are not grouped into a binary frame over the client's limit (non-ASCII)", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("cjk"), { limits: { maxMessageBytes: 100_000 }, timeout: 20_000 });
    const text = "語".repeat(20_000);
    // (docs/api.md, maxMessageBytes: "Each end groups envelopes ... into frames of up to 64 KiB ...
    // keep it at 64 KiB or more"): each answer fits 100,000 bytes alone (the texts are 60,000 UTF-8
    // bytes each), so none is refused. The object's outbox measures a binary frame's JSON in UTF-16
    // units and groups all three into one ~120 KB frame: all three fail LIMIT.
    const results = await Promise.allSettled([client.echo(new Uint8Array(8)), client.echo(text), client.echo(text)]);
    expect(results.map((r) => (r.status === "fulfilled" ? "ok" : (r.reason as RpcError).code))).toEqual(["ok", "ok", "ok"]);
  });
});
