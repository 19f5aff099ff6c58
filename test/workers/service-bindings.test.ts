/**
 * A service binding (a Fetcher with JS RPC) is not a Durable Object namespace: in workerd every
 * member of such a binding reads as a function, which made the router take it for one (a path
 * naming it made an RPC call on the other Worker, and the 404 listed it). Only Durable Object
 * namespaces are candidates, and request problems are responses.
 */
import { isDurableObjectNamespace, resolveBinding, routeDORequest } from "@dorpc/routing";
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const tag = (value: unknown) => Object.prototype.toString.call(value);
const entries = Object.entries(env as unknown as Record<string, unknown>);
/** A real service binding of the test Worker (the Workers pool binds the Worker to itself). */
const service = entries.find(([, value]) => tag(value) === "[object Fetcher]")![1] as Fetcher;
const doKeys = entries.filter(([, value]) => tag(value) === "[object DurableObjectNamespace]").map(([key]) => key);

describe("service bindings are not Durable Object namespaces", () => {
  it("isDurableObjectNamespace is false for a Fetcher service binding", () => {
    expect(tag(service)).toBe("[object Fetcher]");
    expect(isDurableObjectNamespace(service)).toBe(false);
  });

  it("resolveBinding does not resolve a segment to a service binding", () => {
    expect(resolveBinding({ COUNTER: env.COUNTER, AUTH: service }, "AUTH")).toBeUndefined();
  });

  it("the 404 body of the test Worker lists only Durable Object bindings", async () => {
    const response = await SELF.fetch("http://x/__rpc/NOPE/a");
    expect(response.status).toBe(404);
    const listed = (await response.text())
      .replace(/.*Durable Object bindings: /s, "")
      .replace(/\.$/, "")
      .split(", ");
    expect(listed.filter((key) => !doKeys.includes(key))).toEqual([]);
  });

  it("a path naming a service binding is a 404 response, not an RPC call on the service that rejects", async () => {
    const routeEnv = { COUNTER: env.COUNTER, AUTH: service };
    const result = await routeDORequest(new Request("https://w/__rpc/AUTH/a"), routeEnv).then(
      (response) => ({ status: response?.status }),
      (error: unknown) => ({ rejected: String(error) }),
    );
    expect(result).toEqual({ status: 404 });
  });
});
