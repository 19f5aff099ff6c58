/**
 * `rpcMethod`: a method declared with what dorpc should know about it — a Standard Schema for
 * its arguments (and optionally its result), whether it only reads, whether its calls are kept in
 * the delivery record. Declared as a class field, so the schema's output type becomes the
 * parameter types of the function (inference, not a second declaration that could disagree) and,
 * through the class, the client's types:
 *
 * ```ts
 * class Counter extends RpcDurableObject<Env> {
 *   increment = rpcMethod(v.tuple([v.number()]), (by) => { … });   // by: number
 *   getValue = rpcMethod({ readOnly: true }, () => this.ctx.storage.kv.get("n") ?? 0);
 * }
 * ```
 *
 * The function is returned as is (calling it locally does not validate); dorpc reads its spec
 * from a WeakMap when a client calls it. Only functions made by `rpcMethod` are reachable as
 * instance fields (access.ts), so the brand cannot be forged.
 *
 * Runtime-neutral; no validator library is a dependency: the Standard Schema interface is typed
 * here (standard-schema.ts).
 */
import { RpcError } from "./errors.js";
import { checkArgs, checkResult } from "./method-checks.js";
import { isStandardSchema, type StandardSchemaV1 } from "./standard-schema.js";

/** A Standard Schema whose output is an argument list. */
export type ArgsSchema = StandardSchemaV1<unknown, readonly unknown[]>;

/** What `rpcMethod` takes besides the function. */
export interface MethodSpec<
  A extends ArgsSchema | undefined = ArgsSchema | undefined,
  R extends StandardSchemaV1 | undefined = StandardSchemaV1 | undefined,
> {
  /** Checks the arguments before the method runs (its output is what the method receives). */
  args?: A;
  /** Checks what the method returns before it is sent. */
  result?: R;
  /**
   * The method writes nothing: its calls skip the delivery record (a resend after a dropped
   * connection simply runs it again, which a read can afford). Default false.
   */
  readOnly?: boolean;
  /**
   * `false`: never store this method's results in the delivery record (large results). Its calls
   * still leave a small marker, so a resend after a drop is never run twice: it fails with
   * `DISCONNECTED` saying the call ran and its result was not kept. Default true.
   */
  record?: boolean;
}

/**
 * A spec after checking. It carries the code that runs its schemas (method-checks.ts), so the
 * callee runs them without importing it: a bundle that declares no method does not carry it.
 */
export interface ResolvedMethodSpec {
  readonly args: ArgsSchema | undefined;
  readonly result: StandardSchemaV1 | undefined;
  readonly readOnly: boolean;
  readonly record: boolean;
  readonly checkArgs: typeof checkArgs;
  readonly checkResult: typeof checkResult;
}

/** The argument list a schema outputs: what the method receives. */
type ArgsOf<S> = S extends ArgsSchema ? Extract<StandardSchemaV1.InferOutput<S>, readonly unknown[]> : never;
/**
 * The argument list a schema accepts: what a client passes. It differs from the output for a
 * schema that coerces or transforms (`v.pipe(v.string(), v.transform(Number))` takes a string
 * and gives the method a number). A schema whose input is not a list (`unknown`) falls back to
 * its output.
 */
type InputOf<S> = S extends ArgsSchema
  ? StandardSchemaV1.InferInput<S> extends infer I extends readonly unknown[]
    ? I
    : ArgsOf<S>
  : never;
/** What a client receives: a result schema's output, or what the function resolves to. */
type ResultOf<Spec, R> = Spec extends { result: infer Q extends StandardSchemaV1 } ? StandardSchemaV1.InferOutput<Q> : Awaited<R>;

const specs = new WeakMap<object, ResolvedMethodSpec>();

/** The spec of a function made by `rpcMethod`, if it is one. */
export function methodSpec(fn: unknown): ResolvedMethodSpec | undefined {
  return typeof fn === "function" ? specs.get(fn) : undefined;
}

declare const SIGNATURE: unique symbol;

/**
 * Type-level only (never present at run time): how a client calls a method made by
 * `rpcMethod`: with the argument schema's input `I`, receiving `O`. The client types
 * (types.ts) read it instead of the function's own parameters, which are the schema's output.
 */
export interface RpcMethodTypes<I extends readonly unknown[], O> {
  readonly [SIGNATURE]: { readonly input: I; readonly result: O };
}

/**
 * A method made by `rpcMethod`: the function itself, typed with the schema's output `A` (what
 * it receives), plus what a client passes (`I`) and gets back (`O`).
 */
export type RpcMethod<A extends readonly unknown[], R, I extends readonly unknown[] = A, O = Awaited<R>> = ((...args: A) => R) &
  RpcMethodTypes<I, O>;

/** Declares a method whose arguments are checked by `schema` (a Standard Schema of the argument list). */
export function rpcMethod<S extends ArgsSchema, R>(schema: S, fn: (...args: ArgsOf<S>) => R): RpcMethod<ArgsOf<S>, R, InputOf<S>>;
/** Declares a method with a spec: argument and result schemas, `readOnly`, `record`. */
export function rpcMethod<const S extends MethodSpec, R, F extends (...args: never[]) => unknown>(
  spec: S,
  fn: S extends { args: infer A extends ArgsSchema } ? (...args: ArgsOf<A>) => R : F,
): S extends { args: infer A extends ArgsSchema }
  ? RpcMethod<ArgsOf<A>, R, InputOf<A>, ResultOf<S, R>>
  : RpcMethod<Parameters<F>, ReturnType<F>, Parameters<F>, ResultOf<S, ReturnType<F>>>;
export function rpcMethod(specOrSchema: ArgsSchema | MethodSpec, fn: (...args: never[]) => unknown): unknown {
  if (typeof fn !== "function") throw new RpcError("BAD_OPTION", "rpcMethod needs the method as its second argument.");
  if (specs.has(fn)) throw new RpcError("BAD_OPTION", "This function was already declared with rpcMethod.");
  specs.set(fn, resolveSpec(specOrSchema));
  return fn;
}

function resolveSpec(given: ArgsSchema | MethodSpec): ResolvedMethodSpec {
  if (isStandardSchema(given)) return { args: given, result: undefined, readOnly: false, record: true, checkArgs, checkResult };
  if (typeof given !== "object" || given === null) {
    throw new RpcError(
      "BAD_OPTION",
      "rpcMethod needs a Standard Schema (Zod, Valibot, ArkType, …) or a spec object as its first argument.",
    );
  }
  for (const key of Object.keys(given)) {
    if (!["args", "result", "readOnly", "record"].includes(key)) {
      throw new RpcError("BAD_OPTION", `Unknown rpcMethod option "${key}"; known: args, result, readOnly, record.`);
    }
  }
  const { args, result, readOnly = false, record = true } = given;
  if (args !== undefined && !isStandardSchema(args))
    throw new RpcError("BAD_OPTION", "rpcMethod args must be a Standard Schema (version 1).");
  if (result !== undefined && !isStandardSchema(result))
    throw new RpcError("BAD_OPTION", "rpcMethod result must be a Standard Schema (version 1).");
  if (typeof readOnly !== "boolean" || typeof record !== "boolean")
    throw new RpcError("BAD_OPTION", "rpcMethod readOnly and record must be booleans.");
  return { args, result, readOnly, record, checkArgs, checkResult };
}
