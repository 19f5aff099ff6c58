/**
 * The README's quick start, run as a new user would on a clean machine: the packed tarballs
 * installed into a fresh app in a temp directory, the README's own setup commands and files
 * (read from README.md, see quickstart-readme.ts), `wrangler dev`, then the README's client.
 *
 * Twice: on Node 20 with the wrangler npm gives a Node 20 user (4.86 when this was written:
 * later wranglers need Node 22, and npm picks by `engines`), and on Node 22 with the current
 * wrangler. Node 20 comes from the registry (`node@20`, cached under node_modules/.cache), so
 * the test does not depend on what Node the machine has; Node 22 is the repo's `node@22`.
 *
 * The only change made to what the README says: the client's `http://127.0.0.1:8787` becomes
 * the port this test's `wrangler dev` listens on (8787 may be taken on a shared machine).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, userEnv } from "../support/run.js";
import { REPO_ROOT, startWranglerDev } from "../support/wrangler-dev.js";
import { readQuickStart } from "./quickstart-readme.js";
import { packTarballs, type Tarball } from "./tarballs.js";

const README_URL = "http://127.0.0.1:8787";

/** A client of the quick start's Counter over HTTP batches (the README's calls left it at 2). */
const HTTP_CLIENT = `import { createRpcClient, httpTransport } from "@dorpc/rpc";
import type { Counter } from "./src/index.js";

const counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl: "${README_URL}", transport: httpTransport() });
console.log(await Promise.all([counter.increment(3), counter.getValue()]));
`;

let work: string;
let tarballs: Tarball[];
const quickStart = readQuickStart();

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "dorpc-quickstart-"));
  tarballs = await packTarballs(work);
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** The directory holding the `node` binary of the given major version. */
async function nodeBinDir(major: 20 | 22): Promise<string> {
  if (major === 22) return join(REPO_ROOT, "node_modules/node/bin");
  const toolchain = join(REPO_ROOT, "node_modules/.cache/dorpc-quickstart/node20");
  const bin = join(toolchain, "node_modules/node/bin");
  if (!existsSync(join(bin, "node"))) {
    await mkdir(toolchain, { recursive: true });
    await writeFile(join(toolchain, "package.json"), '{ "private": true }\n');
    await run("npm", ["install", "--no-save", "--no-audit", "--no-fund", "node@20"], {
      cwd: toolchain,
      env: userEnv(),
      timeoutMs: 300_000,
    });
  }
  return bin;
}

/**
 * A user's environment: the chosen Node first on PATH, and none of this repository's
 * node_modules/.bin (its wrangler, tsx and Node 22) nor what npm sets for `npm test`.
 */
function userShell(binDir: string): Record<string, string> {
  const path = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((entry) => entry !== "" && !entry.startsWith(REPO_ROOT) && !entry.includes("node-gyp-bin"));
  const env = userEnv({ PATH: [binDir, ...path].join(delimiter), NO_COLOR: "1", WRANGLER_SEND_METRICS: "false" });
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** The setup line with each `@dorpc/…` package name replaced by its packed tarball. */
function withTarballs(line: string): string {
  return line.replace(/@dorpc\/[a-z-]+/g, (name) => {
    const tarball = tarballs.find((candidate) => candidate.name === name);
    if (!tarball) throw new Error(`The README installs ${name}, which is not a published package of this repository.`);
    return tarball.path;
  });
}

describe.each([20, 22] as const)("README quick start on Node %i", (major) => {
  it("installs the packed tarballs into a fresh app, starts the README's Worker and prints what the README says", async () => {
    const binDir = await nodeBinDir(major);
    const env = userShell(binDir);
    const node = join(binDir, "node");
    expect((await run(node, ["--version"], { cwd: work, env })).stdout.trim()).toMatch(new RegExp(`^v${major}\\.`));

    const app = join(work, `app-node${major}`);
    await mkdir(app);
    for (const line of quickStart.setup) await run("sh", ["-c", withTarballs(line)], { cwd: app, env, timeoutMs: 300_000 });
    for (const [path, content] of Object.entries(quickStart.files)) {
      await mkdir(dirname(join(app, path)), { recursive: true });
      await writeFile(join(app, path), content);
    }

    const wrangler = JSON.parse(await readFile(join(app, "node_modules/wrangler/package.json"), "utf8")) as { version: string };
    console.log(`Node ${major}: npm installed wrangler ${wrangler.version}`);

    expect(quickStart.start[0]).toBe("npx wrangler dev");
    const dev = await startWranglerDev({ cwd: app, node, config: "wrangler.toml", env, timeoutMs: 120_000 });
    try {
      const client = quickStart.files["client.ts"]!;
      expect(client).toContain(README_URL);
      await writeFile(join(app, "client.ts"), client.replaceAll(README_URL, dev.baseUrl));
      // Node 22 and later: the README's command as written. Node 20: the one its prose gives.
      const command = major === 20 ? quickStart.node20Client : quickStart.start[1]!;
      const { stdout } = await run("sh", ["-c", command], { cwd: app, env, timeoutMs: 120_000 });
      expect(stdout.trim().split("\n")).toEqual(quickStart.output);

      // The same object without a socket, from the packed packages: an HTTP batch client (one
      // POST for the calls of one turn) and the JSON form `curl` sends.
      await writeFile(join(app, "http-client.ts"), HTTP_CLIENT.replaceAll(README_URL, dev.baseUrl));
      const http = await run("sh", ["-c", command.replace("client.ts", "http-client.ts")], { cwd: app, env, timeoutMs: 120_000 });
      expect(http.stdout.trim().split("\n")).toEqual(["[ 5, 5 ]"]);
      const curl = await fetch(`${dev.baseUrl}/__rpc/COUNTER/room-1`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ method: "getValue" }),
      });
      expect(await curl.json()).toEqual({ result: 5 });
    } catch (error) {
      throw new Error(`${String(error)}\nwrangler dev printed:\n${dev.output().slice(-4000)}`, { cause: error });
    } finally {
      await dev.stop();
    }
  });
});
