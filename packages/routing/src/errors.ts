/**
 * The router's own thrown failures: one `RoutingError` class, told apart by `code`.
 *
 * Problems with an incoming *request* (bad path, unknown binding, disallowed origin) are never
 * thrown: they become HTTP responses. `RoutingError` is thrown only for mistakes in the calling
 * code, so they surface in the Worker's logs and tests instead of as a status code a client sees.
 */

/**
 * Every code a `RoutingError` can carry.
 *
 * | code                | meaning                                                                   |
 * | ------------------- | ------------------------------------------------------------------------- |
 * | `BAD_OPTION`        | an option or argument passed to a routing function is invalid             |
 * | `AMBIGUOUS_BINDING` | a path segment matches more than one Durable Object binding (see binding.ts) |
 * | `BAD_HOOK_RESULT`   | a hook returned something other than a Response, a Request or nothing, or read the body it would forward |
 */
export const ROUTING_ERROR_CODES = ["BAD_OPTION", "AMBIGUOUS_BINDING", "BAD_HOOK_RESULT"] as const;

/** One of {@link ROUTING_ERROR_CODES}. */
export type RoutingErrorCode = (typeof ROUTING_ERROR_CODES)[number];

const CODE_SET: ReadonlySet<string> = new Set(ROUTING_ERROR_CODES);

/** A failure of the router's caller, recognisable by `instanceof RoutingError` and by `code`. */
export class RoutingError extends Error {
  readonly code: RoutingErrorCode;

  constructor(code: RoutingErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for any `RoutingError`, including one from another copy of this package. */
  static is(value: unknown): value is RoutingError {
    if (value instanceof RoutingError) return true;
    if (!(value instanceof Error) || value.name !== "RoutingError") return false;
    const code = (value as { code?: unknown }).code;
    return typeof code === "string" && CODE_SET.has(code);
  }
}

// On the prototype, so `name` survives minification of the class name and is not an own property.
Object.defineProperty(RoutingError.prototype, "name", {
  value: "RoutingError",
  writable: true,
  enumerable: false,
  configurable: true,
});
