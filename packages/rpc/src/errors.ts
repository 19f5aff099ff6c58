/**
 * The library's own failures: one `RpcError` class, told apart by `code`.
 *
 * Errors thrown by the user's Durable Object methods are *not* wrapped: they cross the wire as
 * values (see codec.ts) and are rebuilt on the client as the same kind of `Error`. `RpcError` is
 * only for what dorpc itself refuses or cannot do.
 */

/**
 * Every code an `RpcError` can carry. The set is small and stable; match on `error.code`.
 *
 * | code           | meaning                                                                  |
 * | -------------- | ------------------------------------------------------------------------ |
 * | `NOT_FOUND`    | the chain names a member that does not exist or is not reachable        |
 * | `NOT_CALLABLE` | the chain calls something that is not a reachable method                 |
 * | `ENCODE`       | a value cannot be carried by the wire (function, symbol, class instance) |
 * | `DECODE`       | a frame or value on the wire is malformed or uses a forbidden type       |
 * | `LIMIT`        | a receive-side limit was exceeded (size, depth, pending calls, …)        |
 * | `PROTOCOL`     | a frame broke the protocol (bad id, wrong frame kind, bad chain)         |
 * | `TIMEOUT`      | no reply arrived within the call's timeout                              |
 * | `CONNECT_FAILED` | the connection never opened (wrong URL or route, refused Origin, …)    |
 * | `DISCONNECTED` | the connection closed before the reply and the outcome cannot be known   |
 * | `DISPOSED`     | the client was disposed before or during the call                        |
 * | `RELEASED`     | a call on a stub or callback that was disposed or not kept past its call |
 * | `REFERENCE_LOST` | a stub from a connection that closed, or an object that was evicted    |
 * | `EXPIRED`      | a resent call whose delivery record expired, so it was not run again     |
 * | `INVALID_ARGUMENT` | the arguments failed the method's schema (`issues` lists why); it did not run |
 * | `INVALID_RESULT` | the method's result failed its result schema; it ran, its result was withheld |
 * | `BAD_OPTION`   | an option passed to a dorpc function is invalid                         |
 * | `INTERNAL`     | dorpc itself failed unexpectedly (a bug: please report it)               |
 */
export const RPC_ERROR_CODES = [
  "NOT_FOUND",
  "NOT_CALLABLE",
  "ENCODE",
  "DECODE",
  "LIMIT",
  "PROTOCOL",
  "TIMEOUT",
  "CONNECT_FAILED",
  "DISCONNECTED",
  "DISPOSED",
  "RELEASED",
  "REFERENCE_LOST",
  "EXPIRED",
  "INVALID_ARGUMENT",
  "INVALID_RESULT",
  "BAD_OPTION",
  "INTERNAL",
] as const;

/** One of {@link RPC_ERROR_CODES}. */
export type RpcErrorCode = (typeof RPC_ERROR_CODES)[number];

const CODE_SET: ReadonlySet<string> = new Set(RPC_ERROR_CODES);

/** True when `value` is one of the documented {@link RpcErrorCode}s. */
export function isRpcErrorCode(value: unknown): value is RpcErrorCode {
  return typeof value === "string" && CODE_SET.has(value);
}

/**
 * One reason a value failed a schema: where (`path`: property keys and array indexes from the
 * argument list, so `[0, "name"]` is the first argument's `name`; `[]` for the list itself) and
 * what (`message`, the validator's own words).
 */
export interface RpcIssue {
  readonly message: string;
  readonly path: readonly (string | number)[];
}

/**
 * A failure of dorpc itself, recognisable by `instanceof RpcError` and by `code`
 * (so it can be matched across realms and bundles too).
 */
export class RpcError extends Error {
  readonly code: RpcErrorCode;
  /**
   * `INVALID_ARGUMENT` only: why the arguments failed, as the schema reported it (at most 50
   * issues). An own property only when set, so other errors carry nothing extra over the wire.
   */
  declare readonly issues?: readonly RpcIssue[];

  constructor(code: RpcErrorCode, message: string, options?: { cause?: unknown; issues?: readonly RpcIssue[] }) {
    super(message, options && "cause" in options ? { cause: options.cause } : undefined);
    this.code = code;
    if (options?.issues) (this as { issues?: readonly RpcIssue[] }).issues = options.issues;
  }

  /** True for any `RpcError`, including one from another copy of this library. */
  static is(value: unknown): value is RpcError {
    return (
      value instanceof RpcError ||
      (value instanceof Error && value.name === "RpcError" && isRpcErrorCode((value as { code?: unknown }).code))
    );
  }
}

// On the prototype, not the instance: `name` must not show up as an own property when an
// RpcError is itself sent over the wire as a value.
Object.defineProperty(RpcError.prototype, "name", {
  value: "RpcError",
  writable: true,
  enumerable: false,
  configurable: true,
});
