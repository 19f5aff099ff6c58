/**
 * createRpcClient refuses `reconnect` and `heartbeat` values it cannot use with BAD_OPTION, at
 * creation: values that are neither an options object nor `false` (an array, a Date, a function,
 * 0, null), and settings out of range. An array or a Date was taken as an empty options object,
 * so a mistake silently gave the defaults. (Other options' edges are in client-options.test.ts.)
 */
import { describe, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/client.js";
import { expectThrowsCode } from "./helpers.js";

describe("reconnect and heartbeat options", () => {
  it.each([
    ["reconnect: [] (an array)", { reconnect: [] }],
    ["reconnect: new Date()", { reconnect: new Date() }],
    ["reconnect: a function", { reconnect: () => {} }],
    ["reconnect: 0", { reconnect: 0 }],
    ["reconnect: null", { reconnect: null }],
    ["reconnect.initialDelay -1", { reconnect: { initialDelay: -1 } }],
    ["reconnect.maxDelay Infinity", { reconnect: { maxDelay: Number.POSITIVE_INFINITY } }],
    ["reconnect.factor 0.5 (delays that shrink)", { reconnect: { factor: 0.5 } }],
    ["reconnect.jitter 2 (over 1)", { reconnect: { jitter: 2 } }],
    ["reconnect.resetAfter a string", { reconnect: { resetAfter: "5" } }],
    ["heartbeat: [] (an array)", { heartbeat: [] }],
    ["heartbeat: 0", { heartbeat: 0 }],
    ["heartbeat.timeout -1", { heartbeat: { timeout: -1 } }],
    ["heartbeat.interval NaN", { heartbeat: { interval: Number.NaN } }],
    ["heartbeat.interval Infinity", { heartbeat: { interval: Number.POSITIVE_INFINITY } }],
  ])("%s: BAD_OPTION", (_label, options) => {
    expectThrowsCode(() => createRpcClient("B", "i", { baseUrl: "http://127.0.0.1:1", ...(options as object) }), "BAD_OPTION");
  });
});
