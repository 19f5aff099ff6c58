/**
 * Which Durable Objects keep a delivery record (delivery.ts), and how one is bound to an object:
 * made once per instance, when the object has SQLite storage that runs statements and the record
 * is not turned off, over the object's watched storage (storage-writes.ts) — its own rows through
 * the unwatched SQL, so they do not count as the object's writes.
 *
 * Internal module (workerd only).
 */
import { DeliveryRecord } from "./delivery.js";
import type { ResolvedDelivery } from "./delivery-options.js";
import { type Sql, sqlOf, storageOf } from "./sql.js";
import { watchWrites } from "./storage-writes.js";

const records = new WeakMap<object, DeliveryRecord | null>();

/** The delivery record of `target`, or `undefined` when it has no SQLite storage or it is off. */
export function deliveryOf(target: object, options: ResolvedDelivery | undefined): DeliveryRecord | undefined {
  if (!options) return undefined;
  let record = records.get(target);
  if (record === undefined) {
    const storage = storageOf(target);
    if (storage && sqlOf(target)) {
      // The storage object itself: its own methods (put, setAlarm, …) are watched too.
      const writes = watchWrites(storage as { sql: Sql; kv?: object });
      record = new DeliveryRecord(writes.sql, options, writes);
    } else record = null;
    records.set(target, record);
  }
  return record ?? undefined;
}
