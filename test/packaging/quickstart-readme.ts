/**
 * The README's quick start, read from README.md itself, so the packaging test runs what the
 * README says and the two cannot drift apart. Each part is found by the line that introduces
 * it (a file by its backticked path); a README that no longer has a part fails with its name.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../support/wrangler-dev.js";

export interface QuickStart {
  /** Shell lines of the first `sh` block: the project setup and installs. */
  readonly setup: readonly string[];
  /** The files to create, by path: wrangler.toml, src/index.ts, client.ts. */
  readonly files: Readonly<Record<string, string>>;
  /** Shell lines of the second `sh` block: start the Worker, run the client (Node 22+). */
  readonly start: readonly string[];
  /** The command the prose gives for running the client on Node 20. */
  readonly node20Client: string;
  /** What the client prints, from the `// …` comments of its `console.log` lines. */
  readonly output: readonly string[];
}

interface Block {
  readonly lang: string;
  /** The paragraph before the fence, its lines joined. */
  readonly intro: string;
  readonly code: string;
}

function blocks(section: string): Block[] {
  const found: Block[] = [];
  const lines = section.split("\n");
  let intro = "";
  let paragraph: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w+)$/.exec(lines[i]!);
    if (!fence) {
      if (lines[i]!.trim() === "") {
        if (paragraph.length > 0) intro = paragraph.join(" ");
        paragraph = [];
      } else {
        paragraph.push(lines[i]!);
      }
      continue;
    }
    if (paragraph.length > 0) intro = paragraph.join(" ");
    paragraph = [];
    const end = lines.indexOf("```", i + 1);
    if (end === -1) throw new Error(`README quick start: unterminated code block after ${JSON.stringify(intro)}`);
    found.push({ lang: fence[1]!, intro, code: `${lines.slice(i + 1, end).join("\n")}\n` });
    i = end;
  }
  return found;
}

const shellLines = (code: string) =>
  code
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));

export function readQuickStart(): QuickStart {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const from = readme.indexOf("\n## Quick start\n");
  if (from === -1) throw new Error('README.md has no "## Quick start" section.');
  const to = readme.indexOf("\n## ", from + 1);
  const section = readme.slice(from, to === -1 ? undefined : to);
  const all = blocks(section);

  const shell = all.filter((block) => block.lang === "sh");
  if (shell.length !== 2) throw new Error(`README quick start: expected 2 sh blocks (setup, start), found ${shell.length}.`);

  const files: Record<string, string> = {};
  for (const path of ["wrangler.toml", "src/index.ts", "client.ts"]) {
    const block = all.find((candidate) => candidate.intro.startsWith(`\`${path}\``));
    if (!block) throw new Error(`README quick start: no code block introduced by \`${path}\`.`);
    files[path] = block.code;
  }

  const node20 = /`(node --experimental-websocket [^`]+)`/.exec(section);
  if (!node20) throw new Error("README quick start: no `node --experimental-websocket …` command for Node 20.");

  const output = [...files["client.ts"]!.matchAll(/console\.log\(.*\);\s*\/\/\s*(.+)$/gm)].map((match) => match[1]!.trim());
  if (output.length === 0)
    throw new Error("README quick start: the client prints nothing the test could check (`console.log(…); // expected`).");

  return { setup: shellLines(shell[0]!.code), files, start: shellLines(shell[1]!.code), node20Client: node20[1]!, output };
}
