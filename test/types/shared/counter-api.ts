/**
 * A counter object's API as plain TypeScript: no Workers, DOM or Node types, so every tsconfig
 * of the type tests can import it (the types-only pattern of docs/getting-started.md).
 */
export interface CounterApi {
  increment(by?: number): number;
  getValue(): number;
  stats(): { hits: number; since: Date; tags: Set<string> };
  rename(name: string): void;
  /** A function result: it arrives as a stub (calls go back to the object). */
  ticker(): () => number;
}
