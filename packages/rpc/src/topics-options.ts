/**
 * The `topics` server option: which topics exist and how long each keeps its events. Separate
 * from topics.ts so the runtime-neutral option resolution does not pull in the event log.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";

const TOPIC_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Retention of one topic. */
export interface TopicOptions {
  /** Keep the last this many events for clients that were away. Default 1,000. */
  keep?: number;
  /** Also drop events older than this many ms (the newest is always kept). Default: no age limit. */
  maxAge?: number;
}

export interface ResolvedTopic {
  readonly keep: number;
  readonly maxAge: number;
}

/** Validates the `topics` server option. */
export function resolveTopics(topics: Record<string, TopicOptions> | undefined): ReadonlyMap<string, ResolvedTopic> {
  const out = new Map<string, ResolvedTopic>();
  if (topics === undefined) return out;
  if (typeof topics !== "object" || topics === null || Array.isArray(topics))
    throw new RpcError("BAD_OPTION", "topics must be an object of topic names to options, e.g. { chat: {} } (not a list of names).");
  for (const [name, options] of Object.entries(topics)) {
    if (!TOPIC_NAME.test(name))
      throw new RpcError("BAD_OPTION", `Topic name ${JSON.stringify(name)} must be 1–64 characters of A–Z a–z 0–9 _ . : -.`);
    if (options !== undefined && (typeof options !== "object" || options === null || Array.isArray(options)))
      throw new RpcError("BAD_OPTION", `topics.${name} must be an object of options ({} for the defaults), got ${String(options)}.`);
    const unknown = options ? Object.keys(options).find((key) => key !== "keep" && key !== "maxAge") : undefined;
    if (unknown !== undefined) throw new RpcError("BAD_OPTION", `topics.${name} has no option ${JSON.stringify(unknown)} (keep, maxAge).`);
    const keep = options?.keep ?? 1000;
    const maxAge = options?.maxAge ?? 0;
    if (!Number.isSafeInteger(keep) || keep < 1)
      throw new RpcError("BAD_OPTION", `topics.${name}.keep must be a positive integer, got ${String(keep)}.`);
    if (typeof maxAge !== "number" || !(maxAge >= 0) || !Number.isFinite(maxAge)) {
      throw new RpcError("BAD_OPTION", `topics.${name}.maxAge must be a number of milliseconds ≥ 0, got ${String(maxAge)}.`);
    }
    out.set(name, { keep, maxAge });
  }
  return out;
}
