/**
 * Playing the object over scripted sockets (scripted-websocket.ts): the calls a socket carried,
 * the frames of an answer, a refusal and a topic event, and letting the client reconnect. Shared
 * by the subscription tests that script the object.
 */
import { expect, vi } from "vitest";
import { lastSocket, type ScriptedSocket } from "./scripted-websocket.js";

/** The calls `socket` carried: [id, method, arguments] (C frames, in order). */
export function calls(socket: ScriptedSocket): [number, string, unknown[]][] {
  return socket.sent
    .filter((data): data is string => typeof data === "string" && data.startsWith("\u001eC"))
    .flatMap((data) => JSON.parse(data.slice(2)) as [number, [string, [number, ...unknown[]]]][])
    .map(([id, [method, [, ...args]]]) => [id, method, args]);
}

/** The answer frame for call `id`. */
export const answer = (id: number, value: unknown) => `\u001eR${JSON.stringify([[id, 0, value]])}`;
/** A frame refusing call `id` with `code`. */
export const failed = (id: number, code: string, message: string) => `\u001eR${JSON.stringify([[id, 3, code, message]])}`;
/** A frame carrying event `seq` of `topic`. */
export const event = (topic: string, seq: number, value: unknown) =>
  `\u001eC${JSON.stringify([[0, ["event", [0, topic, seq, value]], 0, 2]])}`;

/** Lets a client whose backoff is 10 ms reconnect: the next socket is accepted; returns it once its resends left. */
export async function reconnect(): Promise<ScriptedSocket> {
  const before = lastSocket();
  await vi.advanceTimersByTimeAsync(10);
  const socket = lastSocket();
  expect(socket).not.toBe(before);
  socket.accept();
  await vi.advanceTimersByTimeAsync(0);
  return socket;
}
