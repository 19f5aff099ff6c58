/**
 * Which clients `createTestClient` made, and what the helpers need to reach their object and
 * their connections. Internal module.
 */
import { rpcConnection } from "@dorpc/rpc";
import { describe, TestingError } from "./errors.js";
import type { UpgradeTransport } from "./upgrade-transport.js";

export interface TestClientRecord {
  readonly namespace: DurableObjectNamespace;
  readonly id: DurableObjectId;
  /** The `{binding}` and `{instance}` segments of the connect URL. */
  readonly binding: string;
  readonly instance: string;
  readonly url: string;
  readonly transport: UpgradeTransport;
}

// Weak: a client dropped by a test is collected with its record.
const records = new WeakMap<object, TestClientRecord>();

export function register(client: object, record: TestClientRecord): void {
  records.set(client, record);
}

/** The record of `client`; `helper` names the function in the error when there is none. */
export function recordOf(client: unknown, helper: string): TestClientRecord {
  const record = (typeof client === "object" || typeof client === "function") && client !== null ? records.get(client) : undefined;
  if (!record) {
    const what = isRpcClient(client)
      ? "a client made by createRpcClient, which does not record its object and connections"
      : describe(client);
    throw new TestingError("NOT_A_TEST_CLIENT", `${helper} needs a client made by createTestClient from @dorpc/testing, got ${what}.`);
  }
  return record;
}

function isRpcClient(value: unknown): boolean {
  try {
    rpcConnection(value as object);
    return true;
  } catch {
    return false;
  }
}
