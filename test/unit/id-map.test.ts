/** IdMap, the calls-by-id table of both ends (packages/rpc/src/id-map.ts), against a Map. */
import { describe, expect, it } from "vitest";
import { IdMap } from "../../packages/rpc/src/id-map.js";

/** A small deterministic generator (mulberry32), so a failing sequence can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Where `ids` answers differently from `model`, or `undefined`. */
function difference(ids: IdMap<string>, model: Map<number, string>, probe: number[]): string | undefined {
  if (ids.size !== model.size) return `size ${ids.size}, Map ${model.size}`;
  const values = JSON.stringify([...ids.values()]);
  if (values !== JSON.stringify([...model.values()])) return `values ${values}, Map ${JSON.stringify([...model.values()])}`;
  for (const key of probe) {
    if (ids.has(key) !== model.has(key)) return `has(${key})`;
    if (ids.get(key) !== model.get(key)) return `get(${key})`;
  }
  return undefined;
}

describe("IdMap", () => {
  it("holds one entry, then several in insertion order, then one again", () => {
    const ids = new IdMap<string>();
    expect(ids.size).toBe(0);
    expect(ids.get(1)).toBeUndefined();
    expect(ids.delete(1)).toBe(false);
    ids.set(1, "a");
    expect([ids.size, ids.get(1), ids.has(1), ids.has(2)]).toEqual([1, "a", true, false]);
    ids.set(1, "a2"); // the same key: replaced, still one
    expect([...ids.values()]).toEqual(["a2"]);
    ids.set(2, "b");
    ids.set(3, "c");
    expect([...ids.values()]).toEqual(["a2", "b", "c"]);
    expect(ids.delete(2)).toBe(true);
    expect(ids.delete(2)).toBe(false);
    expect([...ids.values()]).toEqual(["a2", "c"]);
    expect(ids.delete(1)).toBe(true);
    expect(ids.delete(3)).toBe(true);
    expect(ids.size).toBe(0);
    ids.set(4, "d"); // alone again (the map is kept, empty)
    ids.set(5, "e");
    expect([...ids.values()]).toEqual(["d", "e"]);
    ids.clear();
    expect([ids.size, [...ids.values()], ids.has(4)]).toEqual([0, [], false]);
  });

  it("keeps the insertion order when the lone entry is joined by a second", () => {
    const ids = new IdMap<string>();
    ids.set(9, "first");
    ids.set(2, "second");
    expect([...ids.values()]).toEqual(["first", "second"]);
    expect(ids.get(9)).toBe("first");
  });

  it("answers as a Map does over random sequences of operations", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const next = random(seed);
      const ids = new IdMap<string>();
      const model = new Map<number, string>();
      let failure: string | undefined;
      for (let step = 0; step < 200 && !failure; step++) {
        const key = 1 + Math.floor(next() * 6);
        const roll = next();
        if (roll < 0.45) {
          ids.set(key, `v${seed}.${step}`);
          model.set(key, `v${seed}.${step}`);
        } else if (roll < 0.9) {
          if (ids.delete(key) !== model.delete(key)) failure = `delete(${key})`;
        } else if (roll < 0.95) {
          ids.clear();
          model.clear();
        }
        failure ??= difference(ids, model, [0, 1, 2, 3, 4, 5, 6, 7]);
        if (failure) failure = `seed ${seed}, step ${step}: ${failure}`;
      }
      expect(failure).toBeUndefined();
    }
  });

  it("iterates a snapshot of the lone entry: deleting it while iterating ends the walk", () => {
    const ids = new IdMap<string>();
    ids.set(1, "a");
    const seen: string[] = [];
    for (const value of ids.values()) {
      seen.push(value);
      ids.delete(1);
    }
    expect(seen).toEqual(["a"]);
    expect(ids.size).toBe(0);
  });
});
