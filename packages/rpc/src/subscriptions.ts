/**
 * A client's subscriptions to topics of its Durable Object (topics.ts is the object's side).
 *
 * Each subscription keeps a cursor: the sequence number of the last event it delivered. Whenever
 * a connection opens (the first one, and every reconnect), the client subscribes again with that
 * cursor; the object sends exactly the events after it, in order, before any new one. An event
 * at or below the cursor is a duplicate and is dropped, so a handler sees each event once. When
 * the object no longer keeps the events after the cursor, `onResync` is called and the
 * subscription goes on from the newest event: the app reloads its state, nothing is lost silently.
 *
 * A subscription made without `since` has no cursor until the object's first answer. Its first
 * subscribe carries its number in the session (`start`), under which the object keeps where it
 * started, and it is resent in its place among the calls cut by a drop (not made again after
 * them): resent, it starts where the first one did if that one ran, and otherwise before the
 * calls made after it.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";
import { disposeStubsIn, proxyInfo } from "./proxy.js";
import { DISPOSE_FALLBACK } from "./stub-release.js";
import type { ClientSession } from "./session.js";
import { monotonic } from "./timers.js";

/**
 * How long a first subscribe's start is trusted to be kept by the object (topics.ts keeps it 24
 * hours): a first answer that comes later than this, after a drop, may have started from then,
 * and is reported as a resync.
 */
const START_TRUSTED_MS = 23 * 3_600_000;

/** Where an event sits in its topic. */
export interface EventInfo {
  readonly topic: string;
  /** The event's sequence number in its topic (1, 2, 3, …). */
  readonly seq: number;
}

/** Passed to `onResync`: the events after `cursor` are gone; `latest` is where it goes on. */
export interface ResyncInfo {
  readonly topic: string;
  /** The last sequence number this subscription delivered (or the `since` it started from). */
  readonly cursor: number | undefined;
  /** The oldest event the object still keeps. */
  readonly oldest: number;
  /** The newest event; delivery goes on after it. */
  readonly latest: number;
}

export interface SubscribeOptions {
  /**
   * Start after this sequence number (a cursor saved earlier): the events after it that the
   * object still keeps are delivered first. Default: only events published from now on.
   */
  since?: number;
  /** The events after the cursor are no longer kept: reload your state, then go on. Default: `onError`. */
  onResync?: (info: ResyncInfo) => void;
  /**
   * The subscription ended by itself after it was ready: the object refused it when it was made
   * again on a new connection (the topic is no longer declared, a limit). Default: `onError`.
   * (A refusal of the first subscribe rejects `ready` instead; `close()` calls neither.)
   */
  onEnd?: (error: unknown) => void;
}

/** A live subscription. Dispose it (or `close()`) to stop. */
export interface Subscription extends Disposable {
  readonly topic: string;
  /** The sequence number of the last event delivered (save it to resume later with `since`). */
  readonly cursor: number | undefined;
  /** Resolves once the object confirmed the first subscription (missed events delivered). */
  readonly ready: Promise<void>;
  /** Stops delivery and tells the object. Idempotent. */
  close(): void;
}

interface Sub {
  readonly topic: string;
  readonly onEvent: (event: unknown, info: EventInfo) => void;
  readonly onResync: ((info: ResyncInfo) => void) | undefined;
  readonly onEnd: ((error: unknown) => void) | undefined;
  cursor: number | undefined;
  /** Its number in the session: the object keeps its start under it (without `since`). */
  readonly start: number;
  /** When it was made (`Date.now()` and `monotonic()`: one counts a sleeping machine, the other a clock set back). */
  readonly madeAt: { wall: number; mono: number };
  /** A first subscribe of it was cut with its connection (it may have run without its answer). */
  firstCut: boolean;
  /** A subscribe call is on its way: do not send another. */
  sending: boolean;
  closed: boolean;
  readonly ready: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void; settled: boolean };
}

/** A client session's subscriptions, and the system object the object's events reach. */
export class Subscriptions {
  private readonly subs = new Map<string, Sub>();
  /**
   * Topics whose closed subscription's `unsubscribe` is unanswered, and how many such calls are
   * out: the events of such a topic that arrive meanwhile were pushed to the closed subscription
   * (its replay, or a publish the object made before it read the unsubscribe). Frames arrive in
   * order, so a new subscription's replay comes after that answer; before it, those events
   * would move the new one's cursor past the events it asked for, and drop them as seen.
   */
  private readonly closing = new Map<string, number>();
  /** Subscriptions made so far: numbers them (`start`). */
  private made = 0;

  /** What the object's `event` pushes call (a system call, never the app's exposed object). */
  readonly system = {
    event: (topic: unknown, seq: unknown, value: unknown): void => this.deliver(topic, seq, value),
  };

  constructor(private readonly session: ClientSession) {
    session.system = this.system;
    session.subscriptionCount = () => this.subs.size;
    session.onStateChange((state) => {
      if (state === "open") for (const sub of this.subs.values()) this.send(sub);
      else if (state === "disposed") this.disposed();
    });
  }

  /**
   * The client was disposed: every subscription ends. A `ready` not yet settled rejects — its
   * subscribe may be waiting for the next open (cut by a drop), which will never come; one that
   * was ready is told by its `onEnd`, if it has one.
   */
  private disposed(): void {
    const subs = [...this.subs.values()];
    this.subs.clear();
    for (const sub of subs) {
      sub.closed = true;
      const error = new RpcError("DISPOSED", `The client was disposed; the subscription to "${sub.topic}" ended.`);
      if (!sub.ready.settled) {
        sub.ready.settled = true;
        sub.ready.reject(error);
      } else if (sub.onEnd) this.ended(sub, error);
    }
  }

  add(topic: string, onEvent: (event: unknown, info: EventInfo) => void, options: SubscribeOptions | undefined): Subscription {
    if (typeof topic !== "string" || topic === "") throw new RpcError("BAD_OPTION", "subscribe needs a topic name.");
    if (typeof onEvent !== "function") throw new RpcError("BAD_OPTION", "subscribe needs a function to call with each event.");
    const since = options?.since;
    if (since !== undefined && !(Number.isSafeInteger(since) && since >= 0)) {
      throw new RpcError("BAD_OPTION", `subscribe: since must be a sequence number ≥ 0, got ${String(since)}.`);
    }
    if (options?.onResync !== undefined && typeof options.onResync !== "function")
      throw new RpcError("BAD_OPTION", "onResync must be a function.");
    if (options?.onEnd !== undefined && typeof options.onEnd !== "function") throw new RpcError("BAD_OPTION", "onEnd must be a function.");
    if (this.subs.has(topic))
      throw new RpcError("BAD_OPTION", `This client already subscribes to "${topic}"; close that subscription first.`);
    if (this.session.disposed) throw new RpcError("DISPOSED", "The client was disposed; create a new one to subscribe.");
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => undefined); // `ready` is optional to await
    const sub: Sub = {
      topic,
      onEvent,
      onResync: options?.onResync,
      onEnd: options?.onEnd,
      cursor: since,
      start: ++this.made,
      madeAt: { wall: Date.now(), mono: monotonic() },
      firstCut: false,
      sending: false,
      closed: false,
      ready: { promise, resolve, reject, settled: false },
    };
    this.subs.set(topic, sub);
    this.send(sub);
    const close = () => this.close(sub);
    const handle: Omit<Subscription, typeof Symbol.dispose> & Partial<Disposable> & { [DISPOSE_FALLBACK]: () => void } = {
      topic,
      get cursor() {
        return sub.cursor;
      },
      ready: promise,
      close,
      // `using` where Symbol.dispose does not exist (Safari) looks this key up (see stub-release.ts).
      [DISPOSE_FALLBACK]: close,
    };
    // Where it does not exist, `[Symbol.dispose]` would be a member named "undefined".
    if (typeof Symbol.dispose === "symbol") handle[Symbol.dispose] = close;
    return handle as Subscription;
  }

  /** `sub`, ready once, was refused when made again: its `onEnd`, else the client's `onError`. */
  private ended(sub: Sub, error: unknown): void {
    if (!sub.onEnd) {
      this.report(error, sub.topic);
      return;
    }
    try {
      sub.onEnd(error);
    } catch (thrown) {
      this.report(thrown, sub.topic);
    }
  }

  /** Subscribes (again) from the cursor; the session calls it on every open connection. */
  private send(sub: Sub): void {
    if (sub.sending || sub.closed || this.session.disposed) return;
    sub.sending = true;
    // No timeout: `ready` waits for the object's answer (a timeout on an open connection would
    // leave the subscription neither confirmed nor sent again).
    const first = sub.cursor === undefined;
    const call = this.session.call({ kind: "system" }, ["subscribe"], first ? [sub.topic, null, sub.start] : [sub.topic, sub.cursor], {
      timeout: 0,
    });
    call.observed = true;
    if (first) {
      // With no cursor yet, a drop resends it as it is, in its place: the object starts it where
      // it kept this subscription's start, or (it never arrived) now, before the calls made after it.
      call.idempotent = true;
      call.retries = Number.MAX_SAFE_INTEGER;
    } else {
      // Not resent with this cursor: the next open sends a new subscribe from the cursor reached by then.
      call.remade = true;
    }
    call.whenSettled(() => {
      sub.sending = false;
      if (sub.closed) return;
      if (!call.ok) {
        const error = call.error;
        // Lost with its connection: the next open sends it again. Anything else is final.
        if (RpcError.is(error) && error.code === "DISCONNECTED") {
          if (first) sub.firstCut = true;
          return;
        }
        this.subs.delete(sub.topic);
        sub.closed = true;
        if (!sub.ready.settled) {
          sub.ready.settled = true;
          sub.ready.reject(error);
        } else this.ended(sub, error);
        return;
      }
      const result = subscribeAnswer(call.value);
      if (!result) {
        disposeStubsIn(call.value); // what it carried by reference is nobody's
        this.subs.delete(sub.topic);
        sub.closed = true;
        const error = new RpcError("PROTOCOL", `The object answered subscribe("${sub.topic}") with something that is not a subscription.`);
        if (!sub.ready.settled) {
          sub.ready.settled = true;
          sub.ready.reject(error);
        } else this.ended(sub, error);
        return;
      }
      // A first subscribe cut before its answer, answered a day later from now (not from the
      // start kept for it): the start may have been dropped, and events after it missed.
      const stale = first && (call.sentBefore || sub.firstCut) && !result.resync && !result.resumed && this.away(sub) >= START_TRUSTED_MS;
      if (result.resync || stale) {
        const info: ResyncInfo = { topic: sub.topic, cursor: sub.cursor, oldest: result.resync?.oldest ?? result.seq, latest: result.seq };
        sub.cursor = result.seq;
        try {
          if (sub.onResync) sub.onResync(info);
          else
            this.report(
              new RpcError(
                "EXPIRED",
                `Events of "${sub.topic}" after ${String(info.cursor)} are no longer kept; resync from ${info.latest}.`,
              ),
              sub.topic,
            );
        } catch (error) {
          this.report(error, sub.topic);
        }
      } else if (sub.cursor === undefined || sub.cursor < result.seq) {
        // Nothing was missed (or it was all delivered just before this reply): we stand at seq.
        sub.cursor = Math.max(sub.cursor ?? 0, result.seq);
      }
      if (!sub.ready.settled) {
        sub.ready.settled = true;
        sub.ready.resolve();
      }
    });
  }

  private deliver(topic: unknown, seq: unknown, value: unknown): void {
    if (typeof topic === "string" && this.closing.has(topic)) return; // a closed subscription's (see `closing`)
    const sub = typeof topic === "string" ? this.subs.get(topic) : undefined;
    if (!sub || sub.closed) return;
    if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 1) {
      // A broken object: taken as the cursor, it would drop every event after it as seen, and
      // the object would refuse it as `since` on the next connection.
      this.report(
        new RpcError(
          "PROTOCOL",
          `An event of "${sub.topic}" came with ${typeof seq === "number" ? String(seq) : typeof seq} for a sequence number; it was dropped.`,
        ),
        sub.topic,
      );
      return;
    }
    // With no cursor yet (subscribed without `since`, not confirmed), an event is this one's
    // replay from the start its first subscribe kept; a closed subscription's are `closing`.
    if (sub.cursor !== undefined && seq <= sub.cursor) return; // seen already (replayed after a drop)
    sub.cursor = seq;
    try {
      sub.onEvent(value, { topic: sub.topic, seq });
    } catch (error) {
      this.report(error, sub.topic);
    }
  }

  private close(sub: Sub): void {
    if (sub.closed) return;
    sub.closed = true;
    if (this.subs.get(sub.topic) === sub) this.subs.delete(sub.topic);
    if (!sub.ready.settled) {
      sub.ready.settled = true;
      sub.ready.reject(new RpcError("DISPOSED", `The subscription to "${sub.topic}" was closed.`));
    }
    // Tell the object when it has (or is about to have) this subscription: the connection is
    // open, or a subscribe call is on its way — queued while connecting, it goes out first, and
    // the unsubscribe queued behind it undoes it.
    if (this.session.state === "open" || sub.sending) {
      const { topic } = sub;
      const call = this.session.call({ kind: "system" }, ["unsubscribe"], [topic]);
      call.observed = true;
      // Cut with its connection, it goes again in its place, as the first subscribe it undoes
      // does (repeating it is harmless); failed instead, that subscribe would stand alone.
      call.idempotent = true;
      call.retries = Number.MAX_SAFE_INTEGER;
      this.closing.set(topic, (this.closing.get(topic) ?? 0) + 1);
      call.whenSettled(() => {
        const left = this.closing.get(topic)! - 1;
        if (left > 0) this.closing.set(topic, left);
        else this.closing.delete(topic);
      });
    }
  }

  /** How long since `sub` was made, by whichever clock says longer. */
  private away(sub: Sub): number {
    return Math.max(Date.now() - sub.madeAt.wall, monotonic() - sub.madeAt.mono);
  }

  private report(error: unknown, topic: string): void {
    this.session.reportError(error, `the subscription to "${topic}"`);
  }
}

/** The object's answer to `subscribe` (topics.ts `SubscribeResult`), or `undefined` when it is not one. */
function subscribeAnswer(value: unknown): { seq: number; resync?: { oldest: number }; resumed: boolean } | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { seq, resync, resumed } = value as { seq?: unknown; resync?: unknown; resumed?: unknown };
  if (!Number.isSafeInteger(seq) || (seq as number) < 0) return undefined;
  if (resync === undefined) return { seq: seq as number, resumed: resumed === true };
  const oldest = (resync as { oldest?: unknown } | null)?.oldest;
  return Number.isSafeInteger(oldest) ? { seq: seq as number, resync: { oldest: oldest as number }, resumed: resumed === true } : undefined;
}

const managers = new WeakMap<ClientSession, Subscriptions>();

/** The subscriptions of the session behind a client, made (and installed) on first use. */
export function subscriptionsOf(client: unknown, get: (client: object) => ClientSession): Subscriptions {
  if (proxyInfo(client)?.kind !== "root") throw new RpcError("BAD_OPTION", "subscribe needs a client made by createRpcClient.");
  const session = get(client as object);
  let subscriptions = managers.get(session);
  if (!subscriptions) {
    subscriptions = new Subscriptions(session);
    managers.set(session, subscriptions);
  }
  return subscriptions;
}
