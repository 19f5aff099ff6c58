/**
 * What a client sent, frame by frame: a client's Hello travels in the same message as the frame
 * it sent next (`Outbox.lead`, packages/rpc/src/outbox.ts), and tests that look at a client's
 * frames read the two apart as the object does (`helloEnd`).
 */
import { helloEnd } from "../../packages/rpc/src/frame.js";

/** The frames of one message a client sent: the message itself, or its Hello and the frame after it. */
export function framesOf<T>(message: T): T[] {
  if (typeof message !== "string") return [message];
  const end = helloEnd(message);
  return end > 0 ? ([message.slice(0, end), message.slice(end)] as T[]) : [message];
}
