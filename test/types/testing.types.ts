/**
 * Compile-only type tests of @dorpc/testing (`tsc -p test/types`): the object type flows from a
 * typed namespace into the client and the helpers. Each `@ts-expect-error` claims the line does
 * NOT compile.
 */
import type { RpcClient } from "@dorpc/rpc";
import { RpcDurableObject } from "@dorpc/rpc/server";
import { createTestClient, readStorage, runInObject, type TestClient } from "@dorpc/testing";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

class Counter extends RpcDurableObject {
  increment(by = 1): number {
    return by;
  }
  peek(): number {
    return 0;
  }
}

declare const typed: DurableObjectNamespace<Counter>;
declare const untyped: DurableObjectNamespace;
declare const id: DurableObjectId;

// A typed namespace gives a typed client without naming the class.
const inferred = createTestClient(typed, "a");
assertType<Equal<typeof inferred, TestClient<Counter>>>();
const n: Promise<number> = inferred.increment(2);
// @ts-expect-error: wrong argument type
inferred.increment("2");

// An untyped namespace takes the class (or its instance type) explicitly.
const byClass = createTestClient<typeof Counter>(untyped, id);
const byInstance = createTestClient<Counter>(untyped, "a");
const fromClass: Promise<number> = byClass.increment();
const fromInstance: Promise<number> = byInstance.increment();

// A test client is an RpcClient (rpcConnection, using, …).
const plain: RpcClient<Counter> = inferred;

// runInObject's callback gets the instance type, whichever way T was given.
const peeked: Promise<number> = runInObject(inferred, (instance) => instance.peek());
const peekedByClass: Promise<number> = runInObject(byClass, (instance) => instance.peek());
// @ts-expect-error: the instance has no such method
runInObject(inferred, (instance) => instance.missing());

// readStorage: one key typed by the caller, or every entry.
const one: Promise<number | undefined> = readStorage<number>(inferred, "count");
const all: Promise<Map<string, unknown>> = readStorage(inferred);

// @ts-expect-error: the instance is a name or an id
createTestClient(typed, 1);
// @ts-expect-error: network options belong to createRpcClient
createTestClient(typed, "a", { baseUrl: "http://x" });

void [n, fromClass, fromInstance, plain, peeked, peekedByClass, one, all];
