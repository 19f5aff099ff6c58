/**
 * Harness for the react-*.test.ts unit tests: React 19 (react-dom/client) in Node on a tiny
 * hand-made container (the test components render `null`, so React never creates DOM nodes),
 * and a fake Durable Object served by the real dispatcher over an in-memory transport, with an
 * in-memory topic system (subscribe / unsubscribe / publish) whose answers can be held.
 *
 * Test files must `vi.mock("@dorpc/rpc", () => import("../../packages/rpc/src/index.js"))` so
 * the hooks (packages/react/src) and the test share one copy of the client sources.
 */
import type { RpcTransport, TransportFactory, TransportHandler } from "../../packages/rpc/src/index.js";
import { RpcError } from "../../packages/rpc/src/errors.js";
import { channelClosed, dispatchFrame, type ReplyChannel, resolveServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { CallFlags, FrameKind } from "../../packages/rpc/src/envelopes.js";
import { writeFrame } from "../../packages/rpc/src/frame.js";

type Frame = string | Uint8Array;

// ---------------------------------------------------------------------------------------------
// DOM shim (only what createRoot needs for a root whose components render null)
// ---------------------------------------------------------------------------------------------

/** Import this module before React and the hooks: it makes `window` exist, as in a browser. */
const g = globalThis as Record<string, unknown>;
if (g.window === undefined) g.window = globalThis;
g.IS_REACT_ACT_ENVIRONMENT = true;

export function installDomShim(): void {}

export function fakeContainer(): object {
  const noop = () => {};
  const doc: Record<string, unknown> = { nodeType: 9, addEventListener: noop, removeEventListener: noop };
  const container: Record<string, unknown> = {
    nodeType: 1,
    nodeName: "DIV",
    tagName: "DIV",
    ownerDocument: doc,
    addEventListener: noop,
    removeEventListener: noop,
    textContent: "",
    firstChild: null,
    childNodes: [],
    removeChild: noop,
    appendChild: noop,
  };
  doc.documentElement = container;
  doc.body = container;
  doc.activeElement = null;
  doc.defaultView = { document: doc, HTMLIFrameElement: class {} };
  return container;
}

// ---------------------------------------------------------------------------------------------
// Fake object with topics
// ---------------------------------------------------------------------------------------------

interface Link {
  handler: TransportHandler;
  channel: ReplyChannel;
  closed: boolean;
  topics: Set<string>;
}

export interface FakeObject {
  factory: TransportFactory;
  /** Sockets opened so far. */
  opens: number;
  /** Every subscribe / unsubscribe the object received: ["subscribe", topic] etc. */
  log: [string, string][];
  /** Number of open links subscribed to topic. */
  subscribers(topic: string): number;
  /** Publishes an event on topic to every subscribed open link; returns its seq. */
  publish(topic: string, event: unknown): number;
  /**
   * Publishes several events on topic in ONE frame, as the object's outbox batches them (a
   * replay after a reconnect, or events published in one turn); returns their seqs.
   */
  publishBatch(topic: string, events: unknown[]): number[];
  /** While true, subscribe answers wait until `confirm()`. */
  holdSubscribes: boolean;
  confirm(): void;
  /** Open links. */
  openLinks(): number;
  /** Cuts every open link as a network failure would (1006). */
  cutAll(): void;
}

class Target {
  ping(): string {
    return "pong";
  }
}

export function fakeObject(topics: string[], target: object = new Target()): FakeObject {
  const options = resolveServerOptions({});
  const seqs = new Map<string, number>();
  const links: (Link & { finish?: (code: number, reason: string) => void })[] = [];
  const waiting: (() => void)[] = [];
  const obj: FakeObject = {
    factory: undefined as never,
    opens: 0,
    log: [],
    holdSubscribes: false,
    subscribers: (topic) => links.filter((l) => !l.closed && l.topics.has(topic)).length,
    openLinks: () => links.filter((l) => !l.closed).length,
    cutAll() {
      for (const link of links) if (!link.closed) link.finish?.(1006, "connection lost");
    },
    confirm() {
      for (const go of waiting.splice(0)) go();
    },
    publishBatch(topic, events) {
      const out: number[] = [];
      const parts: string[] = [];
      for (const event of events) {
        const seq = (seqs.get(topic) ?? 0) + 1;
        seqs.set(topic, seq);
        out.push(seq);
        parts.push(eventEnvelope(topic, seq, event));
      }
      const frame = writeFrame(FrameKind.Calls, `[${parts.join(",")}]`, []);
      for (const link of links) {
        if (!link.closed && link.topics.has(topic)) link.channel.send(frame);
      }
      return out;
    },
    publish(topic, event) {
      const seq = (seqs.get(topic) ?? 0) + 1;
      seqs.set(topic, seq);
      const frame = writeFrame(FrameKind.Calls, `[${eventEnvelope(topic, seq, event)}]`, []);
      for (const link of links) {
        if (!link.closed && link.topics.has(topic)) link.channel.send(frame);
      }
      return seq;
    },
  };
  obj.factory = (handler: TransportHandler): RpcTransport => {
    obj.opens++;
    const link: Link & { finish?: (code: number, reason: string) => void } = {
      handler,
      channel: undefined as never,
      closed: false,
      topics: new Set(),
    };
    links.push(link);
    const finish = (code: number, reason: string) => {
      if (link.closed) return;
      link.closed = true;
      channelClosed(link.channel, code, reason);
      handler.onClose(code, reason);
    };
    link.finish = finish;
    link.channel = {
      send(frame: Frame) {
        if (link.closed) return;
        const data = typeof frame === "string" ? frame : frame.slice().buffer;
        setTimeout(() => !link.closed && handler.onMessage(data), 0);
      },
      close(code = 1000, reason = "") {
        setTimeout(() => finish(code, reason), 0);
      },
    };
    const system = {
      subscribe(topic: unknown, _since: unknown) {
        const name = String(topic);
        obj.log.push(["subscribe", name]);
        if (!topics.includes(name)) throw new RpcError("NOT_FOUND", `No topic ${name}`);
        const answer = () => {
          link.topics.add(name);
          return { seq: seqs.get(name) ?? 0 };
        };
        if (!obj.holdSubscribes) return answer();
        return new Promise((resolve) => waiting.push(() => resolve(answer())));
      },
      unsubscribe(topic: unknown) {
        obj.log.push(["unsubscribe", String(topic)]);
        link.topics.delete(String(topic));
      },
    };
    const hooks = () => ({ system });
    return {
      open: () => Promise.resolve(),
      send(frame) {
        if (link.closed) return;
        const data = typeof frame === "string" ? frame : frame.slice().buffer;
        setTimeout(() => {
          if (!link.closed) dispatchFrame(data, target, options, link.channel, hooks);
        }, 0);
      },
      close(code = 1000, reason = "") {
        finish(code, reason);
      },
    };
  };
  return obj;
}

/** Lets queued microtasks and zero-delay timers run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}

/** The object's `event(topic, seq, value)` notification (a System call), for a JSON value. */
function eventEnvelope(topic: string, seq: number, event: unknown): string {
  return JSON.stringify([0, ["event", [0, topic, seq, event]], 0, CallFlags.System]);
}
