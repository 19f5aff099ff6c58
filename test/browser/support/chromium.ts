/**
 * Headless Chromium for the browser tier, from the registry only: `@sparticuz/chromium` ships a
 * brotli-compressed Chromium inside the npm package (so `npm ci` is all a fresh machine needs)
 * and `puppeteer-core` drives it. Nothing is downloaded at test time.
 *
 * If Chromium cannot start, `launchChromium` throws an error that says what failed and how to
 * fix it: the tier fails loudly and is never skipped.
 */
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer, { type Browser } from "puppeteer-core";
import { run } from "../../support/run.js";
import { REPO_ROOT } from "../../support/wrangler-dev.js";

/**
 * Flags for a quiet browser on a shared, offline CI box: no sandbox (containers run as root),
 * no GPU, and none of the background services whose connection attempts would otherwise flood
 * a machine without internet.
 */
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-extensions",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-dev-shm-usage",
];

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, "node_modules/@sparticuz/chromium/package.json"), "utf8")) as { version: string })
  .version;

/**
 * Where the package's Chromium is unpacked: a directory of our own per version, not the shared
 * `$TMPDIR/chromium` the package would use (another checkout or another version on the same
 * machine would otherwise race us for it, or hand us its binary).
 */
const CACHE = join(REPO_ROOT, "node_modules/.cache/dorpc-chromium", VERSION);

let executable: Promise<string> | undefined;

/**
 * Unpacks Chromium once per version; concurrent and interrupted runs never see a half-written
 * binary. The package unpacks into os.tmpdir(), so a child process does it with TMPDIR pointing
 * at a fresh staging directory (changing TMPDIR in this process would leak into whatever it
 * spawns meanwhile), and the finished result moves into place in one rename.
 */
export function unpackChromium(): Promise<string> {
  executable ??= (async () => {
    const binary = join(CACHE, "chromium");
    if (existsSync(binary)) return binary;
    const staging = `${CACHE}.partial-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    const script = 'import("@sparticuz/chromium").then((m) => m.default.executablePath()).then((path) => console.log(path))';
    await run(process.execPath, ["--input-type=module", "-e", script], {
      cwd: join(REPO_ROOT, "test"),
      env: { ...process.env, TMPDIR: staging },
      timeoutMs: 300_000,
    });
    try {
      renameSync(staging, CACHE);
    } catch (error) {
      // Another run finished first: use its copy.
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(binary)) throw error;
    }
    return binary;
  })();
  return executable;
}

/** Shared libraries the dynamic linker cannot find for `binary` (empty when ldd is unavailable). */
function missingLibraries(binary: string): string[] {
  try {
    const out = execFileSync("ldd", [binary], { encoding: "utf8" });
    return out
      .split("\n")
      .filter((line) => line.includes("not found"))
      .map((line) => line.trim().split(/\s/)[0]!);
  } catch {
    return [];
  }
}

export interface LaunchOptions {
  /** Extra Chromium flags. */
  args?: readonly string[];
}

/** A running headless Chromium with a fresh profile; `close()` also deletes the profile. */
export async function launchChromium(options: LaunchOptions = {}): Promise<Browser> {
  let path: string;
  try {
    path = await unpackChromium();
  } catch (error) {
    throw new Error(
      `The browser tier could not unpack headless Chromium from @sparticuz/chromium ${VERSION} into ${CACHE}: ${String(error)}\n` +
        "Fix: run `npm ci` at the repository root (the package ships the browser; nothing is downloaded), " +
        "check that node_modules/.cache is writable and the disk has ~300 MB free, then run `npm test` again.",
      { cause: error },
    );
  }
  const profile = await mkdtemp(join(tmpdir(), "dorpc-chromium-profile-"));
  try {
    const browser = await puppeteer.launch({
      executablePath: path,
      headless: "shell",
      userDataDir: profile,
      args: [...FLAGS, ...(options.args ?? [])],
      timeout: 60_000,
    });
    // Delete the profile once Chromium has exited: "disconnected" can come while it is still
    // writing there. A profile left behind in the temp directory is harmless, so a failure to
    // delete it is not the test's failure.
    const child = browser.process();
    browser.once("disconnected", () => {
      const exited = child && child.exitCode === null && child.signalCode === null ? once(child, "exit") : Promise.resolve();
      void exited.then(() => rm(profile, { recursive: true, force: true, maxRetries: 3 })).catch(() => {});
    });
    return browser;
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    const missing = missingLibraries(path);
    throw new Error(
      `The browser tier could not start headless Chromium (${path}): ${String(error)}\n` +
        (missing.length > 0
          ? `Chromium cannot load these shared libraries: ${missing.join(", ")}. Install the packages that provide them ` +
            "(on Debian/Ubuntu: `apt-get install libnss3 libatk-bridge2.0-0 libgbm1 libasound2 libxkbcommon0 libxcomposite1 libxdamage1 libxrandr2`), "
          : "Fix: ") +
        `delete ${CACHE} if it may be half-written, then run \`npm test\` again.`,
      { cause: error },
    );
  }
}
