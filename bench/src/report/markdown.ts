/** The generated log entry (Markdown) and the terminal summary (plain text). */
import type { RawRun } from "../raw.js";
import type { ScenarioStats, Target } from "./analyze.js";
import { isThroughput } from "./analyze.js";
import { GROUP_TITLES, type Group } from "../scenarios.js";
import { cell, fmtBytes, fmtNum, fmtPct, fmtRate, fmtRatio, fmtUs } from "./format.js";
import { median } from "../stats.js";

export interface EntryLinks {
  json: string;
  charts: { title: string; href: string }[];
}

const GROUP_ORDER: Group[] = ["counter", "counter-fresh", "counter-large", "payload", "connect", "routing", "inflight", "clients"];

function statusText(row: ScenarioStats["rows"][number]): string | undefined {
  if (row.status.kind === "unsupported") return `unsupported: ${row.status.reason}`;
  if (row.status.kind === "error") return `ERROR: ${row.status.reason}`;
  return undefined;
}

function scenarioTable(group: ScenarioStats[]): string {
  const throughput = isThroughput(group[0]!.info);
  const connect = group[0]!.info.kind === "connect";
  const routing = group[0]!.info.set === "routing";
  const ratioHeads = routing ? ["dorpc ÷ direct"] : ["dorpc ÷ Cap'n Web", "dorpc ÷ floor"];
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
    "calls/s",
    "B sent/call",
    "B recv/call",
    "frames/call (sent+recv)",
    "client CPU µs/call",
    throughput ? "round spread (calls/s)" : "round spread (p50)",
    ...ratioHeads.map((h) => `${h} (${throughput ? "calls/s" : "p50"})`),
  ];
  const lines = [`| ${head.join(" | ")} |`, `| ${head.map((_, i) => (i < 2 ? "---" : "---:")).join(" | ")} |`];
  for (const s of group) {
    s.rows.forEach((row, index) => {
      const name = index === 0 ? cell(s.info.label) : "";
      const problem = statusText(row);
      const ratioCells = ratioHeads.map((_, i) => (row.contender === "dorpc" ? fmtRatio(s.ratios[i]?.spread) : ""));
      if (problem && !row.latency) {
        lines.push(`| ${name} | ${row.contender} | ${cell(problem)} |${" |".repeat(head.length - 3)}`);
        return;
      }
      const l = row.latency;
      lines.push(
        `| ${[
          name,
          row.contender + (problem ? ` (${cell(problem)})` : ""),
          l ? l.n.toLocaleString("en-US") : "0",
          fmtUs(l?.p50),
          fmtUs(l?.p90),
          fmtUs(l?.p99),
          l?.p999 != null ? fmtUs(l.p999) : "n<10k",
          fmtUs(l?.max),
          ...(connect ? [fmtUs(row.handshake?.p50)] : []),
          fmtRate(row.callsPerSec),
          fmtBytes(row.sentBytesPerCall),
          fmtBytes(row.recvBytesPerCall),
          row.framesPerCall != null
            ? `${fmtNum(row.framesPerCall, 2)} (${fmtNum(row.sentFramesPerCall, 2)}+${fmtNum(row.recvFramesPerCall, 2)})`
            : "–",
          fmtNum(row.cpuUsPerCall, 0),
          fmtPct(row.roundSpread),
          ...ratioCells,
        ].join(" | ")} |`,
      );
    });
  }
  return lines.join("\n");
}

/** Bullet points: where dorpc leads and trails, judged per round (range entirely on one side). */
export function generatedSummary(stats: ScenarioStats[]): string[] {
  const out: string[] = [];
  for (const versus of ["capnweb", "floor"]) {
    const leads: string[] = [];
    const trails: string[] = [];
    const mixed: string[] = [];
    for (const s of stats) {
      if (s.info.set !== "main") continue;
      const ratio = s.ratios.find((r) => r.versus === versus)?.spread;
      if (!ratio) continue;
      const better = s.metric === "p50" ? (v: number) => v < 1 : (v: number) => v > 1;
      const text = `${s.info.group === "payload" ? "" : `${s.info.group}: `}${s.info.label} (${fmtRatio(ratio)})`;
      if (better(ratio.min) && better(ratio.max)) leads.push(text);
      else if (!better(ratio.min) && !better(ratio.max) && ratio.min !== 1 && ratio.max !== 1) trails.push(text);
      else mixed.push(text);
    }
    const name = versus === "capnweb" ? "Cap'n Web" : "the floor";
    out.push(`- **dorpc leads ${name}** in every round (${leads.length}): ${leads.length ? leads.join("; ") : "none"}.`);
    out.push(`- **dorpc trails ${name}** in every round (${trails.length}): ${trails.length ? trails.join("; ") : "none"}.`);
    if (mixed.length) out.push(`- **Mixed across rounds vs ${name}** (${mixed.length}): ${mixed.join("; ")}.`);
  }
  const unsupported = stats.flatMap((s) =>
    s.rows.filter((r) => r.status.kind !== "ok").map((r) => `${r.contender} / ${s.info.label}: ${r.status.kind}`),
  );
  if (unsupported.length) out.push(`- **Not run:** ${unsupported.join("; ")}.`);
  const errors = stats.flatMap((s) =>
    s.rows
      .filter((r) => r.status.kind === "error" && r.contender.startsWith("dorpc"))
      .map((r) => `${s.info.label}: ${"reason" in r.status ? r.status.reason : ""}`),
  );
  if (errors.length) out.push(`- **dorpc errors:** ${errors.join("; ")}.`);
  return out;
}

/** The floor's round-to-round spread, the noise floor of this run. */
export function noiseSummary(stats: ScenarioStats[]): string {
  const pick = (throughput: boolean) =>
    stats
      .filter((s) => s.info.set === "main" && (s.metric === "callsPerSec") === throughput)
      .map((s) => s.rows.find((r) => r.contender === "floor")?.roundSpread)
      .filter((v): v is number => v != null);
  const lat = pick(false);
  const thr = pick(true);
  const describe = (v: number[]) =>
    v.length ? `median ${fmtPct(median(v))}, range ${fmtPct(Math.min(...v))}–${fmtPct(Math.max(...v))} over ${v.length} scenarios` : "–";
  return `Round-to-round spread of the floor ((max − min) ÷ median of its per-round values): p50 latency ${describe(lat)}; throughput ${describe(thr)}. Differences between contenders smaller than this are noise.`;
}

export function hibernationNote(stats: ScenarioStats[]): string | undefined {
  const ratios: number[] = [];
  for (const s of stats) {
    if (s.metric !== "p50" || s.info.set !== "main") continue;
    const floor = s.rows.find((r) => r.contender === "floor");
    const accept = s.rows.find((r) => r.contender === "floor-accept");
    if (!floor?.latency || !accept?.latency) continue;
    const paired = floor.perRound
      .map((v, i) => (v != null && accept.perRound[i] != null ? v / accept.perRound[i]! : null))
      .filter((v): v is number => v != null);
    if (paired.length) ratios.push(median(paired));
  }
  if (!ratios.length) return undefined;
  return `The same floor protocol on a hibernatable socket (floor) vs a plain accepted one (floor-accept): p50 ratio median ${median(ratios).toFixed(2)} (range ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) over ${ratios.length} latency scenarios. dorpc uses hibernatable sockets, Cap'n Web's \`newWorkersRpcResponse\` a plain accepted one, so part of any dorpc ÷ Cap'n Web gap is this cost and not the RPC layer.`;
}

function targetTable(targets: Target[]): string {
  const lines = ["| target | measured: median [min–max] of per-round ratios | bound | result |", "| --- | ---: | ---: | --- |"];
  for (const t of targets) {
    const result = t.met === null ? "not measured" : t.met ? "**met**" : "**missed**";
    const measured = t.op === "works" ? (t.met ? "works" : t.note || "–") : fmtRatio(t.value);
    const bound = t.op === "works" ? "works" : `${t.op} ${t.bound}`;
    lines.push(
      `| ${cell(t.label)} (${t.scenario}) | ${cell(measured)} | ${bound} | ${result}${t.note && t.op !== "works" ? ` (${cell(t.note)})` : ""} |`,
    );
  }
  return lines.join("\n");
}

function typeSupportTable(raw: RawRun): string {
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

function configTable(raw: RawRun): string {
  const lines = ["| scenario | kind | per block | warm-up per block |", "| --- | --- | ---: | ---: |"];
  for (const s of raw.scenarios) {
    const perBlock =
      s.kind === "inflight" || s.kind === "clients"
        ? `${s.durationMs} ms window after a ${s.warmMs} ms run-in`
        : `${s.samplesPerBlock} sample${s.samplesPerBlock === 1 ? "" : "s"}${s.callsPerSample > 1 ? ` × ${s.callsPerSample} calls` : ""}`;
    const warm =
      s.kind === "sequence"
        ? `${s.warmupPerBlock} samples`
        : s.kind === "connect"
          ? "none (the first call is what is measured)"
          : s.kind === "inflight"
            ? "one full window of calls, then the run-in"
            : "1 call per connection, then the run-in";
    lines.push(`| ${s.id} | ${s.kind} | ${perBlock} | ${warm} |`);
  }
  return lines.join("\n");
}

export function entryMarkdown(
  raw: RawRun,
  stats: ScenarioStats[],
  targets: Target[],
  links: EntryLinks,
  loadAfter: [number, number, number],
  wallSeconds: number,
): string {
  const env = raw.environment;
  const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(" / ");
  const contenders = raw.contenders.map((c) => `\`${c.name}\`: ${c.label}`).join("; ");
  const parts: string[] = [];
  parts.push(
    `## ${raw.startedAt} · ${env.gitHash}${env.gitDirty ? " (dirty)" : ""}${raw.quick ? " · QUICK" : ""} · ${raw.description || "(no description)"}`,
  );
  parts.push("");
  parts.push(
    `Generated by \`npm run bench${raw.quick ? " -- --quick" : ""}\`. Mode: **${raw.quick ? "quick (smoke test: small samples, not for decisions)" : "full"}**. Wall time ${(wallSeconds / 60).toFixed(1)} min. Raw samples and percentiles: [${links.json}](${links.json}).`,
  );
  parts.push("");
  parts.push("**Environment**");
  parts.push("");
  parts.push("| | |\n| --- | --- |");
  parts.push(`| Node (client) | ${env.node} |`);
  parts.push(`| wrangler / workerd | ${env.wrangler} / ${env.workerd} |`);
  parts.push(`| capnweb | ${env.capnweb} |`);
  parts.push(`| dorpc | ${env.dorpc}, git ${env.gitHash}${env.gitDirty ? " + uncommitted changes" : ""} |`);
  parts.push(`| compatibility date (flags) | ${env.compatibilityDate} (${env.compatibilityFlags}) |`);
  if (env.localObservability !== undefined) {
    parts.push(
      `| wrangler dev local observability (X_LOCAL_OBSERVABILITY) | ${env.localObservability ? "on (wrangler's default): a trace stored per invocation" : "off (the bench's default; --local-observability turns it on)"} |`,
    );
  }
  parts.push(`| CPU | ${env.cpuModel}, ${env.cores} cores, ${env.memoryGiB} GiB, ${env.os} |`);
  parts.push(
    `| load average 1/5/15 min | before ${load(raw.loadBefore)}; after measuring ${load(raw.loadAfterMeasuring)}; at the end ${load(loadAfter)} |`,
  );
  parts.push("");
  parts.push(
    `**Configuration:** ${raw.rounds} rounds; in each round every contender runs one block per scenario, order ${raw.rounds > 1 ? "A→Z in even rounds, Z→A in odd rounds" : "A→Z"}; warm-up before timing; gc() between blocks; no sample dropped. Client and \`wrangler dev\` share the machine. Contenders: ${contenders}.`,
  );
  parts.push("");
  parts.push("<details><summary>Block sizes</summary>\n");
  parts.push(configTable(raw));
  parts.push("\n</details>");
  parts.push("");
  parts.push("**Summary (generated)**");
  parts.push("");
  parts.push(...generatedSummary(stats));
  const hib = hibernationNote(stats);
  if (hib) parts.push(`- ${hib}`);
  parts.push(`- Noise: ${noiseSummary(stats)}`);
  parts.push("");
  parts.push("**Targets** (ratios are dorpc ÷ other, formed per round, then median [min–max])");
  parts.push("");
  parts.push(targetTable(targets));
  parts.push("");
  parts.push(`**Charts:** ${links.charts.map((c) => `[${c.title}](${c.href})`).join(" · ")}`);
  parts.push("");
  for (const c of links.charts) parts.push(`![${c.title}](${c.href})`);
  parts.push("");
  for (const group of GROUP_ORDER) {
    const inGroup = stats.filter((s) => s.info.group === group);
    if (!inGroup.length) continue;
    parts.push(`**${GROUP_TITLES[group]}**`);
    parts.push("");
    parts.push(scenarioTable(inGroup));
    parts.push("");
  }
  parts.push("**Type support** (one echo each, checked for structural equality, not timed)");
  parts.push("");
  parts.push(typeSupportTable(raw));
  parts.push("");
  return parts.join("\n");
}

export const LOG_HEADER = `# Measurements

This file is generated by \`npm run bench\` (docs/performance.md explains the method and how to read it).
Never edit it by hand: every run appends one entry at the end, newest last. Each entry links its raw
samples (bench/results/*.json) and its charts (docs/measurements/).

`;

/** Plain-text summary for the terminal: p50 (or calls/s) per contender and the ratios. */
export function terminalSummary(stats: ScenarioStats[], targets: Target[], contenders: string[]): string {
  const main = contenders.filter((c) => c !== "dorpc-direct");
  const head = ["scenario", ...main, "÷capnweb", "÷floor"];
  const rows: string[][] = [];
  for (const s of stats) {
    const value = (name: string) => {
      const row = s.rows.find((r) => r.contender === name);
      if (!row) return "";
      if (row.status.kind !== "ok" && !row.latency) return row.status.kind;
      return s.metric === "p50" ? fmtUs(row.latency?.p50) : `${fmtRate(row.callsPerSec)}/s`;
    };
    const routing = s.info.set === "routing";
    const label = `${s.info.id}`;
    if (routing) {
      rows.push([label, value("dorpc"), `direct ${value("dorpc-direct")}`, "", "", fmtRatio(s.ratios[0]?.spread), ""]);
    } else {
      rows.push([label, ...main.map(value), fmtRatio(s.ratios[0]?.spread), fmtRatio(s.ratios[1]?.spread)]);
    }
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const out = [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)];
  out.push("");
  out.push("p50 latency per sample, or calls/s for inflight-*/clients-*; ratios dorpc ÷ other, median [min–max] of per-round ratios.");
  out.push("");
  out.push("Targets:");
  for (const t of targets) {
    const result = t.met === null ? "not measured" : t.met ? "MET" : "MISSED";
    out.push(
      `  ${result.padEnd(12)} ${t.label}: ${t.op === "works" ? (t.met ? "works" : t.note) : `${fmtRatio(t.value)} (bound ${t.op} ${t.bound})`}`,
    );
  }
  return out.join("\n");
}
