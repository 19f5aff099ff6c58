/**
 * Stands in for the guide's `src/index.ts` (docs/getting-started.md), which the guide's object
 * modules import their `Env` from: here, the test Worker's bindings (../env.d.ts).
 */
export type Env = Cloudflare.Env;
