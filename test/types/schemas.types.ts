/**
 * Compile-only: types follow the schemas of `rpcMethod`, with Valibot and Zod, on both sides.
 *  - The method's parameters are the argument schema's OUTPUT (what the object's function receives).
 *  - The client's parameters are its INPUT (what the object accepts before transforms and
 *    coercions), and a result schema's output is what the client gets.
 *  - The client's `validate` option is keyed by the class's method names.
 */
import { createRpcClient, type RpcStub } from "@dorpc/rpc";
import { RpcDurableObject, RpcTarget, rpcMethod } from "@dorpc/rpc/server";
import * as v from "valibot";
import { z } from "zod";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

const incrementArgs = v.strictTuple([v.pipe(v.number(), v.integer())]);
const renameArgs = z.tuple([z.strictObject({ id: z.number(), name: z.string() })]);

class Tally extends RpcTarget {
  bump = rpcMethod(v.tuple([v.number()]), (by) => {
    assertType<Equal<typeof by, number>>();
    return by;
  });
}

class Shop extends RpcDurableObject {
  // Valibot: the parameter is inferred from the schema's output.
  increment = rpcMethod(incrementArgs, (by) => {
    assertType<Equal<typeof by, number>>();
    return by + 1;
  });
  // Zod, with an object argument.
  rename = rpcMethod(renameArgs, (user) => {
    assertType<Equal<typeof user, { id: number; name: string }>>();
    return user.name;
  });
  // A transform: the client passes a string, the method receives a number (Valibot).
  parse = rpcMethod(v.tuple([v.pipe(v.string(), v.transform(Number))]), (n) => {
    assertType<Equal<typeof n, number>>();
    return n * 2;
  });
  // The same with Zod.
  parseZ = rpcMethod(z.tuple([z.string().transform((s) => s.length)]), (n) => {
    assertType<Equal<typeof n, number>>();
    return n;
  });
  // A coercion: Zod's coerce accepts anything on input.
  coerce = rpcMethod(z.tuple([z.coerce.number()]), (n) => {
    assertType<Equal<typeof n, number>>();
    return n;
  });
  // Defaults follow the schema: the method gets a number, the client may pass undefined (Valibot).
  page = rpcMethod(v.tuple([v.optional(v.number(), 10)]), (size) => {
    assertType<Equal<typeof size, number>>();
    return size;
  });
  // Zod marks an optional trailing element optional on input: the client may leave it out.
  pageZ = rpcMethod(z.tuple([z.number().optional()]), (size) => {
    assertType<Equal<typeof size, number | undefined>>();
    return size ?? 10;
  });
  // A spec with a result schema: the client gets the result schema's output.
  profile = rpcMethod({ args: z.tuple([z.number()]), result: z.object({ id: z.number(), name: z.string() }) }, async (id) => {
    assertType<Equal<typeof id, number>>();
    return { id, name: "Ada", passwordHash: "x" };
  });
  // A spec without an argument schema keeps the function's own parameters.
  peek = rpcMethod({ readOnly: true }, (key: string) => key.length);
  // An async schema: the types are the same.
  claim = rpcMethod(
    v.tupleAsync([
      v.pipeAsync(
        v.string(),
        v.checkAsync(async (s) => s !== "taken"),
      ),
    ]),
    (name) => {
      assertType<Equal<typeof name, string>>();
      return name;
    },
  );
  tally = rpcMethod(v.tuple([]), () => new Tally());
  adder = rpcMethod(v.tuple([]), () => rpcMethod(v.tuple([v.pipe(v.string(), v.transform(Number))]), (n) => n + 1));
  get label(): string {
    return "shop";
  }
  plain(x: number): number {
    return x;
  }
}

// @ts-expect-error: the function's parameter must be the schema's output
rpcMethod(v.tuple([v.number()]), (by: string) => by);
// @ts-expect-error: an args schema describes the argument list, not one argument
rpcMethod(v.number(), (by) => by);

declare const baseUrl: string;
const shop = createRpcClient<Shop>("SHOP", "a", { baseUrl });

// The client passes the schema's input and gets the method's result.
const incremented: Promise<number> = shop.increment(1);
// @ts-expect-error: the input is a number
shop.increment("1");
// @ts-expect-error: strictTuple: exactly one argument
shop.increment(1, 2);
const renamed: Promise<string> = shop.rename({ id: 1, name: "a" });
// @ts-expect-error: id is a number
shop.rename({ id: "1", name: "a" });

// Transforms: input ≠ output. The client passes the string the schema takes.
const parsed: Promise<number> = shop.parse("21");
// @ts-expect-error: the client passes the input (a string), not the output (a number)
shop.parse(21);
const parsedZ: Promise<number> = shop.parseZ("abc");
// @ts-expect-error: Zod transform input is a string
shop.parseZ(3);
// Coercion: anything goes on input.
shop.coerce("3");
shop.coerce(3);
// Optional with a default.
shop.page(undefined);
shop.page(5);
// @ts-expect-error: a number or undefined
shop.page("5");
shop.pageZ();
shop.pageZ(5);

// A result schema: the client gets its output (passwordHash is not in it).
const profile = shop.profile(1);
assertType<Equal<Awaited<typeof profile>, { id: number; name: string }>>();
// No args schema: the function's parameters.
const peeked: Promise<number> = shop.peek("k");
// @ts-expect-error: peek takes a string
shop.peek(1);
const claimed: Promise<string> = shop.claim("ada");

// Stubs and functions handed out follow their schemas too.
const tally = await shop.tally();
assertType<Equal<typeof tally, RpcStub<Tally>>>();
const bumped: Promise<number> = tally.bump(1);
// @ts-expect-error: bump takes a number
tally.bump("1");
const pipelinedBump: Promise<number> = shop.tally().bump(2);
const adder = await shop.adder();
const added: Promise<number> = adder("41");
// @ts-expect-error: the handed-out function takes the schema's input (a string)
adder(41);

// The validate option is keyed by the class's method names (and dotted paths through properties).
createRpcClient<Shop>("SHOP", "a", {
  baseUrl,
  validate: { increment: incrementArgs, rename: renameArgs, "tally.bump": v.tuple([v.number()]) },
});
// @ts-expect-error: no method "incremnt"
createRpcClient<Shop>("SHOP", "a", { baseUrl, validate: { incremnt: incrementArgs } });
// @ts-expect-error: a getter takes no arguments to validate
createRpcClient<Shop>("SHOP", "a", { baseUrl, validate: { label: incrementArgs } });
// @ts-expect-error: a schema of one value is not a schema of the argument list
createRpcClient<Shop>("SHOP", "a", { baseUrl, validate: { increment: v.number() } });
// Without a class, any method name.
createRpcClient("SHOP", "a", { baseUrl, validate: { increment: incrementArgs } });

void [incremented, renamed, parsed, parsedZ, peeked, claimed, bumped, pipelinedBump, added];
