/**
 * The `testharness.js` functions the vendored battery (wpt/) calls, written for dorpc (not
 * copied from WPT), with the same pass/fail meaning: `assert_equals` compares with SameValue
 * (NaN equals NaN, -0 differs from 0), `promise_rejects_dom` wants a DOMException of that name,
 * `promise_rejects_exactly` the very same value. Also WPT's `createBuffer` (common/sab.js),
 * `self` where the runtime has none (Node), and the global array the battery fills.
 *
 * Imported for its side effects, before the battery, by battery.ts.
 */

class AssertionFailure extends Error {
  override name = "AssertionFailure";
}

function fail(what: string, description?: string): never {
  throw new AssertionFailure(description ? `${description}: ${what}` : what);
}

function show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Object.is(value, -0)) return "-0";
  if (typeof value === "object" && value !== null) return Object.prototype.toString.call(value);
  return String(value);
}

const harness = {
  assert_equals(actual: unknown, expected: unknown, description?: string): void {
    if (!Object.is(actual, expected)) fail(`expected ${show(expected)} but got ${show(actual)}`, description);
  },
  assert_not_equals(actual: unknown, expected: unknown, description?: string): void {
    if (Object.is(actual, expected)) fail(`got disallowed value ${show(actual)}`, description);
  },
  assert_true(actual: unknown, description?: string): void {
    if (actual !== true) fail(`expected true but got ${show(actual)}`, description);
  },
  assert_false(actual: unknown, description?: string): void {
    if (actual !== false) fail(`expected false but got ${show(actual)}`, description);
  },
  assert_unreached(description?: string): never {
    return fail("reached unreachable code", description);
  },
  async promise_rejects_exactly(_t: unknown, expected: unknown, promise: Promise<unknown>): Promise<void> {
    try {
      await promise;
    } catch (error) {
      if (error !== expected) fail(`rejected with ${show(error)} (${String((error as Error)?.message)}), not the expected value`);
      return;
    }
    fail("expected a rejection, but the promise fulfilled");
  },
  async promise_rejects_dom(_t: unknown, name: string, promise: Promise<unknown>): Promise<void> {
    try {
      await promise;
    } catch (error) {
      if (!(error instanceof DOMException) || error.name !== name) {
        fail(`expected a DOMException named ${name}, got ${show(error)}: ${String((error as Error)?.message)}`);
      }
      return;
    }
    fail("expected a rejection, but the promise fulfilled");
  },
  createBuffer(type: string, length: number, options?: { maxByteLength?: number }): ArrayBufferLike {
    const Buffer = (globalThis as unknown as Record<string, new (length: number, options?: object) => ArrayBufferLike>)[type];
    if (!Buffer) fail(`this runtime has no ${type}`);
    return new Buffer(length, options);
  },
};

Object.assign(globalThis, harness, { structuredCloneBatteryOfTests: undefined });
if (!("self" in globalThis)) Object.assign(globalThis, { self: globalThis });

export { AssertionFailure };
