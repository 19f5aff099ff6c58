/**
 * The URL a client connects to: `${baseUrl}${prefix}/${binding}/${instance}?${query}` over ws(s),
 * each part checked as the router (routeDORequest) reads it, so a client set up like its router
 * reaches it, and one that cannot is refused when it is made (`BAD_OPTION`, naming the option).
 *
 * Internal module.
 */
import type { RpcClientOptions } from "./client.js";
import { RpcError } from "./errors.js";

export const DEFAULT_PREFIX = "/__rpc";

/** A path segment URLs resolve away ("." and "..", in any case of their %2E spelling as well). */
export const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** `value` percent-encoded as one path segment; a string that is not well-formed UTF-16 (a lone surrogate) cannot be. */
function segment(what: string, value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    throw new RpcError(
      "BAD_OPTION",
      `${what} ${JSON.stringify(value)} holds a lone surrogate (not well-formed Unicode), so it cannot be a URL path segment.`,
    );
  }
}

/** The connect URL for a client: `${baseUrl}${prefix}/${binding}/${instance}` over ws(s). */
export function connectUrl(binding: string, instance: string, options: Pick<RpcClientOptions, "baseUrl" | "prefix" | "query">): string {
  const given: unknown = options.baseUrl;
  const base = given instanceof URL ? given.href : (given ?? (globalThis as { location?: { origin?: string } }).location?.origin);
  if (base !== undefined && typeof base !== "string") {
    throw new RpcError("BAD_OPTION", `baseUrl must be a string (or a URL), got ${base === null ? "null" : typeof base}.`);
  }
  if (base === undefined || base === "") {
    throw new RpcError("BAD_OPTION", 'baseUrl is required outside browsers, e.g. { baseUrl: "http://127.0.0.1:8787" }.');
  }
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new RpcError("BAD_OPTION", `baseUrl ${JSON.stringify(base)} is not a valid URL.`);
  }
  const scheme = { "http:": "ws:", "https:": "wss:", "ws:": "ws:", "wss:": "wss:" }[url.protocol];
  if (!scheme) throw new RpcError("BAD_OPTION", `baseUrl must be http(s) or ws(s), got ${JSON.stringify(url.protocol)}.`);
  const prefix = checkPrefix(options.prefix ?? DEFAULT_PREFIX);
  const path = `${url.pathname.replace(/\/$/, "")}${prefix}/${segment("binding", binding)}/${segment("instance", instance)}`;
  const query = options.query ? `?${queryString(options.query)}` : "";
  return `${scheme}//${url.host}${path}${query}`;
}

/** What routeDORequest accepts in a prefix segment (routing's compilePrefix): the rest could only misroute. */
const PREFIX_SEGMENT = /^[A-Za-z0-9\-._~!$&'()*+,;=:@]+$/;

export function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== "string" || !prefix.startsWith("/") || prefix.endsWith("/")) {
    throw new RpcError("BAD_OPTION", `prefix must start with "/" and not end with one, got ${JSON.stringify(prefix)}.`);
  }
  for (const part of prefix.slice(1).split("/")) {
    if (part === "." || part === ".." || !PREFIX_SEGMENT.test(part)) {
      throw new RpcError(
        "BAD_OPTION",
        `prefix ${JSON.stringify(prefix)} has the segment ${JSON.stringify(part)}; segments must be non-empty, not "." or "..", and use only letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @ (as routeDORequest's prefix).`,
      );
    }
  }
  return prefix;
}

/** `query` as a URL query: a record (or pairs) of strings; anything else is refused, naming it. */
export function queryString(query: unknown): string {
  if (typeof query === "string" || query instanceof URLSearchParams) return new URLSearchParams(query).toString();
  const pairs =
    typeof query === "object" && query !== null
      ? Symbol.iterator in query
        ? [...(query as Iterable<unknown>)] // pairs, or a Map
        : Object.entries(query)
      : undefined;
  if (!pairs) throw new RpcError("BAD_OPTION", `query must be an object of strings, got ${typeof query}.`);
  for (const pair of pairs) {
    const [key, value] = Array.isArray(pair) ? pair : [];
    if (typeof value !== "string") {
      throw new RpcError(
        "BAD_OPTION",
        `query.${String(key)} must be a string, got ${value === null ? "null" : typeof value}: a value not set yet would be sent as "${String(value)}".`,
      );
    }
  }
  return new URLSearchParams(pairs as [string, string][]).toString();
}
