/**
 * How one end is set up to serve the calls it receives (`CalleeConfig`, read by callee.ts), and
 * what a call reaches under it. Where a call's chain starts is named by its envelope's target:
 *  - 0: the root (the Durable Object, or what a client exposes), read by its own rule (`rootRule`);
 *  - > 0: an object or function this end exported to the caller, while the caller holds it;
 *  - < 0: the result of the earlier call of the same frame it pipelines on (settled by then);
 *  - with the System flag: dorpc's own methods on this end (`system`: topic subscriptions), by the
 *    `expose` rule, exempt from `requireSchemas`, and with room of their own above the app's
 *    `limits.maxPendingCalls` (`SYSTEM_CALL_ROOM`).
 *
 * Invariant: a chain starts at one of these or not at all: a root or system object this end does
 * not have is refused with `NOT_FOUND`, an export the caller no longer holds with
 * `REFERENCE_LOST`, each as dorpc's own refusal, and nothing else is looked for in its place.
 *
 * Internal module.
 */
import type { AccessPolicy } from "./access.js";
import type { Cursor, RootRule } from "./chain.js";
import type { Connection } from "./connection.js";
import { CallFlags } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { Incoming } from "./incoming-call.js";
import type { RpcLimits } from "./limits.js";
import { refuse } from "./refusals.js";

/** How one end serves the calls it receives. */
export interface CalleeConfig {
  /** What target 0 reaches; `undefined`: nothing (a client that exposes nothing). */
  readonly root: object | undefined;
  /** What system calls (`CallFlags.System`) reach: dorpc's own methods on this end. */
  readonly system?: object;
  readonly rootRule: RootRule;
  /** Named in errors (`No method … is reachable on Counter`). */
  readonly label: string;
  readonly policy: AccessPolicy;
  readonly limits: Readonly<RpcLimits>;
  readonly exposeErrorStack: boolean;
  /** Values never stepped into or sent (the object, its env, its ctx). */
  isPlatformState(value: unknown): boolean;
  /** A notification (no reply) failed: nobody else will hear of it. */
  onNotificationError(error: unknown): void;
  /** Never sent in a result or thrown value, named in the refusal (a Durable Object's env, ctx, …). */
  readonly forbidden?: ReadonlyMap<object, string>;
  /**
   * `requireSchemas` (a Durable Object's option): the refusal of a call to a function without an
   * argument schema, `name` the method's or `undefined` for a handed-out function. System calls
   * are exempt: they are dorpc's.
   */
  readonly requireSchemas?: (name: string | undefined) => RpcError;
}

/**
 * How many of dorpc's own calls may run above `limits.maxPendingCalls`: a subscribe and an
 * unsubscribe for each topic a connection may hold (topics.ts allows 32).
 */
export const SYSTEM_CALL_ROOM = 64;

/** Whether a calls-frame envelope carries the System flag (dorpc's own call, see `CallFlags`). */
export function isSystem(envelope: unknown[]): boolean {
  const flags = envelope[3];
  return typeof flags === "number" && (flags & CallFlags.System) !== 0;
}

/** Where the chain of `call` starts: the root, an export, a pipelined result, or dorpc's own object. */
export function startingPoint(call: Incoming, config: CalleeConfig, conn: Connection): Cursor {
  const { target } = call;
  if (call.flags & CallFlags.System) {
    if (target !== 0 || !config.system) refuse(new RpcError("NOT_FOUND", `${config.label} takes no system calls of this kind.`));
    return cursorAt(config.system, "expose", undefined);
  }
  const { requireSchemas } = config;
  if (target === 0) {
    if (!config.root) {
      refuse(new RpcError("NOT_FOUND", `${config.label} exposes nothing to call: pass { expose: … } to createRpcClient.`));
    }
    return cursorAt(config.root, config.rootRule, requireSchemas);
  }
  if (target > 0) {
    const entry = conn.exports.get(target);
    if (!entry) refuse(conn.lostExport(target));
    return cursorAt(entry.value, "value", requireSchemas);
  }
  const dep = call.deps![0]!;
  return cursorAt((dep.outcome as { value: unknown }).value, "value", requireSchemas);
}

function cursorAt(value: unknown, rule: Cursor["rule"], requireSchemas: Cursor["requireSchemas"]): Cursor {
  return { value, method: undefined, receiver: undefined, rule, name: undefined, requireSchemas };
}
