/** The JSON form and hand-composed handleRpcRequest at the edges. */
import { handleRpcRequest } from "@dorpc/rpc/server";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";

function post(name: string, body: BodyInit, type = "application/json", headers: Record<string, string> = {}) {
  return SELF.fetch(`http://dorpc.test/__rpc/COUNTER/${name}`, { method: "POST", body, headers: { "Content-Type": type, ...headers } });
}

describe("JSON form", () => {
  it("a JSON batch with a session header: the same body sent again runs again (no Retry flag) and answers", async () => {
    const name = uniqueName("json-session");
    const headers = { "X-Dorpc-Session": "abcdefghijklmnopqrstuv" };
    const one = await post(name, JSON.stringify([{ method: "increment", args: [1] }]), "application/json", headers);
    expect(await one.json()).toEqual([{ result: 1 }]);
    const two = await post(name, JSON.stringify([{ method: "increment", args: [1] }]), "application/json", headers);
    expect(await two.json()).toEqual([{ result: 2 }]);
  });

  it("a JSON batch with a session header and X-Dorpc-Resending: still runs (no Retry flag)", async () => {
    const name = uniqueName("json-resending");
    const headers = { "X-Dorpc-Session": "abcdefghijklmnopqrstuw", "X-Dorpc-Resending": "1; age=5" };
    const one = await post(name, JSON.stringify({ method: "increment", args: [3] }), "application/json", headers);
    expect(await one.json()).toEqual({ result: 3 });
  });

  it("a method path with a trailing dot or leading dot is NOT_FOUND per call", async () => {
    const response = await post(
      uniqueName("dots"),
      JSON.stringify([{ method: "users.count." }, { method: ".getValue" }, { method: "getValue" }]),
    );
    const body = (await response.json()) as { error?: { code: string }; result?: unknown }[];
    expect(body.map((b) => b.error?.code ?? b.result)).toEqual(["NOT_FOUND", "NOT_FOUND", 0]);
  });

  it("a JSON body with a UTF-8 BOM is read", async () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"method":"getValue"}')]);
    const response = await post(uniqueName("bom"), bytes);
    expect(await response.json()).toEqual({ result: 0 });
  });
});

describe("handleRpcRequest by hand", () => {
  it("identify that throws refuses an HTTP batch with a typed 401", async () => {
    const response = await runInDurableObject(env.MANUAL.getByName(uniqueName("manual-identify")), async (instance) => {
      const request = new Request("http://x/__rpc/MANUAL/y", {
        method: "POST",
        body: JSON.stringify({ method: "greet", args: ["a"] }),
        headers: { "Content-Type": "application/json" },
      });
      const r = await handleRpcRequest(request, instance, {
        identify: () => {
          throw new Error("no token");
        },
      });
      return { status: r!.status, body: await r!.text() };
    });
    expect(response.status).toBe(401);
    expect(JSON.parse(response.body)).toMatchObject({ error: { code: "CONNECT_FAILED" } });
  });

  it("identify's value reaches rpcCaller() in an HTTP batch served by hand", async () => {
    const response = await runInDurableObject(env.COUNTER.getByName(uniqueName("manual-identity")), async (instance) => {
      const request = new Request("http://x/__rpc/COUNTER/y", {
        method: "POST",
        body: JSON.stringify({ method: "callerInfo" }),
        headers: { "Content-Type": "application/json" },
      });
      const r = await handleRpcRequest(request, instance, { identify: () => ({ user: "u1" }) });
      return { status: r!.status, body: await r!.text() };
    });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ result: { socket: false, connectedAt: true, signal: true } });
  });
});
