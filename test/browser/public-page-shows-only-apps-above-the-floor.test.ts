// The opt-in public page (issue 18 item 4) in headless Chromium against the compiled binary:
// only the apps at or above the floor, untrusted names as text, no token needed only when enabled.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { startReport } from "../helpers/app.ts";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { launchBrowser, watchedPage } from "../helpers/browser.ts";

setDefaultTimeout(120_000);

describe("the public page in headless Chromium (compiled binary)", () => {
  const XSS = `<img src=x onerror=alert(1)>`;
  let server: RunningServer;
  let off: RunningServer;
  let browser: Browser;

  async function send(app: string, n: number, failed: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const id = `page-${Bun.hash(app).toString(36)}-${i}`;
      const start = await fetch(`${server.url}/upload`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(startReport(id, { nsapp: app })),
      });
      expect(start.status).toBe(201);
      const status = i < failed ? "failed" : "done";
      const end = await fetch(`${server.url}/upload/updatestatus`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ status, error: "none", random_id: id }),
      });
      expect(end.status).toBe(200);
    }
  }

  beforeAll(async () => {
    const bin = await compiledBinary();
    const env = { INSTALLSTATS_READ_TOKEN: "page-read-secret" };
    server = await startServer(
      bin,
      ["--db", `${tempDir()}/public.db`, "--rate-limit", "0", "--public-stats", "true", "--public-min-installs", "3"],
      env,
    );
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
    expect((await w.page.locator("#apps tbody tr td:nth-child(2)").allTextContents()).slice(0, 2)).toEqual([
      XSS,
      "popular-app",
    ]);
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
