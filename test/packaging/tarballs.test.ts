/**
 * What `npm publish` would upload: every published tarball carries the README, the LICENSE, the
 * built entry points and complete metadata.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/wrangler-dev.js";
import { PUBLISHED, packTarballs, type Tarball } from "./tarballs.js";

let directory: string;
let tarballs: Tarball[];

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "dorpc-pack-"));
  tarballs = await packTarballs(directory);
});

afterAll(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe("published tarballs", () => {
  it("packs every published package", () => {
    expect(tarballs.map((tarball) => tarball.name).sort()).toEqual(PUBLISHED.map((folder) => `@dorpc/${folder}`).sort());
  });

  it.each(PUBLISHED)("@dorpc/%s holds README.md, the root LICENSE and its built entry points, and no sources or tests", async (folder) => {
    const tarball = tarballs.find((candidate) => candidate.name === `@dorpc/${folder}`)!;
    expect(tarball.files).toEqual(expect.arrayContaining(["README.md", "LICENSE", "package.json", "dist/index.js", "dist/index.d.ts"]));
    expect(tarball.files.filter((file) => !/^(dist\/|README\.md$|LICENSE$|package\.json$)/.test(file))).toEqual([]);
    const [license, rootLicense] = await Promise.all([
      readFile(join(REPO_ROOT, "packages", folder, "LICENSE"), "utf8"),
      readFile(join(REPO_ROOT, "LICENSE"), "utf8"),
    ]);
    expect(license).toBe(rootLicense);
    expect(rootLicense).toMatch(/^MIT License/);
    const readme = await readFile(join(REPO_ROOT, "packages", folder, "README.md"), "utf8");
    expect(readme).toMatch(new RegExp(`^# @dorpc/${folder}\\n`));
  });

  it.each(PUBLISHED)("@dorpc/%s has complete metadata: license, author, repository, homepage, bugs, engines", (folder) => {
    const { manifest } = tarballs.find((candidate) => candidate.name === `@dorpc/${folder}`)!;
    expect(manifest).toMatchObject({
      license: "MIT",
      author: expect.any(String),
      repository: { type: "git", url: expect.stringMatching(/^git\+https:\/\/.+\.git$/), directory: `packages/${folder}` },
      homepage: expect.stringMatching(/^https:\/\//),
      bugs: { url: expect.stringMatching(/^https:\/\//) },
      engines: { node: expect.any(String) },
      sideEffects: false,
      files: ["dist"],
    });
    // One repository for all of them.
    const urls = new Set(tarballs.map((tarball) => (tarball.manifest.repository as { url: string }).url));
    expect(urls.size).toBe(1);
  });
});
