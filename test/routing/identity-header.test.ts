/**
 * withIdentity with a short identity holding text beyond ASCII: sent as JSON escapes (a header
 * value is bytes; the raw JSON threw a TypeError in Node and warned in workerd), so the object
 * parses back the same identity.
 */
import { describe, expect, it } from "vitest";
import { IDENTITY_HEADER, withIdentity } from "@dorpc/routing";

describe("withIdentity with non-ASCII identities", () => {
  it.each([[{ user: "山田" }], [{ user: "a\u2028b" }], ["🙂"]])("carries %j to the object intact", (identity) => {
    const request = withIdentity(new Request("https://w/__rpc/COUNTER/a"), identity);
    expect(JSON.parse(request.headers.get(IDENTITY_HEADER)!)).toEqual(identity);
  });
});
