/** Shared helpers of the workers tests. */
import { RpcError } from "@dorpc/rpc";
import { expect } from "vitest";

let counter = 0;

/** A fresh instance name, so tests never share a Durable Object by accident. */
export function uniqueName(label: string): string {
  return `${label}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}

/** Awaits `promise`, expects it to reject with an RpcError of `code`, and returns the error. */
export async function rpcFailure(promise: PromiseLike<unknown>, code: RpcError["code"]): Promise<RpcError> {
  let error: unknown;
  try {
    await promise;
  } catch (caught) {
    error = caught;
  }
  expect(error, "expected the call to reject").toBeInstanceOf(RpcError);
  expect((error as RpcError).code).toBe(code);
  return error as RpcError;
}

/** Awaits `promise` and returns what it rejected with (fails the test if it resolved). */
export async function rejection(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (caught) {
    return caught;
  }
  throw new Error("expected the call to reject, but it resolved");
}

/** Resolves with the next text message on `socket` that `accept` accepts. */
export function nextMessage(socket: WebSocket, accept: (data: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    const listener = (event: MessageEvent) => {
      if (typeof event.data === "string" && accept(event.data)) {
        socket.removeEventListener("message", listener);
        resolve(event.data);
      }
    };
    socket.addEventListener("message", listener);
  });
}

/**
 * The reply envelopes of an HTTP batch's response: one frame (`application/x-dorpc`), or several
 * (`application/x-dorpc-frames`: each a u32 little-endian byte length, then its bytes). Every
 * frame here is a text reply frame.
 */
export async function replyEnvelopes(response: Response): Promise<unknown[][]> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  const frames: Uint8Array[] = [];
  if (response.headers.get("Content-Type") === "application/x-dorpc-frames") {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let at = 0; at < bytes.length; at += 4 + view.getUint32(at, true))
      frames.push(bytes.subarray(at + 4, at + 4 + view.getUint32(at, true)));
  } else frames.push(bytes);
  return frames.flatMap((frame) => {
    const text = new TextDecoder().decode(frame);
    expect(text.startsWith("\u001eR"), text).toBe(true);
    return JSON.parse(text.slice(2)) as unknown[][];
  });
}
