/**
 * Vitest global setup of the browser tier, before any of its files: builds the pages and unpacks
 * Chromium (so a machine where it cannot be unpacked fails here, once, saying why).
 */
import { launchChromium } from "./chromium.js";
import { buildPages } from "./pages.js";

export default async function setup(): Promise<void> {
  await buildPages();
  // Start and stop it once: a broken Chromium fails the tier before any test, with the fix.
  const browser = await launchChromium();
  await browser.close();
}
