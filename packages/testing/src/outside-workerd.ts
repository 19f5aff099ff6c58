/**
 * What `@dorpc/testing` resolves to outside workerd (the `default` export condition): importing
 * it throws at once with an explanation, instead of a loader error about the `cloudflare:test`
 * scheme. The Workers Vitest pool resolves the `workerd` condition and never loads this file.
 */
import { TestingError } from "./errors.js";

throw new TestingError(
  "RUNTIME",
  "@dorpc/testing runs only inside the Workers Vitest pool (@cloudflare/vitest-plugin), where cloudflare:test exists. " +
    "Add cloudflareTest() to the plugins of the Vitest project that imports it; see the package README.",
);
