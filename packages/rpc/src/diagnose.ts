/**
 * What to tell a user whose client never connected. A failed WebSocket upgrade carries no status
 * and no reason (browsers report 1006 whatever the server answered), so the same URL is asked
 * over plain HTTP, and the answer is read for the usual mistakes:
 *  - nothing answers: wrong host or port, or `wrangler dev` is not running;
 *  - a web page answers (HTML, or 404 from a dev server): the URL is not the Worker's — in a
 *    browser without `baseUrl`, the page's own origin (a Vite dev server) was used;
 *  - the Worker answers 404 naming an unknown binding or path: wrong binding or `prefix`;
 *  - the object's dorpc endpoint answers 426 (it exists): the upgrade itself was refused — an
 *    Origin not in `allowedOrigins`, or an `onBeforeConnect` / `identify` hook;
 *  - the answer cannot be read (a browser blocks reading a cross-origin answer without CORS).
 *
 * Internal module.
 */

const PROBE_TIMEOUT_MS = 3_000;

/** A sentence (or two) on why a WebSocket to `wsUrl` may not have opened. */
export async function diagnoseEndpoint(wsUrl: string): Promise<string | undefined> {
  const httpUrl = wsUrl.replace(/^ws(s?):/, "http$1:");
  const pageOrigin = (globalThis as { location?: { origin?: string } }).location?.origin;
  const sameAsPage = pageOrigin !== undefined && new URL(httpUrl).origin === pageOrigin;
  const pageHint = sameAsPage
    ? ` This is the page's own origin (${pageOrigin}): without baseUrl the client connects there; if the Worker runs elsewhere (wrangler dev on :8787), pass { baseUrl }.`
    : "";
  const fetchImpl = (globalThis as { fetch?: typeof fetch }).fetch;
  if (typeof fetchImpl !== "function") return undefined;
  let response: Response;
  try {
    response = await fetchImpl(httpUrl, {
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      credentials: "omit",
      redirect: "manual",
    } as RequestInit);
  } catch (error) {
    const blocked = pageOrigin !== undefined && !sameAsPage;
    return blocked
      ? `The reason could not be read (the browser does not let this page read a cross-origin answer). Check that ${new URL(httpUrl).origin} is the Worker, that the route and binding exist, and that this page's origin (${pageOrigin}) is in routeDORequest's allowedOrigins.`
      : `Nothing answered at ${new URL(httpUrl).origin} (${String((error as Error)?.message ?? error)}): is the Worker (wrangler dev) running there, on that port?${pageHint}`;
  }
  let text = "";
  try {
    text = (await response.text()).slice(0, 4_096);
  } catch {
    // the body is only a hint
  }
  const body = text.slice(0, 300).replace(/\s+/g, " ").trim();
  const type = response.headers.get("content-type") ?? "";
  const refusal = type.includes("application/json") ? typedRefusal(text) : undefined;
  if (refusal?.code === "BAD_OPTION") return `The object cannot serve calls (${response.status}): ${refusal.message.slice(0, 1_000)}`;
  const said = body ? `: "${body.slice(0, 160)}"` : "";
  // The quoted answer may end its own sentence (the router's does): no second full stop after it.
  const stop = said.endsWith('."') ? "" : ".";
  if (response.status === 426) {
    return `The dorpc endpoint exists (it answers a plain request with 426), so the WebSocket upgrade itself was refused: by routeDORequest's allowedOrigins (this client's Origin is not allowed), an onBeforeConnect hook, or the object's identify().`;
  }
  if (type.includes("text/html")) {
    return `${httpUrl} answers with a web page (${response.status} ${type.split(";")[0]}), not a dorpc endpoint: the request does not reach the Worker.${pageHint}`;
  }
  if (response.status === 404) {
    return `The server answered 404${said}${stop} Check the binding name and the prefix (routeDORequest's and the client's must match).${pageHint}`;
  }
  if (response.status === 401 || response.status === 403) {
    return `The server refused with ${response.status}${said}: an Origin not in allowedOrigins, or an authentication hook (onBeforeConnect, identify).`;
  }
  return `The server answered a plain request to ${httpUrl} with ${response.status}${said}${stop}${pageHint}`;
}

/** dorpc's typed refusal body (`{"error": {"code", "message"}}`), if `text` is one. */
function typedRefusal(text: string): { code: string; message: string } | undefined {
  try {
    const error = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    if (typeof error?.code === "string" && typeof error.message === "string") return { code: error.code, message: error.message };
  } catch {
    // not dorpc's
  }
  return undefined;
}
