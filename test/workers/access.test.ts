/**
 * The access policy in workerd: what a client-sent chain can never reach on a real
 * RpcDurableObject, and that refusals do not leak the object's env.
 */
import { RpcError } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createTestClient } from "@dorpc/testing";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

const SECRET = "s3cr3t-value";

/** The client without its static types, to build chains the types forbid. */
// biome-ignore lint/suspicious/noExplicitAny: the tests build chains the types forbid
type Loose = any;

/** Every error a test saw, checked at the end for the secret. */
const seen: unknown[] = [];

async function notFound(promise: PromiseLike<unknown>): Promise<RpcError> {
  const error = await rpcFailure(promise, "NOT_FOUND");
  seen.push(error);
  return error;
}

function texts(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return `${error.name} ${error.message} ${error.stack ?? ""} ${texts(error.cause ?? "")}`;
}

describe("access policy over a real connection", () => {
  it("ctx, env and constructor are NOT_FOUND as reads, calls and chain heads", async () => {
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("reserved"));
    const client = typed as unknown as Loose;
    await notFound(client.ctx);
    await notFound(client.ctx.storage.get("count"));
    await notFound(client.ctx.storage.kv.get("count"));
    await notFound(client.env);
    await notFound(client.env.SECRET);
    await notFound(client.constructor);
    await notFound(client.constructor.name);
    await notFound(client.constructor.rpcOptions);
  });

  it("fetch, webSocketMessage, webSocketClose, webSocketError and alarm cannot be called", async () => {
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("lifecycle"));
    const client = typed as unknown as Loose;
    await notFound(client.fetch("http://x/"));
    await notFound(client.webSocketMessage(null, "x"));
    await notFound(client.webSocketClose(null, 1000, ""));
    await notFound(client.webSocketError(null));
    await notFound(client.alarm());
  });

  it("_-prefixed methods, instance fields and arrow-function fields are NOT_FOUND", async () => {
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("private"));
    const client = typed as unknown as Loose;
    const error = await notFound(client._private());
    expect(error.message).toContain("_private");
    await notFound(client.secretField);
    await notFound(client.arrowField());
    await notFound(client.instanceId);
  });

  it("Object.prototype names and __proto__ are NOT_FOUND on the object and on data it returns", async () => {
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("proto"));
    const client = typed as unknown as Loose;
    await notFound(client.toString());
    // biome-ignore lint/suspicious/noPrototypeBuiltins: the remote name is what is tested
    await notFound(client.hasOwnProperty("increment"));
    await notFound(client.__proto__);
    await notFound(client.config.toString());
    await notFound(client.config.__proto__);
    await notFound(client.config.constructor);
    await notFound(client.config.names.length);
  });

  it("a plain-data key named like a Function.prototype member (name, length) is not reachable: rule 1 refuses the name anywhere in a chain", async () => {
    // Documented in access.ts (rule 1): every Function.prototype name is refused at any step, so
    // `client.users.get("a").name` is NOT_FOUND although `name` is an own data property of the
    // plain object the method returned. Awaiting the whole object and reading .name works.
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("name-key"));
    const client = typed as unknown as Loose;
    await notFound(client.users.get("a").name);
    expect((await client.users.get("a")).name).toBe("Ada");
  });

  it("an RpcTarget exposes only its class's methods: not its fields, _-names or constructor", async () => {
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("target"));
    const client = typed as unknown as Loose;
    await notFound(client.users.hidden);
    await notFound(client.users._internal());
    await notFound(client.users.constructor);
    await notFound(client.users.table);
    // The RpcTarget itself travels by reference: awaiting it gives a stub with the same rules.
    using users = await client.users;
    expect(await users.get("a")).toMatchObject({ name: "Ada" });
    await notFound(users.hidden);
    await notFound(users.constructor);
  });

  it("a getter returning this.ctx.storage exposes nothing: storageGetter.deleteAll() is NOT_FOUND and storage is unchanged", async () => {
    const name = uniqueName("storage");
    using typed = createTestClient<Counter>(env.COUNTER, name);
    const client = typed as unknown as Loose;
    expect(await client.increment(7)).toBe(7);
    await notFound(client.storageGetter.deleteAll());
    await notFound(client.storageGetter.delete("count"));
    await notFound(client.storageGetter.put("count", 0));
    await notFound(client.storageGetter.kv.put("count", 0));
    await notFound(client.storageGetter.sql.exec("DELETE FROM _cf_KV"));
    await notFound(client.storageGetter.get("count"));
    const stored = await runInDurableObject(env.COUNTER.getByName(name), (_instance, state) => state.storage.kv.get("count"));
    expect(stored).toBe(7);
    expect(await client.getValue()).toBe(7);
    // The storage object itself cannot travel either.
    const error = await rejection(client.storageGetter);
    expect(RpcError.is(error) && error.code).toBe("ENCODE");
    seen.push(error);
  });

  it("calling a getter or ending a chain at a method is NOT_CALLABLE", async () => {
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("callable"));
    const client = typed as unknown as Loose;
    seen.push(await rpcFailure(client.config(), "NOT_CALLABLE"));
    seen.push(await rpcFailure(client.increment, "NOT_CALLABLE"));
    seen.push(await rpcFailure(client.users.get, "NOT_CALLABLE"));
    seen.push(await rpcFailure(client.getValue()(), "NOT_CALLABLE"));
    expect(await client.getValue()).toBe(0); // nothing ran
  });

  it("a method that does not exist is NOT_FOUND, answered the same way as a forbidden one", async () => {
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("missing"));
    const client = typed as unknown as Loose;
    const missing = await notFound(client.noSuchMethod());
    const forbidden = await notFound(client.env());
    expect(missing.message.replace("noSuchMethod", "X")).toBe(forbidden.message.replace("env", "X"));
  });

  it("the SECRET var never appears in any refusal or error message a client saw", async () => {
    // Also provoke every error path once more in this test, so it stands alone.
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("secret"));
    const client = typed as unknown as Loose;
    await notFound(client.env.SECRET);
    await notFound(client.secretField);
    await notFound(client.arrowField());
    await notFound(client._private());
    seen.push(await rejection(client.throwTypeError()));
    seen.push(await rejection(client.throwCustom()));
    const unknownBinding = await SELF.fetch("http://x/__rpc/SECRET/a");
    const body = await unknownBinding.text();
    expect(unknownBinding.status).toBe(404);
    expect(body).not.toContain(SECRET);
    // Only Durable Object bindings are listed, never other env keys.
    expect(body).not.toMatch(/\bSECRET\b.*:.*SECRET|Durable Object bindings:.*SECRET/);
    expect(seen.length).toBeGreaterThan(20);
    for (const error of seen) expect(texts(error)).not.toContain(SECRET);
  });
});
