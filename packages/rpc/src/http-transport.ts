/**
 * `RpcTransport` over HTTP batches: for a cron job, a CLI, a serverless function or a Worker that
 * makes a few calls and leaves. Each frame of calls the session flushes (every call made in one
 * turn) is one `POST` to the RPC path; the response carries their replies. The contract is in
 * transport.ts; what differs from a socket:
 *  - `open()` resolves at once: there is no connection to open;
 *  - the session's Hello is kept and sent as headers with every request (`X-Dorpc-Session`, the
 *    key of the calls' delivery record, and `X-Dorpc-Resending`);
 *  - releases and cancels have nothing to act on (the object keeps nothing between requests) and
 *    are dropped; heartbeats are answered here;
 *  - a request the object refused (4xx with a typed body) fails the calls it carried with that
 *    error; a request that got no answer (network failure, 5xx) ends this transport like a lost
 *    connection, so the session sends the calls again on the next one (exactly once);
 *  - the object cannot call back: functions passed as arguments are refused on the object.
 *
 * Internal module.
 */
import { CallFlags, FrameKind, HEARTBEAT_PING, HEARTBEAT_PONG, RefRecord, ReplyStatus, ValueTag } from "./envelopes.js";
import { isRpcErrorCode, RpcError } from "./errors.js";
import { helloEnd, type IncomingData, readFrame, type WireFrame } from "./frame.js";
import {
  bodyBytesFor,
  FRAME_TYPE,
  FRAMES_TYPE,
  frameOf,
  RESENDING_HEADER,
  readFrameList,
  readLimited,
  resendingHeader,
  SESSION_HEADER,
} from "./http-frames.js";
import { DEFAULT_LIMITS } from "./limits.js";
import type { RpcTransport, TransportFactory, TransportHandler } from "./transport.js";

/** What `new Headers(…)` takes: an object, a list of pairs or a `Headers` (named here: not every runtime's types have `HeadersInit`). */
export type HeadersInit = ConstructorParameters<typeof Headers>[0];

/** The `fetch` an HTTP transport uses: the global one, or e.g. a service binding's. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Options of {@link httpTransport}. */
export interface HttpTransportOptions {
  /** The `fetch` to send with (e.g. a service binding's `fetch`, in a Worker). Default: the global one. */
  fetch?: FetchLike;
  /** Extra headers of every request (e.g. `Authorization`, which `identify` or a route hook reads). */
  headers?: HeadersInit;
}

/**
 * HTTP batches instead of a WebSocket: `createRpcClient(binding, instance, { baseUrl, transport:
 * httpTransport() })`. Every call made in one turn is one `POST` to the object's RPC path, and the
 * response carries the replies. For scripts, cron jobs, serverless functions and Workers that make
 * a few calls and leave: no connection to open or keep, but nothing the object could call back
 * (functions and pushes), and references returned by a call only work in the same turn.
 */
export function httpTransport(options: HttpTransportOptions = {}): TransportFactory {
  if (typeof options !== "object" || options === null)
    throw new RpcError("BAD_OPTION", "httpTransport(options): options must be an object.");
  if (options.fetch !== undefined && typeof options.fetch !== "function") {
    throw new RpcError("BAD_OPTION", "httpTransport({ fetch }) must be a function like the global fetch.");
  }
  const fetchImpl = options.fetch ?? (globalThis as { fetch?: FetchLike }).fetch?.bind(globalThis);
  if (typeof fetchImpl !== "function") throw new RpcError("BAD_OPTION", "No global fetch in this runtime: pass httpTransport({ fetch }).");
  let headers: Headers;
  try {
    headers = new Headers(options.headers ?? {});
  } catch (error) {
    throw new RpcError(
      "BAD_OPTION",
      `httpTransport({ headers }) must be an object, a list of pairs or a Headers: ${(error as Error).message}`,
    );
  }
  /** URLs that have answered a request through this factory: after that, a failed request is a lost answer, never CORS. */
  const answered = new Set<string>();
  const factory = (handler: TransportHandler) => {
    if (handler.url === undefined) throw new RpcError("BAD_OPTION", "httpTransport() needs the client's baseUrl.");
    return new HttpTransport(handler.url.replace(/^ws(s?):/, "http$1:"), fetchImpl, headers, handler, answered);
  };
  return Object.assign(factory, { usesUrl: true, connectionless: true } as const);
}
// Marks the maker, so a client given `httpTransport` itself (not called) says so at once.
Object.defineProperty(httpTransport, "makesTransport", { value: true });

class HttpTransport implements RpcTransport {
  private closed = false;
  private session: string | undefined;
  /** Set until the request that resends calls: how old the session was when it said so (see the hello). */
  private resendingAge: number | undefined;
  /** The end of the resending turn is scheduled (see `post`). */
  private resendingEnds = false;
  private readonly inFlight = new Set<AbortController>();

  constructor(
    private readonly url: string,
    private readonly fetchImpl: FetchLike,
    private readonly headers: Headers,
    private readonly handler: TransportHandler,
    private readonly answered: Set<string>,
  ) {}

  open(): Promise<void> {
    return Promise.resolve();
  }

  send(frame: WireFrame): void {
    if (this.closed) return;
    if (typeof frame === "string") {
      // The session's Hello in front of its first calls (Outbox.lead): taken apart.
      const end = helloEnd(frame);
      if (end > 0) {
        this.send(frame.slice(0, end)); // the Hello
        frame = frame.slice(end); // then the frame after it, here
      }
      if (frame === HEARTBEAT_PING) {
        queueMicrotask(() => this.deliver(HEARTBEAT_PONG));
        return;
      }
      const kind = frame.charCodeAt(1);
      if (kind === FrameKind.Hello) {
        const [session, resending, age] = JSON.parse(frame.slice(2)) as [string, number, number?];
        this.session = session;
        this.resendingAge = resending === 1 ? (age ?? 0) : undefined;
        return;
      }
      if (kind !== FrameKind.Calls) return; // releases, cancels: nothing to act on
    } else if (frame[1] !== FrameKind.Calls) return;
    void this.post(frame);
  }

  private async post(frame: WireFrame): Promise<void> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    const headers = new Headers(this.headers);
    headers.set("Content-Type", FRAME_TYPE);
    if (this.session) headers.set(SESSION_HEADER, this.session);
    if (this.resendingAge !== undefined) {
      // The resends follow the hello at once, in the frames of the first flush (one turn's calls
      // are cut into several frames past 256): every request of that turn says so — they may
      // reach the object in any order. Later turns' requests carry new calls only.
      headers.set(RESENDING_HEADER, resendingHeader(this.resendingAge));
      if (!this.resendingEnds) {
        this.resendingEnds = true;
        queueMicrotask(() => {
          this.resendingAge = undefined;
          this.resendingEnds = false;
        });
      }
    }
    let response: Response;
    try {
      response = await this.fetchImpl(this.url, { method: "POST", headers, body: frame as RequestInit["body"], signal: controller.signal });
    } catch (error) {
      const unreached = neverSent(error);
      // Nothing listens there: the calls never left, and resending would not help.
      if (unreached) {
        this.failCalls(frame, { code: "CONNECT_FAILED", message: `Nothing answered at ${this.url} (${unreached}); nothing was sent.` });
        return;
      }
      // A browser refusing a cross-origin request (CORS) throws the same TypeError as a lost
      // network: resending would only fail again until the call times out, so ask first.
      const blocked =
        this.answered.has(this.url) || controller.signal.aborted ? undefined : await corsRefusal(this.url, this.fetchImpl, headers);
      if (blocked) this.failCalls(frame, { code: "CONNECT_FAILED", message: blocked });
      // The request may have arrived and run: a lost answer, so the calls are resent (exactly once).
      else this.finish(1006, `HTTP request to ${this.url} failed: ${String((error as Error)?.message ?? error)}`);
      return;
    } finally {
      this.inFlight.delete(controller);
    }
    this.answered.add(this.url);
    if (this.closed) return;
    const type = (response.headers.get("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (!response.ok) {
      const refusal = await refusalOf(response);
      // dorpc refuses with a 4xx; a 5xx is a gateway or a crash whatever its body says — except
      // dorpc's own BAD_OPTION: an object whose options are wrong refuses every request before
      // anything runs, so resending would only fail again until the calls time out.
      if (refusal.typed && refusal.code === "BAD_OPTION") {
        this.failCalls(frame, { code: "CONNECT_FAILED", message: `${this.url} cannot serve calls: ${refusal.message}; nothing ran.` });
      } else if (refusal.typed && response.status < 500) this.failCalls(frame, refusal);
      // A crash or a gateway failing: the calls may have run, so this is a lost answer and they
      // are resent (answered from the delivery record: exactly once).
      else if (response.status >= 500) this.finish(1011, `HTTP ${response.status} from ${this.url}`);
      // Refused before the object (the Worker's route or hooks): the calls never ran.
      else this.failCalls(frame, { code: refusal.code, message: `${this.url} ${refusal.message}` });
      return;
    }
    if (type !== FRAME_TYPE && type !== FRAMES_TYPE) {
      const what = type === "" ? "no Content-Type" : type;
      this.failCalls(frame, {
        code: "CONNECT_FAILED",
        message: `${this.url} answered with ${what}, not dorpc frames: is it the RPC path of a Worker that routes to the object (routeDORequest)?`,
      });
      void response.body?.cancel().catch(() => undefined);
      return;
    }
    // Read no more than a frame within the client's limits can take (a hostile or broken
    // endpoint could send any amount); frames of a list are delivered as each arrives whole.
    const max = bodyBytesFor(this.handler.limits?.maxMessageBytes ?? DEFAULT_LIMITS.maxMessageBytes);
    let over: number | undefined;
    // Whether the object's release of what the request passed by reference came back.
    let released = false;
    const take = (answer: WireFrame): void => {
      if ((typeof answer === "string" ? answer.charCodeAt(1) : answer[1]) === FrameKind.Release) released = true;
      this.deliver(answer);
    };
    try {
      if (type === FRAMES_TYPE) over = await readFrameList(response.body, max, (bytes) => take(frameOf(bytes)));
      else {
        const bytes = await readLimited(response.body, max);
        if (bytes === undefined) over = max + 1;
        else take(frameOf(bytes));
      }
    } catch (error) {
      // Cut on the way, or labelled as frames but garbled: a lost answer (the calls not answered yet are resent).
      if (error instanceof RpcError) this.finish(1002, `The answer from ${this.url} is not dorpc frames: ${error.message}`);
      else this.finish(1006, `Reading the answer from ${this.url} failed: ${String((error as Error)?.message ?? error)}`);
      return;
    }
    if (over === undefined) {
      // The whole answer was read, and the object answers every call of a request in it: a call
      // left waiting (a broken endpoint, or a proxy that dropped its last frames) gets no answer
      // later. Replies to the calls that were answered are ignored. When no call of this client
      // waits at all (the common case), none of this request's does: its frame is not read again.
      if (this.handler.pendingCount === 0) return;
      this.failCalls(
        frame,
        { code: "DISCONNECTED", message: `The answer from ${this.url} ended without an answer to this call; it may have run.` },
        released,
      );
      return;
    }
    if (!this.closed) {
      // The calls ran; an answer that cannot be read is not sent again (as over a socket).
      this.failCalls(
        frame,
        {
          code: "LIMIT",
          message: `The answer from ${this.url} carried a frame of ${over > max ? `more than ${max}` : over} bytes, more than this client's limits.maxMessageBytes allows: the call ran, but its answer could not be read, and it is not sent again. Raise that limit or return less.`,
        },
        released,
      );
    }
  }

  /**
   * The request was refused or never sent: each call it carried fails with that error — but a
   * resend (Retry flag) went out on an earlier request too, which may have run it: it fails
   * `DISCONNECTED` (it may have run), never "nothing was sent". Unless the object's release of
   * what the request passed by reference came back (`released`: it ends every request it read
   * with one), those functions and objects are given back here as the object would have:
   * nothing holds them, and they would count against `maxExports` for the client's whole life.
   */
  private failCalls(frame: WireFrame, error: { code: string; message: string }, released = false): void {
    let calls: unknown[][] = [];
    try {
      // Our own frame, read whatever its size: the refusal may be of a frame over the defaults.
      const parsed = readFrame(frame, OWN_FRAME);
      calls = ((parsed?.body ?? []) as unknown[][]).filter((call) => (call[0] as number) > 0);
    } catch {
      // our own frame: always readable
    }
    if (calls.length === 0) return;
    const code = isRpcErrorCode(error.code) ? error.code : "PROTOCOL";
    const replies = calls.map((call) =>
      ((call[3] as number | undefined) ?? 0) & CallFlags.Retry
        ? [
            call[0],
            ReplyStatus.Failed,
            "DISCONNECTED",
            `The call was sent again after an earlier request got no answer, and that request may have run it; this one failed: ${error.message}`,
          ]
        : [call[0], ReplyStatus.Failed, code, error.message],
    );
    this.deliver(`\u001eR${JSON.stringify(replies)}`);
    if (!released) {
      const held = exportsIn(calls);
      if (held.size > 0) this.deliver(`\u001eX${JSON.stringify([...held])}`);
    }
  }

  private deliver(data: IncomingData): void {
    if (!this.closed) this.handler.onMessage(data);
  }

  close(code = 1000, reason = ""): void {
    this.finish(code, reason);
  }

  private finish(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    // Their answers would be ignored (their calls are resent or failed): a request left hanging
    // would keep a Node process alive after the client is disposed.
    for (const controller of this.inFlight) controller.abort();
    this.handler.onClose(code, reason);
  }
}

/**
 * Why the object (or something before it) refused a request: the typed `{"error": {"code",
 * "message"}}` body dorpc answers with, or `typed: false` and the start of whatever text came.
 */
async function refusalOf(response: Response): Promise<{ typed: boolean; code: string; message: string }> {
  let text = "";
  try {
    // Only its start is shown, and dorpc's typed refusals are short.
    const bytes = await readLimited(response.body, REFUSAL_BYTES);
    text = bytes === undefined ? "(a body of more than 64 KiB)" : new TextDecoder().decode(bytes).trim();
  } catch {
    // nothing readable
  }
  if ((response.headers.get("Content-Type") ?? "").includes("application/json")) {
    try {
      const { code, message } = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error ?? {};
      if (typeof code === "string" && typeof message === "string")
        return { typed: true, code, message: `${message} (HTTP ${response.status})` };
    } catch {
      // not dorpc's
    }
  }
  const shown = text === "" ? "" : ` (${text.length > 200 ? `${text.slice(0, 200)}…` : text})`;
  return { typed: false, code: "CONNECT_FAILED", message: `refused the request: HTTP ${response.status}${shown}` };
}

const PROBE_TIMEOUT_MS = 3_000;
/** How much of a refusal's body is read. */
const REFUSAL_BYTES = 64 * 1024;

/** Limits for reading back a frame this client wrote: none it could exceed. */
const OWN_FRAME = { ...DEFAULT_LIMITS, maxMessageBytes: Number.MAX_SAFE_INTEGER, maxBlobs: Number.MAX_SAFE_INTEGER };

/**
 * Whether a request that failed in a web page was refused by the browser's CORS check, as a
 * message, else `undefined` (not in a page, same origin, or a lost network: resend). The POST is
 * preflighted (its Content-Type and headers are not "simple"), and a refused preflight means it
 * was never sent. Three GETs to the same URL ask (the object answers a GET with 426 and runs
 * nothing): one the browser lets through whatever CORS says (`no-cors`: does the server answer
 * at all?), one carrying the POST's headers, so preflighted the same way (does CORS let the POST
 * through now?), and a plain one (does CORS allow this page's origin at all?).
 */
async function corsRefusal(url: string, fetchImpl: FetchLike, headers: Headers): Promise<string | undefined> {
  const page = (globalThis as { location?: { origin?: string } }).location?.origin;
  const target = new URL(url).origin;
  if (typeof page !== "string" || page === "null" || page === target) return undefined;
  const probe = (mode: "cors" | "no-cors", probeHeaders?: Headers) =>
    fetchImpl(url, { mode, headers: probeHeaders, credentials: "omit", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) } as RequestInit).then(
      (response) => (void response.body?.cancel().catch(() => undefined), true),
      () => false,
    );
  const [reachable, preflighted, readable] = await Promise.all([probe("no-cors"), probe("cors", headers), probe("cors")]);
  if (!reachable || preflighted) return undefined;
  const needed = `cors: { origins: ["${page}"], headers: ["Content-Type", "X-Dorpc-Session", "X-Dorpc-Resending"] } (plus every header httpTransport({ headers }) adds)`;
  return readable
    ? `The browser refused to send the request from ${page} to ${url}: CORS allows this origin, but the preflight refused the request's headers. routeDORequest needs ${needed}. Nothing was sent.`
    : `The browser refused to send the request from ${page} to ${url}: the server does not allow this origin (CORS). routeDORequest needs ${needed}. Nothing was sent.`;
}

/** Error codes of a request that provably never reached a server (Node's fetch puts them on `cause`). */
const UNREACHED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/** The code of a fetch failure that means nothing was sent, else `undefined` (browsers never tell). */
function neverSent(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === "string" && UNREACHED.has(e.code)) return e.code;
  }
  return undefined;
}

/** The references (EXPORT records) the calls of one of this client's frames carry: id → count. */
function exportsIn(calls: readonly unknown[][]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const call of calls) {
    const chain = call[1];
    if (!Array.isArray(chain)) continue;
    for (const step of chain) {
      // A step's arguments as a record table: `[ValueTag.Records, table]`.
      if (!Array.isArray(step) || step[0] !== ValueTag.Records || !Array.isArray(step[1])) continue;
      for (const record of step[1] as unknown[]) {
        if (!Array.isArray(record) || record[0] !== RefRecord.Export || !Array.isArray(record[1])) continue;
        const id = record[1][0] as number;
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
  }
  return counts;
}
