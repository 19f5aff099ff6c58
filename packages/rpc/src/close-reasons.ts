/**
 * What a client says when its connection closed with calls waiting: each close code by meaning,
 * for the message of their `DISCONNECTED` errors (session.ts).
 *
 * Internal module.
 */
import { CloseCode } from "./envelopes.js";

/** Close codes by meaning, for the message of `DISCONNECTED` errors. */
export function disconnectMessage(label: string, code: number, reason: string): string {
  const why = reason ? `: ${reason}` : "";
  switch (code) {
    case CloseCode.Normal:
      return `The connection to ${label} was closed normally (1000${why}) before the reply arrived.`;
    case CloseCode.GoingAway:
      return `The Durable Object behind ${label} went away (1001${why}), e.g. it was reset or redeployed, before the reply arrived.`;
    case CloseCode.PolicyViolation:
      return `${label} closed the connection because it refused a frame (1008${why}).`;
    case CloseCode.MessageTooBig:
      return `${label} closed the connection because a frame was too big (1009${why}); raise limits.maxMessageBytes on the server or send less.`;
    case CloseCode.HeartbeatTimeout:
      return `The connection to ${label} stopped answering heartbeats and was closed before the reply arrived.`;
    case CloseCode.SessionEnded:
      return `The connection to ${label} was closed because its client was disposed (${CloseCode.SessionEnded}${why}) before the reply arrived.`;
    case CloseCode.ConnectTimeout:
      return `The connection to ${label} did not open within the connect timeout.`;
    default:
      return `The connection to ${label} closed (code ${code}${why}) before the reply arrived.`;
  }
}

/** Truncates a close reason to the 123 UTF-8 bytes a close frame can carry. */
export function closeReason(text: string): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= 123) return text;
  let cut = 120;
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--; // do not split a UTF-8 sequence
  return new TextDecoder().decode(bytes.subarray(0, cut)) + "...";
}
