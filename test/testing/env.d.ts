/** Bindings of the testing Worker (wrangler.toml in this folder). */
declare namespace Cloudflare {
  interface Env {
    COUNTER: DurableObjectNamespace<import("./worker.js").Counter>;
    BEARER: DurableObjectNamespace<import("./worker.js").Bearer>;
    PREFIXED: DurableObjectNamespace<import("./worker.js").Prefixed>;
  }
}

interface Env extends Cloudflare.Env {}
