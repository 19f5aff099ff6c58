/**
 * The Durable Objects price model the "What it costs" section converts measurements with (Workers
 * Paid plan). These are published prices, not measurements; each entry prints them with the
 * source, so a reader can redo the arithmetic when they change.
 *
 * Source: https://developers.cloudflare.com/durable-objects/platform/pricing/ (requests and
 * duration prices; "WebSocket messages … a 20:1 ratio is applied to incoming WebSocket
 * messages"; no charge for outgoing messages, incoming protocol pings, or auto-responses set with
 * `setWebSocketAutoResponse()`; "Calling accept() on a WebSocket … will incur duration charges for
 * the entire time the WebSocket is connected"; objects idle and eligible for hibernation are not
 * billed for duration; the page's worked examples bill duration at 128 MB per object), and the
 * 2024-04-01 changelog entry "Billing reduction for WebSocket messages".
 */
export const PRICE_MODEL = {
  source: "https://developers.cloudflare.com/durable-objects/platform/pricing/",
  /** Incoming WebSocket messages billed as one request. */
  wsMessagesPerRequest: 20,
  /** USD per million requests beyond the included million per month. */
  usdPerMillionRequests: 0.15,
  /** USD per million GB-s beyond the included 400,000 GB-s per month. */
  usdPerMillionGbS: 12.5,
  /** Memory duration is billed at, GB (128 MB, as the page's examples compute it: 128 MB / 1 GB). */
  billedGb: 0.128,
  hoursPerMonth: 730,
} as const;
