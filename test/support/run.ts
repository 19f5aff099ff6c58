/**
 * Runs a command to its end and returns its output; for tests that drive npm, Node and tools
 * the way a user would. The command gets its own process group, killed as a whole when the
 * test's bound runs out (npm and wrangler start children of their own); a failure says which
 * command, where, and what it printed.
 */
import { spawn } from "node:child_process";

export interface RunOptions {
  cwd: string;
  /** The whole environment of the command (not merged with this process's). */
  env?: NodeJS.ProcessEnv;
  /** Kill the command (and its children) after this many ms. Default 300,000. */
  timeoutMs?: number;
  /** Resolve even when the command exits with a non-zero code. Default false: reject. */
  allowFailure?: boolean;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function run(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const describe = () => `\`${[command, ...args].join(" ")}\` in ${options.cwd}`;
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    };
    process.once("exit", killGroup);
    const limit = options.timeoutMs ?? 300_000;
    const timer = setTimeout(() => {
      killGroup();
      reject(
        new Error(`${describe()} did not finish within ${limit} ms.\nstdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}`),
      );
    }, limit);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`${describe()} could not start: ${error.message}`));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      process.off("exit", killGroup);
      killGroup(); // children it left behind
      if (code !== 0 && !options.allowFailure) {
        reject(new Error(`${describe()} exited with ${code}.\nstdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}`));
      } else {
        resolve({ code, stdout, stderr });
      }
    });
  });
}

/**
 * This process's environment without what npm sets for the script it runs (`npm_config_*`,
 * `npm_package_*`, `INIT_CWD`, …): a command run with it behaves as if a user typed it, not as
 * part of this repository's `npm test` (an inherited `npm_config_workspace` would redirect npm).
 */
export function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || key === "INIT_CWD" || key === "NODE") continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}
