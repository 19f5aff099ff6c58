// docs/api.md and getting-started.md claims about the client types.
import { createRpcClient, RpcTarget } from "@dorpc/rpc";
import { RpcDurableObject } from "@dorpc/rpc/server";
import * as v from "valibot";
import type { Env } from "./guide-worker.types.js";

interface User {
  id: string;
  name: string;
  email: string;
}
class Users extends RpcTarget {
  get(_id: string): User {
    return { id: "a", name: "Ada", email: "e" };
  }
}
class Directory extends RpcDurableObject<Env> {
  get users(): Users {
    return new Users();
  }
  get config() {
    return { name: "x", limits: { max: 1 } };
  }
  get user() {
    return { name: "Ada", length: 3 };
  }
  increment(by: number) {
    return by;
  }
}
declare const baseUrl: string;
const directory = createRpcClient<Directory>("DIRECTORY", "main", { baseUrl });

// getting-started §6: "`await directory.users.get("a").name` does not compile"
// @ts-expect-error
await directory.users.get("a").name;
await (await directory.users.get("a")).name;
// api.md Types: `client.config.name` or `client.user.toString()` is a compile error
// @ts-expect-error
await directory.config.name;
// @ts-expect-error
directory.user.toString();

// api.md validate: keys checked against T's methods (a typo or a getter does not compile)
const args = v.strictTuple([v.number()]);
createRpcClient<Directory>("DIRECTORY", "main", { baseUrl, validate: { increment: args } });
// @ts-expect-error: typo
createRpcClient<Directory>("DIRECTORY", "main", { baseUrl, validate: { incremnt: args } });
// @ts-expect-error: a getter
createRpcClient<Directory>("DIRECTORY", "main", { baseUrl, validate: { config: args } });
createRpcClient<Directory>("DIRECTORY", "main", { baseUrl, validate: { "users.get": v.strictTuple([v.string()]) } });
