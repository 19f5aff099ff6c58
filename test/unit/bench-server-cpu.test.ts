/**
 * The bench's server CPU meter (bench/src/server-cpu.ts) on a process that goes away mid-run, as
 * workerd does when wrangler dev restarts it: the reading fails with ServerGoneError naming the
 * pid, which stops the run (bench/src/measure.ts) instead of failing every later block. Linux
 * (/proc), like the bench's server CPU figures.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { ServerCpuMeter, ServerGoneError } from "../../bench/src/server-cpu.js";

describe("the bench's server CPU meter", () => {
  it("reads a live process, and names the process when it has gone", async () => {
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    await once(child, "spawn");
    const pid = child.pid!;
    const meter = ServerCpuMeter.create({ worker: [pid], proxy: [] });
    expect(meter).not.toBeNull();
    const reading = meter!.read();
    expect(Number.isFinite(reading.workerNs)).toBe(true);
    expect(reading.proxyNs).toBe(0);
    child.kill("SIGKILL");
    await once(child, "exit");
    let thrown: unknown;
    try {
      meter!.read();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ServerGoneError);
    expect((thrown as ServerGoneError).pid).toBe(pid);
    expect((thrown as Error).message).toMatch(new RegExp(`workerd \\(pid ${pid}\\) is gone: .*Start the run again`));
  });
});
