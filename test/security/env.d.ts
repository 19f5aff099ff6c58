/** Bindings of the security test Worker (wrangler.toml in this folder). */
declare namespace Cloudflare {
  interface Env {
    VICTIM: DurableObjectNamespace<import("./objects.js").Victim>;
    TIGHT: DurableObjectNamespace<import("./objects.js").Tight>;
    ALLOW_LIST: DurableObjectNamespace<import("./objects.js").AllowList>;
    ALLOW_FN: DurableObjectNamespace<import("./objects.js").AllowFn>;
    TRUSTED: DurableObjectNamespace<import("./objects.js").Trusted>;
    IDENT: DurableObjectNamespace<import("./objects.js").Ident>;
    SESSION_VICTIM: DurableObjectNamespace<import("./session-objects.js").SessionVictim>;
    SECRET: string;
  }
}

interface Env extends Cloudflare.Env {}
