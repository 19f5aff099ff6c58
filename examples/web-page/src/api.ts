/**
 * The Counter's API as plain TypeScript. The page imports this file, not worker.ts, so the
 * page's tsconfig (DOM, no Workers types) never sees `DurableObjectNamespace` or `ctx`; the
 * class `implements` it, so the two cannot drift apart.
 */
export interface CounterApi {
  increment(by?: number): number;
  getValue(): number;
}
