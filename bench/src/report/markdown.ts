/** The generated log entry (Markdown) and the terminal summary (plain text). */
import type { RawRun } from "../raw.js";
import { GROUP_TITLES, type Group } from "../scenarios.js";
import { median } from "../stats.js";
import { displayName, pairedRatio, type ScenarioStats } from "./analyze.js";
import { costsSection } from "./costs.js";
import { bundleSection, microSection } from "./extras.js";
import { cell, fmtPct, fmtRate, fmtRatio, fmtUs } from "./format.js";
import { configTable, scenarioTable, targetList, targetMatrix, targetSummary, typeSupportTable } from "./tables.js";
import type { Targets } from "./targets.js";

export interface EntryLinks {
  json: string;
  charts: { title: string; href: string }[];
}

const GROUP_ORDER: Group[] = [
  "counter",
  "counter-fresh",
  "counter-large",
  "payload",
  "connect",
  "routing",
  "inflight",
  "clients",
  "pipeline",
  "callback",
  "fanout",
  "oneshot",
  "ordering",
  "guarantee",
];

/** Bullet points: where dorpc leads and trails each peer, judged per round (range entirely on one side). */
export function generatedSummary(stats: ScenarioStats[]): string[] {
  const out: string[] = [];
  for (const versus of ["capnweb", "agents", "floor"]) {
    const leads: string[] = [];
    const trails: string[] = [];
    const mixed: string[] = [];
    for (const s of stats) {
      if (s.info.set !== "main") continue;
      const ratio = pairedRatio(s, "dorpc", versus);
      if (!ratio) continue;
      const better = s.metric === "p50" ? (v: number) => v < 1 : (v: number) => v > 1;
      const text = `${s.info.group === "payload" ? "" : `${s.info.group}: `}${s.info.label} (${fmtRatio(ratio)})`;
      if (better(ratio.min) && better(ratio.max)) leads.push(text);
      else if (!better(ratio.min) && !better(ratio.max) && ratio.min !== 1 && ratio.max !== 1) trails.push(text);
      else mixed.push(text);
    }
    if (!leads.length && !trails.length && !mixed.length) continue;
    const name = versus === "floor" ? "the floor" : displayName(versus);
    out.push(`- **dorpc leads ${name}** in every round (${leads.length}): ${leads.length ? leads.join("; ") : "none"}.`);
    out.push(`- **dorpc trails ${name}** in every round (${trails.length}): ${trails.length ? trails.join("; ") : "none"}.`);
    if (mixed.length) out.push(`- **Mixed across rounds vs ${name}** (${mixed.length}): ${mixed.join("; ")}.`);
  }
  const notRun = stats.flatMap((s) => s.rows.filter((r) => r.status.kind === "unsupported").map((r) => `${r.contender} / ${s.info.id}`));
  if (notRun.length) out.push(`- **Unsupported:** ${notRun.join("; ")}.`);
  const pending = stats.flatMap((s) => s.rows.filter((r) => r.status.kind === "pending").map((r) => `${r.contender} / ${s.info.id}`));
  if (pending.length) out.push(`- **Not run yet (the feature is not built):** ${pending.join("; ")}.`);
  const errors = stats.flatMap((s) =>
    s.rows
      .filter((r) => r.status.kind === "error")
      .map((r) => `${r.contender} / ${s.info.label}: ${"reason" in r.status ? r.status.reason : ""}`),
  );
  if (errors.length) out.push(`- **Errors:** ${errors.join("; ")}.`);
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
  const ratios = stats
    .filter((s) => s.metric === "p50" && s.info.set === "main")
    .map((s) => pairedRatio(s, "floor", "floor-accept")?.median)
    .filter((v): v is number => v != null);
  if (!ratios.length) return undefined;
  return `The same floor protocol on a hibernatable socket (floor) vs a plain accepted one (floor-accept): p50 ratio median ${median(ratios).toFixed(2)} (range ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) over ${ratios.length} latency scenarios. dorpc and the Agents SDK use hibernatable sockets, Cap'n Web's \`newWorkersRpcResponse\` a plain accepted one, so part of any gap to Cap'n Web is this cost and not the RPC layer.`;
}

function modeText(raw: RawRun): string {
  const mode = raw.mode;
  const parts = [raw.quick ? "quick (smoke test: small samples, not for decisions)" : "full"];
  if (mode?.pinned)
    parts.push(
      `pinned: client on CPU ${mode.pinned.client}, wrangler dev and workerd on CPU ${mode.pinned.server} (taskset), blocks twice as long`,
    );
  else parts.push("client and `wrangler dev` share the machine's cores (not pinned)");
  if (mode?.partial)
    parts.push(
      `partial: scenarios ${mode.partial.scenarios?.join(", ") ?? "all"}, contenders ${mode.partial.contenders?.join(", ") ?? "all"}`,
    );
  return parts.join("; ");
}

/** The options the run was started with, as typed after `npm run bench`. */
function command(raw: RawRun): string {
  const options = [raw.quick ? "--quick" : "", raw.mode?.pinned ? "--pinned" : ""];
  const partial = raw.mode?.partial;
  if (partial?.scenarios) options.push(`--scenarios ${partial.scenarios.join(",")}`);
  if (partial?.contenders) options.push(`--contenders ${partial.contenders.join(",")}`);
  if (partial?.rounds) options.push(`--rounds ${partial.rounds}`);
  const used = options.filter(Boolean);
  return used.length ? ` -- ${used.join(" ")}` : "";
}

function environmentTable(raw: RawRun, loadAfter: [number, number, number]): string[] {
  const env = raw.environment;
  const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(" / ");
  const out = ["**Environment**", "", "| | |\n| --- | --- |"];
  out.push(`| mode | ${modeText(raw)} |`);
  out.push(`| Node (client) | ${env.node} |`);
  out.push(`| wrangler / workerd | ${env.wrangler} / ${env.workerd} |`);
  out.push(`| capnweb | ${env.capnweb} |`);
  if (env.agents) out.push(`| agents (Agents SDK) | ${env.agents} |`);
  out.push(`| dorpc | ${env.dorpc}, git ${env.gitHash}${env.gitDirty ? " + uncommitted changes" : ""} |`);
  out.push(`| compatibility date (flags) | ${env.compatibilityDate} (${env.compatibilityFlags}) |`);
  if (env.localObservability !== undefined) {
    out.push(
      `| wrangler dev local observability (X_LOCAL_OBSERVABILITY) | ${env.localObservability ? "on (wrangler's default): a trace stored per invocation" : "off (the bench's default; --local-observability turns it on)"} |`,
    );
  }
  out.push(
    `| server CPU | ${raw.serverCpu ? "measured from /proc (the Worker's workerd process and wrangler dev's proxy workerd, separately)" : "not measured (no /proc)"} |`,
  );
  out.push(`| CPU | ${env.cpuModel}, ${env.cores} cores, ${env.memoryGiB} GiB, ${env.os} |`);
  out.push(
    `| load average 1/5/15 min | before ${load(raw.loadBefore)}; after measuring ${load(raw.loadAfterMeasuring)}; at the end ${load(loadAfter)} |`,
  );
  return out;
}

export function entryMarkdown(
  raw: RawRun,
  stats: ScenarioStats[],
  targets: Targets,
  links: EntryLinks,
  loadAfter: [number, number, number],
  wallSeconds: number,
): string {
  const env = raw.environment;
  const contenders = raw.contenders
    .map((c) => `\`${c.name}\`: ${c.label}${c.wire ? `; wire: ${c.wire}` : ""}${c.pending ? ` (not run yet: ${c.pending})` : ""}`)
    .join("; ");
  const parts: string[] = [];
  const tags = [raw.quick ? "QUICK" : "", raw.mode?.pinned ? "PINNED" : "", raw.mode?.partial ? "PARTIAL" : ""].filter(Boolean);
  parts.push(
    `## ${raw.startedAt} · ${env.gitHash}${env.gitDirty ? " (dirty)" : ""}${tags.map((t) => ` · ${t}`).join("")} · ${raw.description || "(no description)"}`,
  );
  parts.push("");
  parts.push(
    `Generated by \`npm run bench${command(raw)}\`. Mode: **${modeText(raw)}**. Wall time ${(wallSeconds / 60).toFixed(1)} min. Raw samples and percentiles: [${links.json}](${links.json}).`,
  );
  parts.push("", ...environmentTable(raw, loadAfter), "");
  parts.push(
    `**Configuration:** ${raw.rounds} rounds; a round is one or more passes, and in each pass every contender runs one block per scenario, order A→Z and Z→A alternating; warm-up before timing; gc() between blocks; no sample dropped; percentiles pool every sample of every block. Contenders: ${contenders}.`,
  );
  parts.push("", "<details><summary>Block sizes</summary>\n", configTable(raw), "\n</details>", "");
  parts.push("**Summary (generated)**", "", ...generatedSummary(stats));
  const hib = hibernationNote(stats);
  if (hib) parts.push(`- ${hib}`);
  parts.push(`- Noise: ${noiseSummary(stats)}`, "");
  parts.push(
    "**Targets: floor and peers** (per plain-call latency scenario: ratios are dorpc ÷ other, formed per round, then median [min–max]; p99 pools every sample and is judged only when both sides have n ≥ 2,000; n is samples per contender)",
    "",
    ...targetSummary(targets),
    "",
    targetMatrix(targets),
    "",
    "**Targets: bytes, features, guarantees, bundle**",
    "",
    targetList(targets.list),
    "",
  );
  parts.push(...costsSection(raw, stats), "");
  parts.push(...microSection(raw.micro), "", ...bundleSection(raw.bundle), "");
  if (links.charts.length) {
    parts.push(`**Charts:** ${links.charts.map((c) => `[${c.title}](${c.href})`).join(" · ")}`, "");
    for (const c of links.charts) parts.push(`![${c.title}](${c.href})`);
    parts.push("");
  }
  for (const group of GROUP_ORDER) {
    const inGroup = stats.filter((s) => s.info.group === group);
    if (!inGroup.length) continue;
    parts.push(`**${GROUP_TITLES[group]}**`, "", scenarioTable(inGroup), "");
  }
  if (raw.typeSupport.length) {
    parts.push("**Type support** (one echo each, checked for structural equality, not timed)", "", typeSupportTable(raw), "");
  }
  return parts.join("\n");
}

export const LOG_HEADER = `# Measurements

This file is generated by \`npm run bench\` (docs/performance.md explains the method and how to read it).
Never edit it by hand: every run appends one entry at the end, newest last. Each entry links its raw
samples (bench/results/*.json) and its charts (docs/measurements/).

`;

/** Plain-text summary for the terminal: p50 (or calls/s) per contender and dorpc's ratios. */
export function terminalSummary(stats: ScenarioStats[], targets: Targets, contenders: string[]): string {
  const head = ["scenario", ...contenders, "÷capnweb", "÷agents", "÷floor"];
  const rows: string[][] = [];
  for (const s of stats) {
    const value = (name: string) => {
      const row = s.rows.find((r) => r.contender === name);
      if (!row) return "";
      if (row.status.kind !== "ok" && !row.latency) return row.status.kind;
      return s.metric === "p50" ? fmtUs(row.latency?.p50) : `${fmtRate(row.callsPerSec)}/s`;
    };
    const ratio = (versus: string) => fmtRatio(pairedRatio(s, "dorpc", versus));
    rows.push([s.info.id, ...contenders.map(value), ratio("capnweb"), ratio("agents"), ratio("floor")]);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const out = [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)];
  out.push(
    "",
    "p50 latency per sample, or calls/s for inflight-*/clients-*; ratios dorpc ÷ other, median [min–max] of per-round ratios.",
    "",
    "Targets:",
  );
  for (const t of targets.summary)
    out.push(
      `  ${t.met}/${t.judged} met${t.notJudged ? ` (${t.notJudged} not judged)` : ""}  ${t.label}${t.missed.length ? `; missed: ${t.missed.join(", ")}` : ""}`,
    );
  for (const t of targets.list) {
    const result = t.met === null ? "not measured" : t.met ? "MET" : "MISSED";
    out.push(
      `  ${result.padEnd(12)} ${t.label}: ${fmtRatio(t.value, t.op === "≤" ? t.bound : undefined)} (bound ${t.op} ${t.bound})${t.note ? ` — ${cell(t.note)}` : ""}`,
    );
  }
  return out.join("\n");
}
