/**
 * Compile-only type tests (`tsc -p test/types/testing`) of @dorpc/react and @dorpc/testing
 * together: useRpcClient checks `validate` keys like createRpcClient, useSubscription takes a
 * test client's topics and refuses what is not a client, the testing helpers take test clients
 * only. Each `@ts-expect-error` claims the line does NOT compile.
 */
import { createRpcClient, type StandardSchemaV1 } from "@dorpc/rpc";
import { RpcDurableObject, RpcTarget } from "@dorpc/rpc/server";
import { type TopicName, useRpcClient, useSubscription } from "@dorpc/react";
import { createTestClient, evictObject, readStorage, runInObject } from "@dorpc/testing";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

class Room extends RpcTarget {
  join(id: string): number {
    return id.length;
  }
}
type Topics = { moves: { x: number } };
class Game extends RpcDurableObject<unknown, unknown, Topics> {
  inc(by: number): number {
    return by;
  }
  get value(): number {
    return 1;
  }
  open(): Room {
    return new Room();
  }
}
declare const schema: StandardSchemaV1<unknown, [number]>;
declare const ns: DurableObjectNamespace<Game>;

// useRpcClient checks `validate` keys against T, as createRpcClient does.
// api.md useRpcClient: "`T` and `options` are those of createRpcClient"; api.md ClientSchemas: "With `T` given,
// the keys are checked against `T`'s methods (a typo or a getter does not compile)". createRpcClient does check:
// @ts-expect-error: typo
createRpcClient<Game>("G", "a", { validate: { incc: schema } });
// @ts-expect-error: typo in a validate key
useRpcClient<Game>("G", "a", { validate: { incc: schema } });
// @ts-expect-error: a getter is not a method
useRpcClient<Game>("G", "a", { validate: { value: schema } });

// useSubscription takes a test client's topics, as subscribe() does.
const tc = createTestClient(ns, "a");
useSubscription(tc, "moves", (e) => assertType<Equal<typeof e, { x: number }>>());

// useSubscription refuses what is not a client.
// api.md useSubscription: "an undeclared topic ... does not compile"; runtime: status "failed" (BAD_OPTION).
assertType<Equal<TopicName<object>, never>>();
// @ts-expect-error: not a client
useSubscription({} as object, "anything", () => {});
const room = await createRpcClient<Game>("G", "a").open();
// @ts-expect-error: a stub is not a client
useSubscription(room, "join", () => {});

// The helpers that take a TestClient refuse any other client or stub (runtime: TestingError NOT_A_TEST_CLIENT).
// api.md NOT_A_TEST_CLIENT: "A helper got something createTestClient did not return (for example a createRpcClient client)".
const plain = createRpcClient<Game>("G", "a");
// @ts-expect-error: not a test client
evictObject(plain);
// @ts-expect-error: a stub is not a test client
readStorage(room);
// @ts-expect-error: not a test client
runInObject(plain, () => 1);
