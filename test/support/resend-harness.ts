/**
 * A client with an exactly-once session paired with a Counter-like object that keeps a delivery
 * record (node:sqlite), and that can cut the connection right after a method ran (before its
 * reply is delivered): for tests of resends after a cut (test/unit/acknowledged-resends.test.ts,
 * test/unit/resend-order.test.ts).
 */
import { createRpcClient } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "./node-sql.js";
import { type Paired, pairWith } from "./paired-transport.js";

export class ResendApi {
  paired!: Paired;
  /** How many of the next method runs cut the connection after they ran. */
  cuts = 0;
  /** How many times each method ran. */
  runs = new Map<string, number>();
  /** Resolves the pending `slow()` calls, in order. */
  gates: (() => void)[] = [];
  private count(name: string) {
    this.runs.set(name, (this.runs.get(name) ?? 0) + 1);
    if (this.cuts > 0) {
      this.cuts--;
      const conn = this.paired.connections.at(-1)!;
      setTimeout(() => conn.cut(), 0); // before the reply's delivery timer
    }
  }
  fast(): string {
    this.count("fast");
    return "fast";
  }
  bytes(n: number): Uint8Array {
    this.count("bytes");
    return Uint8Array.from({ length: n }, (_, i) => (i * 7) % 251);
  }
  slow(): Promise<string> {
    this.count("slow");
    return new Promise((resolve) => this.gates.push(() => resolve("slow")));
  }
  echo(v: unknown): unknown {
    this.count("echo");
    return v;
  }
  getValue(): number {
    this.count("getValue");
    return 7;
  }
  get config(): { a: number } {
    return { a: 1 };
  }
}

/** The object, its record and a client that reconnects at once; `timeout` per call (0: none). */
export function resendSetup(instance: string, timeout: number) {
  const sql = nodeSql();
  const watch = watchWrites({ sql });
  const records = new DeliveryRecord(watch.sql, resolveDelivery({})!, watch);
  const target = new ResendApi();
  const paired = pairWith(target, undefined, { records });
  target.paired = paired;
  const rpc = createRpcClient<ResendApi>("A", instance, {
    transport: paired.factory,
    heartbeat: false,
    timeout,
    reconnect: { initialDelay: 0, maxDelay: 0, jitter: 0 },
  });
  return { sql, records, target, paired, rpc };
}

export const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
