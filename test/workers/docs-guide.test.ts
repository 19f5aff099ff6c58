/**
 * What docs/getting-started.md shows happening, run in workerd:
 *  - §12: each `curl` of the guide, sent to the Counter of §3 on a fresh instance, gets the
 *    answer the guide prints under it, byte for byte (the commands and answers are read from
 *    the guide).
 *  - §2: a class on the key-value backend "cannot declare topics": one that does is told so,
 *    with what to change, when it publishes.
 */
import { handleRpcRequest, RpcDurableObject, rpcPublish } from "@dorpc/rpc/server";
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import guide from "../../docs/getting-started.md?raw";
import { uniqueName } from "./helpers.js";

/** The Counter of the guide's §3 (`src/index.ts`), as it is there. */
class Counter extends RpcDurableObject<Cloudflare.Env> {
  increment(by = 1): number {
    if (!Number.isInteger(by)) throw new RangeError(`by must be an integer, got ${by}`);
    const n = (this.ctx.storage.kv.get<number>("n") ?? 0) + by;
    this.ctx.storage.kv.put("n", n);
    return n;
  }

  getValue(): number {
    return this.ctx.storage.kv.get<number>("n") ?? 0;
  }
}

interface Curl {
  command: string;
  url: string;
  method: string;
  headers: [string, string][];
  body: string;
  /** The answer the guide prints after the command (`# …`). */
  answer: string | undefined;
}

/** The `curl` commands of the guide's shell blocks, each with the answer printed after it. */
function guideCurls(): Curl[] {
  const curls: Curl[] = [];
  for (const [, block] of guide.matchAll(/^```sh\n([\s\S]*?)\n```$/gm)) {
    for (const line of block!.replace(/\\\n\s*/g, " ").split("\n")) {
      if (line.startsWith("curl ")) {
        curls.push({
          command: line,
          url: /\s(https?:\/\/\S+)/.exec(line)![1]!,
          method: /\s-X\s+(\w+)/.exec(line)?.[1] ?? "GET",
          headers: [...line.matchAll(/\s-H\s+'([^:']+):\s*([^']*)'/g)].map((m) => [m[1]!, m[2]!]),
          body: /\s-d\s+'([^']*)'/.exec(line)?.[1] ?? "",
          answer: undefined,
        });
      } else if (line.startsWith("# ") && curls.length > 0 && curls.at(-1)!.answer === undefined) {
        curls.at(-1)!.answer = line.slice(2);
      }
    }
  }
  return curls;
}

describe("getting-started.md §12: the JSON form with curl", () => {
  const curls = guideCurls();

  it("the guide shows curl commands, each with its answer", () => {
    expect(curls.length).toBeGreaterThanOrEqual(2);
    for (const curl of curls) expect(curl.answer, curl.command).toBeDefined();
  });

  it("each command, in order on a fresh instance of §3's Counter, gets the answer the guide prints", async () => {
    const answers = await runInDurableObject(env.COUNTER.getByName(uniqueName("guide-curl")), async (_instance, state) => {
      const counter = new Counter(state, env);
      const texts: string[] = [];
      for (const curl of curls) {
        const request = new Request(curl.url, { method: curl.method, headers: curl.headers, body: curl.body });
        const response = await counter.fetch(request);
        texts.push(`${response.status} ${await response.text()}`);
      }
      return texts;
    });
    expect(answers).toEqual(curls.map((curl) => `200 ${curl.answer}`));
  });
});

describe("getting-started.md §2: a class on the key-value backend cannot declare topics", () => {
  it("publishing to a topic it declares throws BAD_OPTION saying topics need a SQLite-backed class (new_sqlite_classes)", async () => {
    const options = { exactlyOnce: false, topics: { news: {} } };
    const outcome = await runInDurableObject(env.KV_COUNTER.getByName(uniqueName("kv-topics")), async (instance) => {
      // Serving a request with these options makes them the object's (what rpcPublish reads).
      const request = new Request("http://x/__rpc/KV_COUNTER/a", {
        method: "POST",
        body: JSON.stringify({ method: "increment" }),
        headers: { "Content-Type": "application/json" },
      });
      const served = (await handleRpcRequest(request, instance, options))!.status;
      try {
        return { served, published: `returned ${rpcPublish(instance, "news", 1)}` };
      } catch (error) {
        return { served, published: `${(error as { code?: string }).code}: ${(error as Error).message}` };
      }
    });
    expect(outcome.served).toBe(200);
    expect(outcome.published).toMatch(/^BAD_OPTION: .*SQLite-backed.*new_sqlite_classes/);
  });
});
