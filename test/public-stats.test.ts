// The opt-in public stats (issue 18 item 4): counts per app over 30, 90 and 365 days equal to what
// was sent, the privacy floor, no token needed only when enabled, the cache; then the page in
// headless Chromium against the compiled binary.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { DAY } from "../src/domain/time.ts";
import { PUBLIC_CACHE_MS, applyFloor, type PublicStats } from "../src/read/public-stats.ts";
import { startReport, testApp, type TestApp } from "./helpers/app.ts";
import { compiledBinary, startServer, type RunningServer } from "./helpers/binary.ts";
import { tempDir } from "./helpers/tmp.ts";
import { launchBrowser, watchedPage } from "./helpers/browser.ts";

setDefaultTimeout(120_000);

const group = (value: string | null, total: number, success: number, failed: number, aborted = 0) => ({ value, total, success, failed, aborted });

describe("applyFloor", () => {
  test("apps at or above the floor are listed, most installed first then by name; the rest are summed into other", () => {
    const r = applyFloor([group("b", 10, 8, 2), group("a", 10, 10, 0), group("big", 50, 40, 5, 5), group("small", 9, 0, 9), group("tiny", 1, 1, 0)], 10);
    expect(r.apps.map((a) => a.app)).toEqual(["big", "a", "b"]);
    expect(r.apps[0]).toEqual({ app: "big", installs: 50, success: 40, failed: 5, aborted: 5, failure_rate: 0.1111 });
    expect(r.other).toEqual({ apps: 2, installs: 10, success: 1, failed: 9, aborted: 0, failure_rate: 0.9 });
    expect(r.total).toEqual({ installs: 80, success: 59, failed: 16, aborted: 5, failure_rate: 0.2133 });
  });

  test("runs without an app name are never listed, and are not counted as an app of other", () => {
    const r = applyFloor([group(null, 100, 100, 0), group("x", 3, 3, 0)], 2);
    expect(r.apps.map((a) => a.app)).toEqual(["x"]);
    expect(r.other).toMatchObject({ apps: 0, installs: 100 });
  });

  test("no finished run: failure rate null; nothing at all: zeros", () => {
    expect(applyFloor([group("a", 5, 0, 0, 0)], 1).apps[0]!.failure_rate).toBeNull();
    expect(applyFloor([], 10)).toEqual({
      total: { installs: 0, success: 0, failed: 0, aborted: 0, failure_rate: null },
      apps: [],
      other: { apps: 0, installs: 0, success: 0, failed: 0, aborted: 0, failure_rate: null },
    });
  });
});

/** `n` runs of `app` through /upload, `failed` of them failing and the rest done. */
async function runs(a: TestApp, app: string, n: number, failed: number, tag: string, type = "lxc"): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = `${tag}-${app}-${i}`;
    expect((await a.post("/upload", startReport(id, { nsapp: app, type }))).status).toBe(201);
    const status = i < failed ? "failed" : "done";
    expect((await a.post("/upload/updatestatus", { status, error: status === "failed" ? "exit code 1" : "none", random_id: id })).status).toBe(200);
  }
}

const windowOf = (body: PublicStats, days: number) => body.windows.find((w) => w.days === days)!;

describe("GET /public/stats.json", () => {
  test("not served unless enabled, with or without a read token", async () => {
    for (const readToken of [null, "read-secret"]) {
      const a = await testApp({ readToken });
      const r = await a.get("/public/stats.json");
      expect(r.status).toBe(404);
      expect(r.body.error).toBe("not_found");
      await a.stop();
    }
  });

  test("counts per app and window equal what was sent; floor, kinds and the read token", async () => {
    const a = await testApp({ publicStats: true, publicMinInstalls: 5, readToken: "read-secret" });
    // 200 days ago: only in the 365-day window; 60 days ago: in 90 and 365; now: in all three.
    await runs(a, "old-app", 6, 1, "old");
    a.clock.advance(140 * DAY);
    await runs(a, "mid-app", 5, 5, "mid");
    await runs(a, "old-app", 2, 0, "old2");
    a.clock.advance(60 * DAY);
    await runs(a, "new-app", 7, 2, "new");
    await runs(a, "rare-app", 4, 1, "rare");
    // Host tools and addons are not installs: never in the public numbers.
    await runs(a, "tool-app", 9, 0, "tool", "pve");

    const r = await a.get("/public/stats.json");
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    expect(r.headers.get("cache-control")).toBe(`public, max-age=${PUBLIC_CACHE_MS / 1000}`);
    const body = r.body as unknown as PublicStats;
    expect(body.min_installs).toBe(5);
    expect(body.windows.map((w) => w.days)).toEqual([30, 90, 365]);

    const d30 = windowOf(body, 30);
    expect(d30.apps).toEqual([{ app: "new-app", installs: 7, success: 5, failed: 2, aborted: 0, failure_rate: 0.2857 }]);
    expect(d30.other).toEqual({ apps: 1, installs: 4, success: 3, failed: 1, aborted: 0, failure_rate: 0.25 });
    expect(d30.total.installs).toBe(11);

    const d90 = windowOf(body, 90);
    expect(d90.apps.map((x) => [x.app, x.installs, x.failed])).toEqual([["new-app", 7, 2], ["mid-app", 5, 5]]);
    // old-app's 2 runs of 60 days ago are below the floor of 5 in this window.
    expect(d90.other).toMatchObject({ apps: 2, installs: 6 });

    const d365 = windowOf(body, 365);
    expect(d365.apps.map((x) => [x.app, x.installs])).toEqual([["old-app", 8], ["new-app", 7], ["mid-app", 5]]);
    expect(d365.total).toMatchObject({ installs: 24, success: 15, failed: 9 });
    expect(JSON.stringify(body)).not.toContain("tool-app");
    expect(JSON.stringify(body)).not.toContain("rare-app");

    // Everything else still needs the token.
    expect((await a.get("/api/installs")).status).toBe(401);
    expect((await a.get("/api/stats/summary")).status).toBe(401);
    await a.stop();
  });

  test("an answer is reused for ten minutes, then recomputed", async () => {
    const a = await testApp({ publicStats: true, publicMinInstalls: 1 });
    await runs(a, "cached-app", 1, 0, "c1");
    const first = (await a.get("/public/stats.json")).body as unknown as PublicStats;
    await runs(a, "cached-app", 1, 0, "c2");
    a.clock.advance(PUBLIC_CACHE_MS - 1);
    const same = (await a.get("/public/stats.json")).body as unknown as PublicStats;
    expect(same).toEqual(first);
    a.clock.advance(1);
    const fresh = (await a.get("/public/stats.json")).body as unknown as PublicStats;
    expect(windowOf(fresh, 30).apps).toEqual([expect.objectContaining({ app: "cached-app", installs: 2 })]);
    expect(fresh.generated_at).not.toBe(first.generated_at);
    await a.stop();
  });
});

describe("the public page in headless Chromium (compiled binary)", () => {
  const XSS = `<img src=x onerror=alert(1)>`;
  let server: RunningServer;
  let off: RunningServer;
  let browser: Browser;

  async function send(app: string, n: number, failed: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const id = `page-${Bun.hash(app).toString(36)}-${i}`;
      const start = await fetch(`${server.url}/upload`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(startReport(id, { nsapp: app })) });
      expect(start.status).toBe(201);
      const status = i < failed ? "failed" : "done";
      const end = await fetch(`${server.url}/upload/updatestatus`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ status, error: "none", random_id: id }) });
      expect(end.status).toBe(200);
    }
  }

  beforeAll(async () => {
    const bin = await compiledBinary();
    const env = { INSTALLSTATS_READ_TOKEN: "page-read-secret" };
    server = await startServer(bin, ["--db", `${tempDir()}/public.db`, "--rate-limit", "0", "--public-stats", "true", "--public-min-installs", "3"], env);
    off = await startServer(bin, ["--db", `${tempDir()}/off.db`], env);
    await send("popular-app", 5, 1);
    await send(XSS, 3, 0);
    await send("rare-secret-app", 2, 2);
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await off?.stop();
  });

  test("shows apps above the floor without a token, hides the rest, reaches nothing else", async () => {
    const context = await browser.newContext();
    const w = await watchedPage(context);
    const requested: string[] = [];
    w.page.on("request", (r) => requested.push(new URL(r.url()).pathname));
    await w.page.goto(`${server.url}/public`);
    await w.page.waitForSelector("body[data-state=ready]", { timeout: 20_000 });

    const rows = await w.page.locator("#apps tbody tr").allTextContents();
    expect(rows[0]).toContain("popular-app");
    // Client-sent text is shown as text: the markup did not run (no dialog) and reads literally.
    expect(rows[1]).toContain(XSS);
    expect(rows[2]).toContain("other apps (1)");
    expect(rows).toHaveLength(3);
    const text = (await w.page.textContent("body")) ?? "";
    expect(text).not.toContain("rare-secret-app");
    expect(text).toContain("10 installs, 30.0% failed, 2 apps listed.");
    expect(await w.page.locator("#apps tbody tr").first().locator("td").last().textContent()).toBe("20.0%");

    // The other periods and the search are local: the data is fetched once.
    await w.page.click("#windows button:has-text('365 days')");
    expect(w.page.url()).toEndWith("#365d");
    await w.page.fill("#find", "popular");
    expect(await w.page.locator("#apps tbody tr").allTextContents()).toEqual([expect.stringContaining("popular-app")]);
    await w.page.fill("#find", "");
    await w.page.click("th button[data-sort=app]");
    expect((await w.page.locator("#apps tbody tr td:nth-child(2)").allTextContents()).slice(0, 2)).toEqual([XSS, "popular-app"]);
    expect(requested.filter((p) => p === "/public/stats.json")).toHaveLength(1);

    expect(requested.every((p) => p === "/public" || p.startsWith("/public/"))).toBe(true);
    expect(requested).toContain("/public/stats.json");
    expect(w.problems).toEqual([]);
    expect(w.outside).toEqual([]);
    await context.close();
  });

  test("the rest of the server still asks for the token; a server without --public-stats has no public page", async () => {
    expect((await fetch(`${server.url}/api/installs`)).status).toBe(401);
    expect((await fetch(`${server.url}/api/stats/breakdown?by=nsapp`)).status).toBe(401);
    const page = await fetch(`${server.url}/public`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    for (const path of ["/public", "/public/stats.json"]) {
      const r = await fetch(`${off.url}${path}`);
      expect(r.status).toBe(404);
      expect(((await r.json()) as { error: string }).error).toBe("not_found");
    }
  });
});
