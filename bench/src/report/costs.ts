/**
 * "What it costs": the measurements that decide a user's bill, converted on paper with the
 * published price model (price-model.ts, printed with its source in every entry):
 *  - incoming WebSocket messages per 1,000 calls at 1, 4, 16 and 64 calls in flight (the
 *    client's sent frames in the in-flight scenarios: every frame it sends is an incoming message
 *    of the object), billed as requests at 20:1;
 *  - an idle connected client: is its object evicted, did idle traffic wake it, and the duration
 *    that bills per idle client-hour;
 *  - the first call after an eviction (wake-up) against a warm call;
 *  - server CPU per call in workerd, one figure per contender.
 */
import type { IdleRun, IdleSample } from "../idle.js";
import { PRICE_MODEL } from "../price-model.js";
import type { RawRun } from "../raw.js";
import { median, spread } from "../stats.js";
import type { ScenarioStats } from "./analyze.js";
import { fmtNum, fmtRatio, fmtUs } from "./format.js";

const PEERS = ["dorpc", "capnweb", "agents", "floor"];
function money(usd: number): string {
  if (usd === 0) return "$0";
  if (usd >= 1) return `$${usd.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  return usd >= 0.01 ? `$${usd.toFixed(3)}` : `$${usd.toPrecision(2)}`;
}

function messagesTable(stats: ScenarioStats[], contenders: string[]): string[] {
  const inflight = [1, 4, 16, 64].map((n) => stats.find((s) => s.info.id === `inflight-${n}`)).filter((s): s is ScenarioStats => !!s);
  if (!inflight.length) return ["_Not measured in this run (no in-flight scenarios)._"];
  const head = ["calls in flight", ...contenders];
  const lines = [`| ${head.join(" | ")} |`, `| --- | ${contenders.map(() => "---:").join(" | ")} |`];
  for (const s of inflight) {
    const cells = contenders.map((c) => {
      const perCall = s.rows.find((r) => r.contender === c && r.status.kind === "ok")?.sentFramesPerCall;
      if (perCall == null) return "–";
      const requests = perCall / PRICE_MODEL.wsMessagesPerRequest;
      return `${fmtNum(perCall * 1000, 0)} (${fmtNum(requests * 1000, 1)}; ${money(requests * PRICE_MODEL.usdPerMillionRequests)})`;
    });
    lines.push(`| ${s.info.inFlight} | ${cells.join(" | ")} |`);
  }
  return lines;
}

interface IdleSummary {
  contender: string;
  n: number;
  evicted: number;
  woke: number;
  idleSeconds: number;
  sentPerClient: number;
  recvPerClient: number;
  first: number;
  warm: number;
  /** Per cycle: p50 of first calls. */
  firstPerCycle: number[];
}

function idleSummary(run: IdleRun): IdleSummary[] {
  return run.contenders.map((contender) => {
    const samples = run.samples.filter((s) => s.contender === contender);
    const cycles = [...new Set(samples.map((s) => s.cycle))];
    const mean = (pick: (s: IdleSample) => number) => samples.reduce((t, s) => t + pick(s), 0) / Math.max(1, samples.length);
    return {
      contender,
      n: samples.length,
      evicted: samples.filter((s) => s.evicted).length,
      woke: samples.filter((s) => s.wokeDuringIdle).length,
      idleSeconds: median(samples.map((s) => s.idleMs / 1000)),
      sentPerClient: mean((s) => s.idleSentFrames),
      recvPerClient: mean((s) => s.idleRecvFrames),
      first: median(samples.map((s) => s.firstCallUs)),
      warm: median(samples.map((s) => s.warmCallUs)),
      firstPerCycle: cycles.map((c) => median(samples.filter((s) => s.cycle === c).map((s) => s.firstCallUs))),
    };
  });
}

function idleTables(run: IdleRun): string[] {
  const rows = idleSummary(run);
  const out: string[] = [];
  out.push(
    `Each client connected to an object of its own, made a call, then made no call for ${run.settings.idleSeconds} s (${run.settings.connections} client${run.settings.connections > 1 ? "s" : ""} per contender × ${run.settings.cycles} cycle${run.settings.cycles > 1 ? "s" : ""}, every contender idle at the same time). "Evicted" = the object's construction time changed (workerd built it again); "woken while idle" = it was built again before the client's next call, so something the client sent while idle reached it. Per hour = the window's rate extrapolated to an hour.`,
    "",
    "| contender | n | evicted | woken while idle | frames sent / received while idle, per client | billed requests per idle client-hour | billed duration per idle client-hour | USD per 1,000 idle clients per month (duration) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const r of rows) {
    // Evicted and not woken: the object was idle and hibernatable, which the price model does not bill for duration.
    // Never evicted: an accepted socket keeps the object billed for as long as it is connected.
    const allEvicted = r.evicted === r.n && r.woke === 0;
    const noneEvicted = r.evicted === 0;
    const gbs = allEvicted ? 0 : noneEvicted ? 3600 * PRICE_MODEL.billedGb : null;
    const perMonth = gbs === null ? null : (gbs * PRICE_MODEL.hoursPerMonth * 1000 * PRICE_MODEL.usdPerMillionGbS) / 1e6;
    // Idle frames reach the object's code (and bill as requests) unless the platform answered them
    // without waking it: an evicted object that was not built again saw none of them.
    const reached = allEvicted ? 0 : r.sentPerClient;
    const requestsPerHour = (reached * (3600 / r.idleSeconds)) / PRICE_MODEL.wsMessagesPerRequest;
    lines(out, [
      r.contender,
      String(r.n),
      `${r.evicted} of ${r.n}`,
      `${r.woke} of ${r.n}`,
      `${fmtNum(r.sentPerClient, 1)} / ${fmtNum(r.recvPerClient, 1)}`,
      gbs === null ? "–" : fmtNum(requestsPerHour, 1),
      gbs === null
        ? "mixed: see the samples in the JSON"
        : `${fmtNum(gbs, 1)} GB-s${allEvicted ? " (hibernation-eligible while idle, so not billed, the seconds before eviction included)" : " (in memory the whole hour)"}`,
      perMonth === null ? "–" : money(perMonth),
    ]);
  }
  out.push("", "**Wake-up: the first call after idling** (on an evicted object it includes building the object again)", "");
  out.push(
    "| contender | first call after idle p50 [per-cycle range] | warm call p50 (same clients, right after) | first − warm | first call ÷ floor's (median of per-cycle ratios) |",
  );
  out.push("| --- | ---: | ---: | ---: | ---: |");
  const floor = rows.find((r) => r.contender === "floor");
  for (const r of rows) {
    const range = r.firstPerCycle.length > 1 ? ` [${fmtUs(Math.min(...r.firstPerCycle))}–${fmtUs(Math.max(...r.firstPerCycle))}]` : "";
    const vsFloor =
      floor && floor.firstPerCycle.length === r.firstPerCycle.length
        ? spread(r.firstPerCycle.map((v, i) => v / floor.firstPerCycle[i]!))
        : null;
    lines(out, [r.contender, `${fmtUs(r.first)}${range} (n = ${r.n})`, fmtUs(r.warm), fmtUs(r.first - r.warm), fmtRatio(vsFloor)]);
  }
  if (run.notRun.length) out.push("", `Not run: ${run.notRun.map((x) => `${x.contender} (${x.reason})`).join("; ")}.`);
  return out;
}

function lines(out: string[], cells: string[]): void {
  out.push(`| ${cells.join(" | ")} |`);
}

function serverCpuTable(stats: ScenarioStats[], contenders: string[]): string[] {
  const pick = (id: string) => stats.find((s) => s.info.id === id);
  const getValue = pick("counter-large-getValue") ?? pick("counter-getValue");
  const inflight = pick("inflight-64");
  const fanout = pick("fanout-128");
  if (!getValue && !inflight) return ["_Not measured in this run._"];
  const out = [
    `| contender | getValue() (${getValue?.info.id ?? "–"}) µs/call | increment() at 64 in flight µs/call | fan-out to 128, µs per recipient | dev proxy, getValue() µs/call |`,
    "| --- | ---: | ---: | ---: | ---: |",
  ];
  for (const c of contenders) {
    const row = (s: ScenarioStats | undefined) => s?.rows.find((r) => r.contender === c && r.status.kind === "ok");
    const g = row(getValue);
    const f = row(fanout);
    lines(out, [
      c,
      fmtNum(g?.serverCpuUsPerCall, 0),
      fmtNum(row(inflight)?.serverCpuUsPerCall, 0),
      f?.serverCpuUsPerCall != null && fanout?.info.recipients ? fmtNum(f.serverCpuUsPerCall / fanout.info.recipients, 1) : "–",
      fmtNum(g?.proxyCpuUsPerCall, 0),
    ]);
  }
  return out;
}

export function costsSection(raw: RawRun, stats: ScenarioStats[]): string[] {
  const contenders = PEERS.filter((c) => raw.contenders.some((x) => x.name === c));
  const all = raw.contenders
    .filter((c) => stats.some((s) => s.info.set === "main" && s.rows.some((r) => r.contender === c.name)))
    .map((c) => c.name);
  const out: string[] = ["**What it costs**", ""];
  out.push(
    `Price model (Workers Paid, [${PRICE_MODEL.source}](${PRICE_MODEL.source})): requests USD ${PRICE_MODEL.usdPerMillionRequests} per million, incoming WebSocket messages billed as requests at ${PRICE_MODEL.wsMessagesPerRequest}:1 (outgoing messages, protocol pings and auto-responses free); duration USD ${PRICE_MODEL.usdPerMillionGbS} per million GB-s at ${PRICE_MODEL.billedGb * 1000} MB per object, billed while the object runs or is idle but cannot hibernate (an accepted socket keeps it so for as long as it is connected). Included monthly usage is not subtracted.`,
    "",
    "**Incoming WebSocket messages per 1,000 calls** (the client's sent frames in the in-flight scenarios, one connection, closed loop), with the billed requests per 1,000 calls and USD per million calls: `messages (requests; USD)`",
    "",
    ...messagesTable(stats, contenders),
    "",
    "**An idle connected client**",
    "",
    ...(raw.idle ? idleTables(raw.idle) : ["_Not measured in this run._"]),
    "",
    "**Server CPU per call** (the Worker's workerd process, from the kernel's CPU accounting over each timed region ÷ calls; it includes workerd's own socket and storage work)",
    "",
    ...(raw.serverCpu === false ? ["_Not measurable on this machine (no /proc)._"] : serverCpuTable(stats, all.length ? all : contenders)),
  );
  return out;
}
