/**
 * Argument schemas in workerd, over real (hibernatable) WebSockets: a hostile argument never
 * reaches the method and storage stays as it was; async schemas and transforms; chains and stubs;
 * client-side validation sends nothing; requireSchemas refuses an object that forgot a schema.
 */
import { RpcError, subscribe } from "@dorpc/rpc";
import { rpcMethod, withRpc } from "@dorpc/rpc/server";
import { createTestClient, readStorage, testConnection } from "@dorpc/testing";
import { DurableObject, env } from "cloudflare:workers";
import * as v from "valibot";
import { describe, expect, it, vi } from "vitest";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";
import { incrementArgs, noteArgs, type StrictVault, type Unchecked, type Vault } from "./schema-objects.js";

const vault = (label: string) => createTestClient<Vault>(env.VAULT, uniqueName(label));

describe("a Durable Object refuses what its schemas refuse", () => {
  it("hostile arguments never reach the method: INVALID_ARGUMENT with the issues, storage untouched", async () => {
    using client = vault("hostile");
    expect(await client.increment(5)).toBe(5);
    const before = await readStorage(client);
    const hostile: unknown[][] = [
      ["5"], // wrong type
      [0], // below the minimum
      [1.5], // not an integer
      [10_000], // above the maximum
      [{ valueOf: 5, toString: "5" }], // an object posing as a number
      [[5]],
      [null],
      [1, 2], // an extra argument
      [], // a missing one
    ];
    for (const args of hostile) {
      const error = await rpcFailure((client.increment as (...a: unknown[]) => Promise<number>)(...args), "INVALID_ARGUMENT");
      expect(error.issues!.length, JSON.stringify(args)).toBeGreaterThan(0);
      expect(error.message).toContain('Invalid arguments for "increment" on Vault: arguments');
    }
    expect(await readStorage(client)).toEqual(before);
    expect(await client.increment(1)).toBe(6);
  });

  it("extra keys and huge arrays in an object argument are refused with their paths (Zod), through a chain", async () => {
    using client = vault("notes");
    const before = await readStorage(client);
    const extraKey = await rpcFailure(client.notes.add({ title: "a", tags: [], admin: true } as never), "INVALID_ARGUMENT");
    expect(extraKey.issues).toEqual([expect.objectContaining({ path: [0] })]);
    expect(extraKey.issues![0]!.message).toContain("admin");
    const huge = await rpcFailure(client.notes.add({ title: "a", tags: new Array(20_000).fill("t") }), "INVALID_ARGUMENT");
    expect(huge.issues).toEqual([expect.objectContaining({ path: [0, "tags"] })]);
    const nested = await rpcFailure(client.notes.add({ title: "", tags: ["x".repeat(21)] }), "INVALID_ARGUMENT");
    expect(nested.issues!.map((issue) => issue.path)).toEqual([
      [0, "title"],
      [0, "tags", 0],
    ]);
    expect(await readStorage(client)).toEqual(before);
    expect(await client.notes.add({ title: "kept", tags: ["a"] })).toBe(1);
    expect(await readStorage(client, "note:1")).toEqual({ title: "kept", tags: ["a"] });
  });

  it("a stub's calls are checked too", async () => {
    using client = vault("stub");
    using shelf = await client.shelf();
    const before = await readStorage(client);
    await rpcFailure(shelf.add({ title: 5 } as never), "INVALID_ARGUMENT");
    expect(await readStorage(client)).toEqual(before);
    expect(await shelf.add({ title: "t", tags: [] })).toBe(1);
  });

  it("an async schema refuses before the method runs and accepts after a turn", async () => {
    using client = vault("async");
    const error = await rpcFailure(client.claim("taken"), "INVALID_ARGUMENT");
    expect(error.issues).toEqual([{ message: "That name is taken.", path: [0] }]);
    expect(await readStorage(client, "owner")).toBeUndefined();
    expect(await client.claim("ada")).toBe("ada");
    expect(await readStorage(client, "owner")).toBe("ada");
  });

  it("the method gets the schema's output: a string of digits is stored as a number", async () => {
    using client = vault("transform");
    expect(await client.setPrice("120")).toBe("number");
    expect(await readStorage(client, "price")).toBe(120);
    await rpcFailure(client.setPrice("12O"), "INVALID_ARGUMENT");
    expect(await readStorage(client, "price")).toBe(120);
  });
});

describe("client-side validation in workerd", () => {
  it("with the object's own schemas, a bad call is refused without connecting; good calls go through", async () => {
    using client = createTestClient<Vault>(env.VAULT, uniqueName("client-side"), {
      validate: { increment: incrementArgs, "notes.add": noteArgs },
    });
    const local = await rpcFailure(client.increment(0), "INVALID_ARGUMENT");
    await rpcFailure(client.notes.add({ title: "", tags: [] }), "INVALID_ARGUMENT");
    expect(local.message).toContain("nothing was sent");
    expect(testConnection(client).attempts).toHaveLength(0);
    expect(await client.increment(2)).toBe(2);
    // The same error and issues the object gives.
    using plain = vault("client-side-remote");
    const remote = await rpcFailure(plain.increment(0), "INVALID_ARGUMENT");
    expect(local.issues).toEqual(remote.issues);
  });
});

describe("requireSchemas", () => {
  it("an object whose methods all have schemas is served; getters and topic subscriptions need none", async () => {
    using client = createTestClient<StrictVault>(env.STRICT_VAULT, uniqueName("strict"));
    const seen: number[] = [];
    using sub = subscribe(client, "count", (value) => void seen.push(value));
    await sub.ready;
    expect(await client.increment(2)).toBe(2);
    expect(await client.value).toBe(2);
    await rpcFailure(client.increment(-1), "INVALID_ARGUMENT");
    await vi.waitFor(() => expect(seen).toEqual([2]));
  });

  it("an object with a method without a schema refuses to be served at all, naming the method", async () => {
    const name = uniqueName("unchecked");
    const stub = env.UNCHECKED.getByName(name);
    // Every request to the RPC path is answered 500 with the typed error (and logged).
    const upgrade = await stub.fetch(`https://test/__rpc/UNCHECKED/${name}`, { headers: { Upgrade: "websocket" } });
    expect(upgrade.status).toBe(500);
    expect(await upgrade.json()).toEqual({
      error: {
        code: "BAD_OPTION",
        message: expect.stringContaining('Unchecked is served with requireSchemas, but this method has no argument schema: "reset".'),
      },
    });
    // A client's call fails instead of reaching the method, quoting why.
    using client = createTestClient<Unchecked>(env.UNCHECKED, name, { reconnect: false });
    const error = await rejection(client.reset());
    expect(RpcError.is(error) && error.code).toBe("CONNECT_FAILED");
    expect((error as RpcError).message).toContain('no argument schema: "reset"');
    expect(testConnection(client).attempts.every((attempt) => attempt.status !== 101)).toBe(true);
  });

  it("withRpc checks the class's prototype when it wraps it", () => {
    class Forgetful extends DurableObject {
      get label(): string {
        return "getters need no schema";
      }
      increment = rpcMethod(v.strictTuple([v.number()]), (by) => by);
      reset(): void {}
    }
    let error: unknown;
    try {
      withRpc(Forgetful, { requireSchemas: true });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe("BAD_OPTION");
    expect((error as RpcError).message).toContain('no argument schema: "reset".');
    expect(() => withRpc(Forgetful)).not.toThrow();
  });
});
