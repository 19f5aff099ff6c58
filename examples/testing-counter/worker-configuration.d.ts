// The shape `wrangler types` generates for this Worker: its bindings (`env`) and its main module
// (`exports`, both from "cloudflare:workers"). Regenerate with `npx wrangler types` after
// changing wrangler.toml.
declare namespace Cloudflare {
  interface GlobalProps {
    mainModule: typeof import("./src/index.js");
    durableNamespaces: "Counter";
  }
  interface Env {
    COUNTER: DurableObjectNamespace<import("./src/index.js").Counter>;
  }
}
interface Env extends Cloudflare.Env {}
