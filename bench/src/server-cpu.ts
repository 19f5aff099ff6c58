/**
 * Server CPU, measured from outside: the CPU time the kernel charged to workerd's threads during
 * a timed region (`/proc/<pid>/task/<tid>/schedstat`, nanoseconds on CPU), read before and after.
 * No profiler, no sampling, no estimate: the same counter `top` uses, at full resolution.
 *
 * `wrangler dev` runs two workerd processes: the Worker under test (the one with the DevTools
 * inspector) and a proxy worker in front of it that every request and WebSocket frame passes
 * through. Both are reported, separately: the proxy is a local-development artifact (production
 * has no such hop), the Worker's process is what a call costs the server. Both also include
 * workerd's own runtime work (sockets, SQLite, timers), which is part of serving a call.
 *
 * Only on Linux with /proc; elsewhere nothing is measured and the report says so.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";

export interface ServerPids {
  /** The workerd process running the Worker and its Durable Objects. */
  worker: number[];
  /** wrangler dev's proxy workerd in front of it. */
  proxy: number[];
}

interface ProcEntry {
  ppid: number;
  comm: string;
}

function processTable(): Map<number, ProcEntry> {
  const table = new Map<number, ProcEntry>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const fields = stat.slice(close + 2).split(" ");
      table.set(Number(name), { ppid: Number(fields[1]), comm: stat.slice(stat.indexOf("(") + 1, close) });
    } catch {
      // exited meanwhile
    }
  }
  return table;
}

/** Every live descendant of `root` (children, grandchildren, …). */
export function descendants(root: number): number[] {
  if (!existsSync("/proc/self/stat")) return [];
  const table = processTable();
  const out: number[] = [];
  for (const pid of table.keys()) {
    for (let p = table.get(pid)?.ppid; p !== undefined && p > 1; p = table.get(p)?.ppid) {
      if (p === root) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}

/** The workerd processes `wrangler dev` started under `root` (this process), split into Worker and proxy. */
export function findServerPids(root: number = process.pid): ServerPids {
  const pids: ServerPids = { worker: [], proxy: [] };
  for (const pid of descendants(root)) {
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    const argv = cmdline.split("\0");
    if (!/(^|\/)workerd$/.test(argv[0] ?? "")) continue;
    (argv.some((a) => a.startsWith("--inspector-addr")) ? pids.worker : pids.proxy).push(pid);
  }
  return pids;
}

/**
 * A workerd process the run was measuring is gone: `wrangler dev` restarted it (it watches the
 * Worker's sources, the built packages included, so editing or building `packages/*` during a run
 * restarts it) or it crashed. Every later block would fail the same way, so the run stops.
 */
export class ServerGoneError extends Error {
  constructor(readonly pid: number) {
    super(
      `workerd (pid ${pid}) is gone: wrangler dev restarted or lost its Worker mid-run (editing or building packages/* during a bench run does this). Start the run again.`,
    );
    this.name = "ServerGoneError";
  }
}

/** CPU ns of every thread of `pid` (threads that already exited are not counted: workerd keeps its threads). */
function threadCpuNs(pid: number): number {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new ServerGoneError(pid);
    throw error;
  }
  let total = 0;
  for (const tid of tids) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // thread exited between readdir and read
    }
  }
  return total;
}

export interface ServerCpuReading {
  workerNs: number;
  proxyNs: number;
}

export class ServerCpuMeter {
  constructor(readonly pids: ServerPids) {}

  /** Null when the processes are not readable (not Linux, or gone). */
  static create(pids: ServerPids | undefined): ServerCpuMeter | null {
    if (!pids || pids.worker.length === 0 || !existsSync(`/proc/${pids.worker[0]}/task`)) return null;
    return new ServerCpuMeter(pids);
  }

  /** Throws ServerGoneError when one of the processes has exited. */
  read(): ServerCpuReading {
    const sum = (pids: number[]) => pids.reduce((total, pid) => total + threadCpuNs(pid), 0);
    return { workerNs: sum(this.pids.worker), proxyNs: sum(this.pids.proxy) };
  }
}

/** µs of server CPU between two readings. */
export function serverCpuDelta(before: ServerCpuReading, after: ServerCpuReading): { workerUs: number; proxyUs: number } {
  return { workerUs: (after.workerNs - before.workerNs) / 1e3, proxyUs: (after.proxyNs - before.proxyNs) / 1e3 };
}
