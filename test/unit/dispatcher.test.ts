import { describe, expect, it, vi } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { closeReason } from "../../packages/rpc/src/close-reasons.js";
import { resolveServerOptions, type RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { readFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, expectRpcError, expectThrowsCode, rawServer, rejectionOf, settle, type Outcome } from "./helpers.js";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** `[name]`: a property read. */
const read = (...names: string[]): unknown[] => names;
/** `[…names, [0]]`: a call of the last name without arguments. */
const call = (...names: string[]): unknown[] => [...names, [0]];

/** Runs one chain against `target` over the raw dispatcher and returns its outcome. */
async function run(target: object, chain: unknown[], options?: RpcServerOptions): Promise<Outcome> {
  const server = rawServer(target, options);
  expect(server.sendCalls([[1, chain]])).toBe(true);
  expect(server.closes).toEqual([]);
  return server.outcome(1);
}

function expectFailed(outcome: Outcome, code: string): { code: string; message: string } {
  expect(outcome.kind, JSON.stringify(outcome)).toBe("failed");
  const failed = outcome as Extract<Outcome, { kind: "failed" }>;
  expect(failed.code, failed.message).toBe(code);
  return failed;
}

function expectOk(outcome: Outcome): unknown {
  expect(outcome.kind, JSON.stringify(outcome)).toBe("ok");
  return (outcome as Extract<Outcome, { kind: "ok" }>).value;
}

/** A client paired with `target`; dispose it with `using`. */
function clientFor<T extends object>(target: T, options?: RpcServerOptions) {
  const paired = pairWith(target, options);
  const client = createRpcClient<T>("TEST", "dispatcher", { transport: paired.factory });
  return { client, paired };
}

// ---------------------------------------------------------------------------------------------
// Targets
// ---------------------------------------------------------------------------------------------

/** Names no chain may reach, whatever the class defines. */
const FORBIDDEN = [
  "ctx",
  "env",
  "constructor",
  "__proto__",
  "prototype",
  "then",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "isPrototypeOf",
  "__defineGetter__",
  "__lookupGetter__",
  "call",
  "apply",
  "bind",
  "name",
  "length",
  "caller",
  "arguments",
  "fetch",
  "connect",
  "alarm",
  "webSocketMessage",
  "webSocketClose",
  "webSocketError",
  "_private",
  "_",
];

/** Defines every forbidden name as a method that records that it ran. */
function defineHostileMethods(proto: object, effects: string[]): void {
  for (const name of FORBIDDEN) {
    if (name === "constructor") continue; // the real constructor stays
    Object.defineProperty(proto, name, {
      value: function hostile() {
        effects.push(name);
        return name;
      },
      writable: true,
      configurable: true,
      enumerable: false,
    });
  }
}

/** A target whose prototype defines every forbidden name, plus reachable paths to later steps. */
function hostileTarget() {
  const effects: string[] = [];
  class Inner extends RpcTarget {
    ok() {
      effects.push("inner.ok");
      return "inner ok";
    }
  }
  defineHostileMethods(Inner.prototype, effects);
  class Hostile {
    // What a real Durable Object holds as instance fields.
    ctx = { storage: { deleteAll: () => effects.push("ctx.storage.deleteAll") } };
    env = { SECRET: "s3cr3t" };
    ok() {
      effects.push("ok");
      return "ok";
    }
    get inner() {
      effects.push("get inner");
      return new Inner();
    }
    get data() {
      effects.push("get data");
      const data: Record<string, unknown> = {};
      for (const name of FORBIDDEN)
        Object.defineProperty(data, name, { value: name, enumerable: true, writable: true, configurable: true });
      return data;
    }
  }
  defineHostileMethods(Hostile.prototype, effects);
  return { target: new Hostile(), effects };
}

class Storage {
  deleted = 0;
  deleteAll() {
    this.deleted++;
  }
}

class Base {
  hi() {
    return "hi from base";
  }
}

class Users extends RpcTarget {
  secretField = "field";
  get(id: string) {
    return { id, label: `user ${id}` };
  }
}

class Counter extends Base {
  value = 1;
  n = 0;
  calls = 0;
  handler = () => {
    this.calls++;
    return "arrow";
  };
  #secret = 42;
  readonly storageInstance = new Storage();

  increment(by = 1) {
    this.calls++;
    this.n += by;
    return this.n;
  }
  getValue() {
    this.calls++;
    return this.n;
  }
  revealSecret() {
    return this.#secret;
  }
  get storage() {
    return this.storageInstance;
  }
  get users() {
    return new Users();
  }
  get config() {
    this.calls++;
    return {
      limits: { max: 10 },
      list: ["zero", "one", { two: 2 }],
      fn() {
        return "never";
      },
    };
  }
  get later() {
    return Promise.resolve({ answer: 42 });
  }
  async slow(ms: number) {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return "slow done";
  }
  makeUser(id: string) {
    return { id, displayName: `user ${id}` };
  }
  nothing(): void {}
  returnsFunction() {
    return () => 1;
  }
  returnsTarget() {
    return new Users();
  }
}

// ---------------------------------------------------------------------------------------------
// Access policy
// ---------------------------------------------------------------------------------------------

describe("access policy: forbidden names", () => {
  const shapes: [string, (name: string) => unknown[]][] = [
    ["read as the first step", (name) => read(name)],
    ["called as the first step", (name) => call(name)],
    ["read on an RpcTarget (later step)", (name) => read("inner", name)],
    ["called on an RpcTarget (later step)", (name) => call("inner", name)],
    ["read on a plain object (later step)", (name) => read("data", name)],
    ["called on a plain object (later step)", (name) => call("data", name)],
  ];

  for (const [shape, chainOf] of shapes) {
    it.each(FORBIDDEN)(`refuses "%s" ${shape} with NOT_FOUND and runs nothing`, async (name) => {
      const { target, effects } = hostileTarget();
      const failed = expectFailed(await run(target, chainOf(name)), "NOT_FOUND");
      expect(failed.message).toContain(`"${name}"`);
      expect(effects).toEqual([]);
    });
  }

  it("rejects a chain that reaches ctx through the client, running nothing", async () => {
    const { target, effects } = hostileTarget();
    const { client } = clientFor(target);
    using _ = client;
    const remote = client as unknown as Record<string, Record<string, Record<string, () => Promise<unknown>>>>;
    await expectRejectsCode(remote.ctx!.storage!.deleteAll!(), "NOT_FOUND");
    await expectRejectsCode(remote.env!.SECRET as unknown as Promise<unknown>, "NOT_FOUND");
    expect(effects).toEqual([]);
  });

  it("control: the hostile target's own allowed members work", async () => {
    const { target, effects } = hostileTarget();
    expect(expectOk(await run(target, call("ok")))).toBe("ok");
    expect(expectOk(await run(target, call("inner", "ok")))).toBe("inner ok");
    expect(effects).toEqual(["ok", "get inner", "inner.ok"]);
  });

  it("gives a missing name the same code and message shape as a forbidden one (first step)", async () => {
    const { target } = hostileTarget();
    const forbidden = expectFailed(await run(target, call("constructor")), "NOT_FOUND");
    const missing = expectFailed(await run(target, call("noSuchMethod")), "NOT_FOUND");
    expect(missing.message.replace("noSuchMethod", "<name>")).toBe(forbidden.message.replace("constructor", "<name>"));
  });

  it("gives a missing name the same code and message shape as a forbidden one (later step on an RpcTarget)", async () => {
    const { target } = hostileTarget();
    const forbidden = expectFailed(await run(target, call("inner", "constructor")), "NOT_FOUND");
    const missing = expectFailed(await run(target, call("inner", "noSuchMethod")), "NOT_FOUND");
    expect(missing.message.replace("noSuchMethod", "<name>")).toBe(forbidden.message.replace("constructor", "<name>"));
  });

  it("gives a missing name the same code and message shape as a forbidden one (later step on plain data)", async () => {
    const { target } = hostileTarget();
    const forbidden = expectFailed(await run(target, read("data", "constructor")), "NOT_FOUND");
    const missing = expectFailed(await run(target, read("data", "noSuchKey")), "NOT_FOUND");
    expect(missing.message.replace("noSuchKey", "<name>")).toBe(forbidden.message.replace("constructor", "<name>"));
  });

  it("runs nothing when the first step is forbidden, even if later steps are fine", async () => {
    const { target, effects } = hostileTarget();
    expectFailed(await run(target, ["fetch", [0], "ok", [0]]), "NOT_FOUND");
    expectFailed(await run(target, ["_private", "inner"]), "NOT_FOUND");
    expect(effects).toEqual([]);
  });

  it("runs nothing, not even a getter, when a later step is forbidden", async () => {
    const { target, effects } = hostileTarget();
    expectFailed(await run(target, ["inner", "ok", [0], "constructor"]), "NOT_FOUND");
    expect(effects).toEqual([]);
  });
});

describe("access policy: class members", () => {
  it('refuses a #private name (the chain "#secret" is NOT_FOUND) while a method using it works', async () => {
    const target = new Counter();
    expectFailed(await run(target, read("#secret")), "NOT_FOUND");
    expectFailed(await run(target, call("#secret")), "NOT_FOUND");
    expect(expectOk(await run(target, call("revealSecret")))).toBe(42);
  });

  it("refuses instance fields (value = 1)", async () => {
    const target = new Counter();
    expectFailed(await run(target, read("value")), "NOT_FOUND");
    expectFailed(await run(target, read("n")), "NOT_FOUND");
  });

  it("refuses arrow-function fields and never executes them", async () => {
    const target = new Counter();
    expectFailed(await run(target, call("handler")), "NOT_FOUND");
    expectFailed(await run(target, read("handler")), "NOT_FOUND");
    expect(target.calls).toBe(0);
  });

  it("does not step into a native-like class instance returned by a getter (storage.deleteAll)", async () => {
    const target = new Counter();
    const { client } = clientFor(target);
    using _ = client;
    const remote = client as unknown as { storage: { deleteAll(): Promise<void>; deleted: Promise<number> } };
    await expectRejectsCode(remote.storage.deleteAll(), "NOT_FOUND");
    await expectRejectsCode(remote.storage.deleted, "NOT_FOUND");
    expect(target.storageInstance.deleted).toBe(0);
  });

  it("cannot send a class instance returned by a getter (storage) either", async () => {
    const { client } = clientFor(new Counter());
    using _ = client;
    await expectRejectsCode(client.storage as unknown as Promise<unknown>, "ENCODE");
  });

  it("reaches methods of a user-written base class", async () => {
    const { client } = clientFor(new Counter());
    using _ = client;
    expect(await client.hi()).toBe("hi from base");
  });

  it("reaches RpcTarget methods through a getter but not the RpcTarget's own fields", async () => {
    const { client } = clientFor(new Counter());
    using _ = client;
    expect(await client.users.get("a")).toEqual({ id: "a", label: "user a" });
    await expectRejectsCode(client.users.secretField, "NOT_FOUND");
  });
});

describe("access policy: plain data", () => {
  it("reads own data properties of plain objects", async () => {
    const { client } = clientFor(new Counter());
    using _ = client;
    expect(await client.config.limits.max).toBe(10);
    expect(await client.makeUser("a").displayName).toBe("user a");
  });

  it('refuses "name" on a plain result (a Function.prototype name) but reads another property', async () => {
    const target = new Counter();
    expectFailed(await run(target, ["makeUser", [0, "a"], "name"]), "NOT_FOUND");
    expect(expectOk(await run(target, ["makeUser", [0, "a"], "id"]))).toBe("a");
  });

  it("refuses inherited properties of a plain object, even after Object.prototype is polluted", async () => {
    const target = new Counter();
    expectFailed(await run(target, read("config", "hasOwnProperty")), "NOT_FOUND");
    const proto = Object.prototype as Record<string, unknown>;
    proto.pollutedForTest = "polluted";
    try {
      expectFailed(await run(target, read("config", "pollutedForTest")), "NOT_FOUND");
    } finally {
      delete proto.pollutedForTest;
    }
  });

  it("refuses functions held by a plain object, read or called", async () => {
    const target = new Counter();
    expectFailed(await run(target, read("config", "fn")), "NOT_FOUND");
    expectFailed(await run(target, call("config", "fn")), "NOT_FOUND");
  });

  it("reads array elements by integer index", async () => {
    const target = new Counter();
    expect(expectOk(await run(target, read("config", "list", "0")))).toBe("zero");
    expect(expectOk(await run(target, read("config", "list", "2", "two")))).toBe(2);
  });

  it.each(["length", "-1", "01", "1.0", " 1", "3", "push", "1e0"])('refuses "%s" on an array', async (name) => {
    expectFailed(await run(new Counter(), read("config", "list", name)), "NOT_FOUND");
  });
});

describe("access policy: calls", () => {
  it("refuses calling a non-method (data property) with NOT_CALLABLE", async () => {
    const target = new Counter();
    expectFailed(await run(target, call("config", "limits", "max")), "NOT_CALLABLE");
  });

  it("refuses calling a getter's value with NOT_CALLABLE", async () => {
    expectFailed(await run(new Counter(), call("config")), "NOT_CALLABLE");
  });

  it("refuses calling a call's result with NOT_CALLABLE", async () => {
    expectFailed(await run(new Counter(), ["getValue", [0], [0]]), "NOT_CALLABLE");
  });

  it("refuses reading a method without calling it with NOT_CALLABLE, and runs nothing", async () => {
    const target = new Counter();
    expectFailed(await run(target, read("increment")), "NOT_CALLABLE");
    expect(target.calls).toBe(0);
  });

  it("refuses a chain ending on an RpcTarget method without the call with NOT_CALLABLE", async () => {
    expectFailed(await run(new Counter(), read("users", "get")), "NOT_CALLABLE");
  });

  it("refuses reading a property of a method with NOT_FOUND", async () => {
    expectFailed(await run(new Counter(), read("increment", "x")), "NOT_FOUND");
  });

  it("reports NOT_CALLABLE through the client too", async () => {
    const { client } = clientFor(new Counter());
    using _ = client;
    await expectRejectsCode(client.increment as unknown as Promise<unknown>, "NOT_CALLABLE");
  });
});

describe("access option", () => {
  it("allows listed names and refuses others with NOT_FOUND", async () => {
    const target = new Counter();
    const options: RpcServerOptions = { access: { allow: ["increment"] } };
    expect(expectOk(await run(target, ["increment", [0, 2]], options))).toBe(2);
    expectFailed(await run(target, call("getValue"), options), "NOT_FOUND");
    expect(target.calls).toBe(1);
  });

  it("passes the chain's property names to an allow predicate", async () => {
    const paths: string[][] = [];
    const options: RpcServerOptions = {
      access: {
        allow: (path) => {
          paths.push([...path]);
          return path[0] !== "getValue";
        },
      },
    };
    const { client } = clientFor(new Counter(), options);
    using _ = client;
    expect(await client.users.get("a")).toEqual({ id: "a", label: "user a" });
    expect(await client.config.limits.max).toBe(10);
    await expectRejectsCode(client.getValue(), "NOT_FOUND");
    expect(paths).toEqual([["users", "get"], ["config", "limits", "max"], ["getValue"]]);
  });

  it("cannot widen the built-in rules", async () => {
    const options: RpcServerOptions = { access: { allow: () => true } };
    expectFailed(await run(new Counter(), read("constructor"), options), "NOT_FOUND");
    expectFailed(await run(new Counter(), read("value"), options), "NOT_FOUND");
  });
});

// ---------------------------------------------------------------------------------------------
// Results and thrown errors
// ---------------------------------------------------------------------------------------------

class NotFoundError extends Error {}

class Thrower {
  typeError(): never {
    throw new TypeError("bad type");
  }
  custom(): never {
    throw new NotFoundError("no such user");
  }
  withDetails(): never {
    const error = new Error("outer", { cause: new RangeError("inner cause") });
    Object.assign(error, { code: "E_DETAIL", status: 409 });
    throw error;
  }
  uniquelyNamedThrowingMethod(): never {
    throw new Error("with stack");
  }
  async rejects() {
    await Promise.resolve();
    throw new SyntaxError("async failure");
  }
  throwsString(): never {
    throw "just a string";
  }
  throwsUnsendable(): never {
    throw Object.assign(new Error("has a handle"), { handle: new Storage() });
  }
}

describe("thrown errors", () => {
  it("rebuilds a TypeError with its message", async () => {
    const { client } = clientFor(new Thrower());
    using _ = client;
    const error = await rejectionOf(client.typeError());
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe("bad type");
  });

  it("preserves a custom error class name", async () => {
    const { client } = clientFor(new Thrower());
    using _ = client;
    const error = (await rejectionOf(client.custom())) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("NotFoundError");
    expect(error.message).toBe("no such user");
  });

  it("preserves cause and own enumerable props", async () => {
    const { client } = clientFor(new Thrower());
    using _ = client;
    const error = (await rejectionOf(client.withDetails())) as Error & { code?: string; status?: number };
    expect(error.cause).toBeInstanceOf(RangeError);
    expect((error.cause as Error).message).toBe("inner cause");
    expect(error.code).toBe("E_DETAIL");
    expect(error.status).toBe(409);
  });

  it("does not send the stack by default", async () => {
    const { client, paired } = clientFor(new Thrower());
    using _ = client;
    const error = (await rejectionOf(client.uniquelyNamedThrowingMethod())) as Error;
    expect(error.message).toBe("with stack");
    expect(error.stack ?? "").not.toContain("uniquelyNamedThrowingMethod");
    expect(String(paired.connections[0]!.sentByServer[0])).not.toContain("uniquelyNamedThrowingMethod");
  });

  it("sends the stack when exposeErrorStack is true", async () => {
    const { client } = clientFor(new Thrower(), { exposeErrorStack: true });
    using _ = client;
    const error = (await rejectionOf(client.uniquelyNamedThrowingMethod())) as Error;
    expect(error.stack).toContain("uniquelyNamedThrowingMethod");
  });

  it("rejects with the error an async method throws", async () => {
    const { client } = clientFor(new Thrower());
    using _ = client;
    const error = await rejectionOf(client.rejects());
    expect(error).toBeInstanceOf(SyntaxError);
    expect((error as Error).message).toBe("async failure");
  });

  it("rejects with a thrown non-Error value as is", async () => {
    const { client } = clientFor(new Thrower());
    using _ = client;
    expect(await rejectionOf(client.throwsString())).toBe("just a string");
  });

  it("keeps name and message of a thrown error that holds something unsendable", async () => {
    const { client } = clientFor(new Thrower());
    using _ = client;
    const error = (await rejectionOf(client.throwsUnsendable())) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("has a handle");
  });
});

describe("results", () => {
  it("awaits async methods", async () => {
    const { client } = clientFor(new Counter());
    using _ = client;
    expect(await client.slow(1)).toBe("slow done");
  });

  it("awaits a getter that returns a promise and continues the chain", async () => {
    const { client } = clientFor(new Counter());
    using _ = client;
    expect(await client.later).toEqual({ answer: 42 });
    // The client types do not unwrap a getter's promise for chaining (types.ts); runtime does.
    expect(await (client.later as unknown as { answer: Promise<number> }).answer).toBe(42);
  });

  it("replies [id] for a method that returns undefined", async () => {
    const server = rawServer(new Counter());
    server.sendCalls([[7, call("nothing")]]);
    await settle();
    expect(server.sent).toEqual(["\u001eR[[7]]"]);
    const { client } = clientFor(new Counter());
    using _ = client;
    expect(await client.nothing()).toBeUndefined();
  });

  it("returns a function by reference: the reply carries an export record, not the function", async () => {
    const server = rawServer(new Counter());
    server.sendCalls([[1, call("returnsFunction")]]);
    await settle();
    expect(server.sent).toEqual(["\u001eR[[1,1,[[31,[1,0]]]]]"]);
  });

  it("returns an RpcTarget by reference: the reply carries an export record of kind object", async () => {
    const server = rawServer(new Counter());
    server.sendCalls([[1, call("returnsTarget")]]);
    await settle();
    expect(server.sent).toEqual(["\u001eR[[1,1,[[31,[1,1]]]]]"]);
  });
});

// ---------------------------------------------------------------------------------------------
// Ordering and batching
// ---------------------------------------------------------------------------------------------

describe("ordering", () => {
  function orderedTarget(log: string[]) {
    return new (class Ordered {
      async first() {
        log.push("first start");
        await new Promise((resolve) => setTimeout(resolve, 1));
        log.push("first end");
        return 1;
      }
      second() {
        log.push("second");
        return 2;
      }
      async third() {
        log.push("third start");
        await Promise.resolve();
        log.push("third end");
        return 3;
      }
    })();
  }

  it("starts the calls of one frame in order even when the first awaits (ordering: sequential)", async () => {
    const log: string[] = [];
    const { client, paired } = clientFor(orderedTarget(log), { ordering: "sequential" });
    using _ = client;
    expect(await Promise.all([client.first(), client.second(), client.third()])).toEqual([1, 2, 3]);
    expect(paired.connections[0]!.sentByClient).toHaveLength(1);
    expect(log.filter((entry) => !entry.endsWith("end"))).toEqual(["first start", "second", "third start"]);
    expect(log).toEqual(["first start", "first end", "second", "third start", "third end"]);
  });

  it("starts the calls of one frame in order without waiting for an awaiting call (ordering: concurrent)", async () => {
    const log: string[] = [];
    const { client, paired } = clientFor(orderedTarget(log), { ordering: "concurrent" });
    using _ = client;
    expect(await Promise.all([client.first(), client.second(), client.third()])).toEqual([1, 2, 3]);
    expect(paired.connections[0]!.sentByClient).toHaveLength(1);
    expect(log.slice(0, 3)).toEqual(["first start", "second", "third start"]);
    expect(log.indexOf("first end")).toBeGreaterThan(log.indexOf("third start"));
  });

  it("answers synchronous calls of one frame in one reply frame", async () => {
    const server = rawServer(new Counter());
    server.sendCalls([
      [1, ["increment", [0]]],
      [2, ["increment", [0]]],
      [3, ["getValue", [0]]],
    ]);
    const replies = await server.replies();
    expect(server.sent).toHaveLength(1);
    expect(replies).toEqual([
      [1, 0, 1],
      [2, 0, 2],
      [3, 0, 2],
    ]);
  });

  it("sends the replies of synchronous calls before dispatchFrame returns; a call after an awaiting one starts in a later turn", async () => {
    const log: string[] = [];
    const server = rawServer(orderedTarget(log), { ordering: "concurrent" });
    server.sendCalls([
      [1, ["second", [0]]],
      [2, ["third", [0]]],
      [3, ["second", [0]]],
    ]);
    // Synchronously after the dispatch: call 1 is answered, call 2 awaits, and call 3 waits for
    // a later turn (an event of its own, as a native call would be: call-turns.ts).
    expect(server.sent).toHaveLength(1);
    expect(readFrame(server.sent[0]!, DEFAULT_LIMITS)!.body).toEqual([[1, 0, 2]]);
    expect(log).toEqual(["second", "third start"]);
    const replies = await server.replies();
    expect(replies.slice(1).sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual([
      [2, 0, 3],
      [3, 0, 2],
    ]);
    expect(log.slice(0, 3)).toEqual(["second", "third start", "third end"]);
  });
});

// ---------------------------------------------------------------------------------------------
// Protocol violations
// ---------------------------------------------------------------------------------------------

/** Opens a real paired connection, then injects `frame` on it as if the client had sent it. */
async function inject(target: object, frame: string | ArrayBuffer, options?: RpcServerOptions) {
  const paired = pairWith(target, options);
  using client = createRpcClient<Counter>("TEST", "inject", { transport: paired.factory });
  expect(await client.getValue()).toBe(0);
  const conn = paired.connections[0]!;
  const before = conn.sentByServer.length;
  conn.inject(frame);
  await settle();
  const replies: unknown[][] = [];
  for (const sent of conn.sentByServer.slice(before)) replies.push(...(JSON.parse((sent as string).slice(2)) as unknown[][]));
  return { closes: conn.serverCloses, replies };
}

const frame = (calls: unknown): string => "\u001eC" + JSON.stringify(calls);

describe("protocol violations", () => {
  it.each([
    ["a value-kind frame", "\u001eV[0,1]"],
    ["a body that is not an array", "\u001eC{}"],
    ["a body that is a number", "\u001eC1"],
    ["call id -1", frame([[-1, ["getValue", [0]]]])],
    ["call id 1.5", frame([[1.5, ["getValue", [0]]]])],
    ['call id "1"', frame([["1", ["getValue", [0]]]])],
    ["call id NaN (JSON null)", frame([[NaN, ["getValue", [0]]]])],
    ["call id above 2**53", frame([[2 ** 53, ["getValue", [0]]]])],
    ["a call that is not an array", frame([{ id: 1 }])],
    ["a hello whose session id is too short", '\u001eH["abc",0]'],
    ["a hello whose age is negative", '\u001eH["AAAAAAAAAAAAAAAAAAAAAA",1,-1]'],
    ["a hello whose age is not an integer", '\u001eH["AAAAAAAAAAAAAAAAAAAAAA",1,1.5]'],
    ["a hello whose age is a string", '\u001eH["AAAAAAAAAAAAAAAAAAAAAA",1,"5"]'],
  ])("closes the connection with 1008 for %s, running nothing", async (_name, data) => {
    const target = new Counter();
    const { closes, replies } = await inject(target, data);
    expect(closes).toHaveLength(1);
    expect(closes[0]![0]).toBe(1008);
    expect(replies).toEqual([]);
    expect(target.calls).toBe(1); // only the opening getValue
  });

  it("ignores a reply-kind frame naming calls the server never made: nothing runs, the connection stays", async () => {
    const target = new Counter();
    const { closes, replies } = await inject(target, "\u001eR[[1,0,5],[2]]");
    expect(closes).toEqual([]);
    expect(replies).toEqual([]);
    expect(target.calls).toBe(1); // only the opening getValue
  });

  it("runs call id 0 as a notification: it runs, and gets no reply", async () => {
    const target = new Counter();
    const { closes, replies } = await inject(target, frame([[0, ["getValue", [0]]]]));
    expect(closes).toEqual([]);
    expect(replies).toEqual([]);
    expect(target.calls).toBe(2);
  });

  it("bounds notifications still running by maxPendingCalls on their own: past it they are dropped and logged; calls still run", async () => {
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    class Gated extends Counter {
      started = 0;
      wait() {
        this.started++;
        return gate;
      }
    }
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const target = new Gated();
      const server = rawServer(target, { limits: { maxPendingCalls: 2 } });
      server.sendCalls([[0, ["wait", [0]]]]);
      server.sendCalls([[0, ["wait", [0]]]]);
      server.sendCalls([[0, ["wait", [0]]]]); // a third while two run: dropped
      server.sendCalls([[1, ["increment", [0]]]]); // calls are counted apart
      await settle();
      expect(target.started).toBe(2);
      expect(await server.replies()).toEqual([[1, 0, 1]]);
      expect(warn.mock.calls.map((c) => String(c[0]))).toEqual([
        expect.stringMatching(/maxPendingCalls \(2\) notifications are still running/),
      ]);
      finish();
      await settle();
      server.sendCalls([[0, ["wait", [0]]]]); // the two ended: taken again
      await settle();
      expect(target.started).toBe(3);
      expect(server.closes).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });

  it("answers a duplicate running id with PROTOCOL for that id", async () => {
    const target = new Counter();
    const server = rawServer(target);
    server.sendCalls([[1, ["slow", [0, 5]]]]);
    server.sendCalls([[1, ["increment", [0]]]]);
    await settle(1);
    expect(await server.replies()).toContainEqual([1, 3, "PROTOCOL", expect.stringContaining("already running")]);
    expect(target.calls).toBe(0);
    expect(server.closes).toEqual([]);
  });

  it("keeps refusing a duplicate id while the original call still runs", async () => {
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    class Gated extends Counter {
      wait() {
        return gate.then(() => "released");
      }
    }
    const target = new Gated();
    const server = rawServer(target);
    server.sendCalls([[1, ["wait", [0]]]]);
    server.sendCalls([[1, ["increment", [0]]]]); // duplicate: PROTOCOL
    server.sendCalls([[1, ["increment", [0]]]]); // still a duplicate: PROTOCOL again
    await settle();
    expect(target.calls, "a duplicate id ran while the original was still running").toBe(0);
    finish();
    const replies = await server.replies();
    expect(replies.filter((r) => r[0] === 1 && r[1] === 3)).toHaveLength(2);
    expect(replies).toContainEqual([1, 0, "released"]);
  });

  it("does not let duplicate ids lift the limit on running calls", async () => {
    class Gated extends Counter {
      started = 0;
      wait() {
        this.started++;
        return new Promise(() => {});
      }
    }
    const target = new Gated();
    const server = rawServer(target, { limits: { maxPendingCalls: 2 } });
    for (let id = 1; id <= 6; id++) {
      server.sendCalls([[id, ["wait", [0]]]]);
      server.sendCalls([[id, ["wait", [0]]]]); // duplicate
    }
    await settle();
    expect(target.started, "calls running at once despite maxPendingCalls = 2").toBeLessThanOrEqual(2);
  });

  it.each([
    ["a chain that is not an array", [1, "getValue"]],
    ["an empty chain", [1, []]],
    ["a chain that starts with a call", [1, [[0]]]],
    ["a chain step that is a number", [1, ["getValue", 5]]],
    ["an empty call step", [1, ["getValue", []]]],
    ["an unknown argument encoding tag", [1, ["increment", [7, 1]]]],
    ["a records step without its table", [1, ["increment", [1]]]],
    ["a call with extra elements", [1, ["getValue", [0]], "extra"]],
    ["a call without a chain", [1]],
  ])("answers %s with PROTOCOL and runs nothing", async (_name, envelope) => {
    const target = new Counter();
    const { closes, replies } = await inject(target, frame([envelope]));
    expect(closes).toEqual([]);
    expect(replies).toHaveLength(1);
    expect(replies[0]!.slice(0, 3)).toEqual([1, 3, "PROTOCOL"]);
    expect(target.calls).toBe(1);
  });

  it("answers too many arguments with LIMIT (JSON and records forms)", async () => {
    const target = new Counter();
    const options: RpcServerOptions = { limits: { maxArgs: 2 } };
    expectFailed(await run(target, ["increment", [0, 1, 2, 3]], options), "LIMIT");
    const records = [
      [1, [1, 2, 3]],
      [0, 1],
      [0, 2],
      [0, 3],
    ];
    expectFailed(await run(target, ["increment", [1, records]], options), "LIMIT");
    expect(target.calls).toBe(0);
  });

  it("answers a chain longer than maxChainLength with LIMIT before running it", async () => {
    const target = new Counter();
    const chain = ["config", ...Array.from({ length: 40 }, () => "limits")];
    expectFailed(await run(target, chain), "LIMIT");
    expectFailed(await run(target, ["config", "limits", "max"], { limits: { maxChainLength: 2 } }), "LIMIT");
    expect(target.calls).toBe(0);
  });

  it("closes with 1008 a frame with more calls than maxPendingCalls, running none", async () => {
    const target = new Counter();
    const calls = [1, 2, 3].map((id) => [id, ["increment", [0]]]);
    const { closes, replies } = await inject(target, frame(calls), { limits: { maxPendingCalls: 2 } });
    expect(closes.map((c) => c[0])).toEqual([1008]);
    expect(replies).toEqual([]);
    expect(target.n).toBe(0);
  });

  it("accepts a frame with exactly maxPendingCalls calls", async () => {
    const server = rawServer(new Counter(), { limits: { maxPendingCalls: 2 } });
    server.sendCalls([1, 2].map((id) => [id, ["increment", [0]]]));
    expect(await server.replies()).toEqual([
      [1, 0, 1],
      [2, 0, 2],
    ]);
  });

  it("answers each call of a frame larger than maxMessageBytes with LIMIT, without parsing or running it", async () => {
    const counter = new Counter();
    const server = rawServer(counter, { limits: { maxMessageBytes: 64 } });
    expect(
      server.sendCalls([
        [1, ["increment", [0, "x".repeat(100)]]],
        [2, ["increment", [0]]],
      ]),
    ).toBe(true);
    expect(await server.replies()).toEqual([
      [1, 3, "LIMIT", expect.stringContaining("more than this end's limits.maxMessageBytes (64)")],
      [2, 3, "LIMIT", expect.stringContaining("it was not run")],
    ]);
    expect(server.closes).toEqual([]);
    expect(server.sendCalls([[3, ["increment", [0]]]])).toBe(true);
    expect(await server.replies()).toContainEqual([3, 0, 1]);
  });

  it("closes with 1009 a frame larger than maxMessageBytes whose calls cannot be made out", () => {
    const server = rawServer(new Counter(), { limits: { maxMessageBytes: 64 } });
    expect(server.dispatch(`\u001eC${"x".repeat(100)}`)).toBe(true);
    expect(server.closes.map((c) => c[0])).toEqual([1009]);
  });

  it("returns false and does nothing for a message that is not a dorpc frame", () => {
    const server = rawServer(new Counter());
    expect(server.dispatch('{"hello":"world"}')).toBe(false);
    expect(server.dispatch(new Uint8Array([1, 2, 3]))).toBe(false);
    expect(server.closes).toEqual([]);
    expect(server.sent).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Close reasons
// ---------------------------------------------------------------------------------------------

const utf8Length = (text: string): number => new TextEncoder().encode(text).byteLength;

describe("close reasons", () => {
  it("leaves a short reason unchanged", () => {
    expect(closeReason("short")).toBe("short");
    const exactly123 = "a".repeat(123);
    expect(closeReason(exactly123)).toBe(exactly123);
  });

  it.each([
    ["ASCII", "x".repeat(500)],
    ["2-byte characters", "é".repeat(200)],
    ["3-byte characters", "€".repeat(200)],
    ["4-byte characters", "🌍".repeat(100)],
    ["mixed, misaligned", "a" + "🌍é€".repeat(60)],
    ["mixed, misaligned by two", "ab" + "🌍".repeat(60)],
    ["mixed, misaligned by three", "abc" + "🌍".repeat(60)],
  ])("never exceeds 123 UTF-8 bytes and never splits a character (%s)", (_name, text) => {
    const reason = closeReason(text);
    expect(utf8Length(reason)).toBeLessThanOrEqual(123);
    expect(reason).not.toContain("\ufffd");
    expect(text.startsWith(reason.replace(/\.\.\.$/, ""))).toBe(true);
  });

  it("keeps the reasons the dispatcher sends within 123 bytes for hostile multibyte input", async () => {
    const server = rawServer(new Counter());
    server.dispatch("\u001eC[" + "€".repeat(500));
    server.dispatch("\u001eC" + JSON.stringify(Array.from({ length: 2000 }, (_, i) => [i + 1, ["getValue", [0]]])));
    expect(server.closes.length).toBeGreaterThan(0);
    for (const [, reason] of server.closes) expect(utf8Length(reason)).toBeLessThanOrEqual(123);
  });
});

describe("the error helpers themselves", () => {
  it("expectRpcError accepts only dorpc errors", () => {
    expect(() => expectRpcError(new Error("plain"), "INTERNAL")).toThrow();
  });
});

describe("a frame with one unanswerable envelope", () => {
  it("runs none of its calls when a later envelope has a bad id, and closes with 1008", async () => {
    let ran = 0;
    const target = new (class Ledger {
      bump() {
        return ++ran;
      }
    })();
    const server = rawServer(target);
    server.sendCalls([
      [1, ["bump", [0]]],
      [2, ["bump", [0]]],
      [-1, ["bump", [0]]],
    ]);
    expect(await server.replies()).toEqual([]);
    expect(server.closes).toHaveLength(1);
    expect(server.closes[0]![0]).toBe(1008);
    expect(ran).toBe(0);
  });
});

describe("server options", () => {
  // The defaults are resolved once and cached; `null` was looked up as if it were `undefined`, so
  // it was refused until anything in the isolate (withRpc(Base), an RpcDurableObject without
  // rpcOptions) had resolved the defaults, and accepted as the defaults from then on.
  it("null is refused with BAD_OPTION, also after the defaults were resolved", () => {
    expectThrowsCode(() => resolveServerOptions(null as never), "BAD_OPTION");
    resolveServerOptions(undefined);
    expectThrowsCode(() => resolveServerOptions(null as never), "BAD_OPTION");
  });
});
