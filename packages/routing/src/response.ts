/**
 * The router's own plain-text responses.
 *
 * Their bodies echo parts of the request (path segments, the Origin header) so a developer can
 * see what was wrong. That echo is attacker-controlled, hence: `text/plain` with `nosniff` so no
 * browser renders it as HTML, JSON-style quoting so control characters and quotes are escaped,
 * and truncation so a 16 KiB URL is not reflected back in full.
 */

const MAX_ECHO = 120;

function truncate(value: string): string {
  return value.length > MAX_ECHO ? `${value.slice(0, MAX_ECHO)}…` : value;
}

/** `value` as a quoted, escaped, truncated string literal, safe to embed in a message. */
export function quote(value: string): string {
  return JSON.stringify(truncate(value));
}

/** A URL path for a message; already percent-encoded by the URL parser, so only truncated. */
export function showPath(path: string): string {
  return truncate(path);
}

export function textResponse(status: number, message: string, headers?: Record<string, string>): Response {
  return new Response(message, {
    status,
    headers: {
      "Content-Type": "text/plain; charset=utf-8",
      "X-Content-Type-Options": "nosniff",
      ...headers,
    },
  });
}
