/** The entry's Markdown tables: one per scenario group, the targets, type support, block sizes. */
import type { RawRun } from "../raw.js";
import { displayName, isThroughput, type ScenarioStats, statusText } from "./analyze.js";
import { cell, fmtBytes, fmtNum, fmtPct, fmtRate, fmtRatio, fmtUs } from "./format.js";
import { BOUNDS, P99_MIN_N, type Target, type Targets, type Verdict } from "./targets.js";

const fmtN = (n: number | null | undefined) => (n == null ? "–" : n.toLocaleString("en-US"));

function serverCell(s: ScenarioStats, row: ScenarioStats["rows"][number]): string {
  if (row.serverCpuUsPerCall == null) return "–";
  const perCall = fmtNum(row.serverCpuUsPerCall, 0);
  // A fan-out call's server work is per recipient.
  if (s.info.recipients) return `${perCall} (${fmtNum(row.serverCpuUsPerCall / s.info.recipients, 1)}/recipient)`;
  return perCall;
}

export function scenarioTable(group: ScenarioStats[]): string {
  const first = group[0]!;
  const throughput = isThroughput(first.info);
  const connect = first.info.kind === "connect";
  const reference = first.info.reference;
  const ratioHeads = first.ratios.map((r) => `${r.subject} ÷ ${displayName(r.versus)} (${throughput ? "calls/s" : "p50"})`);
  const head = [
    "scenario",
    "contender",
    "n",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "max",
    ...(connect ? ["handshake p50"] : []),
    ...(reference ? [`in-block ${reference} p50`] : []),
    "calls/s",
    "B sent/call",
    "B recv/call",
    "frames/call (sent+recv)",
    "client CPU µs/call",
    "server CPU µs/call (workerd)",
    "dev proxy CPU µs/call",
    throughput ? "round spread (calls/s)" : "round spread (p50)",
    ...ratioHeads,
  ];
  const lines = [`| ${head.join(" | ")} |`, `| ${head.map((_, i) => (i < 2 ? "---" : "---:")).join(" | ")} |`];
  for (const s of group) {
    s.rows.forEach((row, index) => {
      const name = index === 0 ? cell(s.info.label) : "";
      const problem = statusText(row);
      const ratioCells = s.ratios.map((r) => (r.subject === row.contender ? fmtRatio(r.spread) : ""));
      if (problem && !row.latency) {
        lines.push(`| ${name} | ${row.contender} | ${reason(problem)} |${" |".repeat(head.length - 3)}`);
        return;
      }
      const l = row.latency;
      lines.push(
        `| ${[
          name,
          row.contender + (problem ? ` (${reason(problem)})` : ""),
          fmtN(l?.n ?? 0),
          fmtUs(l?.p50),
          fmtUs(l?.p90),
          fmtUs(l?.p99),
          l?.p999 != null ? fmtUs(l.p999) : "n<10k",
          fmtUs(l?.max),
          ...(connect ? [fmtUs(row.handshake?.p50)] : []),
          ...(reference ? [fmtUs(row.reference?.p50)] : []),
          fmtRate(row.callsPerSec),
          fmtBytes(row.sentBytesPerCall),
          fmtBytes(row.recvBytesPerCall),
          row.framesPerCall != null
            ? `${fmtNum(row.framesPerCall, 2)} (${fmtNum(row.sentFramesPerCall, 2)}+${fmtNum(row.recvFramesPerCall, 2)})`
            : "–",
          fmtNum(row.cpuUsPerCall, 0),
          serverCell(s, row),
          fmtNum(row.proxyCpuUsPerCall, 0),
          fmtPct(row.roundSpread),
          ...ratioCells,
        ].join(" | ")} |`,
      );
    });
  }
  return lines.join("\n");
}

/** A reason in a table cell: one line, at most 90 characters. */
function reason(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return cell(line.length > 90 ? `${line.slice(0, 89)}…` : line);
}

function mark(v: Verdict): string {
  if (v.met === null) return v.value ? `${v.value.median.toFixed(2)} (${reason(v.note)})` : reason(v.note || "–");
  return `${fmtRatio(v.value, v.bound)} ${v.met ? "**met**" : "**missed**"}`;
}

/** The floor and peer targets: one row per latency scenario, every cell met/missed. */
export function targetMatrix(targets: Targets): string {
  const head = [
    "scenario",
    "n (dorpc / floor / Cap'n Web / Agents)",
    `dorpc ÷ floor p50 (≤ ${BOUNDS.floorP50})`,
    `dorpc p99 ÷ floor p99 (≤ ${BOUNDS.floorP99}, n ≥ ${P99_MIN_N.toLocaleString("en-US")})`,
    `dorpc ÷ Cap'n Web p50 (≤ ${BOUNDS.peer})`,
    "floor ÷ Cap'n Web",
    `dorpc ÷ Agents p50 (≤ ${BOUNDS.peer})`,
    "floor ÷ Agents",
    "diagnostic: dorpc ÷ dorpc without the record",
    "diagnostic: dorpc without the record ÷ floor",
    "A/A control: floor (second instance) ÷ floor, p50 / p99",
  ];
  const lines = [`| ${head.join(" | ")} |`, `| ${head.map((_, i) => (i < 2 ? "---" : "---:")).join(" | ")} |`];
  for (const r of targets.matrix) {
    const p99 = r.floorP99.p99 ? ` (${fmtUs(r.floorP99.p99.dorpc)} / ${fmtUs(r.floorP99.p99.floor)})` : "";
    lines.push(
      `| ${[
        `${cell(r.label)} (${r.scenario})`,
        [r.n.dorpc, r.n.floor, r.n.capnweb, r.n.agents].map(fmtN).join(" / "),
        mark(r.floorP50),
        `${mark(r.floorP99)}${p99}`,
        mark(r.capnweb),
        fmtRatio(r.floorVsCapnweb),
        mark(r.agents),
        fmtRatio(r.floorVsAgents),
        fmtRatio(r.recordCost),
        r.noRecordVsFloor.value ? fmtRatio(r.noRecordVsFloor.value) : reason(r.noRecordVsFloor.note || "–"),
        r.twinP50.value
          ? `${fmtRatio(r.twinP50.value)} / ${r.twinP99.value ? r.twinP99.value.median.toFixed(2) : "–"}`
          : reason(r.twinP50.note || "–"),
      ].join(" | ")} |`,
    );
  }
  return lines.join("\n");
}

export function targetSummary(targets: Targets): string[] {
  return targets.summary.map((t) => {
    if (t.judged === 0) return `- ${t.label}: not judged in any of ${t.notJudged} scenarios (n too small, or a side did not run).`;
    const verdict = t.met === t.judged ? "**met**" : "**missed**";
    const counts = ` (met in ${t.met} of ${t.judged} scenarios)`;
    const notJudged = t.notJudged ? `; not judged in ${t.notJudged} (n too small, or a side did not run)` : "";
    return `- ${t.label}: ${verdict}${counts}${notJudged}${t.missed.length ? `; missed in: ${t.missed.join(", ")}` : ""}.`;
  });
}

export function targetList(list: Target[]): string {
  const lines = ["| target | measured: median [min–max] of per-round ratios | bound | result |", "| --- | ---: | ---: | --- |"];
  for (const t of list) {
    const result = t.met === null ? "not measured" : t.met ? "**met**" : "**missed**";
    lines.push(
      `| ${cell(t.label)} (${t.scenario}) | ${fmtRatio(t.value, t.op === "≤" ? t.bound : undefined)} | ${t.op} ${t.bound} | ${result}${t.note ? ` (${cell(t.note)})` : ""} |`,
    );
  }
  return lines.join("\n");
}

export function typeSupportTable(raw: RawRun): string {
  const contenders = [...new Set(raw.typeSupport.map((t) => t.contender))];
  const probes = [...new Map(raw.typeSupport.map((t) => [t.probe, t.label])).entries()];
  const lines = [`| value | ${contenders.join(" | ")} |`, `| --- | ${contenders.map(() => "---").join(" | ")} |`];
  for (const [probe, label] of probes) {
    const cells = contenders.map((c) => {
      const t = raw.typeSupport.find((x) => x.contender === c && x.probe === probe);
      if (!t) return "–";
      return t.result === "ok" ? "ok" : `${t.result}${t.detail ? `: ${cell(t.detail.slice(0, 90))}` : ""}`;
    });
    lines.push(`| ${cell(label)} | ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}

export function configTable(raw: RawRun): string {
  const lines = [
    "| scenario | kind | contenders | per block | passes per round | warm-up per block |",
    "| --- | --- | --- | ---: | ---: | ---: |",
  ];
  for (const s of raw.scenarios) {
    const perBlock =
      s.kind === "inflight" || s.kind === "clients"
        ? `${s.durationMs} ms window after a ${s.warmMs} ms run-in`
        : `${s.samplesPerBlock} sample${s.samplesPerBlock === 1 ? "" : "s"}${s.callsPerSample > 1 ? ` × ${s.callsPerSample} calls` : ""}${s.recipients ? ` to ${s.recipients} recipients` : ""}${s.fastCalls ? ` × ${s.fastCalls} fast calls` : ""}`;
    const warm =
      s.kind === "sequence"
        ? `${s.warmupPerBlock} samples`
        : s.kind === "connect" || s.kind === "oneshot"
          ? "none (the first call is what is measured)"
          : s.kind === "inflight"
            ? "one full window of calls, then the run-in"
            : s.kind === "clients"
              ? "1 call per connection, then the run-in"
              : s.kind === "fanout"
                ? "3 fan-outs"
                : "1 call";
    lines.push(`| ${s.id} | ${s.kind} | ${s.set} | ${perBlock} | ${s.repeats ?? 1} | ${warm} |`);
  }
  return lines.join("\n");
}
