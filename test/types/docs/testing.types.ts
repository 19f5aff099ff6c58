// README.md "Testing your objects" and docs/testing.md sections 5–9 and later, as the snippets are.
import { rpcConnection } from "@dorpc/rpc";
import {
  createTestClient,
  dropConnection,
  evictObject,
  readStorage,
  runAlarm,
  runInObject,
  testConnection,
  waitForState,
} from "@dorpc/testing";
import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import type { Counter } from "./guide-worker.types.js";

declare global {
  namespace Cloudflare {
    interface Env {
      COUNTER: DurableObjectNamespace<Counter>;
      DOCS: DurableObjectNamespace<Counter>;
    }
    interface GlobalProps {
      mainModule: typeof import("./guide-worker.types.js");
    }
  }
}

it("keeps its count across an eviction", async () => {
  using counter = createTestClient(env.COUNTER, "room-1");
  await counter.increment(2);
  await evictObject(counter);
  expect(await counter.getValue()).toBe(2);
});

it("testing.md 5-9", async () => {
  using counter = createTestClient(env.COUNTER, "room-1");
  createTestClient<Counter>(env.COUNTER, "room-1");
  createTestClient(env.COUNTER, env.COUNTER.newUniqueId());
  await evictObject(counter); // like the runtime evicting an idle object
  await evictObject(counter, { webSockets: "close" });
  expect(await readStorage(counter, "value")).toBe(3); // one key (undefined when absent)
  const everything = await readStorage(counter); // Map of every key
  // biome-ignore lint/correctness/noUnusedFunctionParameters: testing.md's snippet, as it is
  const sockets = await runInObject(counter, (instance, state) => state.getWebSockets().length);
  expect(await runAlarm(counter)).toBe(true); // ran the scheduled alarm now
  void [everything, sockets];
  dropConnection(counter);
  expect(rpcConnection(counter).state).toBe("reconnecting");
  await waitForState(counter, "open");
  dropConnection(counter, { code: 1011, reason: "…" });
  {
    using ada = createTestClient(env.COUNTER, "owned", { identity: { user: "ada" } });
    using bob = createTestClient(env.COUNTER, "owned", { identity: { user: "bob" } });
    void [ada, bob];
  }
  {
    using ada = createTestClient(env.DOCS, "d1", { headers: { Authorization: "Bearer token-ada" } });
    using bob = createTestClient(env.DOCS, "d1", { query: { key: "bob" } });
    void [ada, bob];
  }
  {
    using ada = createTestClient(env.COUNTER, "room-1", { worker: exports.default, query: { token: "token-ada" } });
    void ada;
  }
  const { attempts, socket } = testConnection(counter);
  expect(attempts).toHaveLength(2); // it reconnected once
  expect(attempts[0]!.closed).toEqual({ code: 1006, reason: "connection dropped by test" });
  void socket;
  // api.md
  using c2 = createTestClient(env.COUNTER, "room-1", { identity: { user: "ada" } });
  void c2;
});
