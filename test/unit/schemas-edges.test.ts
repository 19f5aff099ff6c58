/**
 * Argument schemas (rpcMethod) and client-side validation at their edges, over the in-memory
 * paired transport and the real dispatcher: pending results nested in arguments, async schemas
 * on an idle client, validators that misbehave.
 */
import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, type RpcClientOptions } from "../../packages/rpc/src/index.js";
import { RpcError } from "../../packages/rpc/src/errors.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import type { StandardSchemaV1 } from "../../packages/rpc/src/standard-schema.js";
import { pairWith } from "../support/paired-transport.js";
import { rejectionOf, settle } from "./helpers.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const userArgs = v.strictTuple([v.strictObject({ id: v.number(), name: v.pipe(v.string(), v.maxLength(20)) })]);
/** Async: a name is free unless it is "taken". */
const claimArgs = v.strictTupleAsync([
  v.pipeAsync(
    v.string(),
    v.checkAsync(async (name) => {
      await sleep(1);
      return name !== "taken";
    }, "That name is taken."),
  ),
]);

/** A hand-written Standard Schema whose result object throws when `then` is read (a Proxy). */
const thenTrap: StandardSchemaV1<unknown, unknown[]> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: () =>
      new Proxy(
        {},
        {
          get(_target, key) {
            if (key === "then") throw new TypeError("internal detail of the server: db=prod-7");
            return undefined;
          },
        },
      ) as never,
  },
};

class Api {
  runs: string[] = [];
  nextId = rpcMethod(v.strictTuple([]), () => 7);
  defaultName = rpcMethod(v.strictTuple([]), () => "ada");
  rename = rpcMethod(userArgs, (u) => {
    this.runs.push("rename");
    return `${u.id}:${u.name}`;
  });
  claim = rpcMethod(claimArgs, (name) => {
    this.runs.push(`claim ${name}`);
    return name;
  });
  trapped = rpcMethod(thenTrap, () => {
    this.runs.push("trapped");
    return 1;
  });
}

function connect<T extends object>(target: T, options?: RpcServerOptions, client: Omit<RpcClientOptions<T>, "transport"> = {}) {
  const paired = pairWith(target, options);
  return { client: createRpcClient<T>("TEST", "schemas", { timeout: 2000, ...client, transport: paired.factory }), paired };
}

afterEach(() => vi.restoreAllMocks());

describe("client-side validate", () => {
  // api.md (client-side validation): a refused call rejects "with RpcError INVALID_ARGUMENT
  // carrying the same issues the object would send"; security.md: "same code, same issues". Pending
  // results are "not values yet" and are left to the object — but only when they are *top-level*
  // arguments (client-schemas.ts clientArgsCheck looks at `args` only). A pending result nested in
  // an argument (`{ id: client.nextId() }`, which pipelining supports) is handed to the schema as a
  // proxy function, so the client refuses a call the object accepts.
  it("a call whose argument holds pending results inside an object is not refused locally when the object accepts it", async () => {
    const { client: direct } = connect(new Api());
    using _d = direct;
    // The object accepts it: the pending results are values by the time its schema runs.
    expect(await direct.rename({ id: direct.nextId(), name: direct.defaultName() } as never)).toBe("7:ada");

    const { client } = connect(new Api(), undefined, { validate: { rename: userArgs } });
    using _c = client;
    expect(await client.rename({ id: client.nextId(), name: client.defaultName() } as never)).toBe("7:ada");
  });

  // api.md (client-side validation): "nothing is sent (an idle client does not even connect for
  // it)". With an async schema the call is queued while the schema runs, and the end-of-turn flush
  // (caller.ts flush → onQueued) opens a connection for it although it is then refused.
  it("an idle client does not connect for a call its async schema refuses", async () => {
    const { client, paired } = connect(new Api(), undefined, { validate: { claim: claimArgs } });
    using _ = client;
    const error = (await rejectionOf(client.claim("taken"))) as RpcError;
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("checked by the client; nothing was sent");
    await settle();
    expect(paired.connections).toHaveLength(0); // the client does not connect for nothing
  });
});

describe("validators that misbehave", () => {
  // security.md: "A schema that throws on a hostile value … refuses the call the same way, with one
  // issue naming the error's class, never its message; it never surfaces as a thrown value."
  // schema-check.ts runSchema: "Never throws or rejects" — but `isThenable(result)` runs outside
  // its try: a validate() result whose `then` read throws escapes runSchema, and the error reaches
  // the client as a thrown value carrying the server's message.
  it("a schema result that throws when inspected is INVALID_ARGUMENT, never a thrown value with its message", async () => {
    const api = new Api();
    const { client } = connect(api);
    using _ = client;
    const error = (await rejectionOf(client.trapped())) as RpcError;
    expect(api.runs).toEqual([]);
    expect(String(error.message)).not.toContain("db=prod-7"); // never the server's own message
    expect(RpcError.is(error) && error.code).toBe("INVALID_ARGUMENT");
  });
});
