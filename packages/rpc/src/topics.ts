/**
 * Subscriptions that survive hibernation and reconnects: the object publishes events to named
 * topics; each event gets the next sequence number of its topic and is stored, as the very frame
 * that carries it, in the object's own SQLite storage (`_dorpc_events`), in the same turn as the
 * publisher's other writes. Subscribed sockets (listed in their attachments, so the list survives
 * hibernation) get it pushed at once; a client that was away resubscribes with the last sequence
 * number it saw and is sent exactly the events it missed, in order, before any new one. When the
 * events it missed are no longer kept, it is told to resync instead: never a silent gap.
 *
 * Retention per topic: the last `keep` events (default 1,000), and optionally none older than
 * `maxAge` ms; the newest event is always kept, so sequence numbers never restart — across
 * `ctx.storage.deleteAll()` too, which writes it back (`wiping`).
 *
 * A subscription made without `since` gives its number (in its client session) in its first
 * subscribe; the object keeps where it started (`_dorpc_topic_starts`, a row per session and
 * topic, a day), so the same subscribe resent after its answer was lost starts there too, and
 * the events published in between are replayed.
 *
 * Internal module (workerd only).
 */
import { existingConnection } from "./dispatcher.js";
import { CallFlags, FrameKind } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { type WireFrame, writeFrame } from "./frame.js";
import { platformIdentities } from "./platform-state.js";
import { deliver, notification } from "./push.js";
import { readAttachment, socketsOf, writeAttachment } from "./socket-state.js";
import { type Sql, sqlOf, storageOf } from "./sql.js";
import { afterTransaction, onDeleteAll, trackTransactions } from "./storage-writes.js";
import type { ResolvedTopic } from "./topics-options.js";

/** What `subscribe` answers: where the client now stands. */
export interface SubscribeResult {
  /** Sequence number of the topic's newest event (0: none yet). Events after it will be pushed. */
  seq: number;
  /** Set when the events after the client's cursor are no longer kept: it must resync. */
  resync?: { oldest: number };
  /** A first subscribe made again: it went on from the start kept for it (not from now). */
  resumed?: true;
}

/** Most topics one socket may subscribe to (they live in its 2 KiB attachment). */
const MAX_TOPICS_PER_SOCKET = 32;

/** How long the start of a subscription made without `since` is kept (a client trusts 23 hours). */
const STARTS_KEPT_MS = 24 * 3_600_000;
/** Starts older than `STARTS_KEPT_MS` are dropped at most this often (when one is written). */
const STARTS_PRUNED_EVERY_MS = 3_600_000;

/** One object's event log. */
class TopicLog {
  private readonly latestSeq = new Map<string, number>();
  private created = false;
  private startsCreated = false;
  private startsPrunedAt = 0;

  constructor(
    private readonly sql: Sql,
    readonly topics: ReadonlyMap<string, ResolvedTopic>,
    private readonly label: string,
  ) {}

  topic(name: unknown): ResolvedTopic {
    const topic = typeof name === "string" ? this.topics.get(name) : undefined;
    if (!topic) {
      throw new RpcError(
        "NOT_FOUND",
        typeof name === "string"
          ? `No topic ${JSON.stringify(name.slice(0, 64))} on ${this.label}; declare it in rpcOptions.topics.`
          : `A topic is named by a string, got ${name === null ? "null" : typeof name} (on ${this.label}).`,
      );
    }
    return topic;
  }

  private ensure(): void {
    if (this.created) return;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS _dorpc_events (topic TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, frame BLOB NOT NULL, PRIMARY KEY (topic, seq)) WITHOUT ROWID",
    );
    this.created = true;
  }

  private ensureStarts(): void {
    if (this.startsCreated) return;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS _dorpc_topic_starts (session TEXT NOT NULL, topic TEXT NOT NULL, sub INTEGER NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (session, topic)) WITHOUT ROWID",
    );
    this.sql.exec("CREATE INDEX IF NOT EXISTS _dorpc_topic_starts_at ON _dorpc_topic_starts (at)");
    this.startsCreated = true;
  }

  private tableExists(name: string): boolean {
    return this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0;
  }

  /**
   * The object's `deleteAll()` is about to drop the log (storage-writes.ts): each topic's newest
   * event is written back after it, as retention always keeps it, so sequence numbers never
   * restart and a subscriber whose cursor is older resyncs instead of missing events silently.
   * The subscriptions' starts are written back too: a first subscribe resent later still starts
   * where it did.
   */
  wiping(): () => void {
    const newest =
      this.created || this.tableExists("_dorpc_events")
        ? this.sql
            .exec(
              "SELECT topic, seq, at, frame FROM _dorpc_events AS e WHERE seq = (SELECT max(seq) FROM _dorpc_events WHERE topic = e.topic)",
            )
            .toArray()
        : [];
    const starts =
      this.startsCreated || this.tableExists("_dorpc_topic_starts")
        ? this.sql.exec("SELECT session, topic, sub, seq, at FROM _dorpc_topic_starts WHERE at >= ?", Date.now() - STARTS_KEPT_MS).toArray()
        : [];
    return () => {
      this.created = false;
      this.startsCreated = false;
      if (newest.length > 0) {
        this.ensure();
        for (const { topic, seq, at, frame } of newest) {
          this.sql.exec("INSERT INTO _dorpc_events (topic, seq, at, frame) VALUES (?, ?, ?, ?)", topic, seq, at, frame);
        }
      }
      if (starts.length > 0) {
        this.ensureStarts();
        for (const { session, topic, sub, seq, at } of starts) {
          this.sql.exec(
            "INSERT INTO _dorpc_topic_starts (session, topic, sub, seq, at) VALUES (?, ?, ?, ?, ?)",
            session,
            topic,
            sub,
            seq,
            at,
          );
        }
      }
    };
  }

  /**
   * Where subscription `sub` of client session `session` (made without `since`) started on
   * `topic`: `{ kept }`, the start kept when its first subscribe ran, if one did (this is that
   * subscribe resent after its answer was lost); otherwise `latest`, kept from now on in the session's row
   * for the topic (a client has one subscription per topic at a time: a later one replaces it).
   */
  startOf(topic: string, session: string, sub: number, latest: number): number | { kept: number } {
    this.ensureStarts();
    const kept = this.sql.exec("SELECT sub, seq FROM _dorpc_topic_starts WHERE session = ? AND topic = ?", session, topic).toArray()[0];
    if (kept && kept.sub === sub) return { kept: kept.seq as number };
    // A newer subscription's row stays: this one was closed (its unsubscribe follows).
    if (kept && (kept.sub as number) > sub) return latest;
    const now = Date.now();
    if (now - this.startsPrunedAt >= STARTS_PRUNED_EVERY_MS) {
      this.startsPrunedAt = now;
      this.sql.exec("DELETE FROM _dorpc_topic_starts WHERE at < ?", now - STARTS_KEPT_MS);
    }
    this.sql.exec(
      "INSERT OR REPLACE INTO _dorpc_topic_starts (session, topic, sub, seq, at) VALUES (?, ?, ?, ?, ?)",
      session,
      topic,
      sub,
      latest,
      now,
    );
    return latest;
  }

  /** The newest sequence number of `topic` is read from the log again (a publish was rolled back). */
  forget(topic: string): void {
    this.latestSeq.delete(topic);
  }

  latest(topic: string): number {
    let seq = this.latestSeq.get(topic);
    if (seq === undefined) {
      this.ensure();
      seq = (this.sql.exec("SELECT max(seq) AS seq FROM _dorpc_events WHERE topic = ?", topic).one().seq as number | null) ?? 0;
      this.latestSeq.set(topic, seq);
    }
    return seq;
  }

  /** Stores the event frame with the next sequence number (assigned by `encode`) and trims. */
  append(topic: string, options: ResolvedTopic, seq: number, frame: WireFrame): void {
    const now = Date.now();
    this.sql.exec(
      "INSERT INTO _dorpc_events (topic, seq, at, frame) VALUES (?, ?, ?, ?)",
      topic,
      seq,
      now,
      typeof frame === "string" ? frame : frame.buffer.slice(frame.byteOffset, frame.byteOffset + frame.byteLength),
    );
    this.latestSeq.set(topic, seq);
    if (seq > options.keep) this.sql.exec("DELETE FROM _dorpc_events WHERE topic = ? AND seq <= ?", topic, seq - options.keep);
    this.expire(topic, options, seq, now);
  }

  /**
   * Drops the events of `topic` older than `maxAge`, but never the newest (`latest`). Run when an
   * event is stored and before a subscriber's replay is read, so a topic that went quiet keeps
   * (and replays) nothing older either.
   */
  expire(topic: string, options: ResolvedTopic, latest = this.latest(topic), now = Date.now()): void {
    if (options.maxAge <= 0) return;
    this.ensure();
    // Events are in time order: only when the oldest is too old is there anything to drop.
    const oldest = this.sql.exec("SELECT seq, at FROM _dorpc_events WHERE topic = ? ORDER BY seq LIMIT 1", topic).toArray()[0];
    if (oldest && (oldest.at as number) < now - options.maxAge) {
      this.sql.exec("DELETE FROM _dorpc_events WHERE topic = ? AND seq < ? AND at < ?", topic, latest, now - options.maxAge);
    }
  }

  /** The frames of events after `since`, or `undefined` when some of them are no longer kept. */
  after(topic: string, since: number): WireFrame[] | undefined {
    this.ensure();
    const oldest = (this.sql.exec("SELECT min(seq) AS seq FROM _dorpc_events WHERE topic = ?", topic).one().seq as number | null) ?? 0;
    if (since + 1 < oldest) return undefined;
    return this.sql
      .exec("SELECT frame FROM _dorpc_events WHERE topic = ? AND seq > ? ORDER BY seq", topic, since)
      .toArray()
      .map((row) => (typeof row.frame === "string" ? row.frame : new Uint8Array(row.frame as ArrayBuffer)));
  }

  oldest(topic: string): number {
    return (this.sql.exec("SELECT min(seq) AS seq FROM _dorpc_events WHERE topic = ?", topic).one().seq as number | null) ?? 0;
  }
}

const logs = new WeakMap<object, TopicLog>();

function logOf(target: object, topics: ReadonlyMap<string, ResolvedTopic>): TopicLog {
  let log = logs.get(target);
  if (!log) {
    const sql = sqlOf(target);
    if (!sql) throw new RpcError("BAD_OPTION", "Topics need a SQLite-backed Durable Object (new_sqlite_classes in wrangler.toml).");
    const name = (target as { constructor?: { name?: string } }).constructor?.name || "the Durable Object";
    const created = new TopicLog(sql, topics, name);
    onDeleteAll(storageOf(target)!, () => created.wiping());
    // Only topics defer to a transaction's commit: objects without them are not wrapped.
    if (topics.size > 0) trackTransactions(storageOf(target)!);
    log = created;
    logs.set(target, log);
  }
  return log;
}

/** Makes `target`'s topic log now, when it has SQLite storage, so it sees a `deleteAll()` made before it is used. */
export function watchTopicLog(target: object, topics: ReadonlyMap<string, ResolvedTopic>): void {
  if (sqlOf(target)) logOf(target, topics);
}

/**
 * Publishes `event` on `topic`: stored under the topic's next sequence number, pushed to every
 * subscribed client. Returns the sequence number. The event is encoded once.
 */
export function publish(target: object, topics: ReadonlyMap<string, ResolvedTopic>, topic: string, event: unknown): number {
  const log = logOf(target, topics);
  const options = log.topic(topic);
  const seq = log.latest(topic) + 1;
  const { json, blobs } = notification(["event"], [topic, seq, event], CallFlags.System, platformIdentities(target));
  const frame = writeFrame(FrameKind.Calls, `[${json}]`, blobs);
  log.append(topic, options, seq, frame);
  const push = () => {
    for (const ws of socketsOf(target)) {
      if (readAttachment(ws)?.topics?.includes(topic)) deliver(ws, json, blobs, frame);
    }
  };
  // Published in a transaction: pushed once it is committed; rolled back, the event never was
  // (its row went with it), and its number is read from the log again.
  const storage = storageOf(target);
  const deferred = storage !== undefined && afterTransaction(storage, (committed) => (committed ? push() : log.forget(topic)));
  if (!deferred) push();
  return seq;
}

/**
 * The system object a client's `subscribe` / `unsubscribe` calls reach on socket `ws`. A
 * resubscribe replays the missed events into the socket's outbox before the reply.
 */
export function topicSystem(target: object, ws: WebSocket, topics: ReadonlyMap<string, ResolvedTopic>): object {
  return {
    subscribe(topic: unknown, since: unknown, start?: unknown): SubscribeResult {
      const log = logOf(target, topics);
      const options = log.topic(topic);
      const name = topic as string;
      if (since !== undefined && since !== null && !(Number.isSafeInteger(since) && (since as number) >= 0)) {
        throw new RpcError("PROTOCOL", "subscribe: since must be a sequence number ≥ 0.");
      }
      if (start !== undefined && start !== null && !(Number.isSafeInteger(start) && (start as number) >= 1)) {
        throw new RpcError("PROTOCOL", "subscribe: start must be the subscription's number (an integer ≥ 1).");
      }
      const attachment = readAttachment(ws);
      if (!attachment) throw new RpcError("INTERNAL", "subscribe: this socket has no dorpc attachment.");
      const subscribed = attachment.topics ?? [];
      // Once per connection (a client subscribes again only on a new one): each subscribe may
      // replay up to `keep` events, so repeats would multiply what one frame makes the object send.
      if (subscribed.includes(name)) {
        throw new RpcError("BAD_OPTION", `This connection already subscribes to ${JSON.stringify(name.slice(0, 64))}; unsubscribe first.`);
      }
      if (subscribed.length >= MAX_TOPICS_PER_SOCKET) {
        throw new RpcError("LIMIT", `A connection may subscribe to at most ${MAX_TOPICS_PER_SOCKET} topics.`);
      }
      const latest = log.latest(name);
      log.expire(name, options, latest);
      const result: SubscribeResult = { seq: latest };
      // Without `since`, the subscription's number: from where its first subscribe started (kept
      // per client session: a socket that never said hello keeps none).
      let from = latest;
      if (since !== undefined && since !== null) from = since as number;
      else if (typeof start === "number" && attachment.session !== undefined) {
        const found = log.startOf(name, attachment.session, start, latest);
        if (typeof found === "number") from = found;
        else {
          from = found.kept;
          result.resumed = true;
        }
      }
      if (from !== latest) {
        const missed = from < latest ? log.after(name, from) : undefined;
        // Events replayed to this connection before are counted: it is replayed again at most
        // `keep` of them (while the object stays in memory), so subscribe/unsubscribe pairs
        // cannot make one frame replay the log again and again. Past that, it resyncs. A
        // resubscription from the cursor it reached costs nothing.
        const replayed = replays(ws);
        const before = replayed.get(name) ?? { high: 0, again: 0 };
        const again = before.again + Math.max(0, Math.min(before.high, latest) - from);
        if (missed && again <= options.keep) {
          replayed.set(name, { high: Math.max(before.high, latest), again });
          replay(ws, missed);
        } else result.resync = { oldest: log.oldest(name) };
      }
      writeAttachment(ws, { ...attachment, topics: [...subscribed, name] });
      return result;
    },
    unsubscribe(topic: unknown): void {
      const attachment = readAttachment(ws);
      if (attachment?.topics?.includes(topic as string)) {
        writeAttachment(ws, { ...attachment, topics: attachment.topics.filter((t) => t !== topic) });
      }
    },
  };
}

/** Per socket and topic: the newest event replayed to it, and how many were replayed again. */
const replayedTo = new WeakMap<WebSocket, Map<string, { high: number; again: number }>>();

function replays(ws: WebSocket): Map<string, { high: number; again: number }> {
  let out = replayedTo.get(ws);
  if (!out) replayedTo.set(ws, (out = new Map()));
  return out;
}

/** Queues stored event frames on `ws`'s connection, in order, ahead of what comes next. */
function replay(ws: WebSocket, frames: WireFrame[]): void {
  const outbox = existingConnection(ws)?.outbox;
  for (const frame of frames) {
    if (!outbox) {
      try {
        ws.send(frame);
      } catch {
        // Closing: the client resubscribes when it is back.
      }
    } else if (typeof frame === "string") outbox.add(FrameKind.Calls, frame.slice(3, -1));
    // A binary frame travels whole, in its place (behind a reply still reading its Blob, too).
    else outbox.addFrame(frame);
  }
}
