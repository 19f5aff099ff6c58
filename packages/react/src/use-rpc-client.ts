/**
 * `useRpcClient`: one dorpc client per component, created on first render, closed when the
 * component unmounts.
 *
 * Invariants:
 *  - Rendering never opens a socket: a client connects on its first call, so a client React
 *    creates during a render it then throws away (StrictMode's double render, an interrupted
 *    concurrent render) holds nothing and needs no cleanup.
 *  - Closing waits one microtask after the effect's cleanup, and a remount of the same component
 *    in that time keeps the client. StrictMode unmounts and remounts every new component in one
 *    synchronous step, so under StrictMode the same client lives on: one socket, never closed
 *    under a child that already holds it.
 *  - A component never returns a closed client: if its client was closed while it was
 *    unmounted for longer (e.g. a hidden `<Activity>`), closing it asks the component for a render
 *    with a new one (React renders a hidden component's updates before it shows it again), and a
 *    remount that still finds it closed creates a new one and renders again with it.
 */
import { createRpcClient, RpcError, rpcConnection, type RpcClient, type RpcClientOptions, type TransportFactory } from "@dorpc/rpc";
import { useEffect, useState, useSyncExternalStore } from "react";

interface Slot<T> {
  /** What identifies the client: binding, instance and the options that make up its URL. */
  readonly key: string;
  readonly client: RpcClient<T>;
  /** A new client for the same key, with the arguments this one was made with. */
  readonly reopen: () => Slot<T>;
  /** Set by an effect cleanup; cleared by a remount that comes before the close runs. */
  closing: boolean;
  closed: boolean;
  /**
   * Set by the component's effect: once the client is closed, asks the component for a render
   * with a new one (a no-op once it unmounted for good).
   */
  onClosed?: () => void;
}

/**
 * The parts of the options that decide where the client connects. A change of any of them means
 * another endpoint, so a new client; the other options are read when the client is created.
 */
function slotKey(binding: string, instance: string, options: RpcClientOptions<never> | undefined): string {
  // Only strings go in as they are: anything else (a bigint, a cycle) is named by its type, and
  // createRpcClient refuses it with its own BAD_OPTION rather than JSON.stringify with a TypeError.
  const text = (value: unknown) => (typeof value === "string" || value === undefined ? value : `(${typeof value})`);
  const given = typeof options === "object" && options !== null ? options : undefined;
  const query =
    typeof given?.query === "object" && given.query !== null
      ? Object.entries(given.query)
          .map(([name, value]) => [name, text(value)])
          .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
      : text(given?.query);
  return JSON.stringify([text(binding), text(instance), text(given?.baseUrl), text(given?.prefix), query]);
}

/**
 * The transport of a client made while rendering on a server: none. Nothing connects during
 * server rendering (no effects run there, and a call made then has no page to answer): such a
 * call fails with `CONNECT_FAILED` saying so. It needs no `baseUrl` and no `WebSocket`.
 */
const serverRendering: TransportFactory = Object.assign(
  () => {
    throw new RpcError(
      "CONNECT_FAILED",
      "A client made during server rendering does not connect: call it from an effect or an event handler.",
    );
  },
  { connectionless: true } as const,
);

function openSlot<T>(key: string, binding: string, instance: string, options: RpcClientOptions<T> | undefined, server = false): Slot<T> {
  // On a server the options are checked as in the browser (null refused, a bad baseUrl too);
  // only the transport differs.
  const serverOptions =
    options === undefined || (typeof options === "object" && options !== null) ? { ...options, transport: serverRendering } : options;
  const client = createRpcClient<T>(binding, instance, server ? serverOptions : options);
  return { key, client, reopen: () => openSlot<T>(key, binding, instance, options), closing: false, closed: false };
}

function closeSoon(slot: Slot<unknown>): void {
  slot.closing = true;
  queueMicrotask(() => {
    if (!slot.closing) return; // remounted in the meantime (StrictMode): keep it
    slot.closed = true;
    rpcConnection(slot.client).close();
    // A component hidden by <Activity> keeps its state and mounts its effects again when shown,
    // possibly without rendering again (a memo component, a stable element): the update makes
    // React render it with a new client first, so no effect of it or its children ever gets the
    // closed one.
    slot.onClosed?.();
  });
}

/**
 * A client for the Durable Object `instance` of the namespace bound as `binding`, owned by the
 * calling component: created on the first render (it connects on its first call), the same
 * object on every later render, closed when the component unmounts. A new `binding`, `instance`,
 * `baseUrl`, `prefix` or `query` closes the old client and returns a new one; the other options
 * are read when a client is created.
 *
 * Safe under StrictMode: its simulated unmount and remount keep the same client (one socket).
 * Throws, like `createRpcClient`, when the arguments are invalid.
 *
 * ```tsx
 * function Room({ name }: { name: string }) {
 *   const counter = useRpcClient<CounterApi>("COUNTER", name);
 *   return <button onClick={() => counter.increment()}>+1</button>;
 * }
 * ```
 */
export function useRpcClient<T>(binding: string, instance: string, options?: RpcClientOptions<T>): RpcClient<T> {
  // Rendering on a server: React asks for the server snapshot (as it also does while hydrating,
  // in a page, where the client must be the real one), and there is no document.
  const server = useSyncExternalStore(noChanges, onClient, onServer) && (globalThis as { document?: unknown }).document === undefined;
  const key = slotKey(binding, instance, options) + (server ? " (server)" : "");
  const [slot, setSlot] = useState(() => openSlot<T>(key, binding, instance, options, server));
  let current = slot;
  if (slot.key !== key || slot.closed) {
    // Another endpoint, or a client closed while this component was away: replace it during
    // render (React renders again at once with the new state; the old one's cleanup closes it).
    current = openSlot<T>(key, binding, instance, options, server);
    setSlot(current);
  }
  useEffect(() => {
    if (current.closed) {
      // Closed while unmounted (e.g. a hidden Activity) and mounted again: hand out a new one.
      setSlot(current.reopen());
      return;
    }
    current.closing = false;
    const slotNow = current;
    slotNow.onClosed = () => setSlot(reopenIfClosed);
    return () => closeSoon(slotNow as Slot<unknown>);
  }, [current]);
  return current.client;
}

/**
 * The update `onClosed` asks for: a new client if the component's is closed. It holds nothing
 * (for a component that unmounted for good, React keeps the update queued until its next render).
 */
function reopenIfClosed<T>(slot: Slot<T>): Slot<T> {
  return slot.closed ? slot.reopen() : slot;
}

const noChanges = () => () => {};
const onClient = () => false;
const onServer = () => true;
