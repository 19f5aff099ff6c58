/**
 * Sanity check (`npm run sanity --workspace=bench`): every contender connects, answers every
 * method, echoes what it claims to support, and runs the features it claims (pipelining,
 * callbacks, fan-out, HTTP). No timing. Prints the support matrix.
 */
import { describe, expect, inject, it } from "vitest";
import { ALL, SETS } from "../src/contenders/index.js";
import { callbackSum } from "../src/contenders/types.js";
import { structurallyEqual } from "../src/equal.js";
import { PAYLOADS, TYPE_PROBES } from "../src/payloads.js";
import { WireCounters } from "../src/wire.js";

const baseUrl = inject("baseUrl");

describe("sanity", () => {
  for (const contender of ALL.filter((c) => !c.pending)) {
    it(`${contender.name}: counter methods`, async () => {
      const counters = new WireCounters();
      const { conn, handshakeNs, totalNs } = await contender.connect(baseUrl, `sanity-${Date.now()}`, counters);
      try {
        expect(await conn.getValue()).toBe(0);
        expect(await conn.increment()).toBe(1);
        expect(await conn.increment()).toBe(2);
        expect(await conn.getValue()).toBe(2);
        expect(await conn.noop()).toBeUndefined();
        expect(typeof (await conn.bornAt())).toBe("number");
        expect(await conn.slow(5)).toBeUndefined();
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
  for (const contender of SETS.features) {
    it(`${contender.name}: features`, async () => {
      const lines: string[] = [];
      const name = `sanity-features-${Date.now()}`;
      const { conn } = await contender.connect(baseUrl, name, new WireCounters());
      const { conn: listener } = await contender.connect(baseUrl, name, new WireCounters());
      try {
        const support = (f: Parameters<typeof contender.feature>[0]) => contender.feature(f);
        if (support("pipeline") === true) expect(await conn.chain3!()).toBe(await conn.getValue());
        if (support("callback") === true) expect(await conn.callback!(10)).toBe(callbackSum(10));
        if (support("fanout") === true) {
          const got = new Promise<string>((resolve) => void listener.listen!(resolve));
          await new Promise((r) => setTimeout(r, 50));
          await conn.fanOut!("hello");
          expect(await got).toBe("hello");
        }
        if (support("http") === true) expect(await contender.httpBatch!(baseUrl, name, 3)).toEqual([0, 0, 0]);
        for (const f of ["pipeline", "callback", "fanout", "http"] as const) {
          const s = support(f);
          lines.push(`  ${f}: ${s === true ? "ok" : "pending" in s ? `pending (${s.pending})` : `unsupported (${s.unsupported})`}`);
        }
      } finally {
        await conn.close();
        await listener.close();
      }
      process.stderr.write(`${contender.name}:\n${lines.join("\n")}\n`);
    });
  }
  for (const contender of SETS.main) {
    it(`${contender.name}: payloads and types`, async () => {
      const counters = new WireCounters();
      const { conn } = await contender.connect(baseUrl, `sanity-echo-${Date.now()}`, counters);
      const lines: string[] = [];
      const failures: string[] = [];
      try {
        const scenarios = new Set<string>(PAYLOADS.map((p) => p.id));
        // dorpc must carry everything; a peer may fail to carry a value (an error: the entry says
        // "unsupported"), but a latency scenario it answers must come back right, or its times
        // would be of the wrong work. The type probes of peers are information (types table).
        const strict = (id: string) => contender.name.startsWith("dorpc") || scenarios.has(id);
        for (const payload of [...PAYLOADS, ...TYPE_PROBES.map((p) => ({ ...p, bytes: false, size: "" }))]) {
          const supported = contender.supports(payload);
          if (supported !== true) {
            lines.push(`  ${payload.id}: unsupported by design (${supported})`);
            continue;
          }
          const value = payload.make();
          const before = counters.snapshot();
          try {
            const back = value === undefined ? await conn.noop() : await conn.echo(value);
            const ok = structurallyEqual(back, value);
            if (!ok && strict(payload.id)) failures.push(`${payload.id}: wrong result`);
            const after = counters.snapshot();
            lines.push(
              `  ${payload.id}: ${ok ? "ok" : "WRONG RESULT"} sent ${after.sentBytes - before.sentBytes} B/${after.sentFrames - before.sentFrames} frames, recv ${after.recvBytes - before.recvBytes} B/${after.recvFrames - before.recvFrames} frames`,
            );
          } catch (error) {
            lines.push(`  ${payload.id}: ERROR ${String((error as Error)?.message ?? error).slice(0, 160)}`);
            if (contender.name.startsWith("dorpc"))
              failures.push(`${payload.id}: ${String((error as Error)?.message ?? error).slice(0, 160)}`);
          }
        }
      } finally {
        await conn.close();
      }
      process.stderr.write(`${contender.name}:\n${lines.join("\n")}\n`);
      expect(failures).toEqual([]);
    });
  }
});
