/** Bindings of the demo / bench Worker (wrangler.toml at the repo root). */
interface Env {
  /** dorpc (RpcDurableObject), reached through routeDORequest at /__rpc/COUNTER/<instance>. */
  COUNTER: DurableObjectNamespace<import("./counter.js").Counter>;
  /** dorpc with `hibernation: false`, reached at /__rpc/COUNTER_LIVE/<instance>. */
  COUNTER_LIVE: DurableObjectNamespace<import("./counter.js").CounterLive>;
  /** dorpc with `ordering: "sequential"` (the ordering scenario), reached at /__rpc/COUNTER_SEQUENTIAL/<instance>. */
  COUNTER_SEQUENTIAL: DurableObjectNamespace<import("./counter.js").CounterSequential>;
  /** dorpc without the exactly-once record (the guarantee-exactly-once baseline), at /__rpc/COUNTER_AT_MOST_ONCE/<instance>. */
  COUNTER_AT_MOST_ONCE: DurableObjectNamespace<import("./counter.js").CounterAtMostOnce>;
  /** dorpc whose echo declares a 3-field argument schema (the guarantee-schema scenario), reached at /__rpc/COUNTER_SCHEMA/<instance>. */
  COUNTER_SCHEMA: DurableObjectNamespace<import("./counter-schema.js").CounterSchema>;
  /** Agents SDK contender (an Agent with @callable methods), reached at /agents/agents-counter/<instance>. */
  AGENTS_COUNTER: DurableObjectNamespace<import("./agents-counter.js").AgentsCounter>;
  /** Cap'n Web contender, reached at /capnweb/<instance>. */
  CAPNWEB_COUNTER: DurableObjectNamespace<import("./capnweb-counter.js").CapnwebCounter>;
  /** Raw-WebSocket floor contender, reached at /floor/<instance>. */
  FLOOR_COUNTER: DurableObjectNamespace<import("./floor-counter.js").FloorCounter>;
  /** The same floor over a non-hibernatable socket (diagnostic), reached at /floor-accept/<instance>. */
  FLOOR_ACCEPT_COUNTER: DurableObjectNamespace<import("./floor-counter.js").FloorAcceptCounter>;
}
