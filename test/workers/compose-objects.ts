/**
 * `Composer`: the Durable Object behind the workerd tests of calls that compose (compose.test.ts):
 * RpcTargets returned by reference, callbacks passed by clients, pipelined calls.
 */
import { RpcDurableObject, RpcTarget, type RpcStub, rpcCaller, rpcSocketInfo } from "@dorpc/rpc/server";

export class Room extends RpcTarget {
  readonly members: string[] = [];
  constructor(readonly title: string) {
    super();
  }
  join(id: string): number {
    this.members.push(id);
    return this.members.length;
  }
  get size(): number {
    return this.members.length;
  }
}

type Listener = RpcStub<(event: string) => number>;

export class Composer extends RpcDurableObject<Env> {
  private readonly rooms = new Map<string, Room>();
  private listener: Listener | undefined;
  /** Messages that reached webSocketMessage: how many frames the client sent. */
  messages = 0;

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void | Promise<void> {
    this.messages++;
    return super.webSocketMessage(ws, message);
  }

  openRoom(title: string): Room {
    let room = this.rooms.get(title);
    if (!room) {
      room = new Room(title);
      this.rooms.set(title, room);
    }
    return room;
  }
  user(id: string): { id: string; name: string } {
    return { id, name: `user ${id}` };
  }
  greet(user: { id: string; name: string }): string {
    return `hello ${user.name}`;
  }
  frames(): number {
    return this.messages;
  }
  /** Calls `cb` `times` times, awaiting each answer; returns their sum. */
  async callBack(cb: (n: number) => number, times: number): Promise<number> {
    let sum = 0;
    for (let i = 0; i < times; i++) sum += await cb(i);
    return sum;
  }
  listen(listener: Listener): void {
    this.listener = listener.dup();
  }
  async emit(event: string): Promise<number> {
    if (!this.listener) throw new Error("nobody listens");
    return this.listener(event);
  }
  unlisten(): void {
    this.listener?.[Symbol.dispose]();
    this.listener = undefined;
  }
  /** What dorpc holds for the calling socket. */
  info(): ReturnType<typeof rpcSocketInfo> {
    return rpcSocketInfo(rpcCaller()!.socket);
  }
}
