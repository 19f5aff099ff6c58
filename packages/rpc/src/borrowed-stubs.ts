/**
 * The stubs a call borrows, and when they go back. The stubs made for a call's arguments (the
 * caller's functions and objects, callee-references.ts) are the call's while it runs, as a native
 * call's arguments are: when it ends their holders end with it, but for one the method kept with
 * `dup()`.
 *
 * A later call of the same frame that pipelines on its result may pass such a stub on (a method
 * that returns an argument): the stub stays until that call has built its arguments and taken a
 * holder of its own (pipelined-copy.ts), as a round trip's new reference would be its. So a call
 * counts the calls of its frame that pipeline on it (`dependents`, which also keep its outcome:
 * `referenced`), and one that ends while some have not used its result yet lets its stubs go with
 * the last of them (`releaseLater`) — which may start in a later event (call-turns.ts, sequential
 * ordering).
 *
 * Invariants: a call's borrowed stubs are released once, after its reply was written (a stub it
 * returned goes back in the reply before its holder ends), and after every call that pipelines
 * on it has used it.
 *
 * Internal module.
 */
import type { Incoming } from "./incoming-call.js";
import { releaseHolder } from "./stub-release.js";

/** A call of the frame pipelines on `deps`: each keeps its outcome, and its borrowed stubs, until that call has used it. */
export function dependOn(deps: Incoming[]): void {
  for (const dep of deps) {
    dep.referenced = true;
    dep.dependents = (dep.dependents ?? 0) + 1;
  }
}

/** One call that pipelines on `dep` has used it (built its arguments, or settled without running). */
export function dependentDone(dep: Incoming): void {
  dep.dependents = (dep.dependents ?? 1) - 1;
  if (dep.dependents === 0 && dep.releaseLater) {
    dep.releaseLater = false;
    releaseBorrowed(dep);
  }
}

/** `call`, which borrowed stubs, has ended and been answered: they go now, or with its last dependent. */
export function endBorrowing(call: Incoming): void {
  if ((call.dependents ?? 0) > 0) call.releaseLater = true;
  else releaseBorrowed(call);
}

/** Ends the holders of the stubs `call` received as arguments (not kept with `dup()`). */
function releaseBorrowed(call: Incoming): void {
  for (const holder of call.borrowed!) {
    if (!holder.disposed) holder.callEnded = true;
    releaseHolder(holder);
  }
}
