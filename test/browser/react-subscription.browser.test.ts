/**
 * `useSubscription` of `@dorpc/react` in a real React app in Chromium, under StrictMode in React's
 * development build (page/subscription-app.tsx), against the Probe object's `news` topic. What
 * the page sends is read from outside it (support/socket-log.ts); what the object holds, from
 * the object (`subscribers`).
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
  persistTo = await mkdtemp(join(tmpdir(), "dorpc-react-subscription-"));
  [dev, browser] = await Promise.all([startBrowserWorker({ persistTo }), launchChromium()]);
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  if (persistTo) await rm(persistTo, { recursive: true, force: true });
});

async function openPage(): Promise<{ page: Page; sockets: SocketLog; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  const sockets = await SocketLog.attach(page);
  await page.goto(`${dev.baseUrl}/subscription.html`);
  await page.waitForSelector("body[data-ready=subscription]");
  return { page, sockets, errors };
}

let instances = 0;
const freshInstance = (label: string) => `${label}-${Date.now().toString(36)}-${instances++}`;

/** The subscribe and unsubscribe calls the page sent (system calls name them in their chain). */
const SUBSCRIBE = '"subscribe"';
const UNSUBSCRIBE = '"unsubscribe"';

const events = (page: Page) => page.evaluate(() => window.subscriptionProbe.events.map((e) => `${e.label}:${e.seq}:${e.text}`));
const announce = (page: Page, instance: string, text: string) =>
  page.evaluate((instance, text) => window.subscriptionProbe.announce(instance, text), instance, text);
const subscribers = (page: Page, instance: string) =>
  page.evaluate((instance) => window.subscriptionProbe.subscribers(instance, "news"), instance);
const eventCount = (page: Page, n: number) => page.waitForFunction((n) => window.subscriptionProbe.events.length >= n, {}, n);

describe("useSubscription under StrictMode", () => {
  it("one subscribe reaches the object; each event is handled once, in order, by the latest handler, which never resubscribes", async () => {
    const { page, sockets, errors } = await openPage();
    const instance = freshInstance("strict");
    // StrictMode mounts the feed, unmounts it and mounts it again, all in this one render.
    await page.evaluate((instance) => window.subscriptionProbe.render({ instance, topic: "news", feed: true, label: "a" }), instance);
    await page.waitForSelector("output[data-status=ready]");
    expect(await subscribers(page, instance)).toBe(1);

    for (const text of ["one", "two", "three"]) await announce(page, instance, text);
    await eventCount(page, 3);
    // A new label is a new handler function: later events reach it, and nothing is sent again.
    await page.evaluate(() => window.subscriptionProbe.render({ label: "b" }));
    await announce(page, instance, "four");
    await eventCount(page, 4);
    // Order on the socket: a duplicate of an earlier event would have arrived before "four".
    expect(await events(page)).toEqual(["a:1:one", "a:2:two", "a:3:three", "b:4:four"]);
    expect(sockets.sentCount(SUBSCRIBE)).toBe(1);
    expect(sockets.sentCount(UNSUBSCRIBE)).toBe(0);
    expect(await subscribers(page, instance)).toBe(1);

    await page.evaluate(() => window.subscriptionProbe.unmount());
    expect(errors).toEqual([]);
    await page.close();
  });

  it("unmounting the feed closes its subscription on the object, and its handler sees no later event", async () => {
    const { page, sockets, errors } = await openPage();
    const instance = freshInstance("unmount");
    await page.evaluate((instance) => window.subscriptionProbe.render({ instance, topic: "news", feed: true, label: "first" }), instance);
    await page.waitForSelector("output[data-status=ready]");
    await announce(page, instance, "seen");
    await eventCount(page, 1);

    // The feed goes; the client (and its socket) stays with the app.
    await page.evaluate(() => window.subscriptionProbe.render({ feed: false }));
    await sockets.until((log) => log.sentCount(UNSUBSCRIBE) === 1);
    expect(await subscribers(page, instance)).toBe(0);
    await announce(page, instance, "unseen");

    // A new feed subscribes from now; once its first event arrived, "unseen" would have too.
    await page.evaluate(() => window.subscriptionProbe.render({ feed: true, label: "second" }));
    await page.waitForSelector("output[data-status=ready]");
    await announce(page, instance, "later");
    await eventCount(page, 2);
    expect(await events(page)).toEqual(["first:1:seen", "second:3:later"]);
    expect(sockets.sentCount(SUBSCRIBE)).toBe(2);

    await page.evaluate(() => window.subscriptionProbe.unmount());
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a feed unmounted before its connection opened leaves no subscriber on the object, and its handler sees nothing", async () => {
    const { page, sockets, errors } = await openPage();
    const instance = freshInstance("early");
    await announce(page, instance, "history");
    // Mounted and unmounted in one task: the app's client has not connected yet, its subscribe
    // (from sequence 0, so "history" is replayed before the reply) is queued.
    await page.evaluate((instance) => {
      window.subscriptionProbe.render({ instance, topic: "news", feed: true, label: "early", since: 0 });
      window.subscriptionProbe.render({ feed: false });
    }, instance);
    // The queued subscribe still goes out when the socket opens; the hook closes it once confirmed.
    await sockets.until((log) => log.sentCount(UNSUBSCRIBE) === 1);
    expect(sockets.sentCount(SUBSCRIBE)).toBe(1);
    expect(await subscribers(page, instance)).toBe(0);
    expect(await events(page)).toEqual([]);

    await page.evaluate(() => window.subscriptionProbe.unmount());
    expect(errors).toEqual([]);
    await page.close();
  });

  it("reports a topic the object does not declare as failed, with NOT_FOUND", async () => {
    const { page, errors } = await openPage();
    await page.evaluate((instance) => window.subscriptionProbe.render({ instance, topic: "nope", feed: true }), freshInstance("nope"));
    await page.waitForSelector("output[data-status=failed]");
    expect(await page.$eval("output", (output) => output.dataset.error)).toBe("NOT_FOUND");
    await page.evaluate(() => window.subscriptionProbe.unmount());
    expect(errors).toEqual([]);
    await page.close();
  });
});
