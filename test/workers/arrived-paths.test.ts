/**
 * A path on a result that has arrived, through a stub nested in plain data, against a real object
 * in workerd. docs/api.md: "A path on a result that has arrived is read locally for plain data;
 * calls on a stub in it go to that stub." The same path made before the result left is read by
 * the object (pipelined). Both must reach the same RpcTarget; before, the path on the arrived
 * result did not go on through the stub, so `r.x.title()` failed where the pipelined one
 * answered. The wire-level cases (a hostile object's frames) are in
 * test/unit/hostile-object-paths.test.ts.
 */
import { RpcError } from "@dorpc/rpc";
import { createTestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Box, HttpE2e } from "./http-objects.js";

/** HTTP_E2E is bound in wrangler.toml but not in the generated Env type. */
const namespace = () => (env as unknown as { HTTP_E2E: DurableObjectNamespace<HttpE2e> }).HTTP_E2E;

/** `["ok", value]` or `["err", code]`. */
function outcome(p: PromiseLike<unknown>): Promise<[string, unknown]> {
  return Promise.resolve(p).then(
    (v) => ["ok", v],
    (e: unknown) => ["err", RpcError.is(e) ? e.code : String(e)],
  );
}

type Chain = { title(): Promise<string> } & Record<string, unknown>;

/** `value` (a chain of the client) followed along `path`. */
function follow(value: unknown, path: readonly string[]): Chain {
  let at = value as Record<string, unknown>;
  for (const name of path) at = at[name] as Record<string, unknown>;
  return at as Chain;
}

const shapes: [string, (box: Box) => unknown, string[]][] = [
  ["{ x: box }", (box) => ({ x: box }), ["x"]],
  ["{ a: { b: box } }", (box) => ({ a: { b: box } }), ["a", "b"]],
  ["[0, box]", (box) => [0, box], ["1"]],
];

describe("a stub nested in a result that already arrived", () => {
  for (const [name, shape, path] of shapes) {
    it(`${name}: a method call along the path reaches the object's Box, as the same path pipelined does`, async () => {
      using client = createTestClient<HttpE2e>(namespace(), uniqueName("arrived-paths"));
      const box = await client.box("t");
      // Pipelined (the same turn): the object reads the path and calls title on what it finds.
      const pipelined = await outcome(follow(client.echo(shape(box as never)), path).title());
      // After the result arrived: the path is read locally, and the call goes to the stub.
      const late = client.echo(shape(box as never));
      await late;
      const arrived = await outcome(follow(late, path).title());
      expect({ pipelined, arrived }, "the path on the arrived result stopped at the stub").toEqual({
        pipelined: ["ok", "t"],
        arrived: ["ok", "t"],
      });
    });
  }

  it("the stub read along the path of an arrived result is the Box's stub: calls on it reach the Box", async () => {
    using client = createTestClient<HttpE2e>(namespace(), uniqueName("arrived-stub"));
    const box = await client.box("u");
    const late = client.echo({ x: box });
    await late;
    const x = (await follow(late, ["x"])) as unknown as Box;
    expect(x).toBe(box);
    expect(await x.title()).toBe("u");
  });
});
