/**
 * How a stub's holders end, and what follows (the stub proxies themselves are made in proxy.ts).
 * Each holder of an import (the first stub for it, or a `dup()`) ends once: disposed by hand
 * (`[Symbol.dispose]`, `using`, `rpcDispose`), by dorpc when the call that passed it ended, or
 * when it was garbage-collected, where the runtime can tell (`FinalizationRegistry`). The last
 * holder of an import releases it, so the other end may let its object go; after that a call on
 * the stub is refused `RELEASED` before anything is sent (`stubEnded`). The keys `using` looks up
 * are here too; the client answers them as well, to close.
 *
 * Invariants: `releaseHolder` is idempotent, and each holder counts once in its entry's `holders`
 * (makeStub adds it, `releaseHolder` takes it off): the import is released when the last one ends.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";
import type { StubHolder } from "./proxy.js";

/**
 * Where `Symbol.dispose` / `Symbol.asyncDispose` do not exist (Safari), esbuild's lowered `using`
 * looks up `Symbol.for("Symbol.dispose")` instead: answered too, so `await using` works there.
 */
export const DISPOSE_FALLBACK = Symbol.for("Symbol.dispose");
const ASYNC_DISPOSE_FALLBACK = Symbol.for("Symbol.asyncDispose");

export function isDispose(key: symbol): boolean {
  return key === Symbol.dispose || key === DISPOSE_FALLBACK;
}

export function isAsyncDispose(key: symbol): boolean {
  return key === Symbol.asyncDispose || key === ASYNC_DISPOSE_FALLBACK;
}

/** Releases a stub when it becomes unreachable, where the runtime can tell. */
export const finalizer =
  typeof FinalizationRegistry === "function" ? new FinalizationRegistry<StubHolder>((holder) => releaseHolder(holder)) : undefined;

export function disposerOf(holder: StubHolder): () => void {
  holder.disposer ??= () => releaseHolder(holder);
  return holder.disposer;
}

/** Ends one holder; the last one releases the import. Idempotent. */
export function releaseHolder(holder: StubHolder): void {
  if (holder.disposed) return;
  holder.disposed = true;
  finalizer?.unregister(holder);
  if (--holder.entry.holders === 0) {
    holder.imports.release(holder.entry, {
      code: "RELEASED",
      message: `This stub was disposed (or garbage-collected); the object it referred to on ${holder.maker.label} was released.`,
    });
  }
}

/** Why a call on this stub cannot be made, or `undefined` if it can. */
export function stubEnded(holder: StubHolder): RpcError | undefined {
  if (holder.disposed) {
    return new RpcError(
      "RELEASED",
      holder.callEnded
        ? `This stub was released when the call that passed it ended (dup() it during that call to keep it); the call was not sent to ${holder.maker.label}.`
        : `This stub was disposed; the call was not sent to ${holder.maker.label}.`,
    );
  }
  const ended = holder.entry.ended;
  return ended ? new RpcError(ended.code, ended.message) : undefined;
}
