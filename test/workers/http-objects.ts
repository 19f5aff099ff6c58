// A Durable Object and a Worker entrypoint for the HTTP batch tests (http-e2e.test.ts).
import { RpcDurableObject, RpcTarget } from "@dorpc/rpc/server";

export class Box extends RpcTarget {
  constructor(readonly label: string) {
    super();
  }
  title(): string {
    return this.label;
  }
}

export class HttpE2e extends RpcDurableObject<Env> {
  private runs = 0;
  /** Counts runs in storage after waiting `ms`: shows a call that ran twice. */
  async slowIncrement(ms: number): Promise<number> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    const value = (this.ctx.storage.kv.get<number>("count") ?? 0) + 1;
    this.ctx.storage.kv.put("count", value);
    return value;
  }
  increment(): number {
    const value = (this.ctx.storage.kv.get<number>("count") ?? 0) + 1;
    this.ctx.storage.kv.put("count", value);
    return value;
  }
  count(): number {
    return this.ctx.storage.kv.get<number>("count") ?? 0;
  }
  text(n: number): string {
    return "x".repeat(n);
  }
  bytes(n: number): Uint8Array {
    return new Uint8Array(n).fill(7);
  }
  box(label: string): Box {
    return new Box(label);
  }
  echo<T>(value: T): T {
    return value;
  }
  /** Plain JSON with one sub-object reached twice (no cycle). */
  shared(): unknown {
    const point = { x: 1, y: 2 };
    return { from: point, to: point };
  }
  /** Plain JSON nested `n` arrays deep. */
  deep(n: number): unknown {
    let v: unknown = [];
    for (let i = 0; i < n; i++) v = [v];
    return v;
  }
  /** An object with an optional field left undefined. */
  optional(): unknown {
    return { id: 1, nickname: undefined };
  }
  manyBytes(n: number): Uint8Array[] {
    return Array.from({ length: n }, () => new Uint8Array([1]));
  }
  bump(): number {
    return ++this.runs;
  }
}

// A Worker entrypoint keeping an httpTransport() client in module scope.
import { exports, WorkerEntrypoint } from "cloudflare:workers";
import { createRpcClient, httpTransport, type RpcClient } from "@dorpc/rpc";

const moduleClients = new Map<string, { client: RpcClient<HttpE2e>; loseNext: { value: number } }>();

function moduleClient(name: string, timeout: number, initialDelay: number) {
  let entry = moduleClients.get(name);
  if (!entry) {
    const loseNext = { value: 0 };
    const fetcher = (exports as unknown as { default: Fetcher }).default;
    const client = createRpcClient<HttpE2e>("HTTP_E2E", name, {
      baseUrl: "http://dorpc.test",
      timeout,
      reconnect: { initialDelay, maxDelay: initialDelay, jitter: 0 },
      transport: httpTransport({
        fetch: async (input, init) => {
          const response = await fetcher.fetch(input, init);
          if (loseNext.value > 0) {
            loseNext.value--;
            await response.arrayBuffer();
            throw new TypeError("network connection lost");
          }
          return response;
        },
      }),
    });
    entry = { client, loseNext };
    moduleClients.set(name, entry);
  }
  return entry;
}

export class HttpWorker extends WorkerEntrypoint<Env> {
  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const name = url.searchParams.get("name") ?? "module";
    const timeout = Number(url.searchParams.get("timeout") ?? "2000");
    const delay = Number(url.searchParams.get("delay") ?? "5");
    const { client, loseNext } = moduleClient(name, timeout, delay);
    if (url.searchParams.get("lose")) loseNext.value = Number(url.searchParams.get("lose"));
    try {
      return Response.json({ value: await client.increment() });
    } catch (error) {
      return Response.json({ error: { code: (error as { code?: string }).code, message: String((error as Error).message) } });
    }
  }
}
