/**
 * CORS for requests inside the routing prefix. Off unless `cors` is given.
 *
 * Preflights are answered by the router itself, before the binding is resolved and without
 * running hooks or waking a Durable Object: a preflight carries no credentials, so there is
 * nothing to authorise, and answering it for an unknown binding lets the real request's 404
 * reach the page instead of surfacing as an opaque CORS failure.
 *
 * CORS only decides which pages may *read* responses; it does not stop a browser from *sending*
 * simple requests. Authorisation belongs in the hooks.
 */
import { RoutingError } from "./errors.js";
import { compileOriginPolicy, describe, type OriginMatcher } from "./origin.js";
import { quote, textResponse } from "./response.js";

/** CORS settings for requests inside the routing prefix. */
export interface CorsOptions {
  /**
   * Origins whose pages may read responses: exact origins such as `"https://app.example.com"`,
   * `"*"` for any origin (not allowed together with `credentials`), or a predicate that must
   * return `true` to allow.
   */
  origins: readonly string[] | "*" | ((origin: string) => boolean);
  /** Methods announced in preflight responses. Default `["GET", "POST"]`. */
  methods?: readonly string[];
  /**
   * Request headers announced in preflight responses. Default `["Content-Type", "Authorization",
   * "X-Dorpc-Session", "X-Dorpc-Resending"]` (the last two: a page's HTTP batches, `httpTransport()`).
   */
  headers?: readonly string[];
  /** Send `Access-Control-Allow-Credentials: true` (cookies, HTTP auth). Default `false`. */
  credentials?: boolean;
  /** Seconds a browser may cache a preflight result (`Access-Control-Max-Age`). Unset by default. */
  maxAge?: number;
}

export interface CompiledCors {
  readonly origins: OriginMatcher;
  readonly preflightHeaders: Readonly<Record<string, string>>;
  readonly credentials: boolean;
}

const CORS_KEYS: readonly string[] = ["origins", "methods", "headers", "credentials", "maxAge"];
/** What a page's requests carry: its own headers, and the session headers of dorpc's HTTP batches. */
const DEFAULT_HEADERS = ["Content-Type", "Authorization", "X-Dorpc-Session", "X-Dorpc-Resending"];
// RFC 9110 token: what a method or header name may consist of.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function tokenList(value: unknown, optionName: string, fallback: readonly string[]): string {
  if (value === undefined) return fallback.join(", ");
  if (!Array.isArray(value)) {
    throw new RoutingError("BAD_OPTION", `${optionName} must be an array of strings, got ${describe(value)}.`);
  }
  value.forEach((entry: unknown, index) => {
    if (typeof entry !== "string" || !TOKEN.test(entry)) {
      throw new RoutingError(
        "BAD_OPTION",
        `${optionName}[${index}] must be an HTTP token such as "POST" or "Content-Type", got ${describe(entry)}.`,
      );
    }
  });
  return value.join(", ");
}

export function compileCors(value: unknown): CompiledCors | undefined {
  if (value === undefined || value === false) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new RoutingError(
      "BAD_OPTION",
      `cors must be false or an object such as { origins: ["https://app.example.com"] }, got ${describe(value)}.`,
    );
  }
  const options = value as Record<string, unknown>;
  for (const key of Object.keys(options)) {
    if (!CORS_KEYS.includes(key)) {
      throw new RoutingError("BAD_OPTION", `Unknown option cors.${key}; known options are ${CORS_KEYS.join(", ")}.`);
    }
  }
  if (options.origins === undefined) {
    throw new RoutingError("BAD_OPTION", `cors.origins is required: a list of origins, "*" or a function.`);
  }
  const origins = compileOriginPolicy(options.origins, "cors.origins", true);
  const credentials = options.credentials ?? false;
  if (typeof credentials !== "boolean") {
    throw new RoutingError("BAD_OPTION", `cors.credentials must be a boolean, got ${describe(credentials)}.`);
  }
  if (credentials && origins.any) {
    // Browsers reject a wildcard origin on credentialed requests; echoing every origin instead
    // would let any site read authenticated responses.
    throw new RoutingError("BAD_OPTION", `cors.credentials cannot be combined with cors.origins "*"; list the origins or pass a function.`);
  }
  const preflightHeaders: Record<string, string> = {
    "Access-Control-Allow-Methods": tokenList(options.methods, "cors.methods", ["GET", "POST"]),
    "Access-Control-Allow-Headers": tokenList(options.headers, "cors.headers", DEFAULT_HEADERS),
  };
  if (options.maxAge !== undefined) {
    const maxAge = options.maxAge;
    if (typeof maxAge !== "number" || !Number.isSafeInteger(maxAge) || maxAge < 0) {
      throw new RoutingError("BAD_OPTION", `cors.maxAge must be a non-negative integer of seconds, got ${describe(maxAge)}.`);
    }
    preflightHeaders["Access-Control-Max-Age"] = String(maxAge);
  }
  return { origins, preflightHeaders, credentials };
}

/** A CORS preflight, as opposed to an OPTIONS request meant for the Durable Object. */
export function isPreflight(request: Request): boolean {
  return request.method === "OPTIONS" && request.headers.has("Origin") && request.headers.has("Access-Control-Request-Method");
}

/** The headers that make a response readable by `origin`, or none when it is not allowed. */
function allowHeaders(cors: CompiledCors, origin: string | null): Record<string, string> {
  if (cors.origins.any) return { "Access-Control-Allow-Origin": "*" };
  if (origin === null || !cors.origins.matches(origin)) return {};
  const headers: Record<string, string> = { "Access-Control-Allow-Origin": origin };
  if (cors.credentials) headers["Access-Control-Allow-Credentials"] = "true";
  return headers;
}

export function preflightResponse(cors: CompiledCors, request: Request): Response {
  const origin = request.headers.get("Origin") ?? "";
  const allow = allowHeaders(cors, origin);
  // Answers depend on Origin unless every origin gets the same "*".
  const vary: Record<string, string> = cors.origins.any ? {} : { Vary: "Origin" };
  if (allow["Access-Control-Allow-Origin"] === undefined) {
    return textResponse(403, `CORS: origin ${quote(origin)} is not allowed.`, vary);
  }
  return new Response(null, { status: 204, headers: { ...allow, ...cors.preflightHeaders, ...vary } });
}

function appendVaryOrigin(headers: Headers): void {
  const vary = headers.get("Vary");
  if (vary === null || vary.trim() === "") {
    headers.set("Vary", "Origin");
    return;
  }
  const fields = vary.split(",").map((field) => field.trim().toLowerCase());
  if (!fields.includes("*") && !fields.includes("origin")) headers.set("Vary", `${vary}, Origin`);
}

/**
 * `response` with CORS headers for the request's origin. Always a new Response, because a
 * response from a stub or from `fetch` may have immutable headers. Any Allow-Origin/Credentials
 * headers the Durable Object set are dropped, so one policy applies to the whole prefix.
 *
 * `Vary: Origin` is added even when the origin is missing or not allowed: otherwise a shared
 * cache could store the header-less variant and serve it to an allowed origin.
 */
export function withCors(cors: CompiledCors, request: Request, response: Response): Response {
  // A network error (`Response.error()`) has no headers to add to: it stays one.
  if (response.type === "error") return response;
  let out: Response;
  try {
    out = new Response(response.body, response);
  } catch (error) {
    throw new RoutingError(
      "BAD_HOOK_RESULT",
      `A response could not be given CORS headers (${(error as Error)?.message ?? String(error)}); a hook must return a Response whose body was not read.`,
    );
  }
  out.headers.delete("Access-Control-Allow-Origin");
  out.headers.delete("Access-Control-Allow-Credentials");
  const allow = allowHeaders(cors, request.headers.get("Origin"));
  for (const [name, value] of Object.entries(allow)) out.headers.set(name, value);
  if (!cors.origins.any) appendVaryOrigin(out.headers);
  return out;
}
