/**
 * Deep values with default limits: a 10,000-deep linked list and a 10,000-deep JSON document
 * travel whole, on both ends, without overflowing any stack (every walk is iterative or stops
 * recursing early). The depth protections themselves are in hostile.test.ts.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, decode, DEFAULT_LIMITS, encode } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { expectThrowsCode } from "./helpers.js";

interface Node {
  value: number;
  tag?: bigint;
  next: Node | null;
}

/** `n` nodes, node i holding value i; with `rich`, every node also holds a BigInt (records path). */
function linkedList(n: number, rich = false): Node {
  let head: Node | null = null;
  for (let i = n - 1; i >= 0; i--) head = rich ? { value: i, tag: BigInt(i), next: head } : { value: i, next: head };
  return head!;
}

/** Walks the list without recursion; returns its length after checking every node. */
function checkList(list: unknown, n: number, rich = false): void {
  let node = list as Node | null;
  for (let i = 0; i < n; i++) {
    expect(node?.value).toBe(i);
    if (rich) expect(node?.tag).toBe(BigInt(i));
    node = node!.next;
  }
  expect(node).toBeNull();
}

/** `[[[…[1]…]]]`, `n` arrays deep. */
function nestedArrays(n: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = [v];
  return v;
}

function depthOf(value: unknown): number {
  let depth = 0;
  for (let v = value; Array.isArray(v); v = v[0]) depth++;
  return depth;
}

class Echo {
  echo(value: unknown) {
    return value;
  }
}

async function viaCall(value: unknown) {
  const paired = pairWith(new Echo());
  using client = createRpcClient<Echo>("ECHO", "deep", { transport: paired.factory });
  const result = await client.echo(value as never);
  return { result, connection: paired.connections[0]! };
}

describe("deep values with default limits", () => {
  it("default maxDepth leaves room for a 10,000-deep value inside an argument list", () => {
    expect(DEFAULT_LIMITS.maxDepth).toBeGreaterThan(10_001);
  });

  it.each([
    ["plain (JSON-shaped)", false],
    ["with a BigInt in every node (records)", true],
  ])("round-trips a 10,000-deep linked list, %s, through encode/decode", (_name, rich) => {
    const list = linkedList(10_000, rich);
    checkList(decode(encode(list)), 10_000, rich);
  });

  it("round-trips a 10,000-deep JSON document through encode/decode", () => {
    expect(depthOf(decode(encode(nestedArrays(10_000))))).toBe(10_000);
  });

  it.each([
    ["plain (JSON-shaped)", false],
    ["with a BigInt in every node (records)", true],
  ])("sends a 10,000-deep linked list, %s, as an argument and gets it back as a result", async (_name, rich) => {
    const { result } = await viaCall(linkedList(10_000, rich));
    checkList(result, 10_000, rich);
  });

  it("sends a 10,000-deep JSON document through a call and back", async () => {
    const { result } = await viaCall(nestedArrays(10_000));
    expect(depthOf(result)).toBe(10_000);
  });

  it("carries values deeper than the JSON walk copies as a record table, whose frame stays flat", () => {
    // JSON.stringify recurses natively and overflows a few thousand levels down; the fast path
    // stops copying far before that and the record table is a flat list.
    const frame = encode(nestedArrays(5_000)) as string;
    expect(JSON.parse(frame.slice(2))[0]).toBe(1);
    expect(depthOf(decode(frame))).toBe(5_000);
    expect(JSON.parse((encode(nestedArrays(100)) as string).slice(2))[0]).toBe(0);
  });

  it("refuses to send a value nested deeper than maxDepth (an endless Proxy chain) with ENCODE, not a hang or an overflow", () => {
    // Every read of `next` makes a new level: only a depth bound stops the walk.
    const endless = (): object =>
      new Proxy(
        {},
        {
          get: (_t, key) => (key === "next" ? endless() : undefined),
          ownKeys: () => ["next"],
          getOwnPropertyDescriptor: () => ({ enumerable: true, configurable: true, value: undefined }),
        },
      );
    const error = expectThrowsCode(() => encode(endless()), "ENCODE");
    expect(error.message).toMatch(/nested deeper than 20000 levels/);
  });
});
