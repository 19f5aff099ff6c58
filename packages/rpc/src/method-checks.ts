/**
 * A method's declared schemas (`rpcMethod`) at the boundary: its arguments before it runs, its
 * result before anything reads it. `rpcMethod` puts these checks in the spec it makes, and the
 * callee (chain.ts) runs them from there: a bundle that declares no method does not carry them.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";
import { refuse } from "./refusals.js";
import { type Checked, describeFunction, describeIssues, invalidArguments, runSchema } from "./schema-check.js";
import type { StandardSchemaV1 } from "./standard-schema.js";

/**
 * The argument list the function receives: the output of `schema` on `args`. Refuses (the
 * function never runs) when the arguments fail it; a promise for an async schema.
 */
export function checkArgs(
  schema: StandardSchemaV1,
  args: unknown[],
  name: string | undefined,
  label: string,
): unknown[] | Promise<unknown[]> {
  const apply = (checked: Checked): unknown[] => {
    if (!checked.ok) refuse(invalidArguments(describeFunction(name, label), checked));
    if (!Array.isArray(checked.value)) {
      refuse(
        new RpcError(
          "BAD_OPTION",
          `The argument schema of ${describeFunction(name, label)} produced something other than an argument list; an args schema describes the list (a tuple).`,
        ),
      );
    }
    return checked.value;
  };
  const checked = runSchema(schema, args);
  return checked instanceof Promise ? checked.then(apply) : apply(checked);
}

/**
 * What a method produced (settled) after its result schema: the schema's output. A result that
 * fails is withheld: the caller gets `INVALID_RESULT` without the issues (they describe the
 * server's data), which are logged here for the developer instead.
 */
export function checkResult(value: unknown, schema: StandardSchemaV1, name: string | undefined, label: string): unknown {
  const apply = (checked: Checked): unknown => {
    if (checked.ok) return checked.value;
    const what = describeFunction(name, label);
    console.warn(`dorpc: the result of ${what} failed its result schema: ${describeIssues(checked.issues, checked.total, "result")}`);
    return refuse(
      new RpcError(
        "INVALID_RESULT",
        `The result of ${what} does not match its result schema, so it was not sent (the method ran; the server log has the ${checked.total === 1 ? "issue" : `${checked.total} issues`}).`,
      ),
    );
  };
  const checked = runSchema(schema, value);
  return checked instanceof Promise ? checked.then(apply) : apply(checked);
}
