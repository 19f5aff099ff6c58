import { RpcDurableObject, type RpcStub } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";
import type { InventoryApi } from "./api.js";

interface Env {
  INVENTORY: DurableObjectNamespace<Inventory>;
}

export class Inventory extends RpcDurableObject<Env> implements InventoryApi {
  add(item: string, count: number): Map<string, number> {
    if (!Number.isInteger(count) || count <= 0) throw new RangeError(`count must be a positive integer, got ${count}`);
    return this.update(item, this.stock().get(item) ?? 0, count);
  }

  take(item: string, count: number): Map<string, number> {
    const have = this.stock().get(item) ?? 0;
    if (count > have) throw new RangeError(`cannot take ${count} ${item}: ${have} left`);
    return this.update(item, have, -count);
  }

  count(item: string): number {
    return this.stock().get(item) ?? 0;
  }

  report(): { stock: Map<string, number>; changed: Date | null } {
    return { stock: this.stock(), changed: this.ctx.storage.kv.get<Date>("changed") ?? null };
  }

  async restock(
    items: [item: string, count: number][],
    onProgress: RpcStub<(done: number, total: number) => void>,
  ): Promise<Map<string, number>> {
    for (const [done, [item, count]] of items.entries()) {
      // Report before each item, and wait for the client: a client that cannot be called back
      // (HTTP batches) fails the call here, before anything changed.
      await onProgress(done, items.length);
      this.add(item, count);
    }
    await onProgress(items.length, items.length);
    return this.stock();
  }

  // Values are stored as themselves: storage and dorpc both use structured clone.
  private stock(): Map<string, number> {
    return this.ctx.storage.kv.get<Map<string, number>>("stock") ?? new Map();
  }

  private update(item: string, have: number, delta: number): Map<string, number> {
    const stock = this.stock().set(item, have + delta);
    this.ctx.storage.kv.put("stock", stock);
    this.ctx.storage.kv.put("changed", new Date());
    return stock;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeDORequest(request, env)) ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
