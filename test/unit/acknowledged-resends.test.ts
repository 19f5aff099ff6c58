/**
 * Resends next to acknowledged answers ("never run twice; a resend gets the answer the call had"):
 * an unbuilt binary answer replayed byte for byte, a call still running across a cut answered
 * once while later calls acknowledged, and resends in the order they were sent (a lazy read a call
 * makes has a higher id and goes before it).
 */
import { describe, expect, it } from "vitest";
import { resendSetup, wait } from "../support/resend-harness.js";
import { settle } from "./helpers.js";

const setup = (timeout = 0) => resendSetup("resends", timeout);

describe("resends with acknowledged answers around them", () => {
  it("binary answer lost with the connection: the resend gets the same bytes, the method runs once", async () => {
    const { target, paired, rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast"); // 1
    const p2 = rpc.fast(); // 2
    expect(await p2).toBe("fast");
    target.cuts = 1;
    const got = await rpc.bytes(5000); // 3: reply lost, resent
    expect(paired.connections.length).toBeGreaterThan(1);
    expect(target.runs.get("bytes")).toBe(1);
    expect(Array.from(got as Uint8Array)).toEqual(Array.from(target.bytes(5000)));
  });

  it("in-flight slow call with later calls answered, cut: the slow call's resend gets its answer", async () => {
    const { target, paired, rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast"); // 1
    const slow = rpc.slow(); // 2
    await settle();
    expect(await rpc.fast()).toBe("fast"); // 3
    expect(await rpc.fast()).toBe("fast"); // 4
    paired.connections[0]!.cut();
    target.gates[0]!(); // finishes on the server while the client is away
    await wait(5);
    expect(await rpc.fast()).toBe("fast"); // 5
    expect(await slow).toBe("slow");
    expect(target.runs.get("slow")).toBe(1);
  });

  it("a call whose argument is a lazy read (`rpc.echo(rpc.config)`), cut after the reply was sent: resent and answered once", async () => {
    // reliability.md, "Connection cut after send": "Resent on the next connection (`Retry` flag)
    // and answered once [...] The caller sees one result. Resends go out before the calls queued
    // during the outage, in their original order."
    // The lazy read `config` gets id 2 (made while call 1 is being written) and goes first in the
    // frame; resent by id, call 1 (which pipelines on 2) came first, waited for 2 to settle and
    // held 2 behind it: nothing was sent on the new connection and the call timed out.
    const { target, paired, rpc } = setup(2000);
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    target.cuts = 1;
    const r = await rpc.echo(rpc.config as never).catch((error: unknown) => error);
    expect(paired.connections.length).toBe(2);
    expect(paired.connections[1]!.sentByClient.length).toBeGreaterThan(0); // the resends went out
    expect(r).toEqual({ a: 1 });
    expect(target.runs.get("echo")).toBe(1);
  });
});
