/**
 * The Durable Object of the conformance Worker: `echo` sends back what it received (the WPT
 * battery's round trip), and a few methods return what must never leave: the object's own env,
 * ctx and their members, nested in ordinary results.
 */
import { RpcDurableObject, type RpcStub, RpcTarget } from "@dorpc/rpc/server";

/** What `adder` hands out by reference. */
export class Adder extends RpcTarget {
  constructor(private readonly base: number) {
    super();
  }

  add(n: number): number {
    return this.base + n;
  }
}

export class Echo extends RpcDurableObject<Env> {
  echo<T>(value: T): T {
    return value;
  }

  /** Calls the client's function (references.workers.test.ts). */
  async callBack(fn: RpcStub<(x: number) => number>, x: number): Promise<number> {
    return await fn(x);
  }

  adder(base: number): Adder {
    return new Adder(base);
  }

  /** What the object received, described here (so a test can see the server's view). */
  describe(value: unknown): string {
    if (typeof File === "function" && value instanceof File) return `File ${value.name} ${value.type} ${value.lastModified} ${value.size}`;
    if (value instanceof Blob) return `Blob ${value.type} ${value.size}`;
    return Object.prototype.toString.call(value);
  }

  makeFile(): File {
    return new File(["made in workerd"], "w.txt", { type: "text/plain", lastModified: 1_700_000_000_000 });
  }

  envInside(): unknown {
    return { config: { env: this.env } };
  }

  configInside(): unknown {
    return [{ settings: this.env.CONFIG }];
  }

  dbInside(): unknown {
    return { db: this.env.CONFIG.db };
  }

  storageInside(): unknown {
    return { when: new Date(0), storage: this.ctx.storage };
  }

  selfInside(): unknown {
    return { self: this };
  }
}
