/**
 * The Room's API as plain TypeScript: the React app imports this, not worker.ts, so its
 * tsconfig (DOM, no Workers types) stays clean. The class `implements` it.
 */
export interface RoomApi {
  /** Adds a vote for `option`; returns every option's votes. */
  vote(option: string): Record<string, number>;
  tally(): Record<string, number>;
}
