/**
 * Durable Objects whose methods declare argument schemas (schema.test.ts): `Vault` writes to
 * storage in every method, so a refused call that ran anyway would show in a storage snapshot;
 * `StrictVault` is served with `requireSchemas: true` (and a topic, whose system calls are
 * dorpc's own and need no schema); `Unchecked` is served with it but forgot one.
 *
 * The schemas live in their own module-level constants, as a module shared with a client would
 * export them (the client-side tests pass the same ones to `validate`).
 */
import { RpcDurableObject, RpcTarget, rpcMethod } from "@dorpc/rpc/server";
import * as v from "valibot";
import { z } from "zod";

export const incrementArgs = v.strictTuple([v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000))]);
export const noteArgs = z.tuple([z.strictObject({ title: z.string().min(1).max(50), tags: z.array(z.string().max(20)).max(10) })]);
export const amountArgs = z.tuple([z.number().int().positive()]);
/** Async, as a uniqueness check against another system would be. */
export const claimArgs = z.tuple([
  z.string().refine(async (name) => {
    await scheduler.wait(1);
    return name !== "taken";
  }, "That name is taken."),
]);
/** Digits on the wire, a number in the method. */
export const priceArgs = v.strictTuple([v.pipe(v.string(), v.regex(/^\d{1,6}$/), v.transform(Number))]);

/** Reached by `client.notes.add(…)` (a chain through a getter) and returned by `shelf()` (a stub). */
export class Notes extends RpcTarget {
  constructor(private readonly storage: DurableObjectStorage) {
    super();
  }
  add = rpcMethod(noteArgs, (note) => {
    const n = (this.storage.kv.get<number>("notes") ?? 0) + 1;
    this.storage.kv.put("notes", n);
    this.storage.kv.put(`note:${n}`, note);
    return n;
  });
}

export class Vault extends RpcDurableObject<Env> {
  increment = rpcMethod(incrementArgs, (by) => {
    const value = (this.ctx.storage.kv.get<number>("count") ?? 0) + by;
    this.ctx.storage.kv.put("count", value);
    return value;
  });
  claim = rpcMethod(claimArgs, (name) => {
    this.ctx.storage.kv.put("owner", name);
    return name;
  });
  setPrice = rpcMethod(priceArgs, (price) => {
    this.ctx.storage.kv.put("price", price);
    return typeof price;
  });
  get notes(): Notes {
    return new Notes(this.ctx.storage);
  }
  shelf = rpcMethod(v.strictTuple([]), () => new Notes(this.ctx.storage));
}

export class StrictVault extends RpcDurableObject<Env, unknown, { count: number }> {
  static rpcOptions = { requireSchemas: true, topics: { count: {} } };

  increment = rpcMethod(amountArgs, (by) => {
    const value = (this.ctx.storage.kv.get<number>("count") ?? 0) + by;
    this.ctx.storage.kv.put("count", value);
    this.publish("count", value);
    return value;
  });
  /** A getter: no arguments, so no schema needed. */
  get value(): number {
    return this.ctx.storage.kv.get<number>("count") ?? 0;
  }
}

export class Unchecked extends RpcDurableObject<Env> {
  static rpcOptions = { requireSchemas: true };

  increment = rpcMethod(amountArgs, (by) => by);
  /** Forgot its schema: the whole object refuses to be served. */
  reset(): void {
    this.ctx.storage.kv.delete("count");
  }
}
