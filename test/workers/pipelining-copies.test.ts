/**
 * A call's argument that pipelines on an earlier call's result (a PIPELINE record) receives what
 * a round trip would have given it (docs/security.md, "References are capabilities": "Pipelining
 * gives nothing a round trip would not"). Before, the method got the live result itself:
 *  - a stub of another connection (another client's function the object kept) was passed on, and
 *    the method called that client's function for whoever sent the frame (over WebSocket and over
 *    an HTTP batch); it is now refused `ENCODE`, as returning it is;
 *  - a value a reply cannot carry (`ctx.storage.kv`, an instance of the app's own class) reached
 *    the method live; it is now refused `ENCODE`;
 *  - plain data a getter hands out arrived as the object's own state, so a method changing its
 *    argument changed that state; it now arrives as a copy.
 * What does travel by reference still arrives as itself: the object's own RpcTargets and
 * functions, and a File as an equal File.
 * Also here: a chain that went async and ends at a thenable the client sent (`{ then: fn }`)
 * answers with that value; before, the object called the client's `then` with its own settle
 * functions and the call waited for the client to settle it.
 *
 * Frames are written raw where the wire form is the point (raw sockets from record-support.ts).
 * The getters and methods an app would write to hand out such values are given to the one
 * instance under test, on a prototype of its own between it and its class (`addMembers`): the
 * shared test classes stay as they are.
 */
import { createTestClient } from "@dorpc/testing";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Composer } from "./compose-objects.js";
import { uniqueName } from "./helpers.js";
import { calls, openSocket, type RawSocket } from "./record-support.js";

/**
 * Gives the instance behind `stub` the members `members` describes, as methods and getters of its
 * own class (a prototype inserted between the instance and its class), so the access rules reach
 * them like any member the app wrote. Other instances of the class are left as they are.
 */
async function addMembers<O extends Rpc.DurableObjectBranded>(
  stub: DurableObjectStub<O>,
  members: (instance: O, state: DurableObjectState) => PropertyDescriptorMap,
): Promise<void> {
  await runInDurableObject(stub, (instance: O, state) => {
    Object.setPrototypeOf(instance, Object.create(Object.getPrototypeOf(instance) as object, members(instance, state)));
  });
}

/**
 * The call step `method(x, ...rest)` whose first argument `x` is the PIPELINE record `[callId,
 * ...path]` (record type 30): the arguments as a record table, record 0 the array of the others.
 */
const pipelinedArg = (method: string, ref: (number | string)[], ...rest: unknown[]) => [
  method,
  [1, [[1, [1, ...rest.map((_, i) => i + 2)]], [30, ref], ...rest.map((v) => [0, v])]],
];

/** The call frames the object sent to the client on `socket` (a call to one of its exports). */
const callsToClient = (socket: RawSocket): string[] =>
  socket.messages.filter((m): m is string => typeof m === "string" && m.startsWith("\u001eC"));

/** The reply envelope of call `id` among the text reply frames `socket` received, if any yet. */
const replyIn = (socket: RawSocket, id: number): unknown[] | undefined =>
  socket.messages
    .filter((m): m is string => typeof m === "string" && m.startsWith("\u001eR"))
    .flatMap((m) => JSON.parse(m.slice(2)) as unknown[][])
    .find((envelope) => envelope[0] === id);

/** A Composer whose `heldListener()` hands out what `listen` kept: the listening client's function. */
async function composerHandingOutItsListener(label: string) {
  const name = uniqueName(label);
  await addMembers(env.COMPOSER.getByName(name), () => ({
    heldListener: {
      value(this: { listener: unknown }) {
        return this.listener;
      },
    },
  }));
  const seen: unknown[] = [];
  const listener = createTestClient<Composer>(env.COMPOSER, name);
  await listener.listen((n: unknown) => {
    seen.push(n);
    return 42;
  });
  return { name, seen, listener };
}

describe("a pipelined argument holding a stub of another connection", () => {
  it("is refused ENCODE over WebSocket, as the round trip is, and the other client's function is never called", async () => {
    const { name, seen, listener } = await composerHandingOutItsListener("copies-foreign-ws");
    using _ = listener;
    const other = await openSocket("COMPOSER", name);
    try {
      other.send(calls([[1, ["heldListener", [0]]]]));
      expect((await other.reply(1)).slice(0, 3), "the round trip").toEqual([1, 3, "ENCODE"]);
      // callBack(cb, 1) calls cb(0): with the listener's stub it would call the listening client.
      other.send(
        calls([
          [2, ["heldListener", [0]]],
          [3, pipelinedArg("callBack", [2], 1)],
        ]),
      );
      const reply = await other.reply(3);
      expect(seen, `the listening client's function ran for another client; reply: ${JSON.stringify(reply)}`).toEqual([]);
      expect(reply).toEqual([3, 3, "ENCODE", expect.stringContaining("stub of another connection")]);
      // The listener itself still reaches its own function.
      expect(await listener.emit("still mine")).toBe(42);
      expect(seen).toEqual(["still mine"]);
    } finally {
      await other.close();
    }
  });

  it("is refused ENCODE in an HTTP batch (no socket), and the WebSocket client's function is never called", async () => {
    const { name, seen, listener } = await composerHandingOutItsListener("copies-foreign-http");
    using _ = listener;
    const response = await SELF.fetch(`http://x/__rpc/COMPOSER/${encodeURIComponent(name)}`, {
      method: "POST",
      headers: { "Content-Type": "application/x-dorpc" },
      body: calls([
        [1, ["heldListener", [0]]],
        [2, pipelinedArg("callBack", [1], 3)],
      ]),
    });
    const text = new TextDecoder().decode(await response.arrayBuffer());
    expect(seen, `the WebSocket client's function ran for an HTTP batch; response: ${text}`).toEqual([]);
    expect(response.status).toBe(200);
    expect(text.startsWith("\u001eR"), text).toBe(true);
    const replies = JSON.parse(text.slice(2)) as unknown[][];
    expect(replies.find((envelope) => envelope[0] === 2)).toEqual([2, 3, "ENCODE", expect.stringContaining("stub of another connection")]);
  });
});

describe("a pipelined argument a reply could not carry", () => {
  class Point {
    constructor(
      readonly x: number,
      readonly y: number,
    ) {}
  }
  it.each([
    ["ctx.storage.kv", (state: DurableObjectState): unknown => state.storage.kv],
    ["an instance of the app's own class", (): unknown => new Point(1, 2)],
  ])("%s is refused ENCODE, never passed to the method live", async (_what, make) => {
    const name = uniqueName("copies-unsendable");
    await addMembers(env.COUNTER.getByName(name), (_instance, state) => ({
      handedOut: {
        get: () => make(state),
      },
      kindOf: {
        value: (value: unknown) => Object.prototype.toString.call(value),
      },
    }));
    const socket = await openSocket("COUNTER", name);
    try {
      socket.send(calls([[1, ["handedOut"]]]));
      expect((await socket.reply(1)).slice(0, 3), "the round trip").toEqual([1, 3, "ENCODE"]);
      socket.send(
        calls([
          [2, ["handedOut"]],
          [3, pipelinedArg("kindOf", [2])],
        ]),
      );
      const reply = await socket.reply(3);
      expect(reply.slice(0, 3), `kindOf ran with the live value: ${JSON.stringify(reply)}`).toEqual([3, 3, "ENCODE"]);
    } finally {
      await socket.close();
    }
  });
});

describe("a pipelined argument of plain data", () => {
  it("arrives as a copy: a method changing its argument does not change the object's state a getter handed out", async () => {
    const name = uniqueName("copies-plain");
    const settings = { limit: 10, tags: ["a"] };
    await addMembers(env.COUNTER.getByName(name), () => ({
      settings: { get: () => settings },
      // Normalises its argument in place, as a method may with input it owns.
      preview: {
        value(input: { limit: number; tags: string[] }) {
          input.limit = 999;
          input.tags.push("previewed");
          return input;
        },
      },
    }));
    const socket = await openSocket("COUNTER", name);
    try {
      socket.send(
        calls([
          [1, ["settings"]],
          [2, pipelinedArg("preview", [1])],
        ]),
      );
      expect(await socket.reply(2)).toEqual([2, 0, { limit: 999, tags: ["a", "previewed"] }]);
      expect(settings, "the object's own settings changed through a pipelined argument").toEqual({ limit: 10, tags: ["a"] });
      socket.send(calls([[3, ["settings"]]]));
      expect(await socket.reply(3)).toEqual([3, 0, { limit: 10, tags: ["a"] }]);
    } finally {
      await socket.close();
    }
  });
});

describe("what a pipelined argument still passes by reference", () => {
  interface Held {
    readonly users: object;
    readonly triple: (n: number) => number;
    readonly note: File;
  }
  interface HeldApi {
    readonly held: Held;
    check(value: Held): Promise<{ users: boolean; triple: boolean; note: string }>;
  }

  it("the object's own RpcTarget and function arrive as themselves, a File it made as an equal File", async () => {
    const name = uniqueName("copies-own");
    await addMembers(env.COUNTER.getByName(name), (instance) => {
      const held: Held = {
        users: instance.users,
        triple: (n) => n * 3,
        note: new File(["made here"], "note.txt", { type: "text/plain", lastModified: 1_700_000_000_000 }),
      };
      return {
        held: { get: () => held },
        check: {
          async value(value: Held) {
            const { note } = value;
            return {
              users: value.users === held.users,
              triple: value.triple === held.triple,
              note: `${note instanceof File} ${note.name} ${note.type} ${note.lastModified} ${await note.text()}`,
            };
          },
        },
      };
    });
    using client = createTestClient<HeldApi>(env.COUNTER, name);
    // Made in one turn: `check`'s argument is a PIPELINE record on `held`.
    expect(await client.check(client.held)).toEqual({
      users: true,
      triple: true,
      note: "true note.txt text/plain 1700000000000 made here",
    });
  });
});

describe("a chain that went async and ends at a thenable the client sent", () => {
  // The client refuses a function under `then` in what the object sends (security.md, "a function
  // under `then` (DECODE)"); the object, in turn, must answer with such a value, never adopt it as
  // a promise and call the client's `then` with its own settle functions.
  it("answers with the value, as the same chain without an await does, and calls nothing on the client", async () => {
    const name = uniqueName("copies-thenable");
    await addMembers(env.COUNTER.getByName(name), () => ({
      // An async method returning plain data that holds its argument (no thenable at the JS level).
      wrapLater: {
        async value(x: unknown) {
          await scheduler.wait(1);
          return { x };
        },
      },
    }));
    /** `{ then: <the client's function, export id> }` as an argument table (record 3: EXPORT). */
    const thenable = (exportId: number) => [
      1,
      [
        [1, [1]],
        [2, [[2, 3]]],
        [0, "then"],
        [31, [exportId, 0]],
      ],
    ];
    /** The same value in a reply: `{ then: <the client's own function> }` (record 2: RETURN of the export). */
    const answered = (exportId: number) => [
      [2, [[1, 2]]],
      [0, "then"],
      [32, exportId],
    ];
    const socket = await openSocket("COUNTER", name);
    try {
      socket.send(
        calls([
          [1, ["wrapLater", thenable(1), "x"]],
          [2, ["echo", thenable(2)]],
        ]),
      );
      // Whichever comes first: the answer to call 1, or a call from the object to the client.
      await vi.waitFor(
        () => {
          if (callsToClient(socket).length === 0 && replyIn(socket, 1) === undefined)
            throw new Error("neither a reply to call 1 nor a call to the client");
        },
        { timeout: 5_000 },
      );
      expect(callsToClient(socket), "the object called the client's then() with its own settle functions").toEqual([]);
      const async = await socket.reply(1);
      const sync = await socket.reply(2);
      expect(async, "the answer of the chain that went async").toEqual([1, 1, answered(1)]);
      expect(sync, "the answer of the same value without an await").toEqual([2, 1, answered(2)]);
    } finally {
      await socket.close();
    }
  });
});
