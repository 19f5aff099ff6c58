// docs/getting-started.md "A browser tsconfig": src/api.ts, verbatim, and the implements snippet.
export interface CounterApi {
  increment(by?: number): number;
  getValue(): number;
}
