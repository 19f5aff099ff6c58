/**
 * Seeded mixes of many calls made in one turn — pipelining on earlier results, typed arrays, Blob
 * and File arguments read in a later task, strings up to 40,000 characters, lazy reads, calls on
 * pipelined stubs — where the client's frames are cut by count, size, bytes and Blob reads
 * (frame-cuts.test.ts has the single cases). Every call gets its own result, never `PROTOCOL`;
 * with an exactly-once session and cuts of the connection, every call that is not idempotent
 * also runs exactly once.
 */
import { describe, expect, it } from "vitest";
import { withCallOptions } from "../../packages/rpc/src/client.js";
import { createRpcClient, RpcTarget } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { resendSetup, wait } from "../support/resend-harness.js";

class SlowBlob extends Blob {
  override async arrayBuffer(): Promise<ArrayBuffer> {
    await wait(15);
    return super.arrayBuffer();
  }
}

class Thing extends RpcTarget {
  constructor(readonly n: number) {
    super();
  }
  method(x: unknown): unknown {
    return [this.n, x];
  }
  get value(): number {
    return this.n;
  }
}

class Api {
  get config(): { a: number } {
    return { a: 1 };
  }
  echo(v: unknown): unknown {
    return v;
  }
  getValue(): number {
    return 7;
  }
  makeThing(n: number): Thing {
    return new Thing(n);
  }
  size(b: Blob | Uint8Array): number {
    return b instanceof Blob ? b.size : b.byteLength;
  }
}

/** What the mixes call: loose argument types, since they pass pending results and lazy paths. */
interface Loose {
  config: unknown;
  echo(v: unknown): Promise<unknown>;
  getValue(): Promise<number>;
  makeThing(n: number): { method(x: unknown): Promise<unknown>; value: Promise<number> };
  size(b: unknown): Promise<number>;
}

const settleAll = (ps: unknown[]) => Promise.all(ps.map((p) => Promise.resolve(p).catch((x: unknown) => x)));
const show = (x: unknown) =>
  x instanceof Error ? `${(x as { code?: string }).code}: ${x.message}` : (JSON.stringify(x)?.slice(0, 80) ?? String(x));
const sizeOf = (pair: unknown) => {
  const [value, bytes] = pair as [unknown, Blob | Uint8Array];
  return [value, bytes instanceof Blob ? bytes.size : bytes.length];
};

/** A deterministic generator of numbers in [0, 1). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x7fffffff;
  };
}

/** `n` calls of a seeded mix made in one turn; what each must give. */
function oneTurn(rpc: Loose, n: number, seed: number): { calls: unknown[]; expected: unknown[] } {
  const rnd = random(seed);
  const calls: unknown[] = [];
  const expected: unknown[] = [];
  const results: { call: unknown; value: unknown }[] = [];
  const pick = () => results[Math.floor(rnd() * results.length)]!;
  for (let i = 0; i < n; i++) {
    const kind = Math.floor(rnd() * 11);
    if (kind === 0 || results.length === 0) {
      calls.push(rpc.getValue());
      expected.push(7);
    } else if (kind === 1) {
      const d = pick();
      calls.push(rpc.echo(d.call));
      expected.push(d.value);
    } else if (kind === 2) {
      const length = Math.floor(rnd() * 3) * 1000 + Math.floor(rnd() * 30_000);
      calls.push(rpc.echo(["s", length, "x".repeat(length)]));
      expected.push(["s", length, "x".repeat(length)]);
    } else if (kind === 3) {
      const length = Math.floor(rnd() * 70_000);
      calls.push(rpc.size(new Uint8Array(length)));
      expected.push(length);
    } else if (kind === 4) {
      const length = Math.floor(rnd() * 70_000);
      calls.push(rpc.size(new SlowBlob([new Uint8Array(length)])));
      expected.push(length);
    } else if (kind === 5) {
      const length = Math.floor(rnd() * 1000);
      calls.push(rpc.size(new File([new Uint8Array(length)], "f.bin")));
      expected.push(length);
    } else if (kind === 6) {
      calls.push(rpc.echo(rpc.config));
      expected.push({ a: 1 });
    } else if (kind === 7) {
      const d = pick();
      calls.push(rpc.echo([d.call, rpc.config]));
      expected.push([d.value, { a: 1 }]);
    } else if (kind === 8) {
      calls.push(rpc.makeThing(i).method(i));
      expected.push([i, i]);
    } else if (kind === 9) {
      const d = pick();
      const length = Math.floor(rnd() * 40_000);
      calls.push(rpc.echo([d.call, new SlowBlob([new Uint8Array(length)])]).then(sizeOf));
      expected.push([d.value, length]);
    } else {
      const d = pick();
      calls.push(rpc.echo([d.call, new Uint8Array(5)]).then(sizeOf));
      expected.push([d.value, 5]);
    }
    if (kind === 0 || kind === 1 || kind === 6) results.push({ call: calls[calls.length - 1], value: expected[expected.length - 1] });
  }
  return { calls, expected };
}

function mismatches(got: unknown[], expected: unknown[]): string[][] {
  return got
    .map((x, i) => [String(i), show(x), show(expected[i])])
    .filter(([, x, e]) => x !== e)
    .slice(0, 5);
}

describe("many calls in one turn", () => {
  for (const [n, seed] of [
    [250, 1],
    [300, 2],
    [600, 3],
    [400, 4],
    [256, 5],
    [520, 6],
  ] as const) {
    it(`a mix of ${n} calls (seed ${seed})`, async () => {
      const paired = pairWith(new Api());
      const client = createRpcClient<Api>("API", "frame-cuts-mixed", { transport: paired.factory, heartbeat: false, timeout: 5000 });
      using _ = client;
      expect(await client.getValue()).toBe(7);
      const { calls, expected } = oneTurn(client as unknown as Loose, n, seed);
      expect(mismatches(await settleAll(calls), expected)).toEqual([]);
    }, 30_000);
  }
});

/** `n` calls of a seeded mix for a session with resends; what each must give, and how many runs of each method. */
function withResends(rpc: Loose, n: number, seed: number, idempotentEvery: number) {
  const rnd = random(seed);
  const calls: unknown[] = [];
  const expected: unknown[] = [];
  const results: { call: unknown; value: unknown }[] = [];
  const pick = () => results[Math.floor(rnd() * results.length)]!;
  let echoes = 0;
  let gets = 0;
  for (let i = 0; i < n; i++) {
    const kind = Math.floor(rnd() * 8);
    let call: Promise<unknown>;
    if (kind === 0 || results.length === 0) {
      call = rpc.getValue();
      gets++;
      expected.push(7);
    } else {
      echoes++;
      if (kind === 1) {
        const d = pick();
        call = rpc.echo(d.call);
        expected.push(d.value);
      } else if (kind === 2) {
        const length = Math.floor(rnd() * 20_000);
        call = rpc.echo(["s", length, "x".repeat(length)]);
        expected.push(["s", length, "x".repeat(length)]);
      } else if (kind === 3) {
        const length = Math.floor(rnd() * 3000);
        call = rpc.echo(new SlowBlob([new Uint8Array(length)])).then((b) => (b as Blob).size);
        expected.push(length);
      } else if (kind === 4) {
        call = rpc.echo(rpc.config);
        expected.push({ a: 1 });
      } else if (kind === 5) {
        const d = pick();
        call = rpc.echo([d.call, rpc.config]);
        expected.push([d.value, { a: 1 }]);
      } else if (kind === 6) {
        const d = pick();
        call = rpc.echo([d.call, new Uint8Array(4)]).then(sizeOf);
        expected.push([d.value, 4]);
      } else {
        const d = pick();
        const length = Math.floor(rnd() * 2000);
        call = rpc.echo([d.call, new SlowBlob([new Uint8Array(length)])]).then(sizeOf);
        expected.push([d.value, length]);
      }
    }
    const reusable = kind === 0 || kind === 1 || kind === 4;
    if (idempotentEvery && i % idempotentEvery === 0 && reusable) void withCallOptions(call, { idempotent: true }).catch(() => {});
    calls.push(call);
    if (reusable) results.push({ call, value: expected[expected.length - 1] });
  }
  return { calls, expected, echoes, gets };
}

describe("many calls in one turn, resent after cuts (exactly once)", () => {
  for (const [n, seed, cuts, idempotentEvery] of [
    [60, 11, 1, 0],
    [120, 12, 2, 0],
    [300, 13, 1, 0],
    [300, 14, 3, 5],
    [600, 15, 2, 3],
    [260, 16, 4, 0],
  ] as const) {
    it(`${n} calls (seed ${seed}), ${cuts} cut${cuts > 1 ? "s" : ""}${idempotentEvery ? `, every ${idempotentEvery}th idempotent` : ""}`, async () => {
      const { rpc, target } = resendSetup(`frame-cuts-resend-${seed}`, 10_000);
      using _ = rpc;
      expect(await rpc.fast()).toBe("fast");
      target.cuts = cuts;
      const { calls, expected, echoes, gets } = withResends(rpc as unknown as Loose, n, seed, idempotentEvery);
      expect(mismatches(await settleAll(calls), expected)).toEqual([]);
      if (!idempotentEvery) {
        // Nothing ran twice (idempotent calls may, by design).
        expect(target.runs.get("echo") ?? 0).toBe(echoes);
        expect(target.runs.get("getValue") ?? 0).toBe(gets);
      }
    }, 30_000);
  }
});
