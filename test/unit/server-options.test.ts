/** Edge values of resolveServerOptions (packages/rpc/src/dispatcher.ts): topics' shape, bounds. */
import { describe, expect, it } from "vitest";
import { resolveServerOptions, type RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";

const bad = (options: unknown) => {
  let error: unknown;
  try {
    resolveServerOptions(options as RpcServerOptions);
  } catch (e) {
    error = e;
  }
  return error as { code?: string; message?: string } | undefined;
};

describe("topics", () => {
  it("an array of names is refused, not taken as topics named 0, 1, …", () => {
    expect(bad({ topics: ["chat", "news"] })?.code).toBe("BAD_OPTION");
  });
  it("a topic whose options are not an object is refused", () => {
    expect(bad({ topics: { chat: 5 } })?.code).toBe("BAD_OPTION");
  });
  it("an unknown key in a topic's options (a typo) is refused like exactlyOnce's", () => {
    expect(bad({ topics: { chat: { kep: 10 } } })?.code).toBe("BAD_OPTION");
  });
});

describe("keys", () => {
  it("an unknown top-level option (a typo) is refused, naming it and the known ones", () => {
    const error = bad({ prefx: "/rpc" });
    expect(error?.code).toBe("BAD_OPTION");
    expect(error?.message).toMatch(/^Unknown option server options\.prefx; known: exposeErrorStack, limits, access, prefix,/);
  });
  it("every documented option is known", () => {
    expect(
      bad({
        exposeErrorStack: false,
        limits: {},
        access: {},
        prefix: "/rpc",
        ordering: "concurrent",
        identify: () => undefined,
        hibernation: true,
        callTimeout: 1_000,
        topics: {},
        exactlyOnce: true,
        requireSchemas: false,
      }),
    ).toBeUndefined();
  });
});

describe("other options (passing: regression checks of edge values)", () => {
  it("fractional callTimeout", () => {
    expect(bad({ callTimeout: 0.5 })).toBeUndefined();
  });
  it("callTimeout NaN, -1, Infinity, 2**31, string refused with BAD_OPTION", () => {
    for (const v of [NaN, -1, Infinity, 2 ** 31, "10"]) expect(bad({ callTimeout: v })?.code).toBe("BAD_OPTION");
  });
  it("exactlyOnce edges", () => {
    for (const v of [
      { window: 15 },
      { window: 16.5 },
      { maxAge: 999 },
      { flushAfter: 60_001 },
      { flushAfter: -1 },
      { maxResultBytes: -1 },
      { window: NaN },
      { window: "16" },
    ])
      expect(bad({ exactlyOnce: v })?.code).toBe("BAD_OPTION");
    for (const v of [{ window: 16 }, { maxAge: 1000 }, { flushAfter: 0 }, { flushAfter: 60_000 }, { maxResultBytes: 0 }])
      expect(bad({ exactlyOnce: v })).toBeUndefined();
  });
  it("topic keep/maxAge edges", () => {
    for (const v of [{ keep: 0 }, { keep: 1.5 }, { maxAge: -1 }, { maxAge: NaN }, { maxAge: Infinity }, { keep: "5" }])
      expect(bad({ topics: { t: v } })?.code).toBe("BAD_OPTION");
  });
  it("prefix edges", () => {
    for (const v of ["", "/", "x", "/a/", 5]) expect(bad({ prefix: v })?.code).toBe("BAD_OPTION");
  });
});
