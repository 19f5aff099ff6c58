/**
 * `RpcTarget`: the mark that makes an object's public methods callable through a chain.
 *
 * Without it, a chain can only read own data properties of plain objects and arrays that a
 * Durable Object method or getter returned; with it, `client.users.get("a")` can call `get` on
 * the object the `users` getter returned. Only members defined on the subclass's prototypes are
 * reachable (never instance fields, never `RpcTarget`'s or `Object`'s own members), under the
 * same name rules as the Durable Object itself (access.ts).
 *
 * Runtime-neutral: importable in Node for tests.
 */
export class RpcTarget {
  /** Type-level brand so the client types know this is reachable but not sendable. */
  declare readonly __dorpcRpcTarget: true;
}
