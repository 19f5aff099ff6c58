/**
 * The browser tier's Worker, run by `wrangler dev` (wrangler.toml in this folder): serves the
 * pages built into ./dist from `[assets]` and routes /__rpc/{binding}/{instance} to `Probe`,
 * accepting WebSockets only from PAGE_ORIGIN (the tests pass it with `--var`), so a page from
 * any other origin is refused (but see `?cors=` below).
 */
import { RpcDurableObject, type RpcAttachment, type RpcServerOptions } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";
import type { BlobReport, FailKind, ProbeApi, ProbeTopics } from "./probe-api.js";

interface Env {
  PROBE: DurableObjectNamespace<Probe>;
  /** The one origin allowed to open WebSockets, e.g. `http://127.0.0.1:8787`. */
  PAGE_ORIGIN?: string;
}

/** A custom error class: it crosses the wire as an `Error` named "QuotaError" with its `code`. */
class QuotaError extends Error {
  override name = "QuotaError";
  readonly code = "QUOTA_EXCEEDED";
}

export class Probe extends RpcDurableObject<Env, unknown, ProbeTopics> implements ProbeApi {
  static rpcOptions: RpcServerOptions = { topics: { news: {} } };

  echo<T>(value: T): T {
    return value;
  }

  bytes(length: number): Uint8Array {
    return new Uint8Array(length).map((_, i) => i & 0xff);
  }

  measure(data: Uint8Array): { length: number; sum: number } {
    let sum = 0;
    for (const byte of data) sum += byte;
    return { length: data.length, sum };
  }

  increment(by = 1): number {
    const n = (this.ctx.storage.kv.get<number>("n") ?? 0) + by;
    this.ctx.storage.kv.put("n", n);
    return n;
  }

  getValue(): number {
    return this.ctx.storage.kv.get<number>("n") ?? 0;
  }

  fail(kind: FailKind): never {
    switch (kind) {
      case "type":
        throw new TypeError("expected a string");
      case "range":
        throw new RangeError("out of range", { cause: { limit: 10 } });
      case "quota":
        throw new QuotaError("over quota");
      case "string":
        throw "a thrown string";
    }
  }

  async wait(ms: number, label: string): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return label;
  }

  async inspectBlob(blob: Blob): Promise<BlobReport> {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await blob.arrayBuffer()));
    const report: BlobReport = {
      kind: blob instanceof File ? "File" : "Blob",
      type: blob.type,
      size: blob.size,
      sha256: [...digest].map((byte) => byte.toString(16).padStart(2, "0")).join(""),
    };
    if (blob instanceof File) Object.assign(report, { name: blob.name, lastModified: blob.lastModified });
    return report;
  }

  makeFile(name: string, type: string, lastModified: number, size: number): File {
    return new File([new Uint8Array(size).map((_, i) => (i * 7) & 0xff)], name, { type, lastModified });
  }

  announce(text: string): number {
    return this.publish("news", { text });
  }

  subscribers(topic: string): number {
    return this.ctx.getWebSockets().filter((ws) => (ws.deserializeAttachment() as RpcAttachment | null)?.topics?.includes(topic)).length;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (!env.PAGE_ORIGIN)
      return new Response("PAGE_ORIGIN is not set: start wrangler dev with --var PAGE_ORIGIN:<origin>.", { status: 500 });
    // `?cors=on` / `?cors=narrow` (the client's `query`): CORS for the same page served from
    // localhost instead of 127.0.0.1, another origin to the browser — HTTP batches across
    // origins; "narrow" lets the origin read answers but leaves dorpc's session headers out.
    const mode = new URL(request.url).searchParams.get("cors");
    const foreign = env.PAGE_ORIGIN.replace("//127.0.0.1:", "//localhost:");
    const routed = await routeDORequest(
      request,
      env,
      mode === "on" || mode === "narrow"
        ? {
            allowedOrigins: [env.PAGE_ORIGIN, foreign],
            cors: { origins: [foreign], ...(mode === "narrow" ? { headers: ["Content-Type"] } : {}) },
          }
        : { allowedOrigins: [env.PAGE_ORIGIN] },
    );
    return routed ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
