/**
 * Packs the published packages with `npm pack`, exactly as `npm publish` would upload them, from
 * the `dist/` that `npm test` has just built.
 */
import { join } from "node:path";
import { run, userEnv } from "../support/run.js";
import { REPO_ROOT } from "../support/wrangler-dev.js";

/** The packages users install, by workspace folder. */
export const PUBLISHED = ["rpc", "routing", "react", "testing"] as const;

export interface Tarball {
  /** `@dorpc/rpc`, … */
  readonly name: string;
  /** Absolute path of the .tgz. */
  readonly path: string;
  /** Paths inside the package, as npm lists them. */
  readonly files: readonly string[];
  /** The package.json as published. */
  readonly manifest: Record<string, unknown>;
}

export async function packTarballs(destination: string): Promise<Tarball[]> {
  const args = ["pack", "--json", "--pack-destination", destination, ...PUBLISHED.map((folder) => `--workspace=packages/${folder}`)];
  const { stdout } = await run("npm", args, { cwd: REPO_ROOT, env: userEnv(), timeoutMs: 120_000 });
  const packed = JSON.parse(stdout) as { name: string; filename: string; files: { path: string }[] }[];
  return Promise.all(
    packed.map(async (entry) => {
      const path = join(destination, entry.filename);
      // The manifest as it is inside the tarball, not as it is in the repository.
      const manifest = await run("tar", ["-xzOf", path, "package/package.json"], { cwd: destination });
      return {
        name: entry.name,
        path,
        files: entry.files.map((file) => file.path),
        manifest: JSON.parse(manifest.stdout) as Record<string, unknown>,
      };
    }),
  );
}
