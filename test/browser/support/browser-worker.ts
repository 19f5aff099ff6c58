/**
 * Starts the browser tier's Worker (test/browser/wrangler.toml) under `wrangler dev`, with the
 * one origin its `allowedOrigins` accepts set to its own: pages it serves may connect, pages
 * from any other origin are refused.
 */
import { freePort, startWranglerDev, type WranglerDev } from "../../support/wrangler-dev.js";

export interface BrowserWorkerOptions {
  /** Port; default a free one. A restart passes the old one, so the page's URLs stay valid. */
  port?: number;
  /** Local Durable Object storage, kept across restarts. */
  persistTo: string;
  /** wrangler config relative to the repo root. Default the browser tier's own. */
  config?: string;
}

export async function startBrowserWorker(options: BrowserWorkerOptions): Promise<WranglerDev> {
  const port = options.port ?? (await freePort());
  let lastError: unknown;
  // Right after a stop, the old workerd may still hold the port for a moment: try again.
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return await startWranglerDev({
        config: options.config ?? "test/browser/wrangler.toml",
        port,
        persistTo: options.persistTo,
        vars: { PAGE_ORIGIN: `http://127.0.0.1:${port}` },
      });
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
    }
  }
  throw lastError;
}
