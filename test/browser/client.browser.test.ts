/**
 * The browser tier: the real `@dorpc/rpc` bundle in headless Chromium, on a page served by the
 * Worker's `[assets]` under `wrangler dev`, calling a Durable Object over a real WebSocket.
 * Sockets are observed from outside the page (support/socket-log.ts).
 */
import { mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WranglerDev } from "../support/wrangler-dev.js";
import type { ProbeApi } from "./probe-api.js";
import { startBrowserWorker } from "./support/browser-worker.js";
import { launchChromium } from "./support/chromium.js";
import { SocketLog } from "./support/socket-log.js";

let dev: WranglerDev;
let browser: Browser;
let persistTo: string;

beforeAll(async () => {
  persistTo = await mkdtemp(join(tmpdir(), "dorpc-browser-"));
  [dev, browser] = await Promise.all([startBrowserWorker({ persistTo }), launchChromium()]);
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  if (persistTo) await rm(persistTo, { recursive: true, force: true });
});

interface OpenPage {
  page: Page;
  sockets: SocketLog;
  /** Uncaught errors and console errors of the page. */
  errors: string[];
}

/** Opens the client page at `origin` (default the Worker's own), running `setup` before any script of the page. */
async function openClientPage(origin = dev.baseUrl, setup?: () => void): Promise<OpenPage> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  const sockets = await SocketLog.attach(page);
  if (setup) await page.evaluateOnNewDocument(setup);
  await page.goto(`${origin}/`);
  await page.waitForSelector("body[data-ready=client]");
  return { page, sockets, errors };
}

let instances = 0;
const freshInstance = (label: string) => `${label}-${Date.now().toString(36)}-${instances++}`;

describe("the client in Chromium, page served by the Worker's assets", () => {
  it("connects to location.origin without a baseUrl and round-trips Map, Set, Date, BigInt, RegExp, -0 and cycles", async () => {
    const { page, sockets, errors } = await openClientPage();
    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance);
      try {
        const cyclic: { name: string; self?: unknown } = { name: "loop" };
        cyclic.self = cyclic;
        const sent = {
          map: new Map<unknown, unknown>([
            ["a", 1n],
            [2, new Set(["x", Number.NaN])],
          ]),
          when: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
          big: 2n ** 70n,
          pattern: /do+rpc/giu,
          numbers: [-0, Number.POSITIVE_INFINITY],
          missing: undefined,
          cyclic,
          shared: [cyclic, cyclic],
        };
        const back = (await client.echo(sent)) as typeof sent; // generic methods reach the client as unknown
        const inner = back.map.get(2) as Set<unknown>;
        return {
          map: [back.map instanceof Map, typeof back.map.get("a"), String(back.map.get("a"))],
          set: [inner instanceof Set, [...inner].map(String)],
          when: [back.when instanceof Date, back.when.toISOString()],
          big: [typeof back.big, String(back.big)],
          pattern: [back.pattern instanceof RegExp, back.pattern.source, back.pattern.flags],
          negativeZero: Object.is(back.numbers[0], -0),
          infinity: back.numbers[1] === Number.POSITIVE_INFINITY,
          missingKept: "missing" in back,
          cycle: back.cyclic.self === back.cyclic,
          sharedIdentity: back.shared[0] === back.shared[1] && back.shared[0] === back.cyclic,
          notTheSameObject: back !== sent,
        };
      } finally {
        rpcConnection(client).close();
      }
    }, freshInstance("values"));
    expect(result).toEqual({
      map: [true, "bigint", "1"],
      set: [true, ["x", "NaN"]],
      when: [true, "2026-01-02T03:04:05.006Z"],
      big: ["bigint", String(2n ** 70n)],
      pattern: [true, "do+rpc", "giu"],
      negativeZero: true,
      infinity: true,
      missingKept: true,
      cycle: true,
      sharedIdentity: true,
      notTheSameObject: true,
    });
    expect(sockets.sockets.map((socket) => [new URL(socket.url).host, socket.status])).toEqual([[new URL(dev.baseUrl).host, 101]]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("sends and receives bytes as Uint8Array, large ones included", async () => {
    const { page, errors } = await openClientPage();
    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance);
      try {
        const received = await client.bytes(3 * 1024 * 1024 + 7);
        let wrong = 0;
        for (let i = 0; i < received.length; i++) if (received[i] !== (i & 0xff)) wrong++;
        const sent = new Uint8Array(500_000).fill(3);
        const echoed = (await client.echo({ label: "blob", data: sent.subarray(10, 20) })) as { label: string; data: Uint8Array };
        return {
          received: [received instanceof Uint8Array, received.length, wrong],
          measured: await client.measure(sent),
          echoed: [echoed.label, echoed.data instanceof Uint8Array, [...echoed.data]],
        };
      } finally {
        rpcConnection(client).close();
      }
    }, freshInstance("bytes"));
    expect(result).toEqual({
      received: [true, 3 * 1024 * 1024 + 7, 0],
      measured: { length: 500_000, sum: 1_500_000 },
      echoed: ["blob", true, Array(10).fill(3)],
    });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("HTTP batches from the page (httpTransport()): one POST per turn's calls, values and bytes both ways, no WebSocket", async () => {
    const { page, sockets, errors } = await openClientPage();
    const posts: string[] = [];
    page.on("request", (request) => {
      if (request.method() === "POST") posts.push(new URL(request.url()).pathname);
    });
    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, httpTransport, rpcConnection } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance, { transport: httpTransport() });
      try {
        const [one, three] = await Promise.all([client.increment(1), client.increment(2)]);
        const value = { at: new Date(7), tags: new Set(["a"]), bytes: new Uint8Array([1, 2, 255]) };
        const back = (await client.echo(value)) as typeof value;
        const received = await client.bytes(100_000);
        let wrong = 0;
        for (let i = 0; i < received.length; i++) if (received[i] !== (i & 0xff)) wrong++;
        const error = await client.fail("range").catch((e: Error) => [e.constructor.name, e.message]);
        return {
          counts: [one, three],
          back: [back.at.getTime(), [...back.tags], [...back.bytes]],
          received: [received.length, wrong],
          error,
        };
      } finally {
        rpcConnection(client).close();
      }
    }, freshInstance("http"));
    expect(result.counts).toEqual([1, 3]);
    expect(result.back).toEqual([7, ["a"], [1, 2, 255]]);
    expect(result.received).toEqual([100_000, 0]);
    expect(result.error[0]).toBe("RangeError");
    // Four turns of calls: four requests to the object's RPC path, and no socket.
    expect(posts.filter((path) => path.startsWith("/__rpc/PROBE/"))).toHaveLength(4);
    expect(sockets.sockets).toHaveLength(0);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("rebuilds thrown errors as their classes with their properties, and reports its own failures as RpcError codes", async () => {
    const { page, errors } = await openClientPage();
    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection, RpcError } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance);
      const caught = async (promise: PromiseLike<unknown>) => {
        try {
          await promise;
          return "resolved";
        } catch (error) {
          return error;
        }
      };
      try {
        const type = (await caught(client.fail("type"))) as TypeError;
        const range = (await caught(client.fail("range"))) as RangeError;
        const quota = (await caught(client.fail("quota"))) as Error & { code?: string };
        const thrown = await caught(client.fail("string"));
        const missing = (await caught((client as unknown as { nope(): Promise<void> }).nope())) as InstanceType<typeof RpcError>;
        const unsendable = (await caught(client.echo(Symbol("nope") as never))) as InstanceType<typeof RpcError>;
        const callback = () => 1;
        const returned = await client.echo(callback as never); // the object hands the client's function back
        return {
          type: [type instanceof TypeError, type.name, type.message],
          range: [range instanceof RangeError, range.message, JSON.stringify(range.cause)],
          quota: [quota instanceof Error, quota.name, quota.message, quota.code],
          thrown,
          missing: [missing instanceof RpcError, RpcError.is(missing), missing.code],
          unsendable: [unsendable instanceof RpcError, unsendable.code],
          sameFunction: returned === callback,
          stillUsable: await client.increment(),
        };
      } finally {
        rpcConnection(client).close();
      }
    }, freshInstance("errors"));
    expect(result).toEqual({
      type: [true, "TypeError", "expected a string"],
      range: [true, "out of range", '{"limit":10}'],
      quota: [true, "QuotaError", "over quota", "QUOTA_EXCEEDED"],
      thrown: "a thrown string",
      missing: [true, true, "NOT_FOUND"],
      unsendable: [true, "ENCODE"],
      sameFunction: true,
      stillUsable: 1,
    });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("keeps many calls in flight on one socket and answers each with its own result", async () => {
    const { page, sockets, errors } = await openClientPage();
    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance);
      const connection = rpcConnection(client);
      try {
        // `then` sends a call at once (Promise.all would call it a microtask later).
        const echoes = Array.from({ length: 300 }, (_, i) =>
          client.echo({ i, text: `call ${i}` }).then((value) => value as { i: number; text: string }),
        );
        const increments = Array.from({ length: 200 }, () => client.increment().then((value) => value));
        const all = Promise.all([Promise.all(echoes), Promise.all(increments)]);
        const inFlight = connection.pendingCalls;
        const [echoed, counted] = await all;
        return {
          inFlight,
          echoesInOrder: echoed.every((value, i) => value.i === i && value.text === `call ${i}`),
          incrementsDistinct: new Set(counted).size,
          incrementsRange: [Math.min(...counted), Math.max(...counted)],
          final: await client.getValue(),
          pendingAfter: connection.pendingCalls,
        };
      } finally {
        connection.close();
      }
    }, freshInstance("concurrency"));
    expect(result).toEqual({
      inFlight: 500,
      echoesInOrder: true,
      incrementsDistinct: 200,
      incrementsRange: [1, 200],
      final: 200,
      pendingAfter: 0,
    });
    expect(sockets.sockets).toHaveLength(1);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("closes the socket at the end of an `await using` block the app's bundler lowered", async () => {
    const { page, sockets, errors } = await openClientPage();
    const result = await page.evaluate((instance) => window.scenarios.incrementInScope(instance), freshInstance("using"));
    expect(result).toEqual({ value: 1, stateAfterScope: "disposed" });
    await sockets.until((log) => log.sockets.length === 1 && log.open.length === 0);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("disposal closes the socket and rejects waiting and later calls with DISPOSED", async () => {
    const { page, sockets, errors } = await openClientPage();
    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance);
      const first = await client.increment();
      const waiting = client.wait(60_000, "never seen").then(
        () => "resolved",
        (error: { code?: string }) => error.code,
      );
      await new Promise((resolve) => setTimeout(resolve, 0)); // the wait call is sent
      client[Symbol.dispose]();
      const later = await client.getValue().then(
        () => "resolved",
        (error: { code?: string }) => error.code,
      );
      return { first, waiting: await waiting, later, state: rpcConnection(client).state };
    }, freshInstance("dispose"));
    expect(result).toEqual({ first: 1, waiting: "DISPOSED", later: "DISPOSED", state: "disposed" });
    await sockets.until((log) => log.sockets.length === 1 && log.open.length === 0);
    expect(errors).toEqual([]);
    await page.close();
  });
});

/**
 * Safari has no `Symbol.dispose` / `Symbol.asyncDispose`. Chromium's are non-configurable
 * (`delete Symbol.dispose` is refused), so before any script of the page runs this replaces the
 * global `Symbol` with a function that has every static of the real one except those two: code
 * that reads `Symbol.dispose`, as the client bundle does, then finds nothing, as in Safari.
 */
function hideDisposeSymbols(): void {
  const real = Symbol;
  const fake = (description?: string | number) => real(description);
  for (const key of Reflect.ownKeys(real)) {
    if (key !== "dispose" && key !== "asyncDispose") Object.defineProperty(fake, key, Object.getOwnPropertyDescriptor(real, key)!);
  }
  (globalThis as { Symbol: unknown }).Symbol = fake;
}

describe("Blob and File between the page and the object", () => {
  it("a File picked in an <input type=file>, a File built in the page and a Blob reach the object and come back with type, name, lastModified and bytes", async () => {
    const { page, errors } = await openClientPage();
    // A real file on disk, picked through a file input as a user would.
    const folder = await mkdtemp(join(tmpdir(), "dorpc-upload-"));
    const picked = join(folder, "notes.txt");
    await writeFile(picked, "line one\nline two ✓\n".repeat(5_000));
    await utimes(picked, new Date("2025-01-02T03:04:05Z"), new Date("2025-01-02T03:04:05Z"));
    await page.evaluate(() => {
      const input = document.createElement("input");
      input.type = "file";
      input.id = "upload";
      document.body.append(input);
    });
    const input = await page.$("input#upload");
    await input!.uploadFile(picked);

    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance);
      const hex = async (blob: Blob) =>
        [...new Uint8Array(await crypto.subtle.digest("SHA-256", await blob.arrayBuffer()))]
          .map((b) => b.toString(16).padStart(2, "0"))
          .join("");
      /** What the page itself sees of a Blob or File, in the shape the object reports. */
      const describe = async (blob: Blob) => ({
        kind: blob instanceof File ? "File" : "Blob",
        type: blob.type,
        size: blob.size,
        ...(blob instanceof File ? { name: blob.name, lastModified: blob.lastModified } : {}),
        sha256: await hex(blob),
      });
      try {
        const fromInput = (document.querySelector("#upload") as HTMLInputElement).files![0]!;
        const built = new File(["héllo ", new Uint8Array(300_000).map((_, i) => (i * 31) & 0xff)], "report.bin", {
          type: "application/octet-stream",
          lastModified: 1_700_000_000_123,
        });
        const blob = new Blob(["just a blob ✓"], { type: "text/plain;charset=utf-8" });
        const sent = [fromInput, built, blob];
        const inPage = await Promise.all(sent.map(describe));
        const onObject = await Promise.all(sent.map((value) => client.inspectBlob(value)));
        const back = (await client.echo({ sent, again: built })) as { sent: Blob[]; again: Blob };
        return {
          inPage,
          onObject,
          back: await Promise.all(back.sent.map(describe)),
          sameFileTwice: back.again === back.sent[1],
          notTheSameObject: back.sent[1] !== built,
        };
      } finally {
        rpcConnection(client).close();
      }
    }, freshInstance("blobs"));
    await rm(folder, { recursive: true, force: true });

    expect(result.inPage.map(({ sha256: _, ...fields }) => fields)).toEqual([
      { kind: "File", type: "text/plain", size: 5_000 * 22, name: "notes.txt", lastModified: Date.parse("2025-01-02T03:04:05Z") },
      { kind: "File", type: "application/octet-stream", size: 300_007, name: "report.bin", lastModified: 1_700_000_000_123 },
      { kind: "Blob", type: "text/plain;charset=utf-8", size: 15 },
    ]);
    expect(result.onObject).toEqual(result.inPage);
    expect(result.back).toEqual(result.inPage);
    expect(result.sameFileTwice).toBe(true);
    expect(result.notTheSameObject).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a File made by the object arrives in the page as a File with its name, type, lastModified and bytes", async () => {
    const { page, errors } = await openClientPage();
    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance);
      try {
        const file = await client.makeFile("export.csv", "text/csv", 1_234_567_890_123, 70_000);
        const bytes = new Uint8Array(await file.arrayBuffer());
        let wrong = 0;
        for (let i = 0; i < bytes.length; i++) if (bytes[i] !== ((i * 7) & 0xff)) wrong++;
        return {
          isFile: file instanceof File,
          isBlob: file instanceof Blob,
          fields: [file.name, file.type, file.lastModified, file.size],
          wrong,
        };
      } finally {
        rpcConnection(client).close();
      }
    }, freshInstance("file-from-object"));
    expect(result).toEqual({ isFile: true, isBlob: true, fields: ["export.csv", "text/csv", 1_234_567_890_123, 70_000], wrong: 0 });
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe("without Symbol.dispose (as in Safari)", () => {
  it("rpcConnection(client).close() closes the client: socket closed, later calls DISPOSED", async () => {
    const { page, sockets, errors } = await openClientPage(dev.baseUrl, hideDisposeSymbols);
    const result = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection } = window.dorpc;
      const symbols = [typeof Symbol.dispose, typeof Symbol.asyncDispose, typeof Symbol.iterator, typeof Symbol("s")];
      const client = createRpcClient<ProbeApi>("PROBE", instance);
      const value = await client.increment(5);
      const connection = rpcConnection(client);
      const before = connection.state;
      connection.close();
      const later = await client.getValue().then(
        () => "resolved",
        (error: { code?: string }) => error.code,
      );
      return { symbols, value, before, after: connection.state, later };
    }, freshInstance("no-symbols"));
    expect(result).toEqual({
      symbols: ["undefined", "undefined", "symbol", "symbol"],
      value: 5,
      before: "open",
      after: "disposed",
      later: "DISPOSED",
    });
    await sockets.until((log) => log.sockets.length === 1 && log.open.length === 0);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('an esbuild-lowered `await using` still closes the client there: dorpc answers Symbol.for("Symbol.asyncDispose"), esbuild\'s fallback', async () => {
    const { page, sockets } = await openClientPage(dev.baseUrl, hideDisposeSymbols);
    const result = await page.evaluate((instance) => window.scenarios.incrementInScope(instance), freshInstance("no-symbols-using"));
    expect(result).toEqual({ value: 1, stateAfterScope: "disposed" });
    await sockets.until((log) => log.sockets.length === 1 && log.open.length === 0);
    await page.close();
  });

  it('an esbuild-lowered `using` closes a subscription there: it answers Symbol.for("Symbol.dispose") too', async () => {
    const { page, errors } = await openClientPage(dev.baseUrl, hideDisposeSymbols);
    const result = await page.evaluate((instance) => window.scenarios.subscribeInScope(instance), freshInstance("no-symbols-subscription"));
    expect(result).toEqual({ inside: 1, after: 0 });
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe("allowedOrigins", () => {
  it("refuses a page from another origin (403 on the upgrade): the call fails with CONNECT_FAILED naming allowedOrigins, and no socket opens", async () => {
    const port = new URL(dev.baseUrl).port;
    // localhost and 127.0.0.1 are different origins to the browser, served by the same Worker.
    const foreign = `http://localhost:${port}`;
    const { page, sockets } = await openClientPage(foreign);
    const result = await page.evaluate(
      async (instance, baseUrl) => {
        const { createRpcClient, rpcConnection, RpcError } = window.dorpc;
        const client = createRpcClient<ProbeApi>("PROBE", instance, { baseUrl });
        const states: string[] = [];
        rpcConnection(client).onStateChange((state) => states.push(state));
        try {
          await client.increment();
          return { outcome: "resolved", states };
        } catch (error) {
          return {
            outcome: RpcError.is(error) ? "RpcError" : String(error),
            code: (error as { code?: string }).code,
            message: (error as Error).message,
            states,
            origin: location.origin,
          };
        } finally {
          rpcConnection(client).close();
        }
      },
      freshInstance("foreign"),
      dev.baseUrl,
    );
    // Never connected: CONNECT_FAILED, pointing at allowedOrigins (the browser hides the 403 itself).
    expect(result).toMatchObject({ outcome: "RpcError", code: "CONNECT_FAILED", origin: foreign });
    expect(result.message).toContain("allowedOrigins");
    expect(result.states).not.toContain("open");
    await sockets.until((log) => log.sockets[0]?.error !== undefined);
    expect(sockets.sockets).toHaveLength(1);
    expect(sockets.sockets[0]!.status).toBeUndefined();
    expect(sockets.sockets[0]!.error).toMatch(/Unexpected response code: 403/);

    // The same call from the Worker's own origin is let through.
    const own = await openClientPage();
    const value = await own.page.evaluate(
      async (instance, baseUrl) => {
        const client = window.dorpc.createRpcClient<ProbeApi>("PROBE", instance, { baseUrl });
        try {
          return await client.increment();
        } finally {
          window.dorpc.rpcConnection(client).close();
        }
      },
      freshInstance("own"),
      dev.baseUrl,
    );
    expect(value).toBe(1);
    await Promise.all([page.close(), own.page.close()]);
  });
});

describe("HTTP batches across origins", () => {
  /** From the page on localhost: one increment() over httpTransport() with `?cors=…`, then the count the page's own origin reads. */
  async function crossOriginIncrement(cors: "on" | "narrow" | "off", label: string, loseFirstAnswer = false) {
    const foreign = `http://localhost:${new URL(dev.baseUrl).port}`;
    const [{ page }, own] = await Promise.all([openClientPage(foreign), openClientPage()]);
    const instance = freshInstance(label);
    const result = await page.evaluate(
      async (instance, baseUrl, cors, loseFirstAnswer) => {
        const { createRpcClient, httpTransport, rpcConnection } = window.dorpc;
        let lose = loseFirstAnswer;
        // The page's fetch, or one whose first answer is lost on the way back (after the object ran the call).
        const fetch = async (url: string, init: RequestInit) => {
          const response = await window.fetch(url, init);
          if (!lose) return response;
          lose = false;
          await response.arrayBuffer();
          throw new TypeError("Failed to fetch");
        };
        // A timeout far beyond how long the refusal takes: resending until it would fail the test's own timeout.
        const client = createRpcClient<ProbeApi>("PROBE", instance, {
          baseUrl,
          query: { cors },
          transport: httpTransport({ fetch }),
          timeout: 60_000,
        });
        try {
          return { value: await client.increment() };
        } catch (error) {
          return { code: (error as { code?: string }).code, message: (error as Error).message };
        } finally {
          rpcConnection(client).close();
        }
      },
      instance,
      dev.baseUrl,
      cors,
      loseFirstAnswer,
    );
    const count = await own.page.evaluate(async (instance) => {
      const client = window.dorpc.createRpcClient<ProbeApi>("PROBE", instance);
      try {
        return await client.getValue();
      } finally {
        window.dorpc.rpcConnection(client).close();
      }
    }, instance);
    await Promise.all([page.close(), own.page.close()]);
    return { foreign, result, count };
  }

  it("with the router's cors allowing the page's origin, a page on another origin calls the object over HTTP", async () => {
    const { result, count } = await crossOriginIncrement("on", "cors-allowed");
    expect(result).toEqual({ value: 1 });
    expect(count).toBe(1);
  });

  it("there, a first answer lost on the way back is still a lost answer (CORS lets the request through): resent, and the call runs once", async () => {
    const { result, count } = await crossOriginIncrement("on", "cors-lost", true);
    expect(result).toEqual({ value: 1 });
    expect(count).toBe(1);
  });

  it("without cors for the page's origin, the browser's refusal fails the call at once with CONNECT_FAILED naming the cors option — not resent until the timeout — and nothing ran", async () => {
    const { foreign, result, count } = await crossOriginIncrement("off", "cors-refused");
    expect(result).toMatchObject({ code: "CONNECT_FAILED" });
    expect(result.message).toContain("does not allow this origin (CORS)");
    expect(result.message).toContain(`cors: { origins: ["${foreign}"]`);
    expect(count).toBe(0);
  });

  it("with cors allowing the origin but not dorpc's session headers, the refusal names the preflight and the headers", async () => {
    const { result, count } = await crossOriginIncrement("narrow", "cors-narrow");
    expect(result).toMatchObject({ code: "CONNECT_FAILED" });
    expect(result.message).toContain("the preflight refused the request's headers");
    expect(result.message).toContain('"X-Dorpc-Session", "X-Dorpc-Resending"');
    expect(count).toBe(0);
  });
});

describe("wrangler dev restart", () => {
  it("a page's client reconnects after the Worker comes back and keeps working, with the object's state intact", async () => {
    const { page, sockets, errors } = await openClientPage();
    const instance = freshInstance("restart");
    const first = await page.evaluate(async (instance) => {
      const { createRpcClient, rpcConnection } = window.dorpc;
      const client = createRpcClient<ProbeApi>("PROBE", instance, {
        reconnect: { initialDelay: 50, maxDelay: 500 },
        connectTimeout: 5_000,
      });
      const states: string[] = [];
      rpcConnection(client).onStateChange((state) => states.push(state));
      Object.assign(window, { restartClient: client, restartStates: states });
      return client.increment(3);
    }, instance);
    expect(first).toBe(3);

    const port = dev.port;
    await dev.stop();
    await page.waitForFunction(() => (window as unknown as { restartStates: string[] }).restartStates.includes("reconnecting"));
    dev = await startBrowserWorker({ port, persistTo });

    const after = await page.evaluate(async () => {
      const { rpcConnection } = window.dorpc;
      const { restartClient: client, restartStates: states } = window as unknown as {
        restartClient: import("@dorpc/rpc").RpcClient<ProbeApi>;
        restartStates: string[];
      };
      await rpcConnection(client).waitForOpen();
      const value = await client.increment();
      rpcConnection(client).close();
      return { value, states };
    });
    expect(after.value).toBe(4);
    expect(after.states.slice(0, 3)).toEqual(["connecting", "open", "reconnecting"]);
    expect(after.states.at(-2)).toBe("open");
    expect(after.states.at(-1)).toBe("disposed");
    // The first socket died with wrangler; a later one carried the call after the restart.
    expect(sockets.sockets[0]!.status).toBe(101);
    expect(sockets.sockets.at(-1)!.status).toBe(101);
    expect(errors).toEqual([]);
    await page.close();
  });
});
