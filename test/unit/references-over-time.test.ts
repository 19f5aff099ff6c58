/**
 * Stubs and callbacks over the life of one connection (unit tier, paired transport, the real
 * dispatcher): what a stub of an RpcTarget subclass reaches (security.md, "References are
 * capabilities": the same rules on a stub as on the object, and `access.allow` gates only the
 * entry from the object), reference counts under dup(), dispose, aliasing and repeated arrivals
 * (protocol.md, "Counting": one release when nothing is left), what calls that fail part-way give
 * back, garbage collection of thousands of stubs in both directions, and the export and import
 * limits reached and recovered from.
 */
import * as v from "valibot";
import { describe, expect, it, vi } from "vitest";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { createRpcClient, rpcConnection, RpcTarget, rpcMethod, withCallOptions } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, settle } from "./helpers.js";

type Callback = ((...args: unknown[]) => unknown) & Disposable & { dup(): Callback };

class Base extends RpcTarget {
  inherited(): string {
    return "inherited";
  }
}

class Widget extends Base {
  #secret = "hash-private";
  static make(): string {
    return "static";
  }
  field = "field";
  arrow = () => "arrow";
  double = rpcMethod(v.strictTuple([v.number()]), (n: number) => n * 2);
  checked = rpcMethod(
    { args: v.strictTuple([v.string()]), result: v.object({ ok: v.boolean() }) },
    (s: string) => ({ ok: s === "yes", extra: "stripped" }) as { ok: boolean },
  );
  [Symbol.iterator](): Iterator<number> {
    return [1, 2][Symbol.iterator]();
  }
  get label(): string {
    return "getter";
  }
  #hidden(): string {
    return this.#secret;
  }
  secretLength(): number {
    return this.#hidden().length;
  }
  async *stream(): AsyncGenerator<number> {
    yield 1;
  }
  *sync(): Generator<number> {
    yield 1;
  }
  self(): Widget {
    return this;
  }
}

class Api {
  readonly widget = new Widget();
  kept: Callback[] = [];
  get target(): Widget {
    return this.widget;
  }
  getWidget(): Widget {
    return this.widget;
  }
  isWidget(value: unknown): boolean {
    return value === this.widget;
  }
  fresh(): Widget {
    return new Widget();
  }
  many(n: number): Widget[] {
    return Array.from({ length: n }, () => new Widget());
  }
  /** One target six times: in an array, an object and as a Map's key and value. */
  aliased(): unknown {
    const w = this.widget;
    return [w, w, { again: w }, new Map([[w, w]])];
  }
  /** A fresh target, then a value that cannot be sent. */
  badAfterTarget(): unknown {
    return [new Widget(), Symbol("unsendable")];
  }
  take(...args: unknown[]): number {
    return args.length;
  }
  async callEach(list: Callback[]): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const f of list) out.push(await f());
    return out;
  }
  keep(cb: Callback, times = 1): void {
    for (let i = 0; i < times; i++) this.kept.push(cb.dup());
  }
  drop(n: number): void {
    for (let i = 0; i < n; i++) this.kept.pop()![Symbol.dispose]();
  }
  disposeKeptTwice(): void {
    for (const k of this.kept.splice(0)) {
      k[Symbol.dispose]();
      k[Symbol.dispose]();
    }
  }
  /** A dup() the object never disposes: only the garbage collector can release it. */
  keepAndForget(cb: Callback): void {
    void cb.dup();
  }
  async invokeKept(): Promise<unknown> {
    return this.kept.at(-1)!();
  }
}

type Loose = Record<string, (...args: unknown[]) => Promise<unknown>>;

function setup(options?: RpcServerOptions, clientOptions?: Parameters<typeof createRpcClient>[2]) {
  const paired = pairWith(new Api(), options);
  const client = createRpcClient<Api>("API", "over-time", {
    transport: paired.factory,
    reconnect: { initialDelay: 1, maxDelay: 5 },
    ...clientOptions,
  });
  const session = getRpcSession(client);
  const connection = () => paired.connections[0]!;
  return {
    paired,
    client,
    session,
    server: () => connection().server()!,
    releasesByClient: () => releases(connection().sentByClient),
    releasesByServer: () => releases(connection().sentByServer),
  };
}

/** Release frames (`X`) among `frames`. */
function releases(frames: readonly unknown[]): unknown[] {
  return frames.filter((f) => typeof f === "string" && f.startsWith("\u001eX"));
}

/** Runs the garbage collector (node --expose-gc) until `until()` holds, at most `rounds` times. */
async function collectGarbage(until: () => boolean, rounds = 30): Promise<void> {
  for (let i = 0; i < rounds && !until(); i++) {
    (globalThis as { gc?: () => void }).gc!();
    await settle(2);
  }
}

describe("what a stub of an RpcTarget subclass reaches", () => {
  it("its methods, inherited methods, getters and rpcMethod fields, with their schemas", async () => {
    const { client } = setup();
    using _ = client;
    using widget = (await client.getWidget()) as unknown as Loose & Disposable;
    expect(await widget.inherited!()).toBe("inherited");
    expect(await widget.secretLength!()).toBe(12);
    expect(await (widget.label as unknown as Promise<unknown>)).toBe("getter");
    expect(await widget.double!(4)).toBe(8);
    await expectRejectsCode(widget.double!("x"), "INVALID_ARGUMENT");
    expect(await widget.checked!("yes")).toEqual({ ok: true });
    await expectRejectsCode(widget.checked!(1), "INVALID_ARGUMENT");
  });

  it("#private names, static methods, fields, arrow fields, symbol keys, constructor and __proto__ are NOT_FOUND, read or called", async () => {
    const { client } = setup();
    using _ = client;
    const widget = (await client.getWidget()) as unknown as Loose;
    for (const name of ["#secret", "#hidden", "make", "field", "arrow", "Symbol(Symbol.iterator)", "constructor", "__proto__"]) {
      expect((await expectRejectsCode(widget[name]!(), "NOT_FOUND")).message, name).toContain(name);
      await expectRejectsCode(widget[name] as unknown as Promise<unknown>, "NOT_FOUND");
    }
  });

  it("a generator method's result cannot be sent: ENCODE, not a hang", async () => {
    const { client } = setup();
    using _ = client;
    const widget = (await client.getWidget()) as unknown as Loose;
    await expectRejectsCode(widget.stream!(), "ENCODE");
    await expectRejectsCode(widget.sync!(), "ENCODE");
  });

  it("a method returning its own target gives the same stub, and passed back it is the object's instance", async () => {
    const { client } = setup();
    using _ = client;
    const widget = await client.getWidget();
    expect(await widget.self()).toBe(widget);
    expect(await client.isWidget(widget)).toBe(true);
  });

  it("access.allow gates calls from the object only: a refused getter's path is NOT_FOUND, the stub an allowed method returned is not gated", async () => {
    const { client } = setup({ access: { allow: ["getWidget"] } });
    using _ = client;
    await expectRejectsCode(client.target.inherited(), "NOT_FOUND");
    await expectRejectsCode(client.isWidget(1), "NOT_FOUND");
    expect(await client.getWidget().inherited()).toBe("inherited"); // pipelined on the allowed call
    expect(await (await client.getWidget()).inherited()).toBe("inherited");
    // Pipelined on a refused call: refused with it, nothing reached.
    await expectRejectsCode(client.fresh().inherited(), "NOT_FOUND");
  });
});

describe("reference counts", () => {
  it("500 dup()s of a stub, each disposed (some twice): one release, once the last holder is gone; the target arriving again is a fresh stub", async () => {
    const { client, server, releasesByClient } = setup();
    using _ = client;
    const widget = await client.getWidget();
    const dups = Array.from({ length: 500 }, () => widget.dup());
    widget[Symbol.dispose]();
    for (let i = 0; i < 499; i++) dups[i]![Symbol.dispose]();
    for (let i = 0; i < 499; i++) dups[i]![Symbol.dispose]();
    await settle();
    expect(server().exports.size).toBe(1);
    expect(await dups[499]!.inherited()).toBe("inherited");
    dups[499]![Symbol.dispose]();
    await settle();
    expect(server().exports.size).toBe(0);
    expect(releasesByClient()).toHaveLength(1);
    const again = await client.getWidget();
    expect(again).not.toBe(widget);
    expect(await again.inherited()).toBe("inherited");
  });

  it("the same target arriving 50 times before a dispose is one stub; one dispose releases every arrival", async () => {
    const { client, server } = setup();
    using _ = client;
    const stubs = await Promise.all(Array.from({ length: 50 }, () => client.getWidget()));
    expect(new Set(stubs).size).toBe(1);
    stubs[0]![Symbol.dispose]();
    await settle();
    expect(server().exports.size).toBe(0);
  });

  it("disposed while the same target is on its way again: the new arrival stays usable until it is disposed", async () => {
    const { client, server } = setup();
    using _ = client;
    const first = await client.getWidget();
    const second = client.getWidget();
    first[Symbol.dispose]();
    const arrived = await second;
    expect(await arrived.inherited()).toBe("inherited");
    expect(server().exports.size).toBe(1);
    arrived[Symbol.dispose]();
    await settle();
    expect(server().exports.size).toBe(0);
  });

  it("one target six times in one result (array, object, Map key and value) is one stub; one dispose frees the export", async () => {
    const { client, server } = setup();
    using _ = client;
    const value = (await client.aliased()) as [unknown, unknown, { again: unknown }, Map<unknown, unknown>];
    expect([value[1], value[2].again, ...[...value[3]][0]!]).toEqual([value[0], value[0], value[0], value[0]]);
    expect(server().exports.size).toBe(1);
    (value[0] as Disposable)[Symbol.dispose]();
    await settle();
    expect(server().exports.size).toBe(0);
  });

  it("one function five times in one call (nested, in a Set and a Map): the object releases it once, the client's export is freed", async () => {
    const { client, server, session, releasesByServer } = setup();
    using _ = client;
    const fn = () => "x";
    expect(await client.take(fn, [fn, { f: fn }], new Set([fn]), new Map([[fn, fn]]))).toBe(4);
    await settle();
    expect({ imports: server().imports.size, exports: session.exports.size, releases: releasesByServer().length }).toEqual({
      imports: 0,
      exports: 0,
      releases: 1,
    });
  });

  it("the object dup()s a client's callback 100 times and disposes each: one release, and the function passed again works", async () => {
    const { client, server, releasesByServer } = setup();
    using _ = client;
    const fn = () => "ok";
    await client.keep(fn as never, 100);
    await client.drop(99);
    expect(await client.invokeKept()).toBe("ok");
    await client.drop(1);
    await settle();
    expect(releasesByServer()).toHaveLength(1);
    expect(server().imports.size).toBe(0);
    await client.keep(fn as never);
    expect(await client.invokeKept()).toBe("ok");
  });
});

describe("calls that fail part-way give back what they carried", () => {
  it("a result that fails to encode after a target in it was exported: ENCODE, and no export is left", async () => {
    const { client, server } = setup();
    using _ = client;
    await expectRejectsCode(client.badAfterTarget(), "ENCODE");
    await settle();
    expect(server().exports.size).toBe(0);
  });

  it("arguments that fail to encode after a function in them was exported: ENCODE, and the client's export is freed", async () => {
    const { client, session } = setup();
    using _ = client;
    await expectRejectsCode(
      client.take(() => 1, Symbol("x")),
      "ENCODE",
    );
    await settle();
    expect(session.exports.size).toBe(0);
  });

  it("a call that times out while the object awaits its callback: once the callback answers, neither end holds anything", async () => {
    const { client, session, server } = setup();
    using _ = client;
    let answer!: (value: number) => void;
    const callback = () => new Promise<number>((resolve) => (answer = resolve));
    await expectRejectsCode(withCallOptions(client.callEach([callback] as never), { timeout: 20 }), "TIMEOUT");
    expect(server().imports.size).toBe(1); // the object's await is still on the callback
    answer(1);
    await vi.waitFor(() => expect({ imports: server().imports.size, exports: session.exports.size }).toEqual({ imports: 0, exports: 0 }));
  });
});

describe("garbage collection", () => {
  it("5,000 stubs the client dropped are released by the garbage collector; the next one works", async () => {
    const { client, server } = setup();
    using _ = client;
    for (let batch = 0; batch < 5; batch++) await Promise.all(Array.from({ length: 1000 }, () => client.fresh().then(() => undefined)));
    expect(server().exports.size).toBe(5000);
    await collectGarbage(() => server().exports.size === 0);
    expect(server().exports.size).toBe(0);
    expect(await (await client.fresh()).inherited()).toBe("inherited");
  });

  it("10,000 callbacks the object dup()ed and dropped are released by the garbage collector, on both ends", async () => {
    const { client, server, session } = setup({ limits: { maxImports: 20_000 } }, { limits: { maxExports: 20_000 } });
    using _ = client;
    for (let batch = 0; batch < 10; batch++)
      await Promise.all(Array.from({ length: 1000 }, () => client.keepAndForget((() => 1) as never)));
    await collectGarbage(() => session.exports.size === 0);
    expect({ imports: server().imports.size, exports: session.exports.size }).toEqual({ imports: 0, exports: 0 });
  });

  it("a kept callback disposed twice and then collected is released exactly once; passed again, it works", async () => {
    const { client, session, releasesByServer } = setup();
    using _ = client;
    const fn = () => "again";
    await client.keep(fn as never);
    await client.keep(fn as never);
    await client.disposeKeptTwice();
    await settle();
    await collectGarbage(() => false, 5);
    expect({ releases: releasesByServer().length, exports: session.exports.size }).toEqual({ releases: 1, exports: 0 });
    await client.keep(fn as never);
    expect(await client.invokeKept()).toBe("again");
  });
});

describe("export and import limits reached and recovered from", () => {
  it("the object's maxImports: a call carrying one function too many is LIMIT, the client's exports are freed, and a call at the limit works", async () => {
    const { client, server, session } = setup({ limits: { maxImports: 3 } });
    using _ = client;
    await expectRejectsCode(
      client.take(
        () => 1,
        () => 2,
        () => 3,
        () => 4,
      ),
      "LIMIT",
    );
    await settle();
    expect({ imports: server().imports.size, exports: session.exports.size }).toEqual({ imports: 0, exports: 0 });
    expect(await client.callEach([() => 1, () => 2, () => 3] as never)).toEqual([1, 2, 3]);
    expect(rpcConnection(client).state).toBe("open");
  });

  it("the client's maxImports: an answer with one target too many is LIMIT, the object's exports are freed, and answers at the limit work, again after a dispose", async () => {
    const { client, server } = setup(undefined, { limits: { maxImports: 3 } });
    using _ = client;
    await expectRejectsCode(client.many(4), "LIMIT");
    await settle();
    expect(server().exports.size).toBe(0);
    const first = await client.many(3);
    for (const stub of first) stub[Symbol.dispose]();
    await settle();
    expect(server().exports.size).toBe(0);
    expect(await client.many(3)).toHaveLength(3);
  });

  it("the object's maxExports: past it a result is LIMIT; disposing one stub makes room again", async () => {
    const { client, server } = setup({ limits: { maxExports: 3 } });
    using _ = client;
    const stubs = [await client.fresh(), await client.fresh(), await client.fresh()];
    await expectRejectsCode(client.fresh(), "LIMIT");
    await settle();
    expect(server().exports.size).toBe(3);
    stubs[0]![Symbol.dispose]();
    await settle();
    expect(await (await client.fresh()).inherited()).toBe("inherited");
  });

  it("the object's maxExports counts one target once, however often it is handed out", async () => {
    const { client, server } = setup({ limits: { maxExports: 1 } });
    using _ = client;
    expect(await Promise.all(Array.from({ length: 20 }, () => client.aliased()))).toHaveLength(20);
    await expectRejectsCode(client.fresh(), "LIMIT");
    expect(server().exports.size).toBe(1);
  });

  it("the client's maxExports: a call passing one function too many is LIMIT and sends nothing; a call at the limit works", async () => {
    const { client, session, paired } = setup(undefined, { limits: { maxExports: 3 } });
    using _ = client;
    await client.take(); // connected
    const sent = paired.connections[0]!.sentByClient.length;
    await expectRejectsCode(
      client.take(
        () => 1,
        () => 2,
        () => 3,
        () => 4,
      ),
      "LIMIT",
    );
    expect(paired.connections[0]!.sentByClient).toHaveLength(sent);
    expect(session.exports.size).toBe(0);
    expect(await client.callEach([() => 1, () => 2, () => 3] as never)).toEqual([1, 2, 3]);
    await settle();
    expect(session.exports.size).toBe(0);
  });
});
