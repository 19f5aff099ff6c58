/** Vitest global setup of the browser tier: builds the pages once before any file runs. */
import { buildPages } from "./pages.js";

export default async function setup(): Promise<void> {
  await buildPages();
}
