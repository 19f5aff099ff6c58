/**
 * Acting as a given identity: options.identity for objects that identify callers with
 * readIdentityHeader (sent and measured as withIdentity sends it, text beyond ASCII included),
 * options.headers for any other scheme.
 */
import { withIdentity } from "@dorpc/routing";
import { RpcError } from "@dorpc/rpc";
import { createTestClient, testConnection, TestingError } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { catching, failure, unique } from "./support.js";

describe("options.identity (readIdentityHeader)", () => {
  it("the object's rpcCaller() sees the identity, as JSON", async () => {
    using ada = createTestClient(env.COUNTER, unique("identity"), { identity: { user: "ada", roles: ["admin"] } });
    expect(await ada.callerIdentity()).toEqual({ user: "ada", roles: ["admin"] });
  });

  it("two clients of one object are two callers", async () => {
    const name = unique("two-callers");
    using ada = createTestClient(env.COUNTER, name, { identity: "ada" });
    using bob = createTestClient(env.COUNTER, name, { identity: "bob" });
    expect(await ada.callerIdentity()).toBe("ada");
    expect(await bob.callerIdentity()).toBe("bob");
  });

  it("without it the caller has no identity", async () => {
    using anonymous = createTestClient(env.COUNTER, unique("anonymous"));
    expect(await anonymous.callerIdentity()).toBeUndefined();
  });
});

describe("options.identity beyond ASCII (sent as withIdentity sends it: JSON escapes)", () => {
  for (const user of ["Zoë", "李雷", "😀"]) {
    it(`{ user: "${user}" } reaches rpcCaller().identity intact`, async () => {
      using client = createTestClient(env.COUNTER, unique("identity-utf"), { identity: { user } });
      expect(await client.callerIdentity()).toEqual({ user });
    });
  }

  it("is measured once escaped, as withIdentity measures it: 200 CJK characters are over the limit", () => {
    const identity = { user: "李".repeat(200) }; // 212 characters of JSON, 1,211 once escaped
    const production = catching(() => withIdentity(new Request("http://x/"), identity));
    expect((production as RpcError).code).toBe("BAD_OPTION");
    const error = catching(() => createTestClient(env.COUNTER, unique("identity-utf-long"), { identity }));
    expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
    expect((error as Error).message).toMatch(/options\.identity is 1211 characters as JSON; readIdentityHeader accepts at most 1024/);
  });
});

describe("options.headers (any other scheme)", () => {
  it("an object identifying by Authorization sees the user the header names", async () => {
    using ada = createTestClient(env.BEARER, unique("bearer"), { headers: { Authorization: "Bearer ada" } });
    expect(await ada.callerIdentity()).toEqual({ user: "ada" });
  });

  it("a connection the object's identify refuses fails with CONNECT_FAILED naming the 401", async () => {
    using nobody = createTestClient(env.BEARER, unique("bearer-refused"), { reconnect: false });
    const error = (await failure(nobody.callerIdentity())) as RpcError;
    expect(error).toBeInstanceOf(RpcError);
    expect(error.code).toBe("CONNECT_FAILED");
    expect(error.message).toContain("401");
    expect(testConnection(nobody).attempts.map((attempt) => attempt.status)).toEqual([401]);
  });
});
