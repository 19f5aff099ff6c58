/**
 * A Durable Object's own `env`, `ctx`, their members and the object itself never leave in a
 * result or a thrown value, wherever they sit in it, on the JSON fast path too; the error names
 * where. `access.unsafeTrustedCaller` lifts it. Checked here over the dispatcher with stand-ins
 * for env and ctx; test/conformance/values.workers.test.ts checks the real ones in workerd.
 */
import { describe, expect, it } from "vitest";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { rawServer } from "./helpers.js";

class R2Bucket {
  get(key: string) {
    return key;
  }
}
class DurableObjectStorage {
  deleteAll() {}
}
class DurableObjectState {
  readonly #storage = new DurableObjectStorage();
  get storage(): DurableObjectStorage {
    return this.#storage;
  }
  get id(): object {
    return ID;
  }
}
const ID = Object.freeze({ name: "id" });

class Leaky {
  // As DurableObject keeps them. In workerd `env` is a plain object, so it looks like data.
  readonly env = { SECRET: "s3cr3t", BUCKET: new R2Bucket(), CONFIG: { db: { host: "db.internal" } }, LIST: [1, 2] };
  readonly ctx = new DurableObjectState();

  envInside() {
    return { config: { env: this.env } };
  }
  envItself() {
    return this.env;
  }
  configMember() {
    return [1, { c: this.env.CONFIG }];
  }
  deepConfig() {
    return { db: this.env.CONFIG.db };
  }
  listMember() {
    return { list: this.env.LIST };
  }
  bindingInside() {
    return { bucket: this.env.BUCKET };
  }
  storageInside() {
    return { s: this.ctx.storage };
  }
  ctxInside() {
    return { when: new Date(0), ctx: this.ctx };
  }
  idInside() {
    return { id: this.ctx.id };
  }
  selfInside() {
    return { me: this };
  }
  envInMap() {
    return new Map([["k", this.env]]);
  }
  secretString() {
    return { secret: this.env.SECRET };
  }
  throwsWithEnv() {
    throw Object.assign(new Error("failed with env attached"), { env: this.env });
  }
  copyOfConfig() {
    return structuredClone(this.env.CONFIG);
  }
  shallowCopyOfConfig() {
    return { ...this.env.CONFIG };
  }
}

async function outcomeOf(method: string, options?: RpcServerOptions) {
  const server = rawServer(new Leaky(), options);
  server.sendCalls([[1, [method, [0]]]]);
  const outcome = await server.outcome(1);
  const wire = server.sent.map((frame) => (typeof frame === "string" ? frame : new TextDecoder().decode(frame))).join("");
  return { outcome, wire };
}

describe("values that never leave the Durable Object", () => {
  it.each([
    ["envInside", "result.config.env", "the Durable Object's env"],
    ["envItself", "result", "the Durable Object's env"],
    ["configMember", "result[1].c", "env.CONFIG"],
    ["deepConfig", "result.db", "env.CONFIG.db"],
    ["listMember", "result.list", "env.LIST"],
    ["bindingInside", "result.bucket", "env.BUCKET"],
    ["storageInside", "result.s", "ctx.storage"],
    ["ctxInside", "result.ctx", "the Durable Object's ctx"],
    ["idInside", "result.id", "ctx.id"],
    ["selfInside", "result.me", "the Durable Object itself"],
    ["envInMap", "result<Map value #0>", "the Durable Object's env"],
  ])("%s() is refused with ENCODE naming %s as %s, and nothing of it is sent", async (method, path, what) => {
    const { outcome, wire } = await outcomeOf(method);
    expect(outcome).toMatchObject({ kind: "failed", code: "ENCODE" });
    const message = (outcome as { message: string }).message;
    expect(message).toContain(`Cannot send ${path}:`);
    expect(message).toContain(what);
    expect(message).toContain("unsafeTrustedCaller");
    expect(wire).not.toContain("s3cr3t");
    expect(wire).not.toContain("db.internal");
  });

  it("sends a copy the method made of env data: only the identities are refused", async () => {
    expect((await outcomeOf("copyOfConfig")).outcome).toEqual({ kind: "ok", value: { db: { host: "db.internal" } } });
    // A shallow copy still holds env's own nested object.
    expect((await outcomeOf("shallowCopyOfConfig")).outcome).toMatchObject({ kind: "failed", code: "ENCODE" });
  });

  it("cannot recognise a secret string: strings have no identity (documented)", async () => {
    expect((await outcomeOf("secretString")).outcome).toEqual({ kind: "ok", value: { secret: "s3cr3t" } });
  });

  it("replaces a thrown error holding env by its name and message only", async () => {
    const { outcome, wire } = await outcomeOf("throwsWithEnv");
    expect(outcome.kind).toBe("threw");
    const error = (outcome as { error: Error }).error;
    expect(error.message).toBe("failed with env attached");
    expect(Object.keys(error)).toEqual([]);
    expect(wire).not.toContain("s3cr3t");
  });

  it("sends env when the access policy trusts every caller (unsafeTrustedCaller)", async () => {
    const { outcome } = await outcomeOf("configMember", { access: { unsafeTrustedCaller: true } });
    expect(outcome).toEqual({ kind: "ok", value: [1, { c: { db: { host: "db.internal" } } }] });
  });
});
