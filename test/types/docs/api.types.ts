// docs/api.md snippets, each in the context it implies.
import {
  createRpcClient,
  decode,
  DEFAULT_LIMITS,
  encode,
  httpTransport,
  RpcError,
  rpcConnection,
  rpcDispose,
  RpcTarget,
  subscribe,
  withCallOptions,
  type RpcTransport,
  type TransportHandler,
  type WebSocketConstructor,
  type CallOptions,
  type ConnectionState,
  type RpcStub,
} from "@dorpc/rpc";
import {
  IDENTITY_HEADER as SERVER_IDENTITY_HEADER,
  readIdentityHeader,
  RPC_SOCKET_TAG,
  RpcDurableObject,
  rpcCaller,
  rpcClients,
  rpcMethod,
  rpcPublish,
  rpcSocketInfo,
  handleRpcClose,
  handleRpcMessage,
  handleRpcRequest,
  watchRpcStorage,
  withRpc,
  type RpcServerOptions,
} from "@dorpc/rpc/server";
import {
  DEFAULT_PREFIX,
  IDENTITY_HEADER,
  MAX_INSTANCE_LENGTH,
  resolveBinding,
  routeDORequest,
  RoutingError,
  withIdentity,
  type RouteOptions,
} from "@dorpc/routing";
import { DurableObject } from "cloudflare:workers";
import * as v from "valibot";
declare const WebSocket: new (url: string) => unknown; // stands in for `import { WebSocket } from "ws"` (needs @types/ws)
import type { Counter } from "./guide-worker.types.js";
import type { Env } from "./guide-worker.types.js";
import type { CounterApi } from "./browser-api.types.js";

declare const baseUrl: string;
declare const token: string;
declare const controller: AbortController;

class Users extends RpcTarget {
  get(id: string) {
    return { id };
  }
}
class Room extends RpcTarget {
  join(_name: string) {}
}
class Lobby extends RpcDurableObject<Env> {
  openRoom(_name: string): Room {
    return new Room();
  }
}
interface Move {
  player: string;
  move: string;
}
class Table extends RpcDurableObject<Env, unknown, { moves: Move }> {}

class Server extends RpcDurableObject<Env> {
  get config() {
    return { limits: { max: 1 } };
  }
  slowJob() {
    return 1;
  }
  get users() {
    return new Users();
  }
}

{
  const counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl: "https://app.example.com" });
  void counter;
}
{
  // Client-side validation
  const incrementArgs = v.strictTuple([v.pipe(v.number(), v.integer(), v.minValue(1))]);
  const counter = createRpcClient<Counter>("COUNTER", "room-1", { validate: { increment: incrementArgs } });
  await counter.increment(0); // rejects with INVALID_ARGUMENT before anything is sent
}
{
  const client = createRpcClient<Server>("S", "x", { baseUrl });
  const max = await client.config.limits.max; // getter, then data properties: one round trip
  void max;
  const counter = client;
  await withCallOptions(counter.slowJob(), { timeout: 120_000, signal: controller.signal });
}
{
  const counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl });
  await rpcConnection(counter).waitForOpen();
}
{
  const counter = createRpcClient<CounterApi>("COUNTER", "room-1");
  void (() => rpcConnection(counter).close()); // window.addEventListener("pagehide", …) in the doc (DOM)
}
{
  const lobby = createRpcClient<Lobby>("LOBBY", "l", { baseUrl });
  const room = await lobby.openRoom("a");
  await room.join("ada");
  rpcDispose(room);
}
{
  const lobby = createRpcClient<Lobby>("LOBBY", "l", { baseUrl });
  using room = await lobby.openRoom("a"); // RpcStub<Room>
  await room.join("ada");
  const stub: RpcStub<Room> = room;
  void stub;
}
{
  const table = createRpcClient<Table>("TABLE", "t", { baseUrl });
  const render = (_seq: number, _move: Move) => undefined;
  const reload = () => undefined;
  const savedCursor = 3;
  using moves = subscribe(table, "moves", (move, { seq }) => render(seq, move), { since: savedCursor, onResync: reload });
  await moves.ready;
}
{
  const retryLater = () => undefined;
  const showErrors = (_issues: readonly { message: string }[]) => undefined;
  const error: unknown = null;
  if (RpcError.is(error) && error.code === "TIMEOUT") retryLater();
  try {
    retryLater();
  } catch (error) {
    if (RpcError.is(error) && error.code === "INVALID_ARGUMENT") showErrors(error.issues ?? []);
  }
}
{
  const restored = decode(encode(new Map([["a", 1n]]))); // Map { "a" => 1n }
  void restored;
  createRpcClient<Counter>("COUNTER", "a", { baseUrl, limits: { maxMessageBytes: 1024 * 1024 } });
  void DEFAULT_LIMITS.maxExports;
}
{
  class MyTransport implements RpcTransport {
    constructor(readonly handler: TransportHandler) {}
    async open() {}
    send(_frame: string | Uint8Array) {}
    close() {}
  }
  createRpcClient<Counter>("COUNTER", "a", { transport: (handler) => new MyTransport(handler) });
}
{
  await using counter = createRpcClient<Counter>("COUNTER", "nightly", {
    baseUrl: "https://my-app.example.com",
    transport: httpTransport({ headers: { Authorization: `Bearer ${token}` } }),
  });
  await counter.increment();
}
createRpcClient<Counter>("COUNTER", "a", { baseUrl, WebSocket: WebSocket as unknown as WebSocketConstructor });
const opts: CallOptions = { idempotent: true, retries: 3 };
const st: ConnectionState = "reconnecting";
void opts;
void st;

// Server side
export class ApiCounter extends RpcDurableObject<Env> {
  static rpcOptions = { exposeErrorStack: true } satisfies RpcServerOptions;
  increment(by = 1) {
    /* … */
    return by;
  }
}
declare function loadUser(id: string): { id: string; name: string };
export class SchemaCounter extends RpcDurableObject<Env> {
  increment = rpcMethod(v.strictTuple([v.pipe(v.number(), v.integer(), v.minValue(1))]), (by) => {
    // by: number, inferred from the schema's output
    void by;
  });
  profile = rpcMethod({ args: v.strictTuple([v.string()]), result: v.object({ id: v.string(), name: v.string() }) }, (id) => loadUser(id));
}
export class Previewer extends RpcDurableObject<Env> {
  async preview(url: string): Promise<string> {
    const { identity, signal } = rpcCaller()!; // before the first await
    if (identity === undefined) throw new Error("sign in first");
    const response = await fetch(url, { signal }); // stops when the client gives up
    return response.text();
  }
  info() {
    console.log(rpcSocketInfo(rpcCaller()!.socket)); // { exports: 1, imports: 0, running: 1, waiting: 0 }
  }
  away() {
    for (const ws of this.ctx.getWebSockets(RPC_SOCKET_TAG)) ws.close(1001, "going away");
  }
}
export class IdentityObject extends RpcDurableObject<Env> {
  static rpcOptions = { identify: readIdentityHeader } satisfies RpcServerOptions;
}
interface RoomClient {
  typing(name: string): void;
}
class RoomBase extends DurableObject<Env> {
  type(name: string, text: string) {
    // inside a RoomBase method:
    rpcClients<RoomClient>(this, { except: rpcCaller() }).typing(name);
    const seq = rpcPublish(this, "messages", { from: name, text });
    return seq;
  }
}
export const RoomW = withRpc(RoomBase, {
  topics: { messages: { keep: 500 } },
});
const options: RpcServerOptions = {};
export class Hand extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    watchRpcStorage(this, options);
  }
  async fetch(request: Request) {
    const response = (await handleRpcRequest(request, this, options)) ?? new Response("Not found", { status: 404 });
    return response;
  }
  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer) {
    if (await handleRpcMessage(ws, message, this, options)) return;
  }
  async webSocketClose(ws: WebSocket, code: number, reason: string) {
    handleRpcClose(ws, code, reason);
    ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
  }
}

// Routing
declare const isAllowed: (request: Request, instance: string) => boolean;
declare const authenticate: (request: Request) => Promise<string>;
export async function route(request: Request, env: Env) {
  const routeOptions: RouteOptions<Env> = {
    onBeforeConnect: (request, ctx) => (isAllowed(request, ctx.instance) ? undefined : new Response("Forbidden", { status: 403 })),
  };
  const withId: RouteOptions<Env> = {
    onBeforeConnect: async (request) => withIdentity(request, { user: await authenticate(request) }),
  };
  void withId;
  try {
    await routeDORequest(request, env, routeOptions);
  } catch (e) {
    if (RoutingError.is(e)) console.error(e.code);
  }
  resolveBinding(env, "my-counter"); // "MY_COUNTER"
  const name = "x";
  if (name.length > MAX_INSTANCE_LENGTH) throw new Error("name too long");
  const id: "X-Dorpc-Identity" = IDENTITY_HEADER;
  const sid: "X-Dorpc-Identity" = SERVER_IDENTITY_HEADER;
  const p: "/__rpc" = DEFAULT_PREFIX;
  void [id, sid, p];
  return (await routeDORequest(request, env)) ?? new Response("Not found", { status: 404 });
}
