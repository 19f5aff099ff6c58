/**
 * One incoming chain: checked whole before any step runs, then run step by step under the
 * access policy (access.ts states the rules; this file applies them).
 *
 * Where a chain starts decides how its first name is read:
 *  - the **root** of a Durable Object: a method or getter of the user's class (rule 2);
 *  - the root a **client exposes** (`expose`): its own methods if it is a plain object, or its
 *    class's methods (rule 2 stopping at `Object.prototype`);
 *  - an **export** (a function or `RpcTarget` this end handed out) or a **pipelined result**:
 *    the value itself. A function there may be called; an `RpcTarget`'s members follow rule 2;
 *    plain data exposes its own data properties (rule 3).
 *
 * A call step applies a function to its arguments only after the function's argument schema
 * (`rpcMethod`) accepted them; the function gets the schema's output. What it returns passes its
 * result schema, if it has one, before anything reads it (method-checks.ts).
 *
 * Internal module.
 */
import { type AccessPolicy, findMember, isPlainData, type Member, notFound, readDataProperty } from "./access.js";
import { argsContext, buildTable, type DecodeContext, readArgs, tooManyArgs, validateTable } from "./codec.js";
import { ValueTag } from "./envelopes.js";
import { cancelledReason } from "./incoming-call.js";
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { proxyInfo } from "./proxy.js";
import { isOwnError, refuse } from "./refusals.js";
import { methodSpec } from "./rpc-method.js";
import { RpcTarget } from "./rpc-target.js";

/** A parsed step: a property name, or a call whose arguments are decoded (or still a table). */
export type Step = string | CallStep;
export interface CallStep {
  args: unknown[] | undefined;
  /** A record table validated at parse time, built when the call runs (it may use pipelined results). */
  table: unknown;
  /** `args` passed the function's argument schema and are now its output. */
  checked: boolean;
}

/** How the first name of a chain is read. */
export type RootRule = "object" | "expose";

/**
 * Validates a chain and decodes its JSON arguments before any step runs: shape, length, argument
 * counts, names (access rule 1). Record-table arguments are validated now and built at run time.
 * Throws `RpcError`.
 */
export function parseChain(
  chain: unknown,
  policy: AccessPolicy,
  limits: RpcLimits,
  ctx: DecodeContext,
  label: string,
  fromRoot: boolean,
): Step[] {
  if (!Array.isArray(chain) || chain.length === 0) throw new RpcError("PROTOCOL", "A chain must be a non-empty array of steps.");
  if (chain.length > limits.maxChainLength) {
    throw new RpcError("LIMIT", `Chain of ${chain.length} steps exceeds limits.maxChainLength (${limits.maxChainLength}).`);
  }
  if (fromRoot && typeof chain[0] !== "string") throw new RpcError("PROTOCOL", "A chain must start with a member name.");
  const names: string[] = [];
  const steps: Step[] = new Array(chain.length);
  for (let i = 0; i < chain.length; i++) {
    const step: unknown = chain[i];
    if (typeof step === "string") {
      names.push(step);
      steps[i] = step;
    } else if (Array.isArray(step) && step.length > 0) {
      steps[i] = { args: undefined, table: undefined, checked: false };
    } else {
      throw new RpcError("PROTOCOL", `Chain step ${i} is neither a member name nor a call.`);
    }
  }
  if (names.length) policy.checkStatic(names, label, fromRoot);
  for (let i = 0; i < chain.length; i++) {
    const step = steps[i]!;
    if (typeof step === "string") continue;
    const raw = chain[i] as unknown[];
    if (raw[0] === ValueTag.Json || raw[0] === ValueTag.Bytes) {
      // Nothing to build later: JSON is checked as it is, bytes are one argument (no references).
      step.args = readArgs(raw, ctx, i);
    } else if (raw[0] === ValueTag.Records && raw.length === 2) {
      validateTable(raw[1], argsContext(ctx));
      // The arguments are the table's root: an array record of at most maxArgs entries.
      const root = (raw[1] as unknown[][])[0]!;
      if (root[0] !== 1 /* ARRAY */) throw new RpcError("PROTOCOL", `Arguments of chain step ${i} are not an array.`);
      if ((root[1] as unknown[]).length > limits.maxArgs) throw tooManyArgs((root[1] as unknown[]).length, limits);
      step.table = raw[1];
    } else {
      throw new RpcError("PROTOCOL", `Chain step ${i} has an unknown argument encoding.`);
    }
  }
  return steps;
}

/**
 * Builds the record-table arguments of `steps` (after the values they pipeline on are known).
 * What fails here (an invalid RegExp, a reference that is gone) is dorpc's refusal, not the
 * method's error: nothing of the call has run yet.
 */
export function buildArgs(steps: Step[], ctx: DecodeContext): void {
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]!;
    if (typeof step === "string" || step.table === undefined) continue;
    let args: unknown;
    try {
      args = buildTable(step.table, ctx);
    } catch (error) {
      if (error instanceof RpcError && !isOwnError(error)) refuse(error);
      throw error;
    }
    step.table = undefined;
    step.args = args as unknown[];
  }
}

/** Where a chain is while it runs. */
export interface Cursor {
  /** The value the last step produced (at the start: where the chain starts). */
  value: unknown;
  /** A method read by the last step and not yet called, with its receiver. */
  method: Member["fn"] | undefined;
  receiver: object | undefined;
  /** How `value` is read at the first step: the root's own rule, or as a value. */
  rule: RootRule | "value";
  /** The member name that resolved `method` (for messages). */
  name: string | undefined;
  /** `requireSchemas`: a function without an argument schema is not called; this is the refusal. */
  requireSchemas: ((name: string | undefined) => RpcError) | undefined;
}

/** What a running chain needs to know about its end. */
export interface ChainEnv {
  readonly policy: AccessPolicy;
  /** The Durable Object (or exposed object) whose name appears in errors. */
  readonly label: string;
  /** Values that are never stepped into (the object itself, its env, its ctx). */
  isPlatformState(value: unknown): boolean;
}

/** Marker: the step resolved a method, now held by the cursor. */
const METHOD = Symbol("method");

/**
 * A chain's final value reached after an await, boxed: returned bare from a `then` callback, a
 * thenable (a value the caller passed in, `{ then: fn }`) would be adopted — its `then` called
 * with the call's own settle functions, as the caller's function — instead of being the result.
 */
export class Finished {
  constructor(readonly value: unknown) {}
}

const finish = (result: unknown): unknown => (result instanceof Promise ? result : new Finished(result));

/**
 * Runs steps from `i`; synchronous until a step returns a promise (or a pipelining handle), then
 * continues when it settles. Returns the final value, or a promise of it as a `Finished`.
 * `enter(call)`/`leave` bracket each step's synchronous user code; `call` is the caller's token
 * for the call these steps belong to, given to `enter` again when the steps resume (other calls
 * may have entered meanwhile).
 */
export function runSteps(
  cursor: Cursor,
  steps: Step[],
  i: number,
  env: ChainEnv,
  enter: (call: unknown) => void,
  leave: () => void,
  call: unknown,
): unknown {
  for (; i < steps.length; i++) {
    const step = steps[i]!;
    let produced: unknown;
    enter(call);
    try {
      if (typeof step === "string") {
        produced = readStep(cursor, step, env);
        if (produced === METHOD) continue;
      } else {
        const fn = callable(cursor, i, env);
        const spec = methodSpec(fn);
        if (!step.checked) {
          if (spec?.args) {
            // The function gets the schema's output (method-checks.ts, installed by rpcMethod).
            const args = spec.checkArgs(spec.args, step.args!, cursor.name, env.label);
            if (args instanceof Promise) {
              // An async schema: the same step runs again once the arguments are checked.
              return args.then((checked) => {
                // Cancelled while its schema ran: the method never starts.
                if ((call as { cancelled?: boolean } | undefined)?.cancelled) throw cancelledReason();
                step.args = checked;
                step.checked = true;
                return finish(runSteps(cursor, steps, i, env, enter, leave, call));
              });
            }
            step.args = args;
          } else if (cursor.requireSchemas) refuse(cursor.requireSchemas(cursor.name));
          step.checked = true;
        }
        cursor.method = undefined;
        produced = Reflect.apply(fn, cursor.receiver, step.args!);
        if (spec?.result) {
          const { result, checkResult } = spec;
          const { name } = cursor;
          produced = isAsync(produced)
            ? Promise.resolve(produced).then((value) => checkResult(value, result, name, env.label))
            : checkResult(produced, result, name, env.label);
        }
      }
    } finally {
      leave();
    }
    cursor.rule = "value";
    if (isAsync(produced)) {
      const next = i + 1;
      return Promise.resolve(produced).then((value) => {
        cursor.value = value;
        return finish(runSteps(cursor, steps, next, env, enter, leave, call));
      });
    }
    cursor.value = produced;
  }
  if (cursor.method) refuse(new RpcError("NOT_CALLABLE", `The chain ends at a method of ${env.label} without calling it; add the call.`));
  return cursor.value;
}

/** A promise, or one of dorpc's handles (a call made through a stub inside the method). */
export function isAsync(value: unknown): boolean {
  return value instanceof Promise || (typeof value === "function" && proxyInfo(value)?.kind === "path");
}

/**
 * What call step `i` applies (left in `cursor.method`, its receiver in `cursor.receiver`);
 * refuses when nothing there may be called.
 */
function callable(cursor: Cursor, i: number, env: ChainEnv): Member["fn"] {
  if (cursor.method) return cursor.method;
  // A call with no member before it: the value itself must be a function handed out by
  // reference (an export, or a pipelined result that would have travelled as a stub).
  const value = cursor.value;
  // A stub (a function of another end, which may be another client's) is never called from a
  // chain: a round trip could not send it to the caller either (security.md).
  if (typeof value === "function" && cursor.rule === "value" && !env.isPlatformState(value) && !proxyInfo(value)) {
    cursor.method = value as Member["fn"];
    cursor.receiver = undefined;
    cursor.name = undefined;
    return cursor.method;
  }
  return refuse(new RpcError("NOT_CALLABLE", `Step ${i} calls something that is not a reachable method on ${env.label}.`));
}

/** Access rules 2 and 3 for one property step. */
function readStep(cursor: Cursor, name: string, env: ChainEnv): unknown {
  const { label, policy } = env;
  if (cursor.method) refuse(notFound(name, label)); // a property of a method: never reachable
  const holder = cursor.value;
  if (policy.trusted) {
    const found = policy.readTrusted!(holder, name);
    if (!found) refuse(notFound(name, label));
    return typeof found.value === "function" ? method(cursor, found.value as Member["fn"], holder as object, name) : found.value;
  }
  if (cursor.rule === "expose" && typeof holder === "object" && holder !== null && isPlainData(holder)) {
    // A client's exposed plain object: its own function-valued properties are its methods.
    const desc = Object.getOwnPropertyDescriptor(holder, name);
    if (!desc || typeof desc.value !== "function") refuse(notFound(name, label));
    return method(cursor, desc.value as Member["fn"], holder, name);
  }
  if (cursor.rule !== "value" || holder instanceof RpcTarget) {
    const owner = holder as object;
    const member = findMember(owner, name);
    // Always the root's name: naming inner classes would tell a prober what it reached.
    if (!member) refuse(notFound(name, label));
    return member.kind === "getter" ? member.fn.call(owner) : method(cursor, member.fn, owner, name);
  }
  if (typeof holder === "object" && holder !== null && isPlainData(holder) && !env.isPlatformState(holder)) {
    const found = readDataProperty(holder, name);
    if (found) return found.value;
  }
  return refuse(notFound(name, label));
}

/** The step resolved method `name` of `receiver`: held by the cursor for the call step after it. */
function method(cursor: Cursor, fn: Member["fn"], receiver: object, name: string): typeof METHOD {
  cursor.method = fn;
  cursor.receiver = receiver;
  cursor.name = name;
  return METHOD;
}
