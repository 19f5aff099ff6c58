/**
 * The Inventory's API as plain TypeScript: the Node client imports this, not worker.ts, so it
 * compiles without Workers types (tsconfig.node.json). The class `implements` it.
 */
import type { RpcStub } from "@dorpc/rpc";

export interface InventoryApi {
  /** Adds `count` of `item`; returns the new stock of every item. */
  add(item: string, count: number): Map<string, number>;
  /** Removes `count` of `item`; throws a RangeError when there are fewer. */
  take(item: string, count: number): Map<string, number>;
  /** How many of `item` are in stock. */
  count(item: string): number;
  /** Stock and when it last changed. */
  report(): { stock: Map<string, number>; changed: Date | null };
  /**
   * Adds each `[item, count]`, one after another, telling the client how far it got through
   * `onProgress(done, total)`: a function of the client's, which the object calls back.
   */
  restock(items: [item: string, count: number][], onProgress: RpcStub<(done: number, total: number) => void>): Promise<Map<string, number>>;
}
