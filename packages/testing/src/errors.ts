/**
 * The testing helpers' own failures: one `TestingError` class, told apart by `code`.
 *
 * Options that `createTestClient` passes on to `createRpcClient` (timeout, limits, reconnect…)
 * are validated there and fail with `@dorpc/rpc`'s `RpcError` (code `BAD_OPTION`); calls made on
 * a test client fail exactly as on any dorpc client. `TestingError` is only for what this package
 * itself refuses or cannot do.
 */

/**
 * Every code a `TestingError` can carry.
 *
 * | code                | meaning                                                                        |
 * | ------------------- | ------------------------------------------------------------------------------ |
 * | `BAD_OPTION`        | an argument or option passed to a testing helper is invalid                    |
 * | `NOT_A_TEST_CLIENT` | a helper was given something that `createTestClient` did not return            |
 * | `NOT_CONNECTED`     | the helper needs an open connection and the client has none                    |
 * | `TIMEOUT`           | `waitForState` gave up before the client reached the state it waited for        |
 * | `DISPOSED`          | `waitForState` waited for another state and the client was disposed meanwhile   |
 * | `RUNTIME`           | the Workers Vitest runtime refused a request (e.g. evicting an idle object)     |
 */
export const TESTING_ERROR_CODES = ["BAD_OPTION", "NOT_A_TEST_CLIENT", "NOT_CONNECTED", "TIMEOUT", "DISPOSED", "RUNTIME"] as const;

/** One of {@link TESTING_ERROR_CODES}. */
export type TestingErrorCode = (typeof TESTING_ERROR_CODES)[number];

const CODE_SET: ReadonlySet<string> = new Set(TESTING_ERROR_CODES);

/** A failure of a testing helper, recognisable by `instanceof TestingError` and by `code`. */
export class TestingError extends Error {
  readonly code: TestingErrorCode;

  constructor(code: TestingErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for any `TestingError`, including one from another copy of this package. */
  static is(value: unknown): value is TestingError {
    if (value instanceof TestingError) return true;
    if (!(value instanceof Error) || value.name !== "TestingError") return false;
    const code = (value as { code?: unknown }).code;
    return typeof code === "string" && CODE_SET.has(code);
  }
}

// On the prototype, so `name` survives minification of the class name and is not an own property.
Object.defineProperty(TestingError.prototype, "name", {
  value: "TestingError",
  writable: true,
  enumerable: false,
  configurable: true,
});

/** A short description of `value` for error messages: its type, and its value when that is short. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return `${typeof value} ${String(value)}`;
  if (typeof value === "function") {
    // Read through the descriptor: a dorpc client is a Proxy whose `get` answers any name.
    const name: unknown = Object.getOwnPropertyDescriptor(value, "name")?.value;
    return typeof name === "string" && name !== "" ? `a function (${name})` : "a function";
  }
  if (typeof value === "object") {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name;
    return name && name !== "Object" ? `a ${name}` : "an object";
  }
  return typeof value;
}
