/** `task.meta.conformance`: what a conformance test records for generate.mjs (see results.ts). */
export {};

declare module "vitest" {
  interface TaskMeta {
    conformance?: import("./results.js").ConformanceMeta;
  }
}
