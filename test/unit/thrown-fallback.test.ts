/**
 * Thrown values that cannot be sent whole fall back to "name and message" (replies.ts,
 * writeThrownReply). Docs (api.md, Thrown values): a subclass that does not set `name` arrives
 * with its class name; "If a property holds something else that cannot be sent (a class
 * instance, for example), only name and message are kept."
 */
import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { rawServer, rejectionOf } from "./helpers.js";

class Handle {
  close() {}
}
class QuotaExceededError extends Error {}
class NamedError extends Error {
  override name = "NamedError";
}

class Api {
  ran: string[] = [];
  after(): string {
    this.ran.push("after");
    return "after";
  }
  throwsSubclassWithHandle(): number {
    throw Object.assign(new QuotaExceededError("over quota"), { handle: new Handle(), code: "Q" });
  }
  throwsNamedWithHandle(): number {
    throw Object.assign(new NamedError("named"), { handle: new Handle() });
  }
  throwsTypeErrorWithHandle(): number {
    throw Object.assign(new TypeError("typed"), { handle: new Handle() });
  }
  throwsNullProtoWithHandle(): number {
    throw Object.assign(Object.create(null) as object, { handle: new Handle() });
  }
  throwsMessageGetter(): number {
    const e = new Error("x");
    Object.defineProperty(e, "message", {
      enumerable: false,
      get() {
        throw new Error("no message for you");
      },
    });
    throw e;
  }
}

describe("thrown errors holding something unsendable", () => {
  it("a subclass that does not set name keeps its class name (only name and message kept)", async () => {
    const paired = pairWith(new Api());
    using client = createRpcClient<Api>("API", "t", { transport: paired.factory });
    const error = (await rejectionOf(client.throwsSubclassWithHandle())) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("over quota");
    expect(error.name).toBe("QuotaExceededError"); // actual: "Error"
  });

  it("control: a subclass that sets name keeps it; a TypeError stays a TypeError", async () => {
    const paired = pairWith(new Api());
    using client = createRpcClient<Api>("API", "t", { transport: paired.factory });
    const named = (await rejectionOf(client.throwsNamedWithHandle())) as Error;
    expect(named.name).toBe("NamedError");
    expect(named.message).toBe("named");
    const typed = (await rejectionOf(client.throwsTypeErrorWithHandle())) as Error;
    expect(typed).toBeInstanceOf(TypeError);
    expect(typed.message).toBe("typed");
  });

  it("an error whose message getter throws is still answered, and the next call of its frame runs", async () => {
    const api = new Api();
    const server = rawServer(api);
    // Actual: dispatchFrame throws the getter's Error out of the fallback in writeThrownReply,
    // call 1 gets no reply (the client waits for its timeout) and call 2 never runs.
    expect(() =>
      server.sendCalls([
        [1, ["throwsMessageGetter", [0]]],
        [2, ["after", [0]]],
      ]),
    ).not.toThrow();
    expect((await server.outcome(1)).kind).toBe("threw");
    expect(await server.outcome(2)).toEqual({ kind: "ok", value: "after" });
    expect(api.ran).toEqual(["after"]);
  });

  it("a thrown null-prototype object holding a class instance is still answered", async () => {
    const server = rawServer(new Api());
    // Actual: String(Object.create(null)) in the fallback throws a TypeError out of dispatchFrame.
    expect(() => server.sendCalls([[1, ["throwsNullProtoWithHandle", [0]]]])).not.toThrow();
    expect((await server.outcome(1)).kind).toBe("threw");
  });
});
