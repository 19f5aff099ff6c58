/**
 * Entry for test/unit/keep-names.test.ts, bundled there with esbuild's `keepNames` (wrangler's
 * default). Runs call shapes over the paired transport — both ends of dorpc, and on the object a
 * delivery record — first to warm up, then counted: the test wraps esbuild's `__name` helper to
 * count every function that is named, i.e. made, while the counted calls run.
 */
import { createRpcClient } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "./node-sql.js";
import { pairWith } from "./paired-transport.js";

class Item extends RpcTarget {
  constructor(readonly n: number) {
    super();
  }
  get(): number {
    return this.n;
  }
}

class Counter {
  n = 0;
  getValue(): number {
    return this.n;
  }
  increment(): number {
    return ++this.n;
  }
  echo<T>(value: T): T {
    return value;
  }
  item(n: number): Item {
    return new Item(n);
  }
  async later(n: number): Promise<number> {
    await Promise.resolve();
    return n;
  }
  /** Makes a named function on every call: the test's positive control. */
  namesOne(n: number): number {
    const double = (x: number) => 2 * x;
    return double(n);
  }
}

/** The call shapes counted, each a function making one call (or one pipelined chain). */
export const SHAPES = {
  "getValue()": (c: Client) => c.getValue(),
  "increment()": (c: Client) => c.increment(),
  'echo("x")': (c: Client) => c.echo("x"),
  "echo(object)": (c: Client) => c.echo({ a: 1, b: [1, 2, { c: "d" }] }),
  "echo(Map, Date, BigInt)": (c: Client) =>
    c.echo(
      new Map<unknown, unknown>([
        [1, new Date(0)],
        ["n", 10n],
      ]),
    ),
  "echo(Uint8Array)": (c: Client) => c.echo(new Uint8Array(64)),
  "an async method": (c: Client) => c.later(3),
  "a pipelined chain of 3": (c: Client) => c.echo(c.echo(c.getValue())),
  "a stub's method": (c: Client) => c.item(4).get(),
  "a method that makes a named function": (c: Client) => c.namesOne(2),
} as const;

type Client = ReturnType<typeof createRpcClient<Counter>>;

/** Runs `shape` `warm` times, resets the count, runs it `calls` times; with `record`, the object keeps a delivery record. */
export async function run(shape: keyof typeof SHAPES, record: boolean, warm: number, calls: number, reset: () => void): Promise<void> {
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = record ? new DeliveryRecord(writes.sql, resolveDelivery({ flushAfter: 60_000 })!, writes) : undefined;
  const paired = pairWith(new Counter(), undefined, { records });
  const client = createRpcClient<Counter>("COUNTER", "keep-names", { transport: paired.factory });
  const make = SHAPES[shape];
  try {
    for (let i = 0; i < warm; i++) await make(client);
    reset();
    for (let i = 0; i < calls; i++) await make(client);
  } finally {
    client[Symbol.dispose]();
  }
}
