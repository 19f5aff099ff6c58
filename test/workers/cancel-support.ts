/**
 * Shared by the tests of cancellation and ordering around cuts (cancel-half-open.test.ts,
 * cancel-across-cuts.test.ts, ordering-across-cuts.test.ts): what the object runs for each of its
 * sockets, read from inside the object, so a test can wait until calls (or their resends) are on
 * the object, or until nothing runs there, instead of sleeping.
 */
import { rpcSocketInfo } from "@dorpc/rpc/server";
import { runInObject, type TestClient } from "@dorpc/testing";

/**
 * Calls running or waiting to run (docs/api.md, rpcSocketInfo `running`) on each socket the
 * object holds open, in the runtime's order (an older socket first).
 */
export function runningPerSocket(client: TestClient<unknown>): Promise<number[]> {
  return runInObject(client, (_obj, state) => state.getWebSockets().map((ws) => rpcSocketInfo(ws)?.running ?? 0));
}
