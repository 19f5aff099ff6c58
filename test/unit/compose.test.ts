/**
 * Calls that compose (issue 10), over the in-memory paired transport and the real dispatcher:
 * calls sent when made, promise pipelining, remote objects by reference (stubs), functions as
 * arguments (callbacks), and what happens to references on release, reconnect and misuse.
 */
import { describe, expect, it } from "vitest";
import { currentCall } from "../../packages/rpc/src/current-call.js";
import { createRpcClient, RpcError, rpcConnection, rpcDispose, RpcTarget, withCallOptions } from "../../packages/rpc/src/index.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, expectRpcError, rejectionOf, settle } from "./helpers.js";

// ---------------------------------------------------------------------------------------------
// The object under test
// ---------------------------------------------------------------------------------------------

interface User {
  id: string;
  name: string;
}

class NoSuchUser extends Error {}

class Users extends RpcTarget {
  lookups = 0;
  get(id: string): User {
    this.lookups++;
    if (id === "nobody") throw new NoSuchUser(`no user ${id}`, { cause: new Error("not in the table") });
    return { id, name: `user ${id}` };
  }
}

class Room extends RpcTarget {
  readonly members: string[] = [];
  private secret = "s3cr3t";
  constructor(readonly title: string) {
    super();
  }
  join(id: string): number {
    this.members.push(id);
    return this.members.length;
  }
  get size(): number {
    return this.members.length;
  }
  _private(): string {
    return this.secret;
  }
}

type Callback = (n: number) => unknown;

class Api {
  readonly usersTarget = new Users();
  readonly rooms = new Map<string, Room>();
  readonly log: string[] = [];
  kept: (Callback & Disposable & { dup(): Callback & Disposable }) | undefined;
  leaked: Callback | undefined;
  gate: (() => void) | undefined;

  get users(): Users {
    return this.usersTarget;
  }
  openRoom(title: string): Room {
    let room = this.rooms.get(title);
    if (!room) {
      room = new Room(title);
      this.rooms.set(title, room);
    }
    return room;
  }
  greet(user: User): string {
    this.log.push(`greet ${user.id}`);
    return `hello ${user.name}`;
  }
  note(text: string): void {
    this.log.push(text);
  }
  roomOf(room: Room): string {
    return room.title;
  }
  async slowUser(id: string): Promise<User> {
    await new Promise<void>((resolve) => (this.gate = resolve));
    return { id, name: `slow ${id}` };
  }
  async callMe(cb: Callback, n: number): Promise<unknown> {
    return cb(n);
  }
  async callTwice(cb: Callback): Promise<number> {
    const a = (await cb(1)) as number;
    const b = (await cb(2)) as number;
    return a + b;
  }
  keep(cb: Callback): void {
    this.kept = (cb as unknown as { dup(): Api["kept"] }).dup();
  }
  async fireKept(n: number): Promise<unknown> {
    return this.kept!(n);
  }
  dropKept(): void {
    this.kept![Symbol.dispose]();
  }
  leak(cb: Callback): void {
    this.leaked = cb;
  }
  async fireLeaked(): Promise<unknown> {
    return this.leaked!(1);
  }
  useTarget(target: { hello(name: string): string }): Promise<string> {
    return target.hello("object") as unknown as Promise<string>;
  }
  makeAdder(base: number): (n: number) => number {
    return (n) => base + n;
  }
}

function setup(options?: RpcServerOptions, clientOptions?: Parameters<typeof createRpcClient>[2]) {
  const api = new Api();
  const paired = pairWith(api, options);
  const client = createRpcClient<Api>("API", "compose", {
    transport: paired.factory,
    reconnect: { initialDelay: 1, maxDelay: 5 },
    ...clientOptions,
  });
  return { api, paired, client };
}

/** The call envelopes of one frame the client sent. */
function callsIn(frame: unknown): unknown[][] {
  return JSON.parse((frame as string).slice(2)) as unknown[][];
}

// ---------------------------------------------------------------------------------------------
// Pipelining
// ---------------------------------------------------------------------------------------------

describe("promise pipelining", () => {
  it("passes an unawaited result as an argument: one frame, one round trip, the method receives the value", async () => {
    const { client, paired, api } = setup();
    using _ = client;
    const user = client.users.get("a");
    expect(await client.greet(user)).toBe("hello user a");
    const frames = paired.connections[0]!.sentByClient;
    expect(frames).toHaveLength(1);
    expect(callsIn(frames[0])).toEqual([
      [1, ["users", "get", [0, "a"]]],
      [
        2,
        [
          "greet",
          [
            1,
            [
              [1, [1]],
              [30, [1]],
            ],
          ],
        ],
      ],
    ]);
    expect(paired.connections[0]!.sentByServer).toHaveLength(1); // both replies in one frame
    expect(api.log).toEqual(["greet a"]);
    expect(await user).toEqual({ id: "a", name: "user a" });
  });

  it("chains on a pending result and passes a property of another pending result, in one frame", async () => {
    const { client, paired, api } = setup();
    using _ = client;
    const user = client.users.get("b");
    expect(await client.openRoom("lobby").join(user.id)).toBe(1);
    expect(api.rooms.get("lobby")!.members).toEqual(["b"]);
    const frames = paired.connections[0]!.sentByClient;
    expect(frames).toHaveLength(1);
    expect(callsIn(frames[0])).toEqual([
      [1, ["users", "get", [0, "b"]]],
      [2, ["openRoom", [0, "lobby"]]],
      [
        3,
        [
          ["join"][0],
          [
            1,
            [
              [1, [1]],
              [30, [1, "id"]],
            ],
          ],
        ],
        -2,
      ],
    ]);
  });

  it("three dependent calls made in one turn cost one frame each way", async () => {
    const { client, paired } = setup();
    using _ = client;
    const room = client.openRoom("x");
    const first = room.join("a");
    const size = room.size;
    expect(await Promise.all([first, size, client.roomOf(room)])).toEqual([1, 1, "x"]);
    expect(paired.connections[0]!.sentByClient).toHaveLength(1);
    expect(paired.connections[0]!.sentByServer).toHaveLength(1);
  });

  it("a failed step rejects every step that depends on it with that error, cause intact, and nothing else", async () => {
    const { client, api } = setup();
    using _ = client;
    const user = client.users.get("nobody");
    const greeting = client.greet(user);
    const id = user.id;
    const other = client.users.get("c");
    const [e1, e2, e3] = await Promise.all([rejectionOf(user), rejectionOf(greeting), rejectionOf(id)]);
    for (const error of [e1, e2, e3]) {
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).name).toBe("NoSuchUser");
      expect((error as Error).message).toBe("no user nobody");
      expect(((error as Error).cause as Error).message).toBe("not in the table");
    }
    expect(api.log).toEqual([]); // greet never ran
    expect(await other).toEqual({ id: "c", name: "user c" });
  });

  it("a refused step (NOT_FOUND) fails its dependents with the same code, and runs none of them", async () => {
    const { client, api } = setup();
    using _ = client;
    const missing = (client as unknown as { nope(): Promise<User> }).nope();
    const greeting = client.greet(missing as never);
    expectRpcError(await rejectionOf(missing), "NOT_FOUND");
    expectRpcError(await rejectionOf(greeting), "NOT_FOUND");
    expect(api.log).toEqual([]);
  });

  it("a result used in a later turn while still pending: the dependent call waits for it, order is kept", async () => {
    const { client, api, paired } = setup();
    using _ = client;
    const user = client.slowUser("s");
    await settle();
    // `user` left in an earlier frame and is still running: `greet` is held (with `note` behind
    // it) until the result arrives, then sent with the value.
    const greeting = client.greet(user);
    const noted = client.note("after greet");
    await settle();
    expect(api.log).toEqual([]);
    api.gate!();
    expect(await greeting).toBe("hello slow s");
    await noted;
    expect(api.log).toEqual(["greet s", "after greet"]);
    const sent = paired.connections[0]!.sentByClient.map((f) => callsIn(f));
    expect(sent[1]).toEqual([
      // `answered` 2: the client has had the reply of every call below 2 (the object may drop its answer).
      [2, ["greet", [0, { id: "s", name: "slow s" }]], 0, 0, 2],
      [3, ["note", [0, "after greet"]]],
    ]);
  });

  it("a result that already arrived is passed by value", async () => {
    const { client, paired } = setup();
    using _ = client;
    const user = client.users.get("d");
    await user;
    expect(await client.greet(user)).toBe("hello user d");
    expect(callsIn(paired.connections[0]!.sentByClient[1])).toEqual([[2, ["greet", [0, { id: "d", name: "user d" }]], 0, 0, 2]]);
  });

  it("a call nobody awaits still runs, and its failure is reported to onError", async () => {
    const seen: unknown[] = [];
    const { client, api } = setup(undefined, { onError: (error) => seen.push(error) });
    using _ = client;
    void client.note("fire and forget");
    void (client as unknown as { nope(): Promise<void> }).nope();
    await settle(5);
    expect(api.log).toEqual(["fire and forget"]);
    expect(seen).toHaveLength(1);
    expectRpcError(seen[0], "NOT_FOUND");
  });
});

// ---------------------------------------------------------------------------------------------
// Stubs
// ---------------------------------------------------------------------------------------------

describe("remote objects by reference", () => {
  it("a method returning an RpcTarget gives a stub; calls on it reach that same object", async () => {
    const { client, api } = setup();
    using _ = client;
    using room = await client.openRoom("r");
    expect(await room.join("a")).toBe(1);
    expect(await room.join("b")).toBe(2);
    expect(await room.size).toBe(2);
    expect(api.rooms.get("r")!.members).toEqual(["a", "b"]);
  });

  it("the same object returned twice is the same stub", async () => {
    const { client } = setup();
    using _ = client;
    const a = await client.openRoom("same");
    const b = await client.openRoom("same");
    expect(a).toBe(b);
  });

  it("a stub follows the access rules: no fields, no _-names, no constructor", async () => {
    const { client } = setup();
    using _ = client;
    const room = (await client.openRoom("rules")) as unknown as Record<string, () => Promise<unknown>> & Record<string, Promise<unknown>>;
    await expectRejectsCode(room.members!, "NOT_FOUND");
    await expectRejectsCode(room.secret!, "NOT_FOUND");
    await expectRejectsCode(room._private!(), "NOT_FOUND");
    await expectRejectsCode(room.constructor as unknown as Promise<unknown>, "NOT_FOUND");
  });

  it("a stub passed back as an argument is the original object on the server", async () => {
    const { client } = setup();
    using _ = client;
    const room = await client.openRoom("back");
    expect(await client.roomOf(room)).toBe("back");
  });

  it("disposing a stub releases it: the server's export table shrinks and later calls are RELEASED without a send", async () => {
    const { client, paired } = setup();
    using _ = client;
    const room = await client.openRoom("disp");
    const server = paired.connections[0]!.server()!;
    expect(server.exports.size).toBe(1);
    room[Symbol.dispose]();
    await settle();
    expect(server.exports.size).toBe(0);
    const sent = paired.connections[0]!.sentByClient.length;
    await expectRejectsCode(room.join("x"), "RELEASED");
    expect(paired.connections[0]!.sentByClient).toHaveLength(sent);
    room[Symbol.dispose](); // idempotent
  });

  it("rpcDispose releases a stub where Symbol.dispose is missing", async () => {
    const { client, paired } = setup();
    using _ = client;
    const room = await client.openRoom("nosym");
    rpcDispose(room);
    await settle();
    expect(paired.connections[0]!.server()!.exports.size).toBe(0);
  });

  it("dup() keeps the object alive until every holder is disposed", async () => {
    const { client, paired } = setup();
    using _ = client;
    const room = await client.openRoom("dup");
    const copy = room.dup();
    room[Symbol.dispose]();
    await settle();
    expect(paired.connections[0]!.server()!.exports.size).toBe(1);
    expect(await copy.join("still")).toBe(1);
    copy[Symbol.dispose]();
    await settle();
    expect(paired.connections[0]!.server()!.exports.size).toBe(0);
  });

  it("a stub nobody holds any more is released when it is garbage-collected", async () => {
    const { client, paired } = setup();
    using _ = client;
    await (async () => {
      await client.openRoom("gc");
    })();
    const server = paired.connections[0]!.server()!;
    expect(server.exports.size).toBe(1);
    for (let i = 0; i < 20 && server.exports.size > 0; i++) {
      (globalThis as { gc?: () => void }).gc!();
      await settle(2);
    }
    expect(server.exports.size).toBe(0);
  });

  it("the server's export table is bounded: past limits.maxExports a result fails with LIMIT", async () => {
    const { client } = setup({ limits: { maxExports: 2 } });
    using _ = client;
    await client.openRoom("1");
    await client.openRoom("2");
    const error = await expectRejectsCode(client.openRoom("3"), "LIMIT");
    expect(error.message).toContain("limits.maxExports");
  });

  it("a stub of a connection that closed is REFERENCE_LOST, without a send", async () => {
    const { client, paired } = setup();
    using _ = client;
    const room = await client.openRoom("old");
    paired.connections[0]!.cut();
    await rpcConnection(client).waitForOpen();
    const error = await expectRejectsCode(room.join("x"), "REFERENCE_LOST");
    expect(error.message).toContain("reconnect");
    expect(await client.openRoom("old").join("y")).toBe(1); // a fresh stub works
    expect(paired.connections[1]!.sentByClient.flatMap((f) => callsIn(f)).some((c) => c[2] === 1 && c.length === 3)).toBe(false);
  });

  it("a stub is refused as an argument on another connection", async () => {
    const { client, paired } = setup();
    using _ = client;
    const room = await client.openRoom("elsewhere");
    paired.connections[0]!.cut();
    await rpcConnection(client).waitForOpen();
    await expectRejectsCode(client.roomOf(room), "REFERENCE_LOST");
  });

  it("a function returned by a method is a callable stub", async () => {
    const { client } = setup();
    using _ = client;
    using add = await client.makeAdder(10);
    expect(await add(5)).toBe(15);
  });
});

// ---------------------------------------------------------------------------------------------
// Forged, foreign and released references on the wire
// ---------------------------------------------------------------------------------------------

describe("references from the wire are checked against the connection's table", () => {
  async function rawReply(paired: ReturnType<typeof setup>["paired"], index: number, frame: string): Promise<unknown[]> {
    const conn = paired.connections[index]!;
    const before = conn.sentByServer.length;
    conn.inject(frame);
    await settle();
    return conn.sentByServer.slice(before).flatMap((f) => JSON.parse((f as string).slice(2)) as unknown[]);
  }

  it("a forged export id, a released one and a negative target outside the frame are refused and run nothing", async () => {
    const { client, paired, api } = setup();
    using _ = client;
    const room = await client.openRoom("forge");
    room[Symbol.dispose]();
    await settle();
    const replies = await rawReply(
      paired,
      0,
      "\u001eC" +
        JSON.stringify([
          [90, ["join", [0, "x"]], 99],
          [91, ["join", [0, "y"]], 1],
          [92, ["join", [0, "z"]], -5],
        ]),
    );
    expect(replies).toEqual([
      [92, 3, "PROTOCOL", expect.stringContaining("not an earlier call of the same frame")],
      [90, 3, "REFERENCE_LOST", expect.any(String)],
      [91, 3, "REFERENCE_LOST", expect.any(String)],
    ]);
    expect(api.rooms.get("forge")!.members).toEqual([]);
  });

  it("another connection's export id is refused", async () => {
    const api = new Api();
    const pairedA = pairWith(api);
    const pairedB = pairWith(api);
    using a = createRpcClient<Api>("API", "a", { transport: pairedA.factory });
    using b = createRpcClient<Api>("API", "b", { transport: pairedB.factory });
    await a.openRoom("mine"); // export 1 on A's connection
    await b.note("open");
    const conn = pairedB.connections[0]!;
    const before = conn.sentByServer.length;
    conn.inject("\u001eC" + JSON.stringify([[50, ["join", [0, "intruder"]], 1]]));
    await settle();
    const replies = conn.sentByServer.slice(before).flatMap((f) => JSON.parse((f as string).slice(2)) as unknown[]);
    expect(replies).toEqual([[50, 3, "REFERENCE_LOST", expect.any(String)]]);
    expect(api.rooms.get("mine")!.members).toEqual([]);
  });

  it("a RETURN record naming an export the connection does not hold is refused before the method runs", async () => {
    const { client, paired, api } = setup();
    using _ = client;
    await client.note("open");
    const replies = await rawReply(
      paired,
      0,
      "\u001eC" +
        JSON.stringify([
          [
            60,
            [
              "roomOf",
              [
                1,
                [
                  [1, [1]],
                  [32, 7],
                ],
              ],
            ],
          ],
        ]),
    );
    expect(replies).toEqual([[60, 3, "REFERENCE_LOST", expect.any(String)]]);
    expect(api.log).toEqual(["open"]);
  });

  it("a pipeline record naming a later or unknown call is PROTOCOL", async () => {
    const { client, paired } = setup();
    using _ = client;
    await client.note("open");
    const replies = await rawReply(
      paired,
      0,
      "\u001eC" +
        JSON.stringify([
          [
            70,
            [
              "greet",
              [
                1,
                [
                  [1, [1]],
                  [30, [71]],
                ],
              ],
            ],
          ],
          [71, ["users", "get", [0, "a"]]],
        ]),
    );
    expect(replies[0]).toEqual([70, 3, "PROTOCOL", expect.stringContaining("not an earlier call")]);
  });
});

// ---------------------------------------------------------------------------------------------
// Callbacks
// ---------------------------------------------------------------------------------------------

describe("functions as arguments", () => {
  it("a function argument becomes a callable stub on the server; calling it calls the client", async () => {
    const { client } = setup();
    using _ = client;
    const seen: number[] = [];
    expect(
      await client.callMe((n) => {
        seen.push(n);
        return n * 2;
      }, 21),
    ).toBe(42);
    expect(seen).toEqual([21]);
    expect(await client.callTwice((n) => n * 10)).toBe(30);
  });

  it("a function that is some other library's catch-all Proxy is a callback like any other, never taken for a dorpc proxy", async () => {
    // It answers every symbol key, dorpc's own lookup key included, with a function (itself).
    const calls: unknown[][] = [];
    const magic: Callback = new Proxy(
      (n: number) => {
        calls.push([n]);
        return n + 1;
      },
      { get: (target, key, receiver) => (typeof key === "symbol" ? receiver : Reflect.get(target, key)) },
    );
    const { client } = setup();
    using _ = client;
    expect(await client.callMe(magic, 41)).toBe(42);
    expect(calls).toEqual([[41]]);
  });

  it("a revoked Proxy as an argument fails that call with ENCODE; the client goes on", async () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const { client } = setup();
    using _ = client;
    await expectRejectsCode(client.greet(proxy as unknown as User), "ENCODE");
    expect(await client.greet({ id: "a", name: "Ada" })).toBe("hello Ada");
  });

  it("an error thrown by the callback reaches the server's await, and through it the caller", async () => {
    const { client } = setup();
    using _ = client;
    const error = await rejectionOf(
      client.callMe(() => {
        throw new RangeError("from the client");
      }, 1),
    );
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toBe("from the client");
  });

  it("a callback lives until the call returns: kept without dup() it is RELEASED, and the client forgets it", async () => {
    const { client } = setup();
    using _ = client;
    const session = (client as unknown as Record<symbol, unknown>)[Object.getOwnPropertySymbols(client)[0] as symbol];
    void session;
    await client.leak((n) => n);
    await settle();
    const error = await rejectionOf(client.fireLeaked());
    expect(RpcError.is(error) && error.code).toBe("RELEASED");
  });

  it("dup() keeps a callback past its call until disposed; then the client's export is released", async () => {
    const { client, paired } = setup();
    using _ = client;
    const calls: number[] = [];
    await client.keep((n) => {
      calls.push(n);
      return n + 1;
    });
    expect(await client.fireKept(5)).toBe(6);
    expect(await client.fireKept(6)).toBe(7);
    expect(calls).toEqual([5, 6]);
    await client.dropKept();
    await settle();
    const releases = paired.connections[0]!.sentByServer.filter((f) => typeof f === "string" && f.startsWith("\u001eX"));
    expect(releases).toHaveLength(1);
    await expectRejectsCode(client.fireKept(7), "RELEASED");
  });

  it("an RpcTarget of the client's travels by reference: the server calls its methods", async () => {
    const { client } = setup();
    using _ = client;
    class Greeter extends RpcTarget {
      hello(name: string): string {
        return `hello ${name}`;
      }
    }
    expect(await client.useTarget(new Greeter())).toBe("hello object");
  });

  it("a callback of a connection that closed fails on the server with REFERENCE_LOST or DISCONNECTED", async () => {
    const { client, paired, api } = setup();
    using _ = client;
    await client.keep((n) => n);
    paired.connections[0]!.cut();
    await settle();
    const error = await rejectionOf(Promise.resolve(api.kept!(1)));
    expect(RpcError.is(error) && ["REFERENCE_LOST", "DISCONNECTED"].includes(error.code)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

describe("cancellation", () => {
  it("a call that times out sends a Cancel frame; the callee's signal aborts and no reply is sent", async () => {
    const seen: AbortSignal[] = [];
    class Slow {
      wait(): Promise<never> {
        seen.push(currentCall()!.signal);
        return new Promise(() => {});
      }
    }
    const paired = pairWith(new Slow());
    using client = createRpcClient<Slow>("SLOW", "cancel", { transport: paired.factory });
    await expectRejectsCode(withCallOptions(client.wait(), { timeout: 20 }), "TIMEOUT");
    await settle();
    expect(paired.connections[0]!.sentByClient).toEqual(['\u001eC[[1,["wait",[0]]]]', "\u001eK[1]"]);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.aborted).toBe(true);
    expect((seen[0]!.reason as Error).name).toBe("AbortError");
    expect(paired.connections[0]!.server()!.callee.size).toBe(0);
    expect(paired.connections[0]!.sentByServer).toEqual([]);
  });
});
