// The dashboard's admin view of the rejected-reports log, in headless Chromium against the
// compiled binary: asked for the admin token (kept for the tab only), the entries with their
// reasons and raw bodies exactly as the API lists them (markup shown as text, non-UTF-8 as
// base64), filtered by reason, paged, and replayed (dry run first) through the admin API.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { ROOT, tempDir } from "../helpers/tmp.ts";
import { launchBrowser, openView, watchedPage, type Watched } from "../helpers/browser.ts";
import { startReport } from "../helpers/app.ts";

setDefaultTimeout(180_000);

const TOKEN = "adm1n-view-t0ken";
const SHOTS = join(ROOT, "test-artifacts/screenshots");
const MARKUP = `{"random_id": "<img src=x onerror=alert(1)>", "type": "lxc"`;

let server: RunningServer;
let browser: Browser;

interface Entry {
  id: number;
  reason: string;
  body: string | null;
  body_base64: string | null;
  replay_result: string | null;
}

async function entries(query = ""): Promise<Entry[]> {
  const res = await fetch(`${server.url}/api/admin/rejected?limit=1000${query}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { entries: Entry[] }).entries;
}

const post = (path: string, body: string | Uint8Array<ArrayBuffer>) =>
  fetch(server.url + path, { method: "POST", headers: { "content-type": "application/json" }, body });

beforeAll(async () => {
  server = await startServer(await compiledBinary(), ["--db", join(tempDir("installstats-admin-view-"), "a.db")], {
    INSTALLSTATS_ADMIN_TOKEN: TOKEN,
  });
  // One of each reason, and enough refused bodies for two pages.
  expect((await post("/upload", MARKUP)).status).toBe(400);
  expect((await post("/upload", JSON.stringify({ ...startReport("admin-range"), disk_size: 1e29 }))).status).toBe(422);
  expect((await post("/upload", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]))).status).toBe(400);
  expect((await post("/upload", JSON.stringify(startReport("admin-final")))).status).toBe(201);
  expect(
    (await post("/upload/updatestatus", JSON.stringify({ random_id: "admin-final", status: "done", error: "none" })))
      .status,
  ).toBe(200);
  expect(
    (await post("/upload/updatestatus", JSON.stringify({ random_id: "admin-final", status: "failed", error: "late" })))
      .status,
  ).toBe(409);
  expect((await post("/upload/telemetry", JSON.stringify({ random_id: "admin-path" }))).status).toBe(404);
  for (let i = 0; i < 55; i++) expect((await post("/upload", `{"random_id": "admin-page-${i}", `)).status).toBe(400);
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

function clean(w: Watched): void {
  expect(w.problems).toEqual([]);
  expect(w.outside).toEqual([]);
}

async function signIn(page: Page): Promise<void> {
  await openView(page, `${server.url}/admin`);
  await page.fill("#admin-token", TOKEN);
  await page.click("#admin-token-form button[type=submit]");
  await page.waitForSelector("#rejected-log");
  await page.waitForSelector("body[data-state=ready]");
}

const shownIds = (page: Page) =>
  page.locator("li.rejected-entry").evaluateAll((lis) => lis.map((li) => Number(li.getAttribute("data-id"))));

describe("admin view", () => {
  test("asks for the admin token (no request without it), refuses a wrong one, keeps it for this tab only", async () => {
    const ctx = await browser.newContext();
    const w = await watchedPage(ctx);
    await openView(w.page, `${server.url}/admin`);
    expect(await w.page.locator("#admin-token").count()).toBe(1);
    // The header's Admin link is the current page.
    expect(await w.page.locator("#admin-link").getAttribute("aria-current")).not.toBeNull();
    await w.page.fill("#admin-token", "wrong");
    await w.page.click("#admin-token-form button[type=submit]");
    await w.page.waitForSelector("#admin-token-form [role=alert]");
    expect(await w.page.locator("#admin-token-form [role=alert]").textContent()).toContain("refused");
    await w.page.fill("#admin-token", TOKEN);
    await w.page.click("#admin-token-form button[type=submit]");
    await w.page.waitForSelector("#rejected-log");
    expect(
      await w.page.evaluate(() => [
        sessionStorage.getItem("installstats.adminToken"),
        localStorage.getItem("installstats.adminToken"),
      ]),
    ).toEqual([TOKEN, null]);
    // Forgotten on request.
    await w.page.click("#forget-admin-token");
    await w.page.waitForSelector("#admin-token");
    expect(await w.page.evaluate(() => sessionStorage.getItem("installstats.adminToken"))).toBeNull();
    // The only console error: the refused token's 401.
    expect(w.problems.filter((p) => !p.includes("401"))).toEqual([]);
    expect(w.outside).toEqual([]);
    await ctx.close();
  });

  test("lists the entries newest first with reason, status and raw body exactly as the API; markup stays text; pages by id", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const w = await watchedPage(ctx);
    await signIn(w.page);
    const all = await entries();
    expect(new Set(all.map((e) => e.reason))).toEqual(
      new Set(["invalid_json", "invalid_field", "already_final", "unknown_path"]),
    );
    // First page: the 50 newest.
    expect(await shownIds(w.page)).toEqual(all.slice(0, 50).map((e) => e.id));
    await w.page.click("#older-page");
    await w.page.waitForSelector("body[data-state=ready]");
    expect(new URL(w.page.url()).searchParams.get("cursor")).toBe(String(all[49]!.id));
    expect(await shownIds(w.page)).toEqual(all.slice(50).map((e) => e.id));

    // Each older entry as the API has it: its reason and its body to the byte.
    for (const e of all.slice(50)) {
      const li = w.page.locator(`li.rejected-entry[data-id="${e.id}"]`);
      expect(await li.getAttribute("data-reason")).toBe(e.reason);
      if (e.body !== null || e.body_base64 !== null)
        expect(await li.locator("pre.raw-body").textContent()).toBe(e.body ?? e.body_base64!);
    }
    const markup = all.find((e) => e.body === MARKUP)!;
    const item = w.page.locator(`li.rejected-entry[data-id="${markup.id}"]`);
    await item.locator("details summary").click();
    expect(await item.locator("pre.raw-body").textContent()).toBe(MARKUP);
    expect(await w.page.locator("main img").count()).toBe(0);
    const binary = all.find((e) => e.body_base64 !== null)!;
    expect(await w.page.locator(`li.rejected-entry[data-id="${binary.id}"] summary`).textContent()).toContain("base64");
    await w.page.screenshot({ path: join(SHOTS, "admin-light.png"), fullPage: true });
    clean(w);
    await ctx.close();
  });

  test("a reason lists only its entries", async () => {
    const ctx = await browser.newContext();
    const w = await watchedPage(ctx);
    await signIn(w.page);
    await w.page.click("a[data-reason='already_final']");
    await w.page.waitForSelector("body[data-state=ready]");
    expect(new URL(w.page.url()).searchParams.get("reason")).toBe("already_final");
    const finals = await entries("&reason=already_final");
    expect(finals).toHaveLength(1);
    expect(await shownIds(w.page)).toEqual(finals.map((e) => e.id));
    expect(await w.page.locator("li.rejected-entry").first().textContent()).toContain("HTTP 409");
    clean(w);
    await ctx.close();
  });

  test("replay: a dry run marks nothing; the replay runs the refused bodies through the current parser and marks each entry", async () => {
    const ctx = await browser.newContext();
    const w = await watchedPage(ctx);
    await signIn(w.page);
    const refused = (await entries()).filter((e) => e.reason === "invalid_json" || e.reason === "invalid_field");
    await w.page.click("#replay-dry");
    await w.page.waitForSelector("#replay-result [data-tried]");
    expect(Number(await w.page.locator("#replay-result [data-tried]").getAttribute("data-tried"))).toBe(refused.length);
    expect(await w.page.locator("#replay-result").textContent()).toStartWith("Dry run:");
    expect((await entries()).every((e) => e.replay_result === null)).toBe(true);

    // Only invalid_field this time.
    await w.page.selectOption("#replay-reason", "invalid_field");
    await w.page.click("#replay-run");
    await w.page.waitForFunction(() => document.querySelector("#replay-result")?.textContent?.startsWith("Replayed"));
    await w.page.waitForSelector("body[data-state=ready]");
    expect(Number(await w.page.locator("#replay-result [data-tried]").getAttribute("data-tried"))).toBe(1);
    const after = await entries();
    const field = after.find((e) => e.reason === "invalid_field")!;
    expect(field.replay_result).toStartWith("still invalid");
    expect(after.filter((e) => e.reason === "invalid_json").every((e) => e.replay_result === null)).toBe(true);
    // The log shows what came of it (the entry is an old one: listed under its reason).
    await w.page.click("a[data-reason='invalid_field']");
    await w.page.waitForSelector("body[data-state=ready]");
    // The replay's answer stays shown while the log is browsed.
    expect(await w.page.locator("#replay-result").textContent()).toStartWith("Replayed");
    expect(await w.page.locator(`li.rejected-entry[data-id="${field.id}"] .chip.replayed`).textContent()).toStartWith(
      "replay: still invalid",
    );
    clean(w);
    await ctx.close();
  });
});

describe("admin view on a server without an admin token", () => {
  test("says the admin API is off and how to turn it on", async () => {
    const off = await startServer(await compiledBinary(), ["--db", join(tempDir("installstats-admin-off-"), "o.db")]);
    try {
      const ctx = await browser.newContext();
      const w = await watchedPage(ctx);
      await openView(w.page, `${off.url}/admin`);
      await w.page.fill("#admin-token", "anything");
      await w.page.click("#admin-token-form button[type=submit]");
      await w.page.waitForSelector("#admin-off");
      expect(await w.page.locator("#admin-off").textContent()).toContain("INSTALLSTATS_ADMIN_TOKEN");
      expect(w.problems.filter((p) => !p.includes("403"))).toEqual([]);
      await ctx.close();
    } finally {
      await off.stop();
    }
  });
});
