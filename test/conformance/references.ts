/**
 * Beyond the battery: the values structured clone cannot carry and an RPC system passes by
 * reference — a function given as an argument, an object with methods handed back, and a result
 * not yet arrived used as an argument. Each column observes what really happens to them (a
 * sentence, not pass/fail: "copied" and "refused" are both legitimate for a clone) and records it
 * for docs/conformance.md; dorpc's columns also assert what dorpc promises.
 */

/** The cases, in table order. */
export const REFERENCE_CASES = {
  function: "a function given as an argument, then called by the receiver",
  target: "an object with methods (`RpcTarget`) returned, then one of its methods called",
  pending: "a result not yet arrived, used as the argument of the next call",
} as const;

export type ReferenceCase = keyof typeof REFERENCE_CASES;

/** One column's observations, as it leaves them in `task.meta.references`. */
export type ReferenceObservations = Partial<Record<ReferenceCase, string>>;

/** Runs `attempt` and says what happened: its own sentence, or the error it threw, in one line. */
export async function observe(attempt: () => Promise<string>): Promise<string> {
  try {
    return await attempt();
  } catch (error) {
    const named = error as { name?: string; code?: unknown; message?: string };
    const kind = typeof named?.code === "string" ? `${named.name} ${named.code}` : (named?.name ?? "error");
    const message = String(named?.message ?? error)
      .replace(/\s+/g, " ")
      .trim();
    return `refused: ${kind} (${message.length > 90 ? message.slice(0, 87) + "..." : message})`;
  }
}
