/**
 * `@dorpc/react` in a real React app in Chromium, under StrictMode in React's development build
 * (page/react-app.tsx): every component is mounted, unmounted and mounted again at once, which
 * is where hooks that own a resource leak it or hand out a closed one.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WranglerDev } from "../support/wrangler-dev.js";
import { startBrowserWorker } from "./support/browser-worker.js";
import { launchChromium } from "./support/chromium.js";
import { SocketLog } from "./support/socket-log.js";

let dev: WranglerDev;
let browser: Browser;
let persistTo: string;

beforeAll(async () => {
  persistTo = await mkdtemp(join(tmpdir(), "dorpc-react-"));
  [dev, browser] = await Promise.all([startBrowserWorker({ persistTo }), launchChromium()]);
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  if (persistTo) await rm(persistTo, { recursive: true, force: true });
});

async function openReactPage(): Promise<{ page: Page; sockets: SocketLog; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  const sockets = await SocketLog.attach(page);
  await page.goto(`${dev.baseUrl}/react.html`);
  await page.waitForSelector("body[data-ready=react]");
  return { page, sockets, errors };
}

/** What the app saw so far (window.reactProbe) and what the DOM shows. */
function snapshot(page: Page) {
  return page.evaluate(() => {
    const main = document.querySelector("main");
    return {
      clients: window.reactProbe.clients.length,
      states: window.reactProbe.states(),
      results: window.reactProbe.results.map((r) => `${r.instance}:${r.value}`).sort(),
      errors: [...window.reactProbe.errors],
      shownState: main?.dataset.state,
      shownInstance: main?.dataset.instance,
      shownValue: document.querySelector("output")?.textContent,
    };
  });
}

const run = Date.now().toString(36);

describe("useRpcClient and useConnectionState under StrictMode", () => {
  it("one client and one socket per mounted tree, a new one per instance, all closed on unmount; never a closed client", async () => {
    const { page, sockets, errors } = await openReactPage();
    const a = `react-a-${run}`;
    const b = `react-b-${run}`;

    await page.evaluate((instance) => window.reactProbe.render(instance), a);
    // StrictMode runs the child's mount effect twice: two increments, both on the one live client.
    await page.waitForFunction(() => window.reactProbe.results.length + window.reactProbe.errors.length >= 2);
    await page.waitForFunction(() => document.querySelector("main")?.dataset.state === "open");
    expect(await snapshot(page)).toMatchObject({
      clients: 1,
      states: ["open"],
      results: [`${a}:1`, `${a}:2`],
      errors: [],
      shownState: "open",
      shownInstance: a,
    });
    expect(sockets.sockets.map((socket) => [new URL(socket.url).pathname, socket.status])).toEqual([[`/__rpc/PROBE/${a}`, 101]]);

    // Another instance: a new client (and socket); the old one is closed.
    await page.evaluate((instance) => window.reactProbe.render(instance), b);
    await page.waitForFunction(() => window.reactProbe.results.length + window.reactProbe.errors.length >= 3);
    await page.waitForFunction(() => document.querySelector("main")?.dataset.state === "open");
    await sockets.until((log) => log.sockets.length === 2 && log.sockets[0]!.closed);
    expect(await snapshot(page)).toMatchObject({
      clients: 2,
      states: ["disposed", "open"],
      results: [`${a}:1`, `${a}:2`, `${b}:1`],
      errors: [],
      shownInstance: b,
    });
    expect(sockets.sockets.map((socket) => new URL(socket.url).pathname)).toEqual([`/__rpc/PROBE/${a}`, `/__rpc/PROBE/${b}`]);
    expect(sockets.open).toHaveLength(1);

    // Unmounting closes the last client and its socket.
    await page.evaluate(() => window.reactProbe.unmount());
    await page.waitForFunction(() => window.reactProbe.states().every((state) => state === "disposed"));
    await sockets.until((log) => log.open.length === 0);
    expect(sockets.sockets).toHaveLength(2);
    expect((await snapshot(page)).errors).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
