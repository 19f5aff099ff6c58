/**
 * The Standard Schema interface (version 1), typed here so that no validator library becomes a
 * dependency: Zod (≥ 3.24), Valibot (≥ 1), ArkType (≥ 2) and others put this object on their
 * schemas under the `~standard` key. dorpc only calls `validate` and reads `issues`.
 * `isStandardSchema` recognises one at run time (options are checked when they are given).
 *
 * Internal module: the public names are re-exported from index.ts.
 */

/** A schema in the Standard Schema v1 shape: `Input` is what it accepts, `Output` what it yields. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": StandardSchemaV1.Props<Input, Output>;
}

export declare namespace StandardSchemaV1 {
  interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
  }

  type Result<Output> = SuccessResult<Output> | FailureResult;

  interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }

  interface FailureResult {
    readonly issues: ReadonlyArray<Issue>;
  }

  interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }

  interface PathSegment {
    readonly key: PropertyKey;
  }

  interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }

  type InferInput<Schema extends StandardSchemaV1> = NonNullable<Schema["~standard"]["types"]>["input"];
  type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema["~standard"]["types"]>["output"];
}

/** True for an object with a version-1 `~standard` property whose `validate` is a function. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  const standard = (value as { "~standard"?: { version?: unknown; validate?: unknown } })["~standard"];
  return typeof standard === "object" && standard !== null && standard.version === 1 && typeof standard.validate === "function";
}
