import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Three tiers, one command (`npm test` at the root runs them all):
//  - unit:    Node, fast: codec, proxy, dispatcher over an in-memory transport, routing.
//  - workers: workerd through the Workers Vitest plugin, with its own worker and DOs.
//  - e2e:     Node client against a real `wrangler dev` that the test starts and stops.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          environment: "node",
          include: ["unit/**/*.test.ts", "routing/**/*.test.ts"],
        },
      },
      {
        plugins: [cloudflareTest({ wrangler: { configPath: "./workers/wrangler.toml" } })],
        test: {
          name: "workers",
          include: ["workers/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "e2e",
          environment: "node",
          include: ["e2e/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 90_000,
        },
      },
    ],
  },
});
