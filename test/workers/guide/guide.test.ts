/**
 * The client snippets of docs/getting-started.md, run as the guide shows them against the
 * guide's objects (directory.ts, table.ts, ledger.ts in this folder, which are the guide's code
 * blocks byte for byte). Every region between `// guide:start` and `// guide:end` is a code
 * block of the guide, or its end (test/unit/guide-snippets.test.ts checks that), and what its
 * `console.log` comments say is what the test expects.
 *
 * The guide's clients connect with `{ baseUrl }`; here `createRpcClient` and `httpTransport` are
 * stand-ins that reach the same objects through this test Worker (routeDORequest) in workerd:
 * over a real hibernatable WebSocket (`createTestClient` with `worker: SELF`), or over HTTP
 * batches sent to `SELF.fetch`.
 */
import {
  createRpcClient as connect,
  httpTransport as realHttpTransport,
  RpcError,
  type RpcClient,
  type RpcClientOptions,
  subscribe,
  withCallOptions,
} from "@dorpc/rpc";
import { createTestClient } from "@dorpc/testing";
import { env, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Directory } from "./directory.js";
import type { Ledger } from "./ledger.js";
import type { Player, Table } from "./table.js";

const baseUrl = "http://dorpc.test";

/** The guide's `createRpcClient`: a WebSocket through the test Worker, or the given transport. */
function createRpcClient<T>(binding: "DIRECTORY" | "TABLE" | "LEDGER", instance: string, options: RpcClientOptions<T>): RpcClient<T> {
  if (options.transport) return connect<T>(binding, instance, options);
  const { baseUrl: _, ...rest } = options;
  return createTestClient<T>(env[binding], instance, { ...rest, worker: SELF });
}

/** The guide's `httpTransport()`: the real one, sending to this test Worker. */
function httpTransport() {
  return realHttpTransport({ fetch: (url, init) => SELF.fetch(url, init) });
}

/** What the snippets printed, one entry per `console.log`. */
function capture(): string[][] {
  const logged: string[][] = [];
  vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void logged.push(args.map(String)));
  return logged;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("6. Calls that compose", () => {
  it("chains, pipelining, stubs and callbacks, as the guide shows them", async () => {
    const logged = capture();

    // guide:start
    const directory = createRpcClient<Directory>("DIRECTORY", "main", { baseUrl });
    await directory.users.put({ id: "a", name: "Ada", email: "ada@example.com" });
    const ada = await directory.users.get("a"); // { id: "a", name: "Ada", email: "ada@example.com" }
    const email = await directory.users.get("a").email; // "ada@example.com", still one round trip
    // guide:end
    expect(ada).toEqual({ id: "a", name: "Ada", email: "ada@example.com" });
    expect(email).toBe("ada@example.com");

    // guide:start
    const user = directory.users.get("a"); // sent, not awaited
    console.log(await directory.greet(user)); // "Hello, Ada": greet() got what get() returned, on the object
    console.log(await user.email); // "ada@example.com": read from the user that came back with it
    // guide:end
    expect(logged.splice(0)).toEqual([["Hello, Ada"], ["ada@example.com"]]);

    {
      // guide:start
      using users = await directory.users; // a stub of the Users object on the Durable Object
      await users.put({ id: "b", name: "Bob", email: "bob@example.com" });
      console.log((await users.get("b")).email); // "bob@example.com"
      // guide:end
      expect(logged.splice(0)).toEqual([["bob@example.com"]]);
    }

    // guide:start
    const imported = await directory.importUsers(
      [
        { id: "c", name: "Cy", email: "cy@example.com" },
        { id: "d", name: "Di", email: "di@example.com" },
      ],
      (done, total) => console.log(`${done}/${total}`), // runs in the client: "1/2", then "2/2"
    );
    console.log(imported); // 2
    // guide:end
    expect(logged.splice(0)).toEqual([["1/2"], ["2/2"], ["2"]]);
    expect(await directory.users.get("d").email).toBe("di@example.com");
    directory[Symbol.dispose]();
  });

  it("a stub disposed in the same turn as a call on it loses that call (REFERENCE_LOST), as the guide warns", async () => {
    using directory = createRpcClient<Directory>("DIRECTORY", "same-turn", { baseUrl });
    const users = await directory.users;
    const put = users.put({ id: "x", name: "X", email: "x@example.com" });
    users[Symbol.dispose]();
    const error = await put.catch((caught: unknown) => caught);
    expect(RpcError.is(error) && error.code).toBe("REFERENCE_LOST");
  });
});

describe("7. The object calls its clients", () => {
  it("a broadcast, a call to one client and a topic, as the guide shows them", async () => {
    const logged = capture();

    // guide:start
    const table = createRpcClient<Table>("TABLE", "table-1", {
      baseUrl,
      query: { name: "ada" },
      expose: {
        seated: (name, players) => console.log(`${name} sat down, ${players} at the table`),
        chooseMove: (options) => options[0]!,
      } satisfies Player,
    });

    using moves = subscribe(table, "moves", (move, { seq }) => console.log(`#${seq}: ${move.player} plays ${move.move}`));
    await moves.ready; // the object has confirmed the subscription
    await table.sit();
    console.log(await table.play()); // 1, and the subscription logs "#1: ada plays rock"
    // guide:end
    expect(logged.splice(0)).toEqual([["#1: ada plays rock"], ["1"]]);

    // "When a second client, bob, sits down, ada's seated logs …"
    using bob = createRpcClient<Table>("TABLE", "table-1", {
      baseUrl,
      query: { name: "bob" },
      expose: { seated: () => undefined, chooseMove: (options) => options[1]! } satisfies Player,
    });
    expect(await bob.sit()).toBe(1); // the broadcast reached one client: ada
    await vi.waitFor(() => expect(logged).toEqual([["bob sat down, 2 at the table"]]));
    logged.length = 0;
    expect(await bob.play()).toBe(2);
    await vi.waitFor(() => expect(logged).toEqual([["#2: bob plays paper"]]));
    expect(moves.cursor).toBe(2);
    table[Symbol.dispose]();
  });

  it("a client that exposes nothing: the object's call fails NOT_FOUND, a broadcast it receives goes to its onError", async () => {
    const errors: unknown[] = [];
    using silent = createRpcClient<Table>("TABLE", "silent", { baseUrl, query: { name: "cy" }, onError: (error) => errors.push(error) });
    const refused = await silent.play().catch((caught: unknown) => caught);
    expect(RpcError.is(refused) && refused.code).toBe("NOT_FOUND");
    using other = createRpcClient<Table>("TABLE", "silent", {
      baseUrl,
      query: { name: "di" },
      expose: { seated: () => undefined, chooseMove: (options) => options[0]! } satisfies Player,
    });
    expect(await other.sit()).toBe(1);
    await vi.waitFor(() => expect(errors.map((e) => RpcError.is(e) && e.code)).toEqual(["NOT_FOUND"]));
  });
});

describe("9. Timeouts, cancellation and retries", () => {
  it("an abort before the frame left sends nothing", async () => {
    using ledger = createRpcClient<Ledger>("LEDGER", "abort", { baseUrl });
    const controller = new AbortController();
    const pending = withCallOptions(ledger.add(5), { signal: controller.signal });
    controller.abort();
    expect(((await pending.catch((caught: unknown) => caught)) as Error).name).toBe("AbortError");
    expect(await ledger.total()).toBe(0);
  });
});

describe("11. Exactly once across reconnects", () => {
  it("the guide's Ledger: add() is recorded, total() is a read", async () => {
    using ledger = createRpcClient<Ledger>("LEDGER", "ledger-1", { baseUrl });
    expect(await ledger.add(5)).toBe(5);
    expect(await ledger.add(2)).toBe(7);
    expect(await ledger.total()).toBe(7);
  });
});

describe("12. HTTP batches instead of a WebSocket", () => {
  it("the guide's calls over httpTransport(), and what does not work over HTTP", async () => {
    const logged = capture();
    {
      // guide:start
      await using directory = createRpcClient<Directory>("DIRECTORY", "main", { baseUrl, transport: httpTransport() });
      const user = directory.users.get("a");
      console.log(await directory.greet(user)); // "Hello, Ada": both calls in one POST
      // guide:end
      expect(logged.splice(0)).toEqual([["Hello, Ada"]]);
      const callback = await directory.importUsers([], () => undefined);
      expect(callback).toBe(0); // no call back made: nothing to refuse
      const refused = await directory
        .importUsers([{ id: "e", name: "E", email: "e@example.com" }], () => undefined)
        .catch((caught: unknown) => caught);
      expect(RpcError.is(refused) && refused.code).toBe("NOT_CALLABLE");
      const users = await directory.users;
      const lost = await users.get("a").catch((caught: unknown) => caught);
      expect(RpcError.is(lost) && lost.code).toBe("REFERENCE_LOST");
    }
    using table = createRpcClient<Table>("TABLE", "http", { baseUrl, query: { name: "eve" }, transport: httpTransport() });
    const played = await table.play().catch((caught: unknown) => caught);
    expect(RpcError.is(played) && played.code).toBe("NOT_CALLABLE");
    const subscription = subscribe(table, "moves", () => undefined);
    const refused = await subscription.ready.catch((caught: unknown) => caught);
    expect(RpcError.is(refused) && refused.code).toBe("NOT_FOUND");
  });
});
