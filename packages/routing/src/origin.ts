/**
 * Origin allowlists, shared by `allowedOrigins` (WebSocket upgrades) and `cors.origins`.
 *
 * List entries are compared to the `Origin` header byte for byte, so each entry must already be
 * in the exact form browsers send (`scheme://host[:port]`, lowercase host, no path, no trailing
 * slash). Entries that are not are rejected when the options are validated, with the corrected
 * form in the message, rather than silently never matching.
 */
import { RoutingError } from "./errors.js";

/** Who may call: a list of exact origins, `"*"` (anyone, where permitted), or a predicate. */
export type OriginPolicy = readonly string[] | "*" | ((origin: string) => boolean);

export interface OriginMatcher {
  /** True when any origin is allowed, so `Access-Control-Allow-Origin: *` can be used. */
  readonly any: boolean;
  /** Only a predicate result of exactly `true` allows; a predicate that throws fails the request. */
  matches(origin: string): boolean;
}

function canonicalOrigin(entry: string): string | undefined {
  try {
    const origin = new URL(entry).origin;
    // Non-special schemes (e.g. "chrome-extension:") have an opaque "null" origin.
    return origin === "null" ? undefined : origin;
  } catch {
    return undefined;
  }
}

export function compileOriginPolicy(value: unknown, optionName: string, allowAny: boolean): OriginMatcher {
  if (typeof value === "function") {
    const predicate = value as (origin: string) => unknown;
    return { any: false, matches: (origin) => predicate(origin) === true };
  }
  if (value === "*") {
    if (!allowAny) {
      throw new RoutingError(
        "BAD_OPTION",
        `${optionName} cannot be "*"; list the allowed origins, pass a function, or leave ${optionName} unset.`,
      );
    }
    return { any: true, matches: () => true };
  }
  if (!Array.isArray(value)) {
    throw new RoutingError(
      "BAD_OPTION",
      `${optionName} must be an array of origins${allowAny ? ', "*"' : ""} or a function, got ${describe(value)}.`,
    );
  }
  const allowed = new Set<string>();
  value.forEach((entry: unknown, index) => {
    if (typeof entry !== "string") {
      throw new RoutingError("BAD_OPTION", `${optionName}[${index}] must be a string, got ${describe(entry)}.`);
    }
    // The URL parser accepts "*" in a host, so wildcards must be caught before it.
    if (entry.includes("*")) {
      throw new RoutingError(
        "BAD_OPTION",
        `${optionName}[${index}] ${JSON.stringify(entry)}: wildcards are not supported, pass a function instead${
          entry === "*" && allowAny ? ` (or ${optionName}: "*" itself, not in a list, to allow any origin)` : ""
        }.`,
      );
    }
    // A page's origin is never ws: or wss:, even when it opens a WebSocket: such an entry could never match.
    const socketScheme = /^(wss?):\/\//i.exec(entry);
    if (socketScheme) {
      const page = `${socketScheme[1]!.toLowerCase() === "wss" ? "https" : "http"}${entry.slice(socketScheme[1]!.length)}`;
      throw new RoutingError(
        "BAD_OPTION",
        `${optionName}[${index}] ${JSON.stringify(entry)}: browsers send the page's origin, never a ws: or wss: one; use ${JSON.stringify(canonicalOrigin(page) ?? page)}.`,
      );
    }
    const canonical = canonicalOrigin(entry);
    if (canonical === undefined) {
      // Browser extensions and app shells (chrome-extension://…, capacitor://…) send their origin
      // verbatim, but the URL parser gives such schemes no origin to compare: a predicate can.
      throw new RoutingError(
        "BAD_OPTION",
        `${optionName}[${index}] ${JSON.stringify(entry)} is not an origin like "https://example.com"; for an origin of another scheme (a browser extension's, an app's), pass a function, e.g. (origin) => origin === ${JSON.stringify(entry)}.`,
      );
    }
    if (!/^https?:$/.test(new URL(entry).protocol)) {
      throw new RoutingError(
        "BAD_OPTION",
        `${optionName}[${index}] ${JSON.stringify(entry)}: only http: and https: origins can be listed; pass a function for another scheme.`,
      );
    }
    if (canonical !== entry) {
      throw new RoutingError(
        "BAD_OPTION",
        `${optionName}[${index}] ${JSON.stringify(entry)} is not in the form browsers send; use ${JSON.stringify(canonical)}.`,
      );
    }
    allowed.add(entry);
  });
  return { any: false, matches: (origin) => allowed.has(origin) };
}

/** A short, non-revealing description of a bad option value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value;
}
