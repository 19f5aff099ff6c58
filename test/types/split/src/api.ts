/**
 * The Worker's public API as plain TypeScript. This file imports nothing and names no Workers
 * type, so a browser tsconfig (DOM, no workers-types) can import it; src/index.ts holds the
 * class, which `implements` this interface so the two cannot drift apart.
 */
export interface CounterApi {
  increment(by?: number): number;
  getValue(): number;
}
