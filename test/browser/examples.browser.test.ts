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
import { startCuttableProxy } from "./support/cuttable-proxy.js";
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

describe("examples/chat", () => {
  /** The page's chat log as "seq from: text" lines, in the order shown. */
  const chatLog = (page: Page) =>
    page.$$eval("#log li", (items) =>
      items.map(
        (item) =>
          `${(item as HTMLElement).dataset.seq} ${item.querySelector("b")?.textContent}: ${item.querySelector("span")?.textContent}`,
      ),
    );
  const waitForLog = (page: Page, lines: number) =>
    page.waitForFunction((n) => document.querySelectorAll("#log li").length >= n, {}, lines);
  const waitForText = (page: Page, selector: string, text: string) =>
    page.waitForFunction((selector, text) => document.querySelector(selector)?.textContent === text, {}, selector, text);
  async function say(page: Page, text: string) {
    await page.type("#text", text);
    await page.keyboard.press("Enter");
  }

  it("two pages chat; one loses its connection, the other goes on, and it comes back with exactly the messages it missed; a reload shows the history", async () => {
    const dev = await startExample("chat");
    // Bob's page goes through a proxy whose connections the test cuts: a network that drops.
    const network = await startCuttableProxy(dev.port);
    cleanup.push(() => network.close());
    const ann = await open(`${dev.baseUrl}/?name=ann`);
    const bob = await open(`${network.baseUrl}/?name=bob`);
    for (const { page } of [ann, bob]) {
      await page.waitForSelector("#send:not([disabled])");
      await waitForText(page, "#online", "ann, bob"); // presence, broadcast by the room
    }

    await say(ann.page, "hi bob");
    await waitForLog(bob.page, 1);
    await say(bob.page, "hi ann");
    await waitForLog(ann.page, 2);
    await waitForLog(bob.page, 2);
    const before = ["1 ann: hi bob", "2 bob: hi ann"];
    expect(await chatLog(ann.page)).toEqual(before);
    expect(await chatLog(bob.page)).toEqual(before);

    // Bob's network drops; the room tells ann that bob is gone, and ann goes on talking.
    network.cut();
    await waitForText(bob.page, "#state", "reconnecting");
    await waitForText(ann.page, "#online", "ann");
    for (const text of ["are you there?", "bob?", "I'll wait"]) await say(ann.page, text);
    await waitForLog(ann.page, 5);
    expect(await chatLog(bob.page)).toEqual(before);

    // Back online: bob's page reconnects by itself and is sent exactly what it missed, in order.
    network.restore();
    await waitForText(bob.page, "#state", "open");
    await waitForLog(bob.page, 5);
    await waitForText(ann.page, "#online", "ann, bob");
    await say(bob.page, "back!");
    await waitForLog(ann.page, 6);
    await waitForLog(bob.page, 6);
    const all = [...before, "3 ann: are you there?", "4 ann: bob?", "5 ann: I'll wait", "6 bob: back!"];
    expect(await chatLog(ann.page)).toEqual(all);
    expect(await chatLog(bob.page)).toEqual(all);
    expect(network.cuts).toBeGreaterThan(0);

    // A fresh page load shows the room's history.
    await bob.page.reload();
    await bob.page.waitForSelector("#send:not([disabled])");
    expect(await chatLog(bob.page)).toEqual(all);

    expect(ann.errors).toEqual([]);
    expect(bob.errors).toEqual([]);
    await ann.page.close();
    await bob.page.close();
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
