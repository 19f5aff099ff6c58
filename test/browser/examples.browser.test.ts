/**
 * The examples (examples/*), each started with the one command its README gives: the two pages
 * with `npm start --workspace=examples/<name>` (build, then `wrangler dev`) and driven in
 * Chromium like a user would, the Node script with `npm start` and its output read.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, userEnv } from "../support/run.js";
import { REPO_ROOT, startWranglerDev, type WranglerDev } from "../support/wrangler-dev.js";
import { launchChromium } from "./support/chromium.js";
import { SocketLog } from "./support/socket-log.js";

let browser: Browser;
const cleanup: (() => Promise<void>)[] = [];

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  for (const step of cleanup.reverse()) await step();
});

/** `npm start` of an example, with its Durable Object storage in a fresh directory. */
async function startExample(name: string): Promise<WranglerDev> {
  const persistTo = await mkdtemp(join(tmpdir(), `dorpc-example-${name}-`));
  const dev = await startWranglerDev({ npmStart: `examples/${name}`, persistTo, timeoutMs: 120_000 });
  cleanup.push(async () => {
    await dev.stop();
    await rm(persistTo, { recursive: true, force: true });
  });
  return dev;
}

async function open(url: string): Promise<{ page: Page; sockets: SocketLog; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  const sockets = await SocketLog.attach(page);
  await page.goto(url);
  return { page, sockets, errors };
}

const text = (page: Page, selector: string) => page.$eval(selector, (element) => element.textContent);

describe("examples/web-page", () => {
  it("serves the page from [assets]; its button increments the Durable Object over one socket", async () => {
    const dev = await startExample("web-page");
    const { page, sockets, errors } = await open(`${dev.baseUrl}/`);
    await page.waitForSelector("#increment:not([disabled])");
    expect(await text(page, "#value")).toBe("0");
    await page.click("#increment");
    await page.waitForFunction(() => document.querySelector("#value")?.textContent === "1");
    await page.click("#increment");
    await page.waitForFunction(() => document.querySelector("#value")?.textContent === "2");
    expect(await text(page, "#state")).toBe("open");
    expect(sockets.sockets.map((socket) => [new URL(socket.url).pathname, socket.status])).toEqual([["/__rpc/COUNTER/web-page", 101]]);

    // The count lives in the object: a reload reads it back.
    await page.reload();
    await page.waitForSelector("#increment:not([disabled])");
    expect(await text(page, "#value")).toBe("2");
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe("examples/react-page", () => {
  it("votes in a room, switches rooms (closing the old room's socket) and reads each room's own tally", async () => {
    const dev = await startExample("react-page");
    const { page, sockets, errors } = await open(`${dev.baseUrl}/`);
    const tallies = () => page.$$eval("button", (buttons) => buttons.map((button) => button.textContent));

    await page.waitForSelector("button.tabs");
    await page.waitForFunction(() => document.querySelector(".state")?.textContent === "open");
    await page.click("button.tabs");
    await page.waitForFunction(() => document.querySelector("button.tabs")?.textContent === "tabs (1)");

    await page.select("select", "kitchen");
    await page.waitForFunction(() => document.querySelector("strong")?.textContent === "kitchen");
    await page.waitForFunction(() => document.querySelector("button.spaces")?.textContent === "spaces (0)");
    await page.click("button.spaces");
    await page.waitForFunction(() => document.querySelector("button.spaces")?.textContent === "spaces (1)");
    expect(await tallies()).toEqual(["tabs (0)", "spaces (1)"]);

    await page.select("select", "lobby");
    await page.waitForFunction(() => document.querySelector("button.tabs")?.textContent === "tabs (1)");
    expect(await tallies()).toEqual(["tabs (1)", "spaces (0)"]);

    // One socket per room visited, only the current one still open.
    await sockets.until((log) => log.sockets.length === 3 && log.open.length === 1);
    expect(sockets.sockets.map((socket) => new URL(socket.url).pathname)).toEqual([
      "/__rpc/ROOM/lobby",
      "/__rpc/ROOM/kitchen",
      "/__rpc/ROOM/lobby",
    ]);
    expect(await page.$("[role=alert]")).toBeNull();
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe("examples/node-script", () => {
  it("`npm start` starts the Worker, calls it from Node (the Map, the RangeError, the Date, a callback reporting progress), then over HTTP batches", async () => {
    const npm = process.env.npm_execpath;
    const { stdout } = await run(
      npm ? process.execPath : "npm",
      [...(npm ? [npm] : []), "start", "--workspace=examples/node-script", "--silent"],
      {
        cwd: REPO_ROOT,
        env: userEnv({ PATH: process.env.PATH }),
        timeoutMs: 120_000,
      },
    );
    expect(stdout.trim().split("\n")).toEqual([
      "stock: { bolts: 25, nuts: 25 }",
      "refused: cannot take 100 nuts: 25 left",
      "last change is a Date: true",
      "restocking: 0/2",
      "restocking: 1/2",
      "restocking: 2/2",
      "restocked: { bolts: 35, nuts: 25, washers: 100 }",
      "over HTTP, stock: { bolts: 25, nuts: 25 }",
      "over HTTP, refused: cannot take 100 nuts: 25 left",
      "over HTTP, restock: NOT_CALLABLE, bolts still 25",
    ]);
    // The README shows what it prints: the same lines.
    const readme = await readFile(join(REPO_ROOT, "examples/node-script/README.md"), "utf8");
    const printed = /It prints:\n\n```\n([\s\S]*?)\n```/.exec(readme)?.[1];
    expect(printed?.split("\n")).toEqual(stdout.trim().split("\n"));
  });
});
