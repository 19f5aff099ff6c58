/**
 * Origin lists (`allowedOrigins`, `cors.origins`) refuse, when the options are validated, the
 * entries that could never match a browser's Origin header, with a message saying what to write
 * instead. A page's Origin is always its own (http: or https:), never the ws:/wss: URL it opens,
 * so such an entry silently refused every upgrade (403). Origins of other schemes, which browsers
 * do send (chrome-extension://…, capacitor://…), cannot be listed and need a predicate, which
 * then admits them. `cors: { origins: ["*"] }` points to `origins: "*"`.
 */
import { describe, expect, it } from "vitest";
import { type RouteOptions, RoutingError, routeDORequest } from "@dorpc/routing";

function fakeEnv() {
  const seen: Request[] = [];
  const stub = { fetch: async (request: Request) => (seen.push(request), new Response("ok")) };
  const ns = { idFromName: () => ({}), idFromString: () => ({}), get: () => stub, getByName: () => stub };
  return { seen, env: { COUNTER: ns } };
}

/** The error routeDORequest throws synchronously for `options` (it validates them at once). */
function refusal(options: RouteOptions): RoutingError {
  try {
    void routeDORequest(new Request("https://worker.example/elsewhere"), fakeEnv().env, options);
  } catch (error) {
    expect(error).toBeInstanceOf(RoutingError);
    return error as RoutingError;
  }
  throw new Error(`expected ${JSON.stringify(options)} to be refused`);
}

const lists = [
  ["allowedOrigins", (origins: string[]): RouteOptions => ({ allowedOrigins: origins })],
  ["cors.origins", (origins: string[]): RouteOptions => ({ cors: { origins } })],
] as const;

describe("origin list entries refused at validation", () => {
  describe.each(lists)("%s", (name, optionsWith) => {
    it.each([
      ["wss://app.example", "https://app.example"],
      ["ws://app.example", "http://app.example"],
      ["wss://App.Example:8443", "https://app.example:8443"],
      ["WSS://app.example", "https://app.example"],
    ])("a socket URL %s is BAD_OPTION naming the page origin %s", (entry, page) => {
      const error = refusal(optionsWith(["https://other.example", entry]));
      expect(error.code).toBe("BAD_OPTION");
      expect(error.message).toContain(`${name}[1] ${JSON.stringify(entry)}`);
      expect(error.message).toContain("never a ws: or wss: one");
      expect(error.message).toContain(`use ${JSON.stringify(page)}`);
    });

    it.each([
      "chrome-extension://abcdefghijklmnopabcdefghijklmnop",
      "moz-extension://0b6f4b4a-7c1e-4f0e-9a7d-1f2e3d4c5b6a",
      "capacitor://localhost",
    ])("an origin of another scheme (%s) is BAD_OPTION pointing to a predicate for it", (entry) => {
      const error = refusal(optionsWith([entry]));
      expect(error.code).toBe("BAD_OPTION");
      expect(error.message).toContain(`${name}[0] ${JSON.stringify(entry)}`);
      expect(error.message).toContain(`pass a function, e.g. (origin) => origin === ${JSON.stringify(entry)}`);
    });

    it("an ftp: origin is BAD_OPTION: only http: and https: origins can be listed", () => {
      const error = refusal(optionsWith(["ftp://files.example"]));
      expect(error.code).toBe("BAD_OPTION");
      expect(error.message).toMatch(/only http: and https: origins can be listed; pass a function/);
    });
  });

  it('cors.origins ["*"] is BAD_OPTION pointing to origins: "*" outside a list', () => {
    const error = refusal({ cors: { origins: ["*"] } });
    expect(error.code).toBe("BAD_OPTION");
    expect(error.message).toContain('cors.origins: "*" itself, not in a list, to allow any origin');
  });

  it('allowedOrigins ["*"] is BAD_OPTION without that pointer (allowedOrigins cannot be "*")', () => {
    const error = refusal({ allowedOrigins: ["*"] });
    expect(error.code).toBe("BAD_OPTION");
    expect(error.message).toContain("wildcards are not supported, pass a function instead");
    expect(error.message).not.toContain('allowedOrigins: "*"');
  });
});

describe("a predicate admits an origin of another scheme", () => {
  const EXTENSION = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";

  it("allowedOrigins: an upgrade from the extension is forwarded, one from elsewhere is 403", async () => {
    const { env, seen } = fakeEnv();
    const options: RouteOptions = { allowedOrigins: (origin) => origin === EXTENSION };
    const upgrade = (origin: string) =>
      new Request("https://worker.example/__rpc/COUNTER/a", { headers: { Upgrade: "websocket", Origin: origin } });
    expect((await routeDORequest(upgrade(EXTENSION), env, options))?.status).toBe(200);
    expect((await routeDORequest(upgrade("https://evil.example"), env, options))?.status).toBe(403);
    expect(seen).toHaveLength(1);
  });

  it("cors.origins: the extension's request gets Access-Control-Allow-Origin with its origin", async () => {
    const { env } = fakeEnv();
    const response = await routeDORequest(new Request("https://worker.example/__rpc/COUNTER/a", { headers: { Origin: EXTENSION } }), env, {
      cors: { origins: (origin) => origin === EXTENSION },
    });
    expect(response?.headers.get("Access-Control-Allow-Origin")).toBe(EXTENSION);
  });
});
