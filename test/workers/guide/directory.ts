import { RpcDurableObject, RpcTarget, type RpcStub } from "@dorpc/rpc/server";
import type { Env } from "./index";

export interface User {
  id: string;
  name: string;
  email: string;
}

export class Users extends RpcTarget {
  constructor(private readonly storage: DurableObjectStorage) {
    super();
  }

  get(id: string): User {
    const user = this.storage.kv.get<User>(`user:${id}`);
    if (!user) throw new RangeError(`no user ${id}`);
    return user;
  }

  put(user: User): void {
    this.storage.kv.put(`user:${user.id}`, user);
  }
}

export class Directory extends RpcDurableObject<Env> {
  get users(): Users {
    return new Users(this.ctx.storage);
  }

  greet(user: User): string {
    return `Hello, ${user.name}`;
  }

  async importUsers(list: User[], onProgress: RpcStub<(done: number, total: number) => void>): Promise<number> {
    for (const [i, user] of list.entries()) {
      this.users.put(user);
      await onProgress(i + 1, list.length); // calls the client's function and waits for it
    }
    return list.length;
  }
}
