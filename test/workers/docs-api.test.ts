/**
 * Statements of docs/api.md that no other test checks, run as written against the test Worker's
 * Counter and Room:
 *  - a client, a path and a stub describe themselves (`[dorpc client of …]`, `[dorpc path
 *    users]`, `[dorpc stub of …]`) and `JSON.stringify` leaves them out;
 *  - `rpcDispose` refuses what is neither a client nor a stub;
 *  - `subscribe` throws synchronously for each misuse the list names;
 *  - `readIdentityHeader` and `withIdentity`: their results and refusals.
 */
import { rpcConnection, rpcDispose, subscribe } from "@dorpc/rpc";
import { readIdentityHeader } from "@dorpc/rpc/server";
import { withIdentity } from "@dorpc/routing";
import { createTestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";
import type { Room } from "./push-objects.js";

/** The `code` of what `f` throws (an RpcError or a RoutingError), or "no throw". */
function thrownCode(f: () => unknown): string | undefined {
  try {
    f();
    return "no throw";
  } catch (error) {
    return (error as { code?: string }).code ?? `no code: ${String(error)}`;
  }
}

describe("a client, a path and a stub are not coerced into calls", () => {
  it("String() and template strings describe them, JSON.stringify leaves them out, and nothing is sent", async () => {
    using counter = createTestClient<Counter>(env.COUNTER, uniqueName("describe"));
    const stub = await counter.users;
    try {
      expect(String(counter)).toMatch(/^\[dorpc client of .+\]$/);
      expect(`${counter.users}`).toBe("[dorpc path users]");
      expect(String(stub)).toMatch(/^\[dorpc stub of .+\]$/);
      expect(JSON.stringify({ client: counter, path: counter.users, stub })).toBe("{}");
      expect(rpcConnection(counter).pendingCalls).toBe(0);
    } finally {
      rpcDispose(stub);
    }
  });
});

describe("rpcDispose", () => {
  it("throws BAD_OPTION for anything but a client or a stub: a plain object, a path", () => {
    using counter = createTestClient<Counter>(env.COUNTER, uniqueName("dispose-misuse"));
    expect(thrownCode(() => rpcDispose({}))).toBe("BAD_OPTION");
    expect(thrownCode(() => rpcDispose(counter.users))).toBe("BAD_OPTION");
  });
});

describe("subscribe's synchronous refusals", () => {
  it("BAD_OPTION for an empty topic, a handler or onResync / onEnd that is not a function, and a value that is not a client", () => {
    using room = createTestClient<Room>(env.ROOM, uniqueName("subscribe-misuse"), { query: { name: "a" } });
    const misuses: [string, () => unknown][] = [
      ["an empty topic", () => subscribe(room, "" as never, () => undefined)],
      ["a handler that is not a function", () => subscribe(room, "chat", 1 as never)],
      ["an onResync that is not a function", () => subscribe(room, "chat", () => undefined, { onResync: 1 as never })],
      ["an onEnd that is not a function", () => subscribe(room, "chat", () => undefined, { onEnd: 1 as never })],
      ["a plain object", () => subscribe({} as never, "chat" as never, () => undefined)],
      ["a path on a client", () => subscribe(room.say as never, "chat" as never, () => undefined)],
    ];
    for (const [misuse, f] of misuses) expect(thrownCode(f), misuse).toBe("BAD_OPTION");
    expect(rpcConnection(room).state, "a refused subscription does not connect").toBe("idle");
  });

  it("DISPOSED for a disposed client", () => {
    const room = createTestClient<Room>(env.ROOM, uniqueName("subscribe-disposed"), { query: { name: "a" } });
    room[Symbol.dispose]();
    expect(thrownCode(() => subscribe(room, "ticks", () => undefined))).toBe("DISPOSED");
  });
});

describe("identity helpers", () => {
  const withHeader = (value?: string) => new Request("http://x/", { headers: value === undefined ? {} : { "X-Dorpc-Identity": value } });

  it("readIdentityHeader: undefined when the header is absent, its JSON when present; LIMIT above 1,024 characters, DECODE for invalid JSON", () => {
    expect(readIdentityHeader(withHeader())).toBeUndefined();
    expect(readIdentityHeader(withHeader('{"user":"ada"}'))).toEqual({ user: "ada" });
    expect(thrownCode(() => readIdentityHeader(withHeader(JSON.stringify("x".repeat(1_100)))))).toBe("LIMIT");
    expect(thrownCode(() => readIdentityHeader(withHeader("{nope")))).toBe("DECODE");
  });

  it("withIdentity sends text beyond ASCII as JSON escapes, which readIdentityHeader reads back as it was", () => {
    const request = withIdentity(new Request("http://x/"), { user: "山" });
    expect(request.headers.get("X-Dorpc-Identity")).toBe('{"user":"\\u5c71"}');
    expect(readIdentityHeader(request)).toEqual({ user: "山" });
  });

  it("withIdentity: BAD_OPTION for undefined, a function, a BigInt, a cycle, and more than 1,024 characters of JSON", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const refused = [undefined, () => 1, 1n, cycle, "x".repeat(1_100)].map((identity) =>
      thrownCode(() => withIdentity(new Request("http://x/"), identity)),
    );
    expect(refused).toEqual(["BAD_OPTION", "BAD_OPTION", "BAD_OPTION", "BAD_OPTION", "BAD_OPTION"]);
  });
});
