/**
 * In workerd: a pipelined argument naming the caller's own function, echoed by an earlier call of
 * the same frame, with an async call between the two (Composer, concurrent ordering). The async
 * call makes the dependent start in a later event (call-turns.ts), after the echo call ended;
 * `[echo(fn), tick(), callBack(echo result, 3)]` failed RELEASED, as the echo call's borrowed
 * stub of `fn` was released at its end. It is now kept until the dependent has built its
 * arguments (borrowed-stubs.ts). The unit tier covers both orderings and the failure
 * paths (test/unit/pipelining-across-turns.test.ts).
 *
 * `echo` and `tick` are given to the one instance under test, on a prototype of its own between
 * it and its class: the shared Composer class stays as it is.
 */
import { createTestClient } from "@dorpc/testing";
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";

type Api = {
  echo<T>(v: T): T;
  tick(): Promise<number>;
  callBack(cb: (n: number) => number, times: number): Promise<number>;
  info(): { imports: number; exports: number } | undefined;
};

/** A Composer that also has `echo(v)` and `tick()` (async: a 5 ms timer). */
async function composer(label: string): Promise<string> {
  const name = uniqueName(label);
  await runInDurableObject(env.COMPOSER.getByName(name), (instance: object) => {
    Object.setPrototypeOf(
      instance,
      Object.create(Object.getPrototypeOf(instance) as object, {
        echo: { value: (v: unknown) => v },
        tick: { value: async () => (await new Promise((r) => setTimeout(r, 5)), 1) },
      }),
    );
  });
  return name;
}

const outcome = (p: PromiseLike<unknown>) =>
  Promise.resolve(p).then(
    (value) => ({ value }),
    (e: { code?: string; message?: string }) => ({ code: e.code, message: e.message }),
  );

describe("a pipelined client function with an async call between the echo and the dependent (concurrent ordering)", {
  timeout: 20_000,
}, () => {
  it("without the async call: [echo(fn), callBack(echo result, 3)] in one frame calls fn three times", async () => {
    const name = await composer("turns-pipe-direct");
    using client = createTestClient<Api>(env.COMPOSER as never, name);
    const echoed = client.echo((n: number) => n + 1);
    expect(await outcome(client.callBack(echoed as never, 3))).toEqual({ value: 6 });
  });

  it("[echo(fn), tick(), callBack(echo result, 3)] in one frame: fn is called three times; the object holds none of the client's stubs after", async () => {
    const name = await composer("turns-pipe");
    using client = createTestClient<Api>(env.COMPOSER as never, name);
    const echoed = client.echo((n: number) => n + 1);
    const t = outcome(client.tick());
    const r = outcome(client.callBack(echoed as never, 3));
    expect({ t: await t, r: await r }).toEqual({ t: { value: 1 }, r: { value: 6 } });
    await vi.waitFor(async () => expect((await client.info())?.imports).toBe(0));
  });
});
