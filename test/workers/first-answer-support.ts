/**
 * Shared by the tests of a subscription whose first `subscribe` answer is lost with its connection
 * (topics-first-answer*.test.ts): a Room member, cutting the connection at the frame that carries
 * a subscribe, and waiting until the object has seen the cut socket close.
 */
import type { RpcClientOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, runInObject, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { expect, vi } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";

type Message = Parameters<RoomClient["message"]>[0];

/** A client of `room` named `name` (reconnecting after 200 ms unless `options` say otherwise), and what reached its onError. */
export function member(room: string, name: string, options: RpcClientOptions = {}) {
  const errors: unknown[] = [];
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team: "none" },
    expose: { message: (_m: Message) => undefined, confirm: () => true, slow: async () => "x" } satisfies RoomClient,
    onError: (error) => errors.push(error),
    reconnect: { initialDelay: 200, maxDelay: 200, jitter: 0 },
    ...options,
  });
  return { client, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

export type Member = ReturnType<typeof member>;

/**
 * The next frame `m` sends on its open connection that holds a subscribe: `deliver` it (then cut
 * the connection at once, before any answer can come back) or swallow it and cut (it never
 * reaches the object). Resolves with that frame once cut.
 */
export function cutAtSubscribe(m: Member, deliver = true): Promise<string> {
  const socket = testConnection(m.client).socket!;
  const send = socket.send.bind(socket);
  return new Promise<string>((resolve) => {
    socket.send = (data: string | ArrayBuffer | ArrayBufferView) => {
      if (typeof data === "string" && data.includes('"subscribe"')) {
        socket.send = send;
        if (deliver) send(data);
        dropConnection(m.client);
        resolve(data);
      } else send(data);
    };
  });
}

/** Resolves once the object has `others` sockets left: `m`'s cut one closed, after every frame it sent before. */
export async function objectLet(m: Member, others: number): Promise<void> {
  await vi.waitFor(async () => {
    const count = await runInObject(m.client, (_instance, state) => state.getWebSockets().length);
    expect(count).toBe(others);
  });
}
