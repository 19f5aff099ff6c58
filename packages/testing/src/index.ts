/**
 * `@dorpc/testing`: test Durable Objects served with dorpc inside the Workers Vitest pool
 * (`@cloudflare/vitest-plugin`). Imports `cloudflare:test` and `cloudflare:workers`, so it loads
 * only there; anywhere else the package resolves to an entry that throws a `TestingError`
 * saying so.
 *
 * Everything not exported here is internal and may change without notice.
 */

/**
 * A dorpc client for one object of a namespace, connected through the namespace stub's
 * WebSocket upgrade (or through the test Worker's `fetch`): no network, no `wrangler dev`.
 */
export { createTestClient, type TestClient, type TestClientOptions, type WorkerFetcher } from "./client.js";

/**
 * Act on the object behind a test client: evict it (hibernating or closing its sockets), run
 * code inside it, read its storage, run its alarm.
 */
export { evictObject, runInObject, readStorage, runAlarm, type EvictOptions, type InstanceOf } from "./object.js";

/** The client's connections: what it connected to and how each attempt went, cutting it, waiting for a state. */
export {
  testConnection,
  dropConnection,
  waitForState,
  type TestConnection,
  type DropOptions,
  type WaitForStateOptions,
} from "./connection.js";

/** One connection attempt as `testConnection(client).attempts` lists it. */
export type { ConnectionAttempt } from "./upgrade-transport.js";

/** The helpers' own failures, told apart by `code`. */
export { TestingError, TESTING_ERROR_CODES, type TestingErrorCode } from "./errors.js";
