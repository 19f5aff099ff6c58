/** The type-support table: one echo of each value type per contender, checked for structural equality, not timed. */
import { inspect } from "node:util";
import type { Contender } from "./contenders/index.js";
import { structurallyEqual } from "./equal.js";
import { PAYLOADS, TYPE_PROBES } from "./payloads.js";
import type { TypeSupport } from "./raw.js";
import { WireCounters } from "./wire.js";

function describe(value: unknown): string {
  return inspect(value, { depth: 3, breakLength: Infinity, maxArrayLength: 8, maxStringLength: 40 }).slice(0, 100);
}

export async function typeSupport(baseUrl: string, contenders: readonly Contender[]): Promise<TypeSupport[]> {
  const out: TypeSupport[] = [];
  const probes = [
    ...TYPE_PROBES.map((p) => ({ id: p.id, label: p.label, json: p.json, bytes: false, make: p.make })),
    ...PAYLOADS.filter((p) => p.id === "rich" || p.id === "cyclic").map((p) => ({
      id: p.id,
      label: p.label,
      json: p.json,
      bytes: p.bytes,
      make: p.make,
    })),
  ];
  for (const contender of contenders) {
    if (contender.pending) continue;
    const { conn } = await contender.connect(baseUrl, `types-${contender.name}-${Date.now()}`, new WireCounters());
    try {
      for (const probe of probes) {
        const entry = { contender: contender.name, probe: probe.id, label: probe.label };
        const supported = contender.supports({ ...probe, size: "" });
        if (supported !== true) {
          out.push({ ...entry, result: "unsupported", detail: supported });
          continue;
        }
        const value = probe.make();
        try {
          const back = await conn.echo(value);
          out.push(
            structurallyEqual(back, value)
              ? { ...entry, result: "ok", detail: "" }
              : { ...entry, result: "wrong", detail: `came back as ${describe(back)}` },
          );
        } catch (error) {
          out.push({ ...entry, result: "error", detail: String((error as Error)?.message ?? error).slice(0, 200) });
        }
      }
    } finally {
      await conn.close();
    }
  }
  return out;
}
