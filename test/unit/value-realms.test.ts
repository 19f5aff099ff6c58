// Value fidelity cases found by differential fuzzing (dorpc's round trip against Node's
// structuredClone, docs/api.md "encode, encodeAsync, decode" and docs/protocol.md "What does not
// travel"): errors of another realm, own __proto__ on errors, symbol-keyed getters on either path.
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { createRpcClient, decode, encode, RpcError } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";

const realm = vm.runInContext("globalThis", vm.createContext({})) as typeof globalThis;

class Echo {
  echo(value: unknown) {
    return value;
  }
}

async function echoed(value: unknown): Promise<unknown> {
  using client = createRpcClient<Echo>("ECHO", "value-realms", { transport: pairWith(new Echo()).factory });
  return await client.echo(value as never);
}

function outcome(f: () => unknown): string {
  try {
    f();
    return "sent";
  } catch (error) {
    return error instanceof RpcError ? `refused ${error.code}` : `threw ${String(error)}`;
  }
}

describe("value fidelity: realms, errors, symbol getters", () => {
  // api.md "Thrown values": "An AggregateError keeps its errors"; protocol.md: values of another
  // realm (node:vm, an iframe) are told by what they are (encoder.ts sends a vm error as an error).
  // An AggregateError made in another realm keeps its errors too, over encode/decode and a call.
  it("an AggregateError of another realm keeps its errors (encode/decode and a call)", async () => {
    const make = () => new realm.AggregateError([new realm.Error("one"), 2], "many");
    const decoded = decode(encode(make(), { errorStack: false })) as AggregateError;
    expect(decoded).toBeInstanceOf(AggregateError);
    expect(decoded.errors).toHaveLength(2);
    expect((decoded.errors[0] as Error).message).toBe("one");
    const result = (await echoed(make())) as AggregateError;
    expect(result.errors).toHaveLength(2);
  });

  // The refusal side: whatever cannot travel in those errors is refused (ENCODE), never dropped.
  it("a function inside the errors of an AggregateError of another realm is refused with ENCODE, not dropped", () => {
    const error = new realm.AggregateError([() => 1], "holds a function");
    expect(outcome(() => encode(error))).toBe("refused ENCODE");
  });

  // protocol.md "What does not travel": "an own `__proto__` key … | ENCODE when sending; DECODE
  // when receiving (JSON fast path, object records and error properties alike)"; api.md: "own
  // `__proto__` keys are refused with ENCODE" — an Error's own enumerable one too.
  it("an Error with an own enumerable __proto__ property is refused with ENCODE", () => {
    const error = new Error("x");
    Object.defineProperty(error, "__proto__", { value: 1, enumerable: true, configurable: true, writable: true });
    expect(outcome(() => encode(error, { errorStack: false }))).toBe("refused ENCODE");
  });

  // docs: "symbol-keyed properties | dropped". The JSON snapshot's copy (`{ ...v }`) runs
  // enumerable symbol-keyed getters, the record writer (Object.keys) does not: a throwing one must
  // not make the outcome depend on where the object sits ([obj, date] and [date, obj] both send).
  it("an object with a throwing symbol-keyed getter is treated the same wherever it sits in the value", () => {
    const withSymbolGetter = () => ({
      a: 1,
      get [Symbol("lazy")](): never {
        throw new Error("boom");
      },
    });
    const first = outcome(() => encode([withSymbolGetter(), new Date(0)]));
    const second = outcome(() => encode([new Date(0), withSymbolGetter()]));
    expect({ first, second }).toEqual({ first: second, second });
    expect(outcome(() => structuredClone([withSymbolGetter(), new Date(0)]))).toBe("sent");
    expect(first).toBe("sent");
  });

  // The JSON path's copy may still run an enumerable symbol-keyed getter once (documented in
  // api.md); what it returns or throws is ignored, as on the record path.
  it("a symbol-keyed getter's value is dropped on both paths", () => {
    const obj = {
      a: 1,
      get [Symbol("counted")]() {
        return 1;
      },
    };
    expect(decode(encode(new Map([["k", obj]])))).toEqual(new Map([["k", { a: 1 }]]));
    expect(decode(encode({ k: obj }))).toEqual({ k: { a: 1 } });
  });

  // api.md: "An AggregateError keeps its errors", whatever they hold: one whose `errors` was
  // replaced by a Set arrives with that Set, never silently with [].
  it("an AggregateError whose errors is not an array keeps it (or is refused), never arrives with []", () => {
    const error = new AggregateError([], "m");
    (error as { errors: unknown }).errors = new Set([new Error("in a set")]);
    const decoded = decode(encode(error, { errorStack: false })) as { errors: unknown };
    expect(decoded.errors).toBeInstanceOf(Set);
  });
});
