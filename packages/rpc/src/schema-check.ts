/**
 * Running a Standard Schema on a call's arguments (or a method's result), on either end, and
 * turning what the validator reports into dorpc's own errors: `INVALID_ARGUMENT` with the issues
 * (path + message) as data the client can read, `INVALID_RESULT` without them.
 *
 * The validator is another library's code running on input a peer chose, so nothing it does may
 * escape as anything but a refusal: a schema that throws, returns a malformed result or a
 * thousand issues still ends in one bounded `RpcError`.
 *
 * Internal module.
 */
import { RpcError, type RpcIssue } from "./errors.js";
import { segmentText } from "./paths.js";
import type { StandardSchemaV1 } from "./standard-schema.js";

/** At most this many issues are kept (and sent): enough to fix a call, not a way to amplify one. */
export const MAX_ISSUES = 50;
/** Longer issue messages are cut here. */
export const MAX_ISSUE_MESSAGE = 500;
/** Longer paths keep their first segments. */
export const MAX_ISSUE_PATH = 32;
/** Longer string keys in a path are cut here. */
const MAX_KEY = 200;
/** The error message names this many issues; `issues` has them all (up to `MAX_ISSUES`). */
const ISSUES_IN_MESSAGE = 5;
/** Each issue in the error message is cut here. */
const MESSAGE_PER_ISSUE = 200;

/** What a schema said about a value: its output, or why not. */
export type Checked =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly issues: RpcIssue[]; readonly total: number };

/** Runs `schema` on `value`: the outcome, or a promise of it for an async schema. Never throws or rejects. */
export function runSchema(schema: StandardSchemaV1, value: unknown): Checked | Promise<Checked> {
  let result: unknown;
  let async: boolean;
  try {
    result = schema["~standard"].validate(value);
    async = isThenable(result); // reads `then`, which may throw too
  } catch (error) {
    return threw(error);
  }
  if (async) return Promise.resolve(result).then(readResult, threw);
  return readResult(result);
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function"
  );
}

function readResult(result: unknown): Checked {
  try {
    if (typeof result !== "object" || result === null) return schemaFailed("The schema returned no result.");
    const { issues } = result as { issues?: unknown };
    if (issues === undefined) return { ok: true, value: (result as { value?: unknown }).value };
    if (!Array.isArray(issues)) return schemaFailed("The schema reported issues that are not a list.");
    const kept: RpcIssue[] = [];
    for (let i = 0; i < issues.length && i < MAX_ISSUES; i++) kept.push(normaliseIssue(issues[i]));
    // A failure must say why: a schema reporting an empty list still refused the value.
    if (kept.length === 0) return schemaFailed("The schema refused the value without saying why.");
    return { ok: false, issues: kept, total: issues.length };
  } catch (error) {
    return threw(error);
  }
}

/** A schema that throws (a bug in it, or input it cannot handle) refuses the value. */
function threw(error: unknown): Checked {
  // The error's name only: its message may describe the server's code, not the caller's input.
  const name = error instanceof Error && typeof error.name === "string" ? error.name.slice(0, 100) : typeof error;
  return schemaFailed(`The schema threw ${name} on this value.`);
}

function schemaFailed(message: string): Checked {
  return { ok: false, issues: [{ message, path: [] }], total: 1 };
}

/** One Standard Schema issue as dorpc's `RpcIssue`: a bounded message and a path of strings and numbers. */
function normaliseIssue(issue: unknown): RpcIssue {
  const raw = (typeof issue === "object" && issue !== null ? issue : {}) as { message?: unknown; path?: unknown };
  const message = typeof raw.message === "string" && raw.message !== "" ? cut(raw.message, MAX_ISSUE_MESSAGE) : "Invalid value.";
  const path: (string | number)[] = [];
  if (Array.isArray(raw.path)) {
    for (let i = 0; i < raw.path.length && i < MAX_ISSUE_PATH; i++) path.push(pathKey(raw.path[i]));
  }
  return { message, path };
}

/** A path segment: a property key, or `{ key }` (Standard Schema allows both). */
function pathKey(segment: unknown): string | number {
  const key = typeof segment === "object" && segment !== null ? (segment as { key?: unknown }).key : segment;
  if (typeof key === "number") return Number.isFinite(key) ? key : String(key); // JSON has no NaN
  if (typeof key === "string") return cut(key, MAX_KEY);
  if (typeof key === "symbol") return cut(key.toString(), MAX_KEY);
  // A key that is no property name (a Set element's `null`, a Map's object key): say what it is
  // rather than a word that reads like one.
  return key === null || key === undefined ? "[entry]" : `[${typeof key} key]`;
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** `arguments[0].name`, `arguments[1]["a b"]`: where in the argument list an issue is. */
export function renderPath(path: readonly (string | number)[], root = "arguments"): string {
  let out = root;
  for (const key of path) out += segmentText(key);
  return out;
}

/** The issues as one line for a message: the first few, then how many more. */
export function describeIssues(issues: readonly RpcIssue[], total: number, root = "arguments"): string {
  const shown = issues
    .slice(0, ISSUES_IN_MESSAGE)
    // A validator's own full stop goes: the message ends the sentence once.
    .map((issue) => `${renderPath(issue.path, root)}: ${cut(issue.message, MESSAGE_PER_ISSUE).replace(/\.+$/, "")}`);
  const more = total - shown.length;
  return shown.join("; ") + (more > 0 ? ` (and ${more} more)` : "");
}

/** How a message names the function a call step applies: a method by name, or a handed-out function. */
export function describeFunction(name: string | undefined, label: string): string {
  return name === undefined ? `a function ${label} handed out` : `"${name.slice(0, 100)}" on ${label}`;
}

/** `INVALID_ARGUMENT` for a call of `what` (`"increment" on Counter`), carrying the issues. */
export function invalidArguments(what: string, checked: Extract<Checked, { ok: false }>): RpcError {
  return new RpcError("INVALID_ARGUMENT", `Invalid arguments for ${what}: ${describeIssues(checked.issues, checked.total)}.`, {
    issues: checked.issues,
  });
}

/**
 * Reads the issues of an `INVALID_ARGUMENT` reply: the peer's list, re-checked as strictly as a
 * validator's (a hostile peer cannot make the client hold more than `MAX_ISSUES` bounded issues).
 * `undefined` when there is no usable list.
 */
export function issuesFromWire(value: unknown): RpcIssue[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: RpcIssue[] = [];
  for (let i = 0; i < value.length && i < MAX_ISSUES; i++) {
    const item: unknown = value[i];
    if (typeof item !== "object" || item === null) continue;
    const { message, path } = item as { message?: unknown; path?: unknown };
    if (typeof message !== "string") continue;
    const keys = Array.isArray(path) ? path.filter((k): k is string | number => typeof k === "string" || typeof k === "number") : [];
    out.push({
      message: cut(message, MAX_ISSUE_MESSAGE),
      path: keys.slice(0, MAX_ISSUE_PATH).map((k) => (typeof k === "string" ? cut(k, MAX_KEY) : k)),
    });
  }
  return out;
}
