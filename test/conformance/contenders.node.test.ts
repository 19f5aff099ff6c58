/**
 * The same battery through the comparison contenders, in Node: the runtime's own
 * structuredClone, Cap'n Web's serialize/deserialize and @ungap/structured-clone (through JSON
 * text, as it would travel). Recorded for docs/conformance.md, never gated: their results are
 * theirs.
 */
import { deserialize as ungapDeserialize, serialize as ungapSerialize } from "@ungap/structured-clone";
import { deserialize as capnDeserialize, serialize as capnSerialize } from "capnweb";
import { describe, expect, it } from "vitest";
import { type Clone, runBattery } from "./battery.js";
import type { Column } from "./results.js";

const CONTENDERS: [Column, Clone][] = [
  ["native", async (value) => structuredClone(value)],
  ["capnweb", async (value) => capnDeserialize(capnSerialize(value))],
  ["ungap", async (value) => ungapDeserialize(JSON.parse(JSON.stringify(ungapSerialize(value))))],
];

describe("WPT structured-clone battery through the comparison contenders", () => {
  it.for(CONTENDERS)("runs every case through %s", async ([column, clone], { task }) => {
    const outcomes = await runBattery(clone);
    expect(Object.keys(outcomes).length).toBeGreaterThan(0);
    task.meta.conformance = { column, outcomes };
  });
});
