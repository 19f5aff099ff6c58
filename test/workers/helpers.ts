/** Shared helpers of the workers tests. */
import { createRpcClient, RpcError, type RpcClient } from "@dorpc/rpc";
import { expect } from "vitest";
import { routeUrl, upgradeTransport, type UpgradeTransportFactory } from "./upgrade-transport.js";

let counter = 0;

/** A fresh instance name, so tests never share a Durable Object by accident. */
export function uniqueName(label: string): string {
  return `${label}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}

/** A client for `binding` / `instance` connected through the test Worker's route. */
export function connect<T>(binding: string, instance: string, query = ""): { client: RpcClient<T>; transport: UpgradeTransportFactory } {
  const transport = upgradeTransport(routeUrl(binding, instance, query));
  const client = createRpcClient<T>(binding, instance, { transport, timeout: 10_000 });
  return { client, transport };
}

/** Awaits `promise`, expects it to reject with an RpcError of `code`, and returns the error. */
export async function rpcFailure(promise: PromiseLike<unknown>, code: RpcError["code"]): Promise<RpcError> {
  let error: unknown;
  try {
    await promise;
  } catch (caught) {
    error = caught;
  }
  expect(error, "expected the call to reject").toBeInstanceOf(RpcError);
  expect((error as RpcError).code).toBe(code);
  return error as RpcError;
}

/** Awaits `promise` and returns what it rejected with (fails the test if it resolved). */
export async function rejection(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (caught) {
    return caught;
  }
  throw new Error("expected the call to reject, but it resolved");
}

/** Resolves with the next text message on `socket` that `accept` accepts. */
export function nextMessage(socket: WebSocket, accept: (data: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    const listener = (event: MessageEvent) => {
      if (typeof event.data === "string" && accept(event.data)) {
        socket.removeEventListener("message", listener);
        resolve(event.data);
      }
    };
    socket.addEventListener("message", listener);
  });
}

/** `using` for the { client, transport } pair returned by connect(): disposes the client. */
export function disposable<T extends { client: Disposable }>(pair: T): T & Disposable {
  return Object.assign(pair, { [Symbol.dispose]: () => pair.client[Symbol.dispose]() });
}
