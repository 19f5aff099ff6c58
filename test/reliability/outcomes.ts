/** How the workerd reliability tests look at a call's outcome. */
import { RpcError } from "@dorpc/rpc";
import { expect } from "vitest";

/** Awaits `promise` and returns what it rejected with (fails the test if it resolved). */
export async function failure(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/** Awaits `promise`, expects an `RpcError` of `code`, and returns it. */
export async function rpcFailure(promise: PromiseLike<unknown>, code: RpcError["code"]): Promise<RpcError> {
  const error = await failure(promise);
  expect(error, String(error)).toBeInstanceOf(RpcError);
  expect((error as RpcError).code, (error as RpcError).message).toBe(code);
  return error as RpcError;
}

/** Sends a (lazy) chain now; the result may be awaited later without an unhandled rejection. */
export function go<T>(chain: PromiseLike<T>): Promise<T> {
  const sent = Promise.resolve(chain.then((value) => value));
  sent.catch(() => {});
  return sent;
}
