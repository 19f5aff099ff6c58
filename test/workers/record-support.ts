/**
 * Helpers of the delivery-record tests (record-*.test.ts): raw dorpc sockets to the test Worker's
 * objects, on which a test speaks for a client frame by frame (hello, calls, resends), and a
 * `worker` for createTestClient whose connections lose reply frames on the way back.
 */
import { SELF } from "cloudflare:test";
import { framesOf } from "../support/frames.js";

/** A hello: `[session, resending]`, or `[session, resending, age]`. */
export const hello = (session: string, resending: 0 | 1, age?: number): string =>
  `\u001eH${JSON.stringify(age === undefined ? [session, resending] : [session, resending, age])}`;

/** A call frame: `[[id, chain, 0?, flags?], …]`. */
export const calls = (envelopes: unknown[]): string => `\u001eC${JSON.stringify(envelopes)}`;

/** The envelope of a resend of call `id`: the Retry flag set. */
export const resend = (id: number, chain: unknown[]): unknown[] => [id, chain, 0, 1];

/** A fresh session id (base64url, 22 characters like the client's). */
export const sessionId = (): string => crypto.randomUUID().replaceAll("-", "").slice(0, 22);

const isReplyFrame = (message: string | Uint8Array): boolean =>
  typeof message === "string" ? message.startsWith("\u001eR") : message[1] === 0x52;

export interface RawSocket {
  /** Every message the object sent, in order (binary ones as bytes). */
  readonly messages: (string | Uint8Array)[];
  /** Set once the socket closed: its code and reason. */
  readonly closed: Promise<{ code: number; reason: string }>;
  send(frame: string): void;
  /** The first reply frame (text or binary) not taken yet that `accept` accepts. */
  replyFrame(accept?: (frame: string | Uint8Array) => boolean): Promise<string | Uint8Array>;
  /** The reply envelope of call `id` (from text reply frames), waiting for it. */
  reply(id: number): Promise<unknown[]>;
  /** Closes the socket with `code` and resolves once the object closed its side too. */
  close(code?: number): Promise<void>;
}

/** How long a test waits for a frame before it reports what it was waiting for. */
const PATIENCE = 5_000;

/** Opens a raw dorpc socket to `binding`/`name` through the test Worker's route. */
export async function openSocket(binding: string, name: string, query = ""): Promise<RawSocket> {
  const response = await SELF.fetch(`http://x/__rpc/${binding}/${encodeURIComponent(name)}${query}`, { headers: { Upgrade: "websocket" } });
  const ws = response.webSocket;
  if (!ws) throw new Error(`no WebSocket from ${binding}/${name}: ${response.status} ${await response.text()}`);
  ws.binaryType = "arraybuffer";
  ws.accept();
  const messages: (string | Uint8Array)[] = [];
  const taken = new Set<number>();
  const waiters = new Set<() => void>();
  ws.addEventListener("message", (event) => {
    const data = event.data as string | ArrayBuffer;
    messages.push(typeof data === "string" ? data : new Uint8Array(data));
    for (const wake of [...waiters]) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.addEventListener("close", (event) => {
      resolve({ code: event.code, reason: event.reason });
      for (const wake of [...waiters]) wake();
    }),
  );
  /** Waits until `find` returns something, or fails naming `what` and what did arrive. */
  async function until<T>(what: string, find: () => T | undefined): Promise<T> {
    const deadline = Date.now() + PATIENCE;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${PATIENCE} ms; received: ${JSON.stringify(messages.map(String))}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        waiters.add(wake);
      });
    }
  }
  return {
    messages,
    closed,
    send: (frame) => ws.send(frame),
    replyFrame: (accept = () => true) =>
      until("reply frame", () => {
        const index = messages.findIndex((m, i) => !taken.has(i) && isReplyFrame(m) && accept(m));
        if (index < 0) return undefined;
        taken.add(index);
        return messages[index];
      }),
    reply: (id) =>
      until(`reply to call ${id}`, () => {
        for (const m of messages) {
          if (typeof m !== "string" || !m.startsWith("\u001eR")) continue;
          const envelope = (JSON.parse(m.slice(2)) as unknown[][]).find((e) => e[0] === id);
          if (envelope) return envelope;
        }
        return undefined;
      }),
    async close(code = 1000) {
      try {
        ws.close(code);
      } catch {
        // already closed
      }
      await closed;
    },
  };
}

/**
 * A `worker` for createTestClient whose connections lose the reply frames `lose` picks: such a
 * frame never reaches the client, and `onCut`'s callback runs instead (the test drops the
 * connection there, as a network would after the object sent it). `frames` logs the traffic.
 */
export function losingReplies(lose: (frame: string | ArrayBuffer) => boolean) {
  const frames: string[] = [];
  let cut: () => void = () => undefined;
  const worker = {
    async fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
      const response = await SELF.fetch(input, init);
      const ws = response.webSocket;
      if (!ws) return response;
      const send = ws.send.bind(ws);
      ws.send = (data: string | ArrayBuffer | ArrayBufferView) => {
        // A Hello comes in the message of the frame after it (Outbox.lead): logged as two frames.
        for (const part of framesOf(data)) frames.push(`client: ${typeof part === "string" ? part : "<binary>"}`);
        send(data);
      };
      type Add = (type: string, listener: (event: MessageEvent) => void, options?: unknown) => void;
      const add = ws.addEventListener.bind(ws) as Add;
      (ws as unknown as { addEventListener: Add }).addEventListener = (type, listener, options) => {
        if (type !== "message") return add(type, listener, options);
        return add(
          "message",
          (event: MessageEvent) => {
            const data = event.data as string | ArrayBuffer;
            const shown = typeof data === "string" ? data.slice(0, 200) : "<binary>";
            const reply = typeof data === "string" ? data.startsWith("\u001eR") : new Uint8Array(data)[1] === 0x52;
            if (reply && lose(data)) {
              frames.push(`lost: ${shown}`);
              cut();
              return;
            }
            frames.push(`server: ${shown}`);
            listener(event);
          },
          options,
        );
      };
      return response;
    },
  };
  return { worker, frames, onCut: (fn: () => void) => void (cut = fn) };
}
