/** Bindings of the demo / bench Worker (wrangler.toml at the repo root). */
interface Env {
  COUNTER: DurableObjectNamespace<import("./counter.js").Counter>;
}
