/**
 * References a client hands the object in its answers to the object's calls (EXPORT records in
 * reply frames), when the object cannot accept the answer: given back, not kept.
 */
import { RpcError } from "@dorpc/rpc";
import { rpcClient, rpcSocketInfo } from "@dorpc/rpc/server";
import { createTestClient, runInObject, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Room } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

const outcome = (p: Promise<unknown>) =>
  p.then(
    (v) => (typeof v === "function" ? "a function" : Array.isArray(v) ? `${v.length} items` : v),
    (e: unknown) => (RpcError.is(e) ? e.code : String(e)),
  );

describe("an answer the object refuses does not keep what it carried by reference", () => {
  // docs/protocol.md (References, Counting): "Every EXPORT record a frame carries is one more
  // reference"; replies to calls given up, and calls never run, have their EXPORT records "counted
  // and released at once". Each end bounds its import table with limits.maxImports. An answer
  // refused with LIMIT for carrying more than maxImports references must not leave the 10,000 it
  // did count in the object's import table: they stay there until the garbage collector happens to
  // finalize the stubs built for them, and until then every later answer or call of that client
  // that carries a single function is refused with LIMIT too (seen with raw frames 300 ms later).
  // released at once, as for an answer to a call given up.
  it("after an answer with 10,001 functions is refused (LIMIT), the object's import table is back to empty", {
    timeout: 20_000,
  }, async () => {
    const client = createTestClient<Room>(env.ROOM, uniqueName("imports-full"), {
      query: { name: "ann" },
      // The client may hand out that many (its own maxExports is raised; it is the object's
      // maxImports, 10,000 by default, that refuses them).
      limits: { maxExports: 50_000 },
      expose: {
        many: () => Array.from({ length: 10_001 }, (_, i) => () => i),
      },
    });
    using _ = client;
    await client.connected();
    const result = await runInObject(client, async (obj, state) => {
      const ws = state.getWebSockets()[0]!;
      const c = rpcClient<{ many(): Array<() => number> }>(obj, ws);
      const many = await outcome(c.many());
      const importsAfter = rpcSocketInfo(ws)?.imports;
      return { many, importsAfter };
    });
    expect(result).toEqual({ many: "LIMIT", importsAfter: 0 });
  });

  // The same for an answer the object refuses because its value fails validation (here a BigInt
  // over the object's limits.maxBigIntDigits, 10,000 by default, which the sender does not check):
  // the function it carried by reference must be released (an `X` frame back to the client), as for
  // a reply to a call the object gave up; otherwise the client keeps that export (and what it
  // closes over) for the life of the connection.
  it("an answer refused by validation gets its function released back to the client", { timeout: 20_000 }, async () => {
    const client = createTestClient<Room>(env.ROOM, uniqueName("refused-answer"), {
      query: { name: "ann" },
      expose: { answer: () => ({ callback: () => 1, big: 10n ** 10_001n }) },
    });
    using _ = client;
    await client.connected();
    const releases: string[] = [];
    testConnection(client).socket!.addEventListener("message", (m: MessageEvent) => {
      if (typeof m.data === "string" && m.data.startsWith("\u001eX")) releases.push(m.data.slice(2));
    });
    const answered = await runInObject(client, (obj, state) =>
      outcome(rpcClient<{ answer(): unknown }>(obj, state.getWebSockets()[0]!).answer()),
    );
    // A round trip after the refusal: any release the object sent has arrived by now.
    await client.connected();
    await client.askMe("flush?").catch(() => undefined);
    expect({ answered, releases }).toEqual({ answered: "LIMIT", releases: [expect.stringMatching(/^\[\[\d+,1\]\]$/)] });
  });
});
