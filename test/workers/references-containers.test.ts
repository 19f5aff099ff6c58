/**
 * References carried inside values, in workerd over real sockets: functions and RpcTargets as a
 * Map's keys and values, Set members, deep in arrays and as an error's cause, both ways (a
 * client's call to the object and its answer, the object's call to a client and its answer).
 * Each arrives as a stub where it was sent, the same reference is one stub wherever it sits, and
 * every one is released when its call ends or its stub is disposed; a call carrying a stub that
 * is cut after it was sent says it may have run (it is not resent). What the receiving end
 * reaches on a client's RpcTarget or exposed object follows the object's own rules (methods and
 * their schemas; never fields, arrow fields, #private or _-names); and a client's function the
 * object kept never reaches another client (security.md, "References are capabilities").
 * The object's side of a call to a client runs through runInObject and rpcClient.
 */
import { RpcError, rpcMethod } from "@dorpc/rpc";
import { type ClientStub, RpcTarget, rpcClient, rpcSocketInfo } from "@dorpc/rpc/server";
import { createTestClient, dropConnection, runInObject, type TestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import * as v from "valibot";
import { describe, expect, it, vi } from "vitest";
import type { Composer } from "./compose-objects.js";
import type { Counter } from "./objects.js";
import { uniqueName } from "./helpers.js";

/** A value with `a` as a Map key, `b` as its value and in a Set, `a` three arrays deep and `b` as an error's cause. */
function containers(a: unknown, b: unknown) {
  return { map: new Map([[a, b]]), set: new Set([b]), nested: [[[a]]], error: new Error("carrier", { cause: b }) };
}
type Containers = ReturnType<typeof containers>;

/** Where `a` and `b` sit in `value`, as `containers` put them. */
function unpack(value: Containers): { a: unknown[]; b: unknown[] } {
  const [key, mapped] = [...value.map][0]!;
  return { a: [key, value.nested[0]![0]![0]], b: [mapped, [...value.set][0], value.error.cause] };
}

/** How many references the object holds for the client's (only) socket. */
function socketCounts(client: TestClient<unknown>) {
  return runInObject(client, (_obj, state) => {
    const info = rpcSocketInfo(state.getWebSockets()[0]!);
    return { exports: info?.exports, imports: info?.imports };
  });
}

/** Runs `fn` in the object behind `client`, with a stub of that client (calls the object makes to it). */
function fromObject<C, R>(client: TestClient<unknown>, fn: (peer: ClientStub<C>) => Promise<R>): Promise<R> {
  return runInObject(client, (obj, state) => fn(rpcClient<C>(obj as object, state.getWebSockets()[0]!)));
}

/** The code of what `promise` rejected with, or its value. */
function outcome(promise: PromiseLike<unknown>, withMessage = false): Promise<{ value: unknown } | { code: string; message?: string }> {
  return Promise.resolve(promise).then(
    (value) => ({ value }),
    (error: unknown) => ({
      code: RpcError.is(error) ? error.code : String(error),
      ...(withMessage ? { message: (error as Error).message } : {}),
    }),
  );
}

class Greeter extends RpcTarget {
  #count = 1;
  field = 2;
  arrow = () => "arrow";
  hi(): string {
    return "hi";
  }
  ok(): number {
    return this.#count;
  }
  checked = rpcMethod(v.strictTuple([v.number()]), (n: number) => n + 1);
  _under(): string {
    return "under";
  }
}

type Loose = Record<string, (...args: unknown[]) => Promise<unknown>>;

describe("a client's call and the object's answer", () => {
  it("the client's functions in a Map, a Set, nested arrays and an error's cause reach the object as stubs and come back as the client's own; the object holds nothing after", async () => {
    using counter = createTestClient<Counter>(env.COUNTER, uniqueName("fn-containers"));
    const f = () => 1;
    const g = () => 2;
    const back = unpack((await counter.echo(containers(f, g))) as Containers);
    expect(back).toEqual({ a: [f, f], b: [g, g, g] });
    expect(back.a[0]).toBe(f);
    expect(back.b[2]).toBe(g);
    expect(await socketCounts(counter)).toEqual({ exports: 0, imports: 0 });
  });

  it("the object's stub passed back in those positions is the object's instance there, and comes back as the same stub; disposed, the object releases it", async () => {
    using counter = createTestClient<Counter>(env.COUNTER, uniqueName("stub-containers"));
    const users = await counter.users;
    const back = unpack((await counter.echo(containers(users, users))) as Containers);
    for (const stub of [...back.a, ...back.b]) expect(stub).toBe(users);
    expect(await socketCounts(counter)).toEqual({ exports: 1, imports: 0 });
    users[Symbol.dispose]();
    await vi.waitFor(async () => expect(await socketCounts(counter)).toEqual({ exports: 0, imports: 0 }));
  });

  it("a call carrying the object's stub inside a value, cut after it was sent: REFERENCE_LOST saying it may have run", async () => {
    // Stubs do not survive a reconnect, so the call is not resent; "get a new stub" alone would
    // invite running it twice.
    using counter = createTestClient<Counter>(env.COUNTER, uniqueName("carried-cut"));
    const users = await counter.users;
    const call = outcome(counter.echo(containers(users, users)), true);
    for (let i = 0; i < 5; i++) await Promise.resolve(); // its frame leaves at the end of the turn
    dropConnection(counter); // before any answer can arrive
    expect(await call).toEqual({ code: "REFERENCE_LOST", message: expect.stringContaining("it may have run") });
  });
});

describe("the object's call to a client and the client's answer", () => {
  it("the object's RpcTarget and function in those positions reach the client as callable stubs, one per reference; released when the client's method returns", async () => {
    let seen: { a: unknown[]; b: unknown[] } | undefined;
    using client = createTestClient<Composer>(env.COMPOSER, uniqueName("to-client"), {
      expose: {
        take: async (value: Containers) => {
          seen = unpack(value);
          const [f] = seen.a as [() => Promise<number>];
          const [target] = seen.b as [Greeter];
          return [await f(), await target.hi()];
        },
      },
    });
    await client.info();
    const answer = await fromObject<{ take(value: Containers): [number, string] }, unknown>(client, (peer) =>
      peer.take(containers(() => 7, new Greeter()) as never),
    );
    expect(answer).toEqual([7, "hi"]);
    expect(new Set(seen!.a).size).toBe(1);
    expect(new Set(seen!.b).size).toBe(1);
    expect(await socketCounts(client)).toEqual({ exports: 0, imports: 0 });
  });

  it("the client's answer carrying its functions and RpcTarget in those positions: the object calls them, and disposing them leaves nothing held", async () => {
    using client = createTestClient<Composer>(env.COMPOSER, uniqueName("from-client"), {
      expose: { give: () => containers(() => 5, new Greeter()) },
    });
    await client.info();
    const result = await fromObject<{ give(): Containers }, unknown>(client, async (peer) => {
      const { a, b } = unpack(await peer.give());
      const outcome = [await (a[0] as () => Promise<number>)(), await (b[0] as Greeter).hi(), new Set(a).size, new Set(b).size];
      for (const stub of [a[0], b[0]] as Disposable[]) stub[Symbol.dispose]();
      return outcome;
    });
    expect(result).toEqual([5, "hi", 1, 1]);
    await vi.waitFor(async () => expect(await socketCounts(client)).toEqual({ exports: 0, imports: 0 }));
  });

  it("an error a client's method throws with an RpcTarget as its cause arrives with its name and message only", async () => {
    using client = createTestClient<Composer>(env.COMPOSER, uniqueName("thrown-cause"), {
      expose: {
        fail: () => {
          throw new RangeError("boom", { cause: new Greeter() });
        },
      },
    });
    await client.info();
    const caught = await fromObject<{ fail(): void }, unknown>(client, (peer) =>
      Promise.resolve(peer.fail()).then(
        () => "resolved",
        (error: Error) => ({ name: error.name, message: error.message, hasCause: "cause" in error }),
      ),
    );
    expect(caught).toEqual({ name: "RangeError", message: "boom", hasCause: false });
    expect(await socketCounts(client)).toEqual({ exports: 0, imports: 0 });
  });
});

describe("what the object reaches on what a client hands it", () => {
  it("a client's RpcTarget: its methods and rpcMethod fields (checked by their schemas), never fields, arrow fields, #private or _-names", async () => {
    using client = createTestClient<Composer>(env.COMPOSER, uniqueName("client-target"), {
      expose: { give: () => ({ target: new Greeter() }) },
    });
    await client.info();
    const seen = await fromObject<{ give(): { target: Loose } }, unknown>(client, async (peer) => {
      using target = (await peer.give()).target as unknown as Loose & Disposable;
      const reads: Record<string, unknown> = {};
      for (const name of ["field", "arrow", "#count", "_under", "constructor"]) {
        reads[name] = [await outcome(target[name]!()), await outcome(target[name] as unknown as Promise<unknown>)];
      }
      return {
        ok: await outcome(target.ok!()),
        checked: await outcome(target.checked!(1)),
        refused: await outcome(target.checked!("x")),
        reads,
      };
    });
    const notFound = [{ code: "NOT_FOUND" }, { code: "NOT_FOUND" }];
    expect(seen).toEqual({
      ok: { value: 1 },
      checked: { value: 2 },
      refused: { code: "INVALID_ARGUMENT" },
      reads: { field: notFound, arrow: notFound, "#count": notFound, _under: notFound, constructor: notFound },
    });
  });

  it("a client exposing a class instance: its class's methods and rpcMethod fields (a refused call never runs), not its fields or arrow fields", async () => {
    class Handlers {
      hits = 0;
      arrow = () => "arrow";
      hit(): number {
        return ++this.hits;
      }
      upper = rpcMethod(v.strictTuple([v.string()]), (s: string) => (this.hits++, s.toUpperCase()));
    }
    const handlers = new Handlers();
    using client = createTestClient<Composer>(env.COMPOSER, uniqueName("client-expose"), { expose: handlers });
    await client.info();
    const seen = await fromObject<Loose, unknown>(client, async (peer) => [
      await outcome(peer.hit!()),
      await outcome(peer.upper!("a")),
      await outcome(peer.upper!(1)),
      await outcome(peer.arrow!()),
      await outcome(peer.hits!()),
    ]);
    expect(seen).toEqual([{ value: 1 }, { value: "A" }, { code: "INVALID_ARGUMENT" }, { code: "NOT_FOUND" }, { code: "NOT_FOUND" }]);
    expect(handlers.hits).toBe(2);
  });
});

describe("a client's function the object kept, and another client", () => {
  it("the object passing client A's kept callback to client B is REFERENCE_LOST; B's method does not run and B's socket holds nothing", async () => {
    const name = uniqueName("relay");
    let ran = 0;
    using a = createTestClient<Composer>(env.COMPOSER, name);
    using b = createTestClient<Composer>(env.COMPOSER, name, { expose: { take: () => ran++ } });
    await a.listen(() => 1);
    await b.info();
    const seen = await runInObject(b, async (obj, state) => {
      const kept = (obj as unknown as { listener: unknown }).listener;
      // A's socket holds the kept callback; B's holds nothing.
      const bSocket = state.getWebSockets().find((ws) => rpcSocketInfo(ws)?.imports === 0)!;
      const relayed = await outcome(rpcClient<{ take(cb: unknown): number }>(obj, bSocket).take(kept));
      const info = rpcSocketInfo(bSocket)!;
      return { relayed, b: { exports: info.exports, imports: info.imports } };
    });
    expect(seen).toEqual({ relayed: { code: "REFERENCE_LOST" }, b: { exports: 0, imports: 0 } });
    expect(ran).toBe(0);
    expect(await b.emit("still A's")).toBe(1);
  });
});
