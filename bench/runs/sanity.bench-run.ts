/**
 * Sanity check (`npm run sanity --workspace=bench`): every contender connects, answers every
 * method, and echoes what it claims to support. No timing. Prints the support matrix.
 */
import { describe, expect, inject, it } from "vitest";
import { MAIN, ROUTING } from "../src/contenders/index.js";
import { structurallyEqual } from "../src/equal.js";
import { PAYLOADS, TYPE_PROBES } from "../src/payloads.js";
import { WireCounters } from "../src/wire.js";

const baseUrl = inject("baseUrl");

describe("sanity", () => {
  const contenders = [...new Set([...MAIN, ...ROUTING])];
  for (const contender of contenders) {
    it(`${contender.name}: counter methods`, async () => {
      const counters = new WireCounters();
      const { conn, handshakeNs, totalNs } = await contender.connect(baseUrl, `sanity-${Date.now()}`, counters);
      try {
        expect(await conn.getValue()).toBe(0);
        expect(await conn.increment()).toBe(1);
        expect(await conn.increment()).toBe(2);
        expect(await conn.getValue()).toBe(2);
        expect(await conn.noop()).toBeUndefined();
        const many = await Promise.all(Array.from({ length: 64 }, () => conn.increment()));
        expect(new Set(many).size).toBe(64);
        process.stderr.write(
          `${contender.name}: handshake ${(handshakeNs / 1e6).toFixed(2)} ms, connect+first call ${(totalNs / 1e6).toFixed(2)} ms, wire ${JSON.stringify(counters.snapshot())}\n`,
        );
      } finally {
        await conn.close();
      }
    });
  }
  for (const contender of MAIN) {
    it(`${contender.name}: payloads and types`, async () => {
      const counters = new WireCounters();
      const { conn } = await contender.connect(baseUrl, `sanity-echo-${Date.now()}`, counters);
      const lines: string[] = [];
      try {
        for (const payload of [...PAYLOADS, ...TYPE_PROBES.map((p) => ({ ...p, bytes: false }))]) {
          const supported = "supports" in contender ? contender.supports(payload as never) : true;
          if (supported !== true) {
            lines.push(`  ${payload.id}: unsupported by design (${supported})`);
            continue;
          }
          const value = payload.make();
          const before = counters.snapshot();
          try {
            const back = value === undefined ? await conn.noop() : await conn.echo(value);
            const ok = structurallyEqual(back, value);
            const after = counters.snapshot();
            lines.push(
              `  ${payload.id}: ${ok ? "ok" : "WRONG RESULT"} sent ${after.sentBytes - before.sentBytes} B/${after.sentFrames - before.sentFrames} frames, recv ${after.recvBytes - before.recvBytes} B/${after.recvFrames - before.recvFrames} frames`,
            );
          } catch (error) {
            lines.push(`  ${payload.id}: ERROR ${String((error as Error)?.message ?? error).slice(0, 160)}`);
          }
        }
      } finally {
        await conn.close();
      }
      process.stderr.write(`${contender.name}:\n${lines.join("\n")}\n`);
    });
  }
});
