/**
 * The Inventory's API as plain TypeScript: the Node client imports this, not worker.ts, so it
 * compiles without Workers types (tsconfig.node.json). The class `implements` it.
 */
export interface InventoryApi {
  /** Adds `count` of `item`; returns the new stock of every item. */
  add(item: string, count: number): Map<string, number>;
  /** Removes `count` of `item`; throws a RangeError when there are fewer. */
  take(item: string, count: number): Map<string, number>;
  /** Stock and when it last changed. */
  report(): { stock: Map<string, number>; changed: Date | null };
}
