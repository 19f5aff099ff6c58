/**
 * Calls by id, for the tables a connection fills and empties one call at a time: the client's
 * calls waiting for a reply (call-settling.ts) and the object's calls running (callee.ts).
 *
 * A `Map` is the wrong shape for that rhythm in V8: a `delete` that leaves its table under a
 * quarter full shrinks it, and the next `set` grows it again, so a map that goes 0 → 1 → 0
 * entries allocates a new table (about 150 bytes, through two calls into the runtime) for every
 * call a connection makes one after another — what a client that awaits each call does. An
 * `IdMap` keeps one entry in fields of its own and uses a `Map` only while it holds two or more;
 * once made, that `Map` is kept for the next time.
 *
 * Invariant: while the lone entry is held (`lone`), `many` is empty or not made. `values()`
 * yields in insertion order, as a `Map`; an entry added while it is being iterated is not
 * promised to be visited (every caller iterates a copy, or does not add).
 *
 * Internal module.
 */
export class IdMap<V> {
  private lone = false;
  private loneKey = 0;
  private loneValue: V | undefined = undefined;
  private many: Map<number, V> | undefined;

  get size(): number {
    return this.lone ? 1 : this.many === undefined ? 0 : this.many.size;
  }

  get(key: number): V | undefined {
    if (this.lone) return this.loneKey === key ? this.loneValue : undefined;
    return this.many?.get(key);
  }

  has(key: number): boolean {
    if (this.lone) return this.loneKey === key;
    return this.many?.has(key) === true;
  }

  set(key: number, value: V): this {
    if (this.lone) {
      if (this.loneKey === key) {
        this.loneValue = value;
        return this;
      }
      // A second entry: both go into the map, the first one first.
      const many = (this.many ??= new Map());
      many.set(this.loneKey, this.loneValue as V);
      many.set(key, value);
      this.lone = false;
      this.loneValue = undefined;
      return this;
    }
    if (this.many !== undefined && this.many.size > 0) this.many.set(key, value);
    else {
      this.lone = true;
      this.loneKey = key;
      this.loneValue = value;
    }
    return this;
  }

  delete(key: number): boolean {
    if (this.lone) {
      if (this.loneKey !== key) return false;
      this.lone = false;
      this.loneValue = undefined;
      return true;
    }
    return this.many?.delete(key) === true;
  }

  clear(): void {
    this.lone = false;
    this.loneValue = undefined;
    if (this.many !== undefined && this.many.size > 0) this.many.clear();
  }

  values(): IterableIterator<V> {
    if (this.lone) return [this.loneValue as V].values();
    return (this.many ?? EMPTY).values();
  }
}

const EMPTY: ReadonlyMap<number, never> = new Map<number, never>();
