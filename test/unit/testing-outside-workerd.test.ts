/**
 * @dorpc/testing outside workerd: the package's `default` export condition is an entry that
 * throws a TestingError explaining where it runs, instead of a loader error about the
 * `cloudflare:test` scheme.
 */
import { describe, expect, it } from "vitest";

describe("@dorpc/testing in Node", () => {
  it("importing it throws a TestingError naming the Workers Vitest pool", async () => {
    let error: unknown;
    try {
      await import("@dorpc/testing");
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe("TestingError");
    expect((error as { code?: unknown }).code).toBe("RUNTIME");
    expect((error as Error).message).toMatch(/only inside the Workers Vitest pool \(@cloudflare\/vitest-plugin\)/);
  });
});
