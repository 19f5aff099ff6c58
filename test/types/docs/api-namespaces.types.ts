// docs/api.md \`isDurableObjectNamespace\` snippet, in the Worker of getting-started section 3, whose
// \`env\` is typed by the \`interface Env\` the guide declares (as \`wrangler types\` also generates):
// an interface has no index signature, so the snippet must not index \`env\` with a string.
import { isDurableObjectNamespace } from "@dorpc/routing";
import type { Env } from "./guide-worker.types.js";

export function list(env: Env): string[] {
  const namespaces = Object.entries(env)
    .filter(([, value]) => isDurableObjectNamespace(value))
    .map(([key]) => key);
  return namespaces;
}
