import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import { pairWith } from "../support/paired-transport.js";

class Users extends RpcTarget {
  get(id: string) {
    return { id, name: `user ${id}` };
  }
}

class Counter {
  n = 0;
  increment(by = 1) {
    this.n += by;
    return this.n;
  }
  get users() {
    return new Users();
  }
  get config() {
    return { limits: { max: 10 } };
  }
}

describe("smoke", () => {
  it("calls a method and chains through a getter", async () => {
    const paired = pairWith(new Counter());
    using client = createRpcClient<Counter>("COUNTER", "a", { transport: paired.factory });
    expect(await client.increment(2)).toBe(2);
    expect(await client.increment()).toBe(3);
    expect(await client.config.limits.max).toBe(10);
    expect(await client.users.get("a")).toEqual({ id: "a", name: "user a" });
    const rich = new Map<unknown, unknown>([[1, new Set([new Date(0), /x/g, 10n])]]);
    expect(paired.connections).toHaveLength(1);
    void rich;
  });
});
