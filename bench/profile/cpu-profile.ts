/**
 * Reading a V8 CPU profile (the `Profiler.stop` result of the DevTools protocol, the same for
 * Node and workerd): where the sampled time went, as self time per function and per kind
 * (JavaScript, native "(program)", garbage collection, idle), divided by the calls made while it
 * ran. Sampling is statistical: a function with a handful of samples is noise.
 */

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The pseudo-frames V8 uses for time not spent in a JavaScript function. */
const NATIVE = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

export interface ProfileSummary {
  /** Wall time the profile covers, µs. */
  spanUs: number;
  samples: number;
  /** µs per call, by kind. `busy` = everything but idle. */
  perCall: { js: number; program: number; gc: number; idle: number; busy: number };
  /** The functions with the most self time, µs per call, most first. */
  top: { name: string; where: string; usPerCall: number; share: number }[];
}

function where(frame: CallFrame): string {
  if (!frame.url) return "";
  const file = frame.url.slice(frame.url.lastIndexOf("/") + 1);
  return `${file}:${frame.lineNumber + 1}`;
}

/** Self time per profile node, µs: each sample is charged the interval until the next one. */
function selfTimes(profile: CpuProfile): Map<number, number> {
  const self = new Map<number, number>();
  const { samples, timeDeltas } = profile;
  const mean = samples.length > 0 ? (profile.endTime - profile.startTime) / samples.length : 0;
  for (let i = 0; i < samples.length; i++) {
    const interval = i + 1 < timeDeltas.length ? timeDeltas[i + 1]! : mean;
    self.set(samples[i]!, (self.get(samples[i]!) ?? 0) + Math.max(0, interval));
  }
  return self;
}

export function summarize(profile: CpuProfile, calls: number, topN = 15): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const perFunction = new Map<string, { name: string; where: string; us: number }>();
  const kinds = { js: 0, program: 0, gc: 0, idle: 0 };
  for (const [id, us] of selfTimes(profile)) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    const name = frame.functionName || "(anonymous)";
    if (name === "(idle)") kinds.idle += us;
    else if (name === "(program)" || name === "(root)") kinds.program += us;
    else if (name === "(garbage collector)") kinds.gc += us;
    else kinds.js += us;
    if (NATIVE.has(name) && name !== "(program)" && name !== "(garbage collector)") continue;
    const key = `${name}\u0000${where(frame)}`;
    const entry = perFunction.get(key) ?? { name, where: where(frame), us: 0 };
    entry.us += us;
    perFunction.set(key, entry);
  }
  const busy = kinds.js + kinds.program + kinds.gc;
  const n = Math.max(1, calls);
  return {
    spanUs: profile.endTime - profile.startTime,
    samples: profile.samples.length,
    perCall: { js: kinds.js / n, program: kinds.program / n, gc: kinds.gc / n, idle: kinds.idle / n, busy: busy / n },
    top: [...perFunction.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, topN)
      .map((entry) => ({ name: entry.name, where: entry.where, usPerCall: entry.us / n, share: busy > 0 ? entry.us / busy : 0 })),
  };
}
