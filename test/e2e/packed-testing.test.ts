/**
 * @dorpc/testing from the packed packages, in a fresh app: `npm pack`s @dorpc/rpc, @dorpc/routing
 * and @dorpc/testing as they are built now, installs the tarballs into a new temporary project
 * with vitest and @cloudflare/vitest-plugin from the registry, copies in the sources and tests of
 * examples/testing-counter (a user's project: Worker, Durable Object, Vitest suite), and runs its
 * typecheck and its tests there. What this proves that the workspace cannot: the exports maps,
 * the `files` lists and the types work for someone who installs the packages.
 *
 * Needs the packages built (`npm test` builds them first) and the npm registry (or npm's cache).
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const EXAMPLE = join(ROOT, "examples/testing-counter");
const PACKAGES = ["rpc", "routing", "testing"] as const;
/** What the fresh app installs from the registry: the versions this repository is tested with. */
const REGISTRY_DEV_DEPENDENCIES = ["vitest", "@cloudflare/vitest-plugin", "@cloudflare/workers-types", "typescript"] as const;

interface Run {
  code: number | null;
  stdout: string;
  /** stdout and stderr interleaved, for failure messages. */
  output: string;
}

/** Runs `command` in `cwd` with this process's Node first on PATH (npm scripts here run Node 22). */
function run(command: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`, CI: "1", NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, stdout, output }));
  });
}

/** Installed version of `name` in the repository, so the fresh app gets the same one. */
function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
}

interface PackResult {
  filename: string;
  files: { path: string }[];
}

let app: string;
const packed = new Map<string, PackResult>();

beforeAll(async () => {
  for (const name of PACKAGES) {
    if (!existsSync(join(ROOT, "packages", name, "dist/index.js"))) {
      throw new Error(`packages/${name}/dist is missing: run \`npm run build\` first (npm test does).`);
    }
  }
  app = mkdtempSync(join(tmpdir(), "dorpc-packed-testing-"));
  const tarballs = join(app, "tarballs");
  mkdirSync(tarballs);
  for (const name of PACKAGES) {
    const pack = await run("npm", ["pack", join(ROOT, "packages", name), "--pack-destination", tarballs, "--json"], app);
    expect(pack.code, pack.output).toBe(0);
    const [result] = JSON.parse(pack.stdout) as PackResult[];
    packed.set(name, result!);
  }

  // The app: the example's own files, with its workspace dependencies replaced by the tarballs.
  for (const entry of ["src", "test", "vitest.config.ts", "wrangler.toml", "tsconfig.json", "worker-configuration.d.ts"]) {
    cpSync(join(EXAMPLE, entry), join(app, entry), { recursive: true });
  }
  const tarball = (name: string) => `file:./tarballs/${packed.get(name)!.filename}`;
  const manifest = {
    name: "fresh-app",
    private: true,
    type: "module",
    scripts: { test: "vitest run", typecheck: "tsc" },
    dependencies: { "@dorpc/rpc": tarball("rpc"), "@dorpc/routing": tarball("routing") },
    devDependencies: {
      "@dorpc/testing": tarball("testing"),
      ...Object.fromEntries(REGISTRY_DEV_DEPENDENCIES.map((name) => [name, installedVersion(name)])),
    },
  };
  writeFileSync(join(app, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  const install = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], app);
  expect(install.code, install.output).toBe(0);
}, 600_000);

afterAll(() => {
  if (app && !process.env.DORPC_KEEP_PACKED_APP) rmSync(app, { recursive: true, force: true });
});

describe("@dorpc/testing installed from its tarball", () => {
  it("the tarball holds the built entry points, README and LICENSE, and no sources", () => {
    const files = packed.get("testing")!.files.map((file) => file.path);
    expect(files).toEqual(
      expect.arrayContaining(["dist/index.js", "dist/index.d.ts", "dist/outside-workerd.js", "README.md", "LICENSE", "package.json"]),
    );
    expect(files.filter((path) => path.startsWith("src/"))).toEqual([]);
  });

  it("the user's project typechecks against the installed types", async () => {
    const typecheck = await run("npm", ["run", "typecheck"], app);
    expect(typecheck.code, typecheck.output).toBe(0);
  }, 120_000);

  it("the user's Vitest suite passes in the Workers pool", async () => {
    const test = await run("npm", ["test"], app);
    expect(test.code, test.output).toBe(0);
    expect(test.output).toMatch(/Tests\s+6 passed \(6\)/);
  }, 300_000);

  it("imported from Node it throws the error that says where it runs", async () => {
    const node = await run(process.execPath, ["--input-type=module", "-e", 'await import("@dorpc/testing")'], app);
    expect(node.code).not.toBe(0);
    expect(node.output).toContain("@dorpc/testing runs only inside the Workers Vitest pool");
  });
});
