/**
 * The values users actually send, through a real Durable Object in workerd: Blob and File (as
 * bytes, with type, name and lastModified), a lone bytes value on the direct bytes path, a
 * 10,000-deep linked list; and what an object must never send: its env (a plain object in
 * workerd, so the JSON fast path would otherwise carry it), env members, ctx.storage, itself.
 */
import { RpcError } from "@dorpc/rpc";
import { afterAll, describe, expect, it } from "vitest";
import { createTestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import type { Echo } from "./objects.js";

const client = createTestClient<Echo>(env.ECHO, "values", { timeout: 10_000 });
afterAll(() => client[Symbol.dispose]());

async function encodeFailure(promise: PromiseLike<unknown>): Promise<RpcError> {
  try {
    await promise;
  } catch (error) {
    expect(RpcError.is(error)).toBe(true);
    expect((error as RpcError).code).toBe("ENCODE");
    return error as RpcError;
  }
  throw new Error("expected the call to fail with ENCODE");
}

describe("Blob and File through a Durable Object in workerd", () => {
  it("arrive on the server as a File with its name, type and lastModified", async () => {
    const file = new File(["hello"], "hello.txt", { type: "text/plain", lastModified: 1234 });
    expect(await client.describe(file)).toBe("File hello.txt text/plain 1234 5");
  });

  it("come back whole from echo (Blob and File, bytes and metadata)", async () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const blob = (await client.echo(new Blob([bytes], { type: "application/x-test" }) as never)) as Blob;
    expect(blob).toBeInstanceOf(Blob);
    expect(blob.type).toBe("application/x-test");
    expect([...new Uint8Array(await blob.arrayBuffer())]).toEqual([...bytes]);
    const file = (await client.echo(new File(["x"], "x.bin", { lastModified: 99 }) as never)) as File;
    expect([file.name, file.lastModified, file.size]).toEqual(["x.bin", 99, 1]);
  });

  it("can be made by the server and received by the client", async () => {
    const file = (await client.makeFile()) as File;
    expect(file).toBeInstanceOf(File);
    expect([file.name, file.type, file.lastModified]).toEqual(["w.txt", "text/plain", 1_700_000_000_000]);
    expect(await file.text()).toBe("made in workerd");
  });
});

describe("other values through a Durable Object in workerd", () => {
  it("sends a lone 64 KiB Uint8Array on the bytes path and gets the same bytes back", async () => {
    const bytes = new Uint8Array(64 * 1024).map((_, i) => (i * 7) & 0xff);
    const back = (await client.echo(bytes as never)) as Uint8Array;
    expect(back).toBeInstanceOf(Uint8Array);
    expect(back.byteLength).toBe(bytes.byteLength);
    expect(back.every((b, i) => b === bytes[i])).toBe(true);
  });

  it("round-trips a 10,000-deep linked list with default limits", async () => {
    let list: { i: number; next: unknown } | null = null;
    for (let i = 9_999; i >= 0; i--) list = { i, next: list };
    let node = (await client.echo(list as never)) as { i: number; next: unknown } | null;
    for (let i = 0; i < 10_000; i++) {
      expect(node?.i).toBe(i);
      node = node!.next as typeof node;
    }
    expect(node).toBeNull();
  });
});

describe("what a Durable Object never sends", () => {
  it.each([
    ["envInside", "result.config.env", "the Durable Object's env"],
    ["configInside", "result[0].settings", "env.CONFIG"],
    ["dbInside", "result.db", "env.CONFIG.db"],
    ["storageInside", "result.storage", "ctx.storage"],
    ["selfInside", "result.self", "the Durable Object itself"],
  ] as const)("%s() is refused with ENCODE naming %s (%s), and no secret reaches the client", async (method, path, what) => {
    const error = await encodeFailure(client[method]());
    expect(error.message).toContain(`Cannot send ${path}:`);
    expect(error.message).toContain(what);
    expect(error.message).not.toContain("s3cr3t-conformance");
    expect(error.message).not.toContain("db.internal");
  });
});
