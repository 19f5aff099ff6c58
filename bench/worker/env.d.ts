/** Bindings of the demo / bench Worker (wrangler.toml at the repo root). */
interface Env {
  /** dorpc (RpcDurableObject), reached through routeDORequest at /__rpc/COUNTER/<instance>. */
  COUNTER: DurableObjectNamespace<import("./counter.js").Counter>;
  /** dorpc with `hibernation: false`, reached at /__rpc/COUNTER_LIVE/<instance>. */
  COUNTER_LIVE: DurableObjectNamespace<import("./counter.js").CounterLive>;
  /** Cap'n Web contender, reached at /capnweb/<instance>. */
  CAPNWEB_COUNTER: DurableObjectNamespace<import("./capnweb-counter.js").CapnwebCounter>;
  /** Raw-WebSocket floor contender, reached at /floor/<instance>. */
  FLOOR_COUNTER: DurableObjectNamespace<import("./floor-counter.js").FloorCounter>;
  /** The same floor over a non-hibernatable socket (diagnostic), reached at /floor-accept/<instance>. */
  FLOOR_ACCEPT_COUNTER: DurableObjectNamespace<import("./floor-counter.js").FloorAcceptCounter>;
}
