/**
 * `task.meta.conformance` and `task.meta.references`: what a conformance test records for
 * generate.mjs (see results.ts and references.ts).
 */
export {};

declare module "vitest" {
  interface TaskMeta {
    conformance?: import("./results.js").ConformanceMeta;
    references?: {
      column: import("./results.js").Column;
      observed: import("./references.js").ReferenceObservations;
      cases: typeof import("./references.js").REFERENCE_CASES;
    };
  }
}
