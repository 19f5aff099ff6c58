/** Bindings of the conformance test Worker (wrangler.toml in this folder). */
declare namespace Cloudflare {
  interface Env {
    ECHO: DurableObjectNamespace<import("./objects.js").Echo>;
    SECRET: string;
    CONFIG: { region: string; db: { host: string } };
  }
}

interface Env extends Cloudflare.Env {}
