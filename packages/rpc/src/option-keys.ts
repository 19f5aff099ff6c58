/**
 * Options objects refuse keys they do not know: a misspelt option (`{ prefx: "/rpc" }`,
 * `{ timout: 5_000 }`) would otherwise be ignored without a word, and the default used.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";

/** Throws `BAD_OPTION` naming the first own key of `options` not in `known` (`what`: how the options are named). */
export function checkOptionKeys(options: object, known: ReadonlySet<string>, what: string): void {
  for (const key of Object.keys(options)) {
    if (!known.has(key)) {
      throw new RpcError("BAD_OPTION", `Unknown option ${what}.${key}; known: ${[...known].join(", ")}.`);
    }
  }
}
