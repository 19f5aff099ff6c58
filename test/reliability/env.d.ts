/** Bindings of the reliability Worker (wrangler.toml in this folder). */
declare namespace Cloudflare {
  interface Env {
    RELIABLE: DurableObjectNamespace<import("./worker.js").Reliable>;
  }
}
