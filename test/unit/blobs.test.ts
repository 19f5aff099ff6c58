/**
 * Blob and File: bytes in binary frames with `type`, `name` and `lastModified` kept, read
 * asynchronously before the frame is written, in call order, under the same limits as other
 * bytes.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, decode, encode, encodeAsync } from "../../packages/rpc/src/index.js";
import { readFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import { binaryFrame } from "../support/binary-frame.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, expectThrowsCode, rawServer, rejectionOf, settle } from "./helpers.js";

async function bytesOf(blob: Blob): Promise<number[]> {
  return [...new Uint8Array(await blob.arrayBuffer())];
}

/** Resolves when `open()` is called: a gate a slow Blob waits behind. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** A Blob whose bytes can only be read once `until` resolves (or never, when it rejects). */
class SlowBlob extends Blob {
  constructor(
    parts: ConstructorParameters<typeof Blob>[0] & unknown[],
    private readonly until: Promise<void>,
  ) {
    super(parts, { type: "application/x-slow" });
  }
  override async arrayBuffer(): Promise<ArrayBuffer> {
    await this.until;
    return super.arrayBuffer();
  }
}

class Files {
  received: unknown[] = [];
  order: string[] = [];
  echo(value: unknown) {
    this.received.push(value);
    return value;
  }
  note(label: string) {
    this.order.push(label);
    return label;
  }
}

describe("Blob and File values", () => {
  it("round-trip a Blob with its type and bytes (encodeAsync / decode)", async () => {
    const blob = new Blob(["héllo", new Uint8Array([0, 255])], { type: "text/x-bar" });
    const back = decode(await encodeAsync(blob)) as Blob;
    expect(back).toBeInstanceOf(Blob);
    expect(back).not.toBeInstanceOf(File);
    expect(back.type).toBe("text/x-bar");
    expect(await bytesOf(back)).toEqual(await bytesOf(blob));
  });

  it("round-trip a File with name, type and lastModified", async () => {
    const file = new File(["foo"], "report.csv", { type: "text/csv", lastModified: 42 });
    const back = decode(await encodeAsync(file)) as File;
    expect(back).toBeInstanceOf(File);
    expect([back.name, back.type, back.lastModified, back.size]).toEqual(["report.csv", "text/csv", 42, 3]);
    expect(await bytesOf(back)).toEqual([102, 111, 111]);
  });

  it("rebuild a File subclass as a File", async () => {
    class Upload extends File {}
    const back = decode(await encodeAsync(new Upload(["x"], "u.txt"))) as File;
    expect(Object.getPrototypeOf(back)).toBe(File.prototype);
  });

  it("carry bytes that are not UTF-8 exactly, and an empty Blob", async () => {
    const odd = new Blob([new Uint8Array([0xed, 0xa0, 0x80])]);
    expect(await bytesOf(decode(await encodeAsync(odd)) as Blob)).toEqual([0xed, 0xa0, 0x80]);
    expect((decode(await encodeAsync(new Blob([]))) as Blob).size).toBe(0);
  });

  it("keep one Blob referenced twice as one Blob, and travel inside objects, arrays and Maps", async () => {
    const blob = new Blob(["shared"]);
    const value = { a: blob, list: [blob], map: new Map([["k", new File(["f"], "f.txt")]]) };
    const back = decode(await encodeAsync(value)) as typeof value;
    expect(back.list[0]).toBe(back.a);
    expect(await bytesOf(back.a)).toEqual([...new TextEncoder().encode("shared")]);
    expect(back.map.get("k")).toBeInstanceOf(File);
  });

  it("travel as blobs of a binary frame, never as text", async () => {
    const frame = await encodeAsync({ b: new Blob(["\u0001\u0002marker"]) });
    expect(frame).toBeInstanceOf(Uint8Array);
    const raw = readFrame(frame, DEFAULT_LIMITS)!;
    expect(raw.blobs).toHaveLength(1);
    expect(JSON.stringify(raw.body)).not.toContain("marker");
  });

  it("are refused by the synchronous encode with ENCODE naming encodeAsync", () => {
    expect(expectThrowsCode(() => encode({ file: new Blob(["x"]) }), "ENCODE").message).toContain("encodeAsync");
  });

  it("decode to the Blob class captured at load, even when the global was deleted since", async () => {
    const frame = await encodeAsync(new Blob(["x"]));
    const original = globalThis.Blob;
    delete (globalThis as { Blob?: unknown }).Blob;
    try {
      expect(decode(frame)).toBeInstanceOf(original);
    } finally {
      globalThis.Blob = original;
    }
  });

  it.each([
    ["a Blob without a type", [[22, [0]]]],
    ["a Blob whose type is not a string", [[22, [0, 1]]]],
    ["a Blob whose blob is missing", [[22, [1, ""]]]],
    ["a File without lastModified", [[23, [0, "", "a"]]]],
    ["a File whose name is not a string", [[23, [0, "", 1, 0]]]],
    ["a File whose lastModified is not a finite number", [[23, [0, "", "a", "soon"]]]],
  ])("refuse %s with DECODE", (_name, table) => {
    expectThrowsCode(() => decode(binaryFrame(JSON.stringify([1, table]), [new Uint8Array(3)], { kind: 0x56 })), "DECODE");
  });
});

describe("Blob and File through a call", () => {
  it("send a File argument and get a Blob result back, both whole", async () => {
    const target = new Files();
    const paired = pairWith(target);
    using client = createRpcClient<Files>("F", "blobs", { transport: paired.factory });
    const file = new File(["upload"], "a.bin", { type: "application/octet-stream", lastModified: 7 });
    const back = (await client.echo(file as never)) as File;
    const received = target.received[0] as File;
    for (const f of [received, back]) {
      expect(f).toBeInstanceOf(File);
      expect([f.name, f.type, f.lastModified]).toEqual(["a.bin", "application/octet-stream", 7]);
      expect(await bytesOf(f)).toEqual(await bytesOf(file));
    }
    expect(paired.connections[0]!.sentByClient[0]).toBeInstanceOf(Uint8Array);
    expect(paired.connections[0]!.sentByServer[0]).toBeInstanceOf(Uint8Array);
  });

  it("hold back the calls made after a call whose Blob is still being read, so calls keep their order", async () => {
    const target = new Files();
    const paired = pairWith(target);
    using client = createRpcClient<Files>("F", "order", { transport: paired.factory });
    const slow = gate();
    const first = client.echo(new SlowBlob(["slow"], slow.wait) as never);
    await settle();
    const second = client.note("after");
    await settle();
    expect(target.received).toEqual([]);
    expect(target.order).toEqual([]);
    slow.open();
    await Promise.all([first, second]);
    expect(target.received).toHaveLength(1);
    expect(target.order).toEqual(["after"]);
    const sent = paired.connections[0]!.sentByClient.flatMap((frame) => readFrame(frame, DEFAULT_LIMITS)!.body as [number, unknown[]][]);
    expect(sent.map(([, chain]) => chain[0])).toEqual(["echo", "note"]);
  });

  it("reject only the call whose Blob cannot be read (ENCODE, the read error as cause); later calls go on", async () => {
    const target = new Files();
    const paired = pairWith(target);
    using client = createRpcClient<Files>("F", "broken", { transport: paired.factory });
    const failure = new Error("file vanished");
    const broken = new SlowBlob(["x"], Promise.reject(failure));
    const rejected = await expectRejectsCode(client.echo(broken as never), "ENCODE");
    expect(rejected.cause).toBe(failure);
    expect(await client.note("still fine")).toBe("still fine");
    expect(target.received).toEqual([]);
  });

  it("hold back the reply frames after a reply whose Blob is still being read", async () => {
    const slow = gate();
    const server = rawServer(
      new (class {
        slowBlob() {
          return new SlowBlob(["bytes"], slow.wait);
        }
        now() {
          return "now";
        }
      })(),
    );
    server.sendCalls([[1, ["slowBlob", [0]]]]);
    server.sendCalls([[2, ["now", [0]]]]);
    await settle();
    expect(server.sent).toEqual([]);
    slow.open();
    await settle();
    // Both replies, in the order of their calls (in one frame or two).
    const ids = server.sent.flatMap((frame) => (readFrame(frame, DEFAULT_LIMITS)!.body as unknown[][]).map((reply) => reply[0]));
    expect(ids).toEqual([1, 2]);
    const outcome = await server.outcome(1);
    expect(outcome.kind).toBe("ok");
    expect(await bytesOf((outcome as { value: Blob }).value)).toEqual([...new TextEncoder().encode("bytes")]);
    expect(await server.outcome(2)).toEqual({ kind: "ok", value: "now" });
  });

  it("turn only the reply whose Blob cannot be read into an ENCODE failure", async () => {
    const server = rawServer(
      new (class {
        broken() {
          return new SlowBlob(["x"], Promise.reject(new Error("gone")));
        }
        fine() {
          return 1;
        }
      })(),
    );
    server.sendCalls([
      [1, ["broken", [0]]],
      [2, ["fine", [0]]],
    ]);
    expect(await server.outcome(1)).toMatchObject({ kind: "failed", code: "ENCODE" });
    expect(await server.outcome(2)).toEqual({ kind: "ok", value: 1 });
  });

  it("count against the receiver's maxMessageBytes like other bytes: the call is refused with LIMIT, not run", async () => {
    const target = new Files();
    const paired = pairWith(target, { limits: { maxMessageBytes: 1024 } });
    using client = createRpcClient<Files>("F", "big", { transport: paired.factory, reconnect: false });
    const error = await rejectionOf(client.echo(new Blob([new Uint8Array(2048)]) as never));
    expect((error as { code?: string }).code).toBe("LIMIT");
    expect(paired.connections[0]!.serverCloses).toEqual([]);
    expect(target.received).toEqual([]);
  });
});
