/**
 * Reading a replies frame on the end that made the calls (connection.ts): each reply is decoded
 * and settles the call waiting for it in the caller half. One per connection.
 *
 * Invariants:
 *  - A reply is read only for a call that waits for it on this connection; any other (timed out,
 *    cancelled, never ours) is not decoded, and the references it carries are given back.
 *  - An EXPORT record becomes a stub of the peer's object, owned by whoever awaits the call; the
 *    same import arriving twice is the same stub, unless that stub was disposed. A RETURN record
 *    is this end's own export, back. A reply cannot pipeline on a call.
 *  - A reply that fails to decode part-way settles its call with the failure: the references it
 *    did not build yet are given back, and the stubs it made for it (nobody will ever see them)
 *    are released.
 *  - Nothing is made per reply or per frame but the decode context: this reader is the frame's
 *    reference resolver (a bundler's keepNames, on by default in wrangler, names every function
 *    made, at a cost per call).
 *
 * Internal module.
 */
import { type DecodeContext, decodeContext, fromRecords, type ReferenceResolver, readValue } from "./codec.js";
import type { Connection } from "./connection.js";
import { isWireId, RefRecord, ReplyStatus } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { thenable, unawaitable } from "./outgoing-call.js";
import { makeStub, type StubHolder, stubHolder } from "./proxy.js";
import { releaseHolder } from "./stub-release.js";
import { checkReference, releaseExports, releaseUnclaimed } from "./references.js";
import { failure } from "./replies.js";

export class ReplyReader implements ReferenceResolver {
  /** Payloads of the EXPORT records the reply being read has built, and the stubs it made (see `receive`). */
  private built: Set<unknown> | undefined;
  private stubs: StubHolder[] | undefined;

  constructor(
    private readonly conn: Connection,
    private readonly limits: Readonly<RpcLimits>,
  ) {}

  /** Reads the replies of a replies frame (its body an array, checked by the connection). */
  receive(body: unknown[], blobs: readonly Uint8Array[]): void {
    const { conn } = this;
    let ctx: DecodeContext | undefined;
    for (const reply of body) {
      if (!Array.isArray(reply) || !isWireId(reply[0])) continue;
      const call = conn.caller.waiting(reply[0]);
      if (!call || call.sentOn !== conn) {
        releaseUnclaimed(conn.imports, reply); // timed out, cancelled, or never ours
        continue;
      }
      ctx ??= this.context(blobs);
      let ok = false;
      let outcome: unknown;
      try {
        switch (reply.length === 1 ? -1 : reply[1]) {
          case -1:
            ok = true;
            break;
          case ReplyStatus.OkJson:
          case ReplyStatus.OkRecords:
          case ReplyStatus.OkBytes:
            outcome = readValue(reply[1], reply[2], ctx);
            // Refused once built (outgoing-call.ts): the catch below releases its stubs too.
            if (thenable(outcome)) throw unawaitable();
            ok = true;
            break;
          case ReplyStatus.Threw:
            outcome = fromRecords(reply[2], ctx);
            break;
          case ReplyStatus.Failed:
            // An ENCODE failure may carry what caused it (a getter that threw), as a record
            // table; an INVALID_ARGUMENT its issues, as JSON.
            outcome = failure(reply[2], reply[3], reply[4], (records) => fromRecords(records, ctx!));
            break;
          default:
            outcome = new RpcError("PROTOCOL", `Reply with unknown status ${String(reply[1])}.`);
        }
      } catch (error) {
        ok = false;
        outcome = error;
        // Decoding failed part-way: the references it did not build yet are given back, and the
        // stubs it made for this reply (nobody will ever see them) are released now.
        const table =
          reply[1] === ReplyStatus.OkRecords || reply[1] === ReplyStatus.Threw
            ? reply[2]
            : reply[1] === ReplyStatus.Failed && reply[2] !== "INVALID_ARGUMENT"
              ? reply[4]
              : undefined;
        releaseExports(conn.imports, table, this.built);
        if (this.stubs) for (const holder of this.stubs) releaseHolder(holder);
      }
      this.built = undefined;
      this.stubs = undefined;
      conn.caller.settleReply(reply[0], ok, outcome);
    }
  }

  /** Decoding a reply: stubs for the peer's exports (owned by whoever awaits), our own exports back. */
  private context(blobs: readonly Uint8Array[]): DecodeContext {
    const ctx = decodeContext(blobs, this.limits);
    ctx.refs = this;
    return ctx;
  }

  /**
   * What reference records in replies stand for: methods of the reader, made once, not functions
   * made per reply (a bundler's keepNames, on by default in wrangler, names every function made,
   * at a cost per call).
   */
  validate(type: number, payload: unknown): void {
    if (type === RefRecord.Pipeline) throw new RpcError("DECODE", "A reply cannot pipeline on a call.");
    checkReference(type, payload);
  }

  build(type: number, payload: unknown): unknown {
    const { conn } = this;
    if (type === RefRecord.Export) {
      const [id, kind] = payload as [number, number];
      const entry = conn.imports.receive(id, kind);
      (this.built ??= new Set()).add(payload);
      // One stub per import: the same remote object arriving twice is the same stub, unless
      // that stub was disposed (the import lives on through a dup()): then a new holder.
      const known = entry.stub?.deref();
      if (known && !stubHolder(known)?.disposed) return known;
      const stub = makeStub(conn.caller, entry, conn.imports);
      entry.stub = typeof WeakRef === "function" ? new WeakRef(stub) : { deref: () => stub };
      (this.stubs ??= []).push(stubHolder(stub)!);
      return stub;
    }
    const entry = conn.exports.get(payload as number);
    if (!entry) throw conn.lostExport(payload as number);
    return entry.value;
  }
}
