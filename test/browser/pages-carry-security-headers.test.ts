// The pages (dashboard views, their assets, the API docs page and its assets) are Bun routes
// answered by our own handlers, outside Elysia's hooks: each must still carry every security
// header, with its Content-Security-Policy (frame-ancestors 'none') as a real header. Checked on
// every route, under `bun run` (the page bundled in memory by Bun.build) and in the compiled
// binary (the page bundled ahead of time, read from the executable), with caching (ETag, 304,
// immutable assets), compression, HEAD, and the read token (pages open, data closed).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { ROOT, tempDir } from "../helpers/tmp.ts";
import { launchBrowser } from "../helpers/browser.ts";

setDefaultTimeout(180_000);

const VIEWS = ["/", "/failures", "/installs", "/app", "/admin", "/alerts"];
const DOCS = ["/openapi", "/openapi/assets/favicon.svg"];

/** `bun run src/main.ts serve` on a free port: the dashboard is bundled on its first request. */
async function startSource(args: string[], env: Record<string, string> = {}): Promise<RunningServer> {
  const proc = Bun.spawn(["bun", "src/main.ts", "serve", "--host", "127.0.0.1", "--port", "0", ...args], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", TMPDIR: process.env.TMPDIR ?? "/tmp", ...env },
  });
  let errText = "";
  void (async () => {
    for await (const chunk of proc.stderr) errText += new TextDecoder().decode(chunk);
  })();
  const reader = proc.stdout.getReader();
  let out = "";
  const deadline = Date.now() + 30_000;
  while (!/listening on (http:\/\/\S+)/.test(out)) {
    if (Date.now() > deadline) throw new Error(`server did not start: ${out} ${errText}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited (${await proc.exited}): ${out} ${errText}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return {
    url: /listening on (http:\/\/\S+)/.exec(out)![1]!,
    proc,
    stderr: () => errText,
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      return proc.exited;
    },
  };
}

/** The headers of src/http/hardening.ts; `page`: one of our pages, with its own stricter policy. */
function expectSecurityHeaders(res: Response, what: string, page = true): void {
  const h = res.headers;
  expect(h.get("x-content-type-options"), what).toBe("nosniff");
  expect(h.get("x-frame-options"), what).toBe("DENY");
  expect(h.get("referrer-policy"), what).toBe("no-referrer");
  const csp = h.get("content-security-policy") ?? "";
  expect(csp, what).toContain("default-src 'self'");
  expect(csp, what).toContain("frame-ancestors 'none'");
  expect(csp, what).toContain("base-uri 'none'");
  if (!page) return;
  expect(csp, what).toContain("object-src 'none'");
  // Scripts only from this server's files, never inline.
  expect(/script-src 'self'(;|$)/.test(csp), `${what}: ${csp}`).toBe(true);
}

/** The asset paths a page's HTML refers to. */
const assetsOf = (html: string): string[] => [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);

const modes: [string, () => Promise<RunningServer>][] = [
  ["bun run", () => startSource(["--db", join(tempDir("installstats-headers-src-"), "h.db")])],
  [
    "compiled binary",
    async () => startServer(await compiledBinary(), ["--db", join(tempDir("installstats-headers-bin-"), "h.db")]),
  ],
];

for (const [mode, start] of modes) {
  describe(`pages and assets (${mode})`, () => {
    let server: RunningServer;
    beforeAll(async () => {
      server = await start();
    });
    afterAll(async () => {
      await server?.stop();
    });
    const get = (path: string, headers: Record<string, string> = {}, method = "GET") =>
      fetch(server.url + path, { method, headers });

    test("every view and every asset it loads carries the security headers; the policy is a header, not a meta tag", async () => {
      let html = "";
      for (const path of VIEWS) {
        const res = await get(path);
        expect(res.status, path).toBe(200);
        expect(res.headers.get("content-type"), path).toStartWith("text/html");
        expectSecurityHeaders(res, path);
        // The dashboard's own policy: styles from its stylesheet only.
        expect(res.headers.get("content-security-policy"), path).toContain("style-src 'self';");
        html = await res.text();
        expect(html, path).not.toMatch(/<meta[^>]+http-equiv/i);
      }
      const assets = assetsOf(html);
      // The stylesheet, the script and the icon.
      expect(assets.map((a) => a.replace(/^.*\./, "")).sort()).toEqual(["css", "js", "svg"]);
      for (const path of assets) {
        const res = await get(path);
        expect(res.status, path).toBe(200);
        expectSecurityHeaders(res, path);
        expect(res.headers.get("cache-control"), path).toBe("public, max-age=31536000, immutable");
        expect(res.headers.get("etag"), path).toMatch(/^"[0-9a-z]+(-gz)?"$/);
        expect((await res.arrayBuffer()).byteLength, path).toBeGreaterThan(100);
      }
      const types = await Promise.all(assets.map(async (p) => (await get(p)).headers.get("content-type")));
      expect(types.sort()).toEqual(["image/svg+xml", "text/css;charset=utf-8", "text/javascript;charset=utf-8"]);
    });

    test("the docs page and its assets carry them too (styles may be inline there: Scalar adds them)", async () => {
      const page = await get("/openapi");
      const html = await page.text();
      const scripts = [...html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
      expect(scripts).toHaveLength(2);
      for (const path of [...DOCS, ...scripts]) {
        const res = await get(path);
        expect(res.status, path).toBe(200);
        expectSecurityHeaders(res, path);
        expect(res.headers.get("content-security-policy"), path).toContain("style-src 'self' 'unsafe-inline'");
      }
      // No inline script anywhere in the page: every script is a file of this server.
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    });

    test("the HTML is revalidated (ETag, 304), assets are cached for a year, text is gzip-compressed when accepted", async () => {
      const first = await get("/failures", { "accept-encoding": "identity" });
      const etag = first.headers.get("etag")!;
      expect(first.headers.get("cache-control")).toBe("no-cache");
      expect(etag).toMatch(/^"[0-9a-z]+"$/);
      // Every view is the one page: one ETag.
      expect((await get("/installs", { "accept-encoding": "identity" })).headers.get("etag")).toBe(etag);
      const again = await get("/failures", { "accept-encoding": "identity", "if-none-match": etag });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
      expectSecurityHeaders(again, "304");
      expect((await get("/failures", { "accept-encoding": "identity", "if-none-match": '"other"' })).status).toBe(200);

      const html = await first.text();
      const js = assetsOf(html).find((a) => a.endsWith(".js"))!;
      const plain = await get(js, { "accept-encoding": "identity" });
      const plainBytes = new Uint8Array(await plain.arrayBuffer());
      expect(plain.headers.get("content-encoding")).toBeNull();
      expect(plain.headers.get("vary")).toContain("Accept-Encoding");
      const packed = await fetch(server.url + js, { headers: { "accept-encoding": "gzip" }, decompress: false });
      expect(packed.headers.get("content-encoding")).toBe("gzip");
      const packedBytes = new Uint8Array(await packed.arrayBuffer());
      expect(packedBytes.byteLength).toBeLessThan(plainBytes.byteLength / 2);
      expect(Bun.gunzipSync(packedBytes)).toEqual(plainBytes);
      // Each form has its own ETag, and each revalidates.
      expect(packed.headers.get("etag")).not.toBe(plain.headers.get("etag"));
      expect((await get(js, { "accept-encoding": "gzip", "if-none-match": packed.headers.get("etag")! })).status).toBe(
        304,
      );
    });

    test("HEAD answers the headers without a body; other methods, unknown assets and unknown paths answer JSON 404 with the headers", async () => {
      const head = await get("/", {}, "HEAD");
      expect(head.status).toBe(200);
      expectSecurityHeaders(head, "HEAD /");
      expect(await head.text()).toBe("");
      for (const [method, path] of [
        ["GET", "/assets/nothing-here.js"],
        ["GET", "/nowhere"],
        ["PATCH", "/"],
        ["PUT", "/installs"],
      ] as const) {
        const res = await get(path, {}, method);
        expect(res.status, `${method} ${path}`).toBe(404);
        expectSecurityHeaders(res, `${method} ${path}`, path.startsWith("/assets/"));
        expect(((await res.json()) as { error: string }).error).toBe("not_found");
      }
    });
  });
}

describe("with a read token (compiled binary)", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer(await compiledBinary(), ["--db", join(tempDir("installstats-headers-token-"), "t.db")], {
      INSTALLSTATS_READ_TOKEN: "r3ad-t0ken",
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test("the pages load without it (they hold no data and ask for it); the data and the API document need it", async () => {
    for (const path of [...VIEWS, ...DOCS]) {
      const res = await fetch(server.url + path);
      expect(res.status, path).toBe(200);
      expectSecurityHeaders(res, path);
    }
    for (const path of ["/api/stats/summary", "/openapi/json"]) {
      const res = await fetch(server.url + path);
      expect(res.status, path).toBe(401);
      expectSecurityHeaders(res, path, false);
      expect((await fetch(server.url + path, { headers: { authorization: "Bearer r3ad-t0ken" } })).status, path).toBe(
        200,
      );
    }
  });
});

describe("framing", () => {
  test("another site cannot show the dashboard or the docs in a frame (frame-ancestors 'none' is a header)", async () => {
    const server = await startServer(await compiledBinary(), [
      "--db",
      join(tempDir("installstats-headers-frame-"), "f.db"),
    ]);
    const framer = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) => {
        const url = new URL(req.url);
        // The control: a page of the framing site itself, which a frame does show.
        if (url.pathname === "/own")
          return new Response(`<!doctype html><main id="main">framed</main>`, {
            headers: { "content-type": "text/html" },
          });
        const target = url.searchParams.get("target")!;
        return new Response(`<!doctype html><iframe id="f" src="${target}" width="800" height="600"></iframe>`, {
          headers: { "content-type": "text/html" },
        });
      },
    });
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      const framed = async (target: string) => {
        await page.goto(`http://127.0.0.1:${framer.port}/?target=${encodeURIComponent(target)}`, { waitUntil: "load" });
        const frame = page.frames().find((f) => f !== page.mainFrame())!;
        await frame.waitForLoadState("load");
        return {
          url: frame.url(),
          shown: await frame.evaluate(() => document.querySelector("#main, #docs") !== null).catch(() => false),
        };
      };
      expect(await framed(`http://127.0.0.1:${framer.port}/own`)).toMatchObject({ shown: true });
      for (const path of ["/", "/installs", "/admin", "/openapi"]) {
        // A different origin (localhost, not 127.0.0.1) frames the page: the browser refuses it.
        const result = await framed(server.url.replace("127.0.0.1", "localhost") + path);
        expect(result, path).toEqual({ url: "chrome-error://chromewebdata/", shown: false });
      }
    } finally {
      await browser.close();
      await framer.stop(true);
      await server.stop();
    }
  });
});
