/**
 * The answers of the calls a callee ran (callee.ts): each written once, what it hands out by
 * reference counted only if it leaves, sent after what the call did before it answered, and
 * dropped if its caller cancels while its Blob bytes are still being read. One per callee.
 *
 * Invariants:
 *  - The exports a reply pins are counted as sent only when the reply leaves as written; a reply
 *    replaced by a failure, or not sent (its caller cancelled, or left while the call ran and
 *    only the delivery record keeps the answer), gives them back.
 *  - Calls the method made before it answered (not awaited) leave before its reply (but for the
 *    exception `send` names), and so do references given back so far.
 *  - A reply waiting for its Blob bytes holds back the replies after it only while its caller
 *    waits for it: a cancel drops it (and gives back what it handed out).
 *  - Nothing is made per reply but the reply: one referrer per callee collects what each result
 *    hands out (a bundler's keepNames, on by default in wrangler, names every function made, at
 *    a cost per call).
 *
 * Internal module.
 */
import type { CalleeConfig } from "./callee.js";
import { referResult } from "./callee-references.js";
import type { Connection } from "./connection.js";
import { FrameKind } from "./envelopes.js";
import { type Outcome, type Reply, type ReplyEnv, referencesEnded, writeReply } from "./replies.js";

export class CalleeReplies {
  private readonly env: ReplyEnv;
  /** Replies waiting for their Blob bytes, by call id: how to drop each (see `droppable`). */
  private waits: Map<number, () => void> | undefined;
  /** The exports the reply being written hands out (see `write`). */
  private exported: number[] | undefined;
  /** The reply being written holds a reference of either end (an export, or a stub sent back). */
  private referred = false;
  /** What the reply `write` returned last hands out, for `send` (not when it was replaced). */
  private written: number[] | undefined;
  /** The reply `write` returned last holds references (see `replayable`). */
  private writtenReferred = false;
  private readonly refer = (value: object) => {
    const record = referResult(this.conn, this.config, value, (this.exported ??= []));
    if (record) this.referred = true;
    return record;
  };

  constructor(
    private readonly conn: Connection,
    private readonly config: CalleeConfig,
  ) {
    this.env = { limits: config.limits, exposeErrorStack: config.exposeErrorStack, forbidden: config.forbidden };
  }

  /**
   * Writes the reply of call `id`. `sending`: it will be sent (`send`, once the callee has kept
   * it in its delivery record if it keeps one); otherwise what it hands out is given back now.
   */
  write(id: number, outcome: Outcome, sending: boolean): Reply {
    // What the result hands out by reference is collected in `exported` (one referrer for every
    // reply, not a closure and an array per call; saved around it: writing a result runs its
    // getters, which may make calls of their own).
    const outer = this.exported;
    const outerReferred = this.referred;
    this.exported = undefined;
    this.referred = false;
    const reply = writeReply(id, outcome, this.env, this.refer);
    const exported = this.exported as number[] | undefined;
    this.writtenReferred = this.referred && !reply.replaced;
    this.exported = outer;
    this.referred = outerReferred;
    if (exported) {
      // Only a reply that leaves gives the peer references to hold.
      if (reply.replaced || !sending) this.conn.exports.dropped(exported);
      else this.conn.exports.sent(exported);
    }
    this.written = reply.replaced ? undefined : exported;
    return reply;
  }

  /**
   * What the delivery record keeps of `reply` (the one `write` returned last). References live as
   * long as their connection, so a reply holding any cannot be replayed to a resend on the next
   * one: the record keeps why instead.
   */
  replayable(id: number, reply: Reply): Reply {
    return this.writtenReferred ? referencesEnded(id, this.config.label) : reply;
  }

  /** Sends `reply` (the one `write` returned last, for a caller still waiting). */
  send(id: number, reply: Reply): void {
    const exported = this.written;
    this.written = undefined;
    const { conn } = this;
    // Calls the method made before it answered (not awaited) leave before its reply (unless one
    // waits for the result of a call sent earlier: protocol.md), and so do references given back
    // so far.
    if (conn.caller.queued) conn.caller.flush();
    conn.flushReleases();
    conn.outbox.add(FrameKind.Replies, reply.json, reply.blobs, reply.ready && this.droppable(id, reply.ready, exported));
  }

  /** The caller gave up on call `id`: its reply, if still waiting for its Blob bytes, is dropped. */
  cancel(id: number): void {
    const waiting = this.waits?.get(id);
    if (waiting) {
      this.waits!.delete(id);
      waiting();
    }
  }

  /**
   * `ready` of a reply waiting for its Blob bytes, settling `null` (dropped) if the caller cancels
   * the call first: a result Blob that never reads must not hold back the replies after it. What
   * the dropped reply handed out by reference (`exported`, counted as sent) is given back.
   */
  private droppable(
    id: number,
    ready: Promise<string | undefined>,
    exported: readonly number[] | undefined,
  ): Promise<string | null | undefined> {
    return new Promise((resolve) => {
      (this.waits ??= new Map()).set(id, () => {
        if (exported) for (const exportId of exported) this.conn.exports.release(exportId, 1);
        resolve(null);
      });
      ready.then((value) => {
        // Still waiting (not cancelled, which gave them back already) and replaced (a result
        // Blob could not be read): what the result handed out never leaves.
        if (this.waits?.delete(id) && value !== undefined && exported) {
          for (const exportId of exported) this.conn.exports.release(exportId, 1);
        }
        resolve(value);
      });
    });
  }
}
