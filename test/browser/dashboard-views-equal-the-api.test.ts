// The dashboard in real headless Chromium against the compiled binary with seeded data, and
// reports of today's clients (POST /telemetry v1 and v2: retries, forks, tools, hardware).
// Screenshots of every view, light and dark, go to test-artifacts/screenshots/ for review.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { client, compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { ROOT, tempDir } from "../helpers/tmp.ts";
import { launchBrowser, openView, watchedPage, type Watched } from "../helpers/browser.ts";
import { startReport } from "../helpers/app.ts";

setDefaultTimeout(180_000);

const SHOTS = join(ROOT, "test-artifacts/screenshots");
const XSS = `<img src=x onerror=alert(1)><script>alert(2)</script>`;
const XSS_ID = "dashboard-xss-0001";
/** An install whose first execution failed (exit 100) and whose retry succeeded. */
const RETRY_ID = "dashboard-retry-0001";
const RETRY_EXECUTION = "dashboard-retry-0001-b";
const FAILED_COMMAND = "apt-get install -y dashboard-probe-pkg";
/** A fork's install that failed with exit 22 (network). */
const FORK_ID = "dashboard-fork-0001";

let server: RunningServer;
let browser: Browser;
let context: BrowserContext;

async function api<T>(path: string): Promise<T> {
  const res = await fetch(server.url + path);
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return (await res.json()) as T;
}

/** One report of a current client (v2 unless payload_version is overridden), with its full payload. */
function telemetry(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    payload_version: 2,
    type: "lxc",
    nsapp: "dash-probe",
    ct_type: 1,
    disk_size: 8,
    core_count: 2,
    ram_size: 2048,
    os_type: "debian",
    os_version: "12",
    pve_version: "9.0.10",
    method: "default",
    exit_code: 0,
    error: "",
    error_category: "",
    install_duration: 0,
    cpu_vendor: "amd",
    cpu_model: "",
    gpu_vendor: "nvidia",
    gpu_model: "",
    gpu_passthrough: "yes",
    ram_speed: "",
    arch: "amd64",
    platform: "pve",
    has_arm: false,
    kernel_version: "6.14.11-4-pve",
    app_version: "",
    failed_command: "",
    failed_line: 0,
    repo_source: "ProxmoxVE",
    repo_slug: "community-scripts/ProxmoxVE",
    ...fields,
  };
}

/** A whole execution as the client sends it: start, two progress pings, final. */
async function execution(fields: Record<string, unknown>, final: Record<string, unknown>): Promise<void> {
  for (const status of ["installing", "validation", "configuring"])
    expect(await post("/telemetry", telemetry({ ...fields, status }))).toBeLessThan(300);
  expect(await post("/telemetry", telemetry({ ...fields, ...final }))).toBeLessThan(300);
}

/** Today's clients: a retried install, a fork's failure, a dev repo's success, an incus host, a tool and an addon. */
async function postTelemetry(): Promise<void> {
  const failed100 = {
    status: "failed",
    exit_code: 100,
    error_category: "dependency",
    failed_command: FAILED_COMMAND,
    failed_line: 42,
    error: `exit_code=100 | APT: install failed | at line 42: ${FAILED_COMMAND}\n---\nE: Unable to locate package`,
  };
  await execution({ random_id: RETRY_ID, execution_id: RETRY_ID, nsapp: "retry-probe" }, failed100);
  await execution(
    { random_id: RETRY_ID, execution_id: RETRY_EXECUTION, nsapp: "retry-probe" },
    { status: "success", install_duration: 95 },
  );
  const fork = {
    random_id: FORK_ID,
    execution_id: FORK_ID,
    nsapp: "fork-probe",
    repo_source: "external",
    repo_slug: "alice/ProxmoxVE",
    cpu_vendor: "intel",
    gpu_vendor: "intel",
    gpu_passthrough: "no",
  };
  await execution(fork, {
    status: "failed",
    exit_code: 22,
    error_category: "network",
    error: "exit_code=22 | curl: HTTP error",
  });
  // v1: no payload_version; its gpu_passthrough is the host's GPU kind.
  await execution(
    {
      payload_version: undefined,
      random_id: "dashboard-dev-0001",
      execution_id: "dashboard-dev-0001",
      repo_source: "ProxmoxVED",
      repo_slug: "community-scripts/ProxmoxVED",
      gpu_passthrough: "igpu",
      arch: "arm64",
      has_arm: true,
    },
    { status: "success" },
  );
  await execution(
    {
      random_id: "dashboard-incus-0001",
      execution_id: "dashboard-incus-0001",
      platform: "incus",
      pve_version: "incus-6.0",
    },
    { status: "success" },
  );
  expect(
    await post(
      "/telemetry",
      telemetry({
        random_id: "dashboard-tool-0001",
        execution_id: "dashboard-tool-0001",
        type: "pve",
        nsapp: "post-pve-install",
        status: "success",
      }),
    ),
  ).toBeLessThan(300);
  expect(
    await post(
      "/telemetry",
      telemetry({
        random_id: "dashboard-addon-0001",
        execution_id: "dashboard-addon-0001",
        type: "addon",
        nsapp: "netdata",
        status: "failed",
        exit_code: 1,
        error: "exit_code=1 | General error",
      }),
    ),
  ).toBeLessThan(300);
}

async function post(path: string, body: unknown): Promise<number> {
  const res = await fetch(server.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return res.status;
}

const metric = (page: Page, name: string) => page.locator(`[data-metric="${name}"]`).first().textContent();
const num = (text: string | null) => Number((text ?? "").replace(/[^0-9.]/g, ""));

/** Clicks something that navigates inside the dashboard and waits for the new view. */
async function clickAndWait(page: Page, selector: string): Promise<void> {
  await page.locator(selector).first().click();
  await page.waitForSelector("body[data-state=ready]", { timeout: 20_000 });
}

beforeAll(async () => {
  const bin = await compiledBinary();
  const dir = tempDir("installstats-dash-");
  const db = join(dir, "dash.db");
  const seeded = Bun.spawnSync([bin, "seed", "--records", "4000", "--days", "120", "--db", db]);
  if (seeded.exitCode !== 0) throw new Error(`seed failed: ${seeded.stderr.toString()}`);
  server = await startServer(bin, ["--db", db]);
  // A failure whose error text is markup: it must show as text everywhere and run nothing.
  expect(await post("/upload", startReport(XSS_ID, { nsapp: "xss-probe" }))).toBe(201);
  expect(await post("/upload/updatestatus", { random_id: XSS_ID, status: "failed", error: XSS })).toBe(200);
  await postTelemetry();
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
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

describe("every view", () => {
  test("loads without console errors or requests beyond localhost, light and dark, with screenshots", async () => {
    const top = await api<{ groups: { value: string }[] }>("/api/stats/breakdown?by=nsapp&limit=1");
    const app = top.groups[0]!.value;
    const views: [string, string][] = [
      ["overview", "/"],
      ["failures", "/failures"],
      ["installs", "/installs"],
      ["install-detail", `/installs?id=${XSS_ID}`],
      ["install-retried", `/installs?id=${RETRY_ID}`],
      ["forks", "/failures?repo_source=external&kind=all"],
      ["app", `/app?nsapp=${encodeURIComponent(app)}`],
      ["apps", "/app"],
    ];
    for (const scheme of ["light", "dark"] as const) {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: scheme });
      const w = await watchedPage(ctx);
      for (const [name, path] of views) {
        await openView(w.page, server.url + path);
        expect(await w.page.locator("main .view").count()).toBe(1);
        await w.page.screenshot({ path: join(SHOTS, `${name}-${scheme}.png`), fullPage: true });
      }
      // The theme really changed: dark pages have a dark background.
      const bg = await w.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      const [r] = bg.match(/\d+/g)!.map(Number);
      expect(scheme === "dark" ? r! < 60 : r! > 200).toBe(true);
      clean(w);
      await ctx.close();
    }
  });

  test("a phone-sized screen gets a one-column layout without sideways scrolling", async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const w = await watchedPage(ctx);
    for (const path of ["/", "/failures", "/installs"]) {
      await openView(w.page, server.url + path);
      const overflow = await w.page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      expect(overflow).toBeLessThanOrEqual(1);
      await w.page.screenshot({
        path: join(SHOTS, `phone${path === "/" ? "-overview" : path.replace("/", "-")}.png`),
        fullPage: true,
      });
    }
    // The log's time, app and outcome fit the width, also with an install's details open under its row.
    const tableOverflow = () =>
      w.page.evaluate(
        () => document.querySelector(".table-wrap")!.scrollWidth - document.querySelector(".table-wrap")!.clientWidth,
      );
    expect(await tableOverflow()).toBeLessThanOrEqual(1);
    await w.page.locator("table.installs tbody tr.row").nth(2).locator("td").nth(2).click();
    await w.page.waitForSelector("#install-detail");
    await w.page.waitForSelector("body[data-state=ready]");
    expect(await tableOverflow()).toBeLessThanOrEqual(1);
    expect(
      await w.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth),
    ).toBeLessThanOrEqual(1);
    await w.page.screenshot({ path: join(SHOTS, "phone-install-detail.png") });
    clean(w);
    await ctx.close();
  });
});

describe("numbers", () => {
  test("the overview's cards equal the API's summary, and a filter changes both", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/?days=90`);
    const all = await api<Record<string, number>>("/api/stats/summary?days=90");
    expect(num(await metric(w.page, "total"))).toBe(all.total!);
    expect(num(await metric(w.page, "failed"))).toBe(all.failed!);
    expect(num(await metric(w.page, "aborted"))).toBe(all.aborted!);
    expect(num(await metric(w.page, "in_progress"))).toBe(all.in_progress!);
    // Blocked (the host refused before the script ran): its own card, legend entry and colour.
    expect(all.blocked).toBeGreaterThan(0);
    expect(num(await metric(w.page, "blocked"))).toBe(all.blocked!);
    expect(await w.page.locator(".u-legend .u-series .u-label").allTextContents()).toContain("Blocked");
    expect(
      await w.page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--blocked").trim()),
    ).toMatch(/^#[0-9a-f]{6}$/i);

    // Filter by type through the form, as a user would.
    await w.page.locator(".filter-panel > summary").click();
    await w.page.selectOption("#filter-type", "vm");
    await clickAndWait(w.page, "#filters button[type=submit]");
    expect(new URL(w.page.url()).searchParams.get("type")).toBe("vm");
    const vm = await api<Record<string, number>>("/api/stats/summary?days=90&type=vm");
    expect(vm.total).toBeLessThan(all.total!);
    expect(num(await metric(w.page, "total"))).toBe(vm.total!);
    expect(num(await metric(w.page, "failed"))).toBe(vm.failed!);
    // Success rate shown to one decimal, as the API's rate.
    expect(await metric(w.page, "success_rate")).toBe(`${(vm.success_rate! * 100).toFixed(1)}%`);
    clean(w);
    await w.page.close();
  });

  test("top apps, distributions and the failure ranking equal the API's breakdowns", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/?days=90`);
    const apps = await api<{ groups: { value: string; total: number }[] }>(
      "/api/stats/breakdown?days=90&by=nsapp&limit=10",
    );
    const shown = await w.page
      .locator("section[aria-label='Top apps'] .bar-row")
      .evaluateAll((rows) =>
        rows.map((r) => [
          r.querySelector(".bar-label")!.textContent,
          Number(r.querySelector(".bar-count")!.getAttribute("data-count")),
        ]),
      );
    expect(shown).toEqual(apps.groups.map((g) => [g.value, g.total]));

    await openView(w.page, `${server.url}/failures?days=90&min_runs=5`);
    const ranked = await api<{ groups: { value: string; failed: number }[] }>(
      "/api/stats/breakdown?days=90&by=nsapp&sort=failure_rate&min_runs=5&limit=25",
    );
    const rows = await w.page
      .locator("section[aria-label='Apps by failure rate'] tbody tr")
      .evaluateAll((trs) => trs.map((tr) => tr.querySelector("td")!.textContent));
    expect(rows).toEqual(ranked.groups.map((g) => g.value));
    const errors = await api<{ total_signatures: number; signatures: { count: number }[] }>(
      "/api/stats/errors?days=90&limit=25",
    );
    expect(num(await metric(w.page, "signatures"))).toBe(errors.total_signatures);
    const counts = await w.page
      .locator("table.signatures td[data-count]")
      .evaluateAll((tds) => tds.map((td) => Number(td.getAttribute("data-count"))));
    expect(counts).toEqual(errors.signatures.map((s) => s.count));
    clean(w);
    await w.page.close();
  });
});

describe("drilling down", () => {
  test("a top app opens its page, its failed card lists only its failed installs", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/?days=90`);
    const app = await w.page.locator("section[aria-label='Top apps'] .bar-label").first().textContent();
    await clickAndWait(w.page, "section[aria-label='Top apps'] a.bar-row");
    expect(new URL(w.page.url()).pathname).toBe("/app");
    expect(await w.page.locator("#app-name").textContent()).toBe(app);
    const summary = await api<Record<string, number>>(`/api/stats/summary?days=90&nsapp=${encodeURIComponent(app!)}`);
    expect(num(await metric(w.page, "total"))).toBe(summary.total!);

    await clickAndWait(w.page, "a.card.tone-failed");
    const url = new URL(w.page.url());
    expect(url.pathname).toBe("/installs");
    expect(url.searchParams.get("outcome")).toBe("failed");
    expect(url.searchParams.get("nsapp")).toBe(app);
    const badges = await w.page.locator("table.installs tbody .badge").allTextContents();
    expect(badges.length).toBe(Math.min(summary.failed!, 50));
    expect(new Set(badges)).toEqual(new Set(summary.failed! > 0 ? ["Failed"] : []));
    clean(w);
    await w.page.close();
  });

  test("an error signature lists exactly the failed installs with that signature", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/failures?days=90`);
    const first = (await api<{ signatures: { id: string; count: number }[] }>("/api/stats/errors?days=90&limit=1"))
      .signatures[0]!;
    await clickAndWait(w.page, "table.signatures td.sig a");
    expect(new URL(w.page.url()).searchParams.get("signature")).toBe(first.id);
    let listed = await w.page.locator("table.installs tbody tr").count();
    // Follow the pages to the end: together they hold exactly the signature's count.
    while (await w.page.locator("#next-page").count()) {
      await clickAndWait(w.page, "#next-page");
      listed += await w.page.locator("table.installs tbody tr").count();
    }
    expect(listed).toBe(first.count);
    clean(w);
    await w.page.close();
  });

  test("a bar of the installs chart lists that day's installs", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/?days=30`);
    const box = (await w.page.locator("section[aria-label='Installs over time'] .u-over").boundingBox())!;
    await w.page.mouse.move(box.x + box.width - 4, box.y + box.height / 2);
    await w.page.mouse.click(box.x + box.width - 4, box.y + box.height / 2);
    await w.page.waitForURL(/\/installs\?/);
    await w.page.waitForSelector("body[data-state=ready]");
    const url = new URL(w.page.url());
    expect(url.searchParams.get("from")).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(url.searchParams.get("from")).toBe(url.searchParams.get("to"));
    const day = url.searchParams.get("from")!;
    const times = await w.page.locator("table.installs tbody td:first-child").allTextContents();
    for (const t of times) expect(t.startsWith(day)).toBe(true);
    clean(w);
    await w.page.close();
  });
});

describe("install log", () => {
  test("sorts oldest first and pages by cursor, the same rows as the API", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/installs?days=90`);
    await clickAndWait(w.page, "#sort-time");
    expect(new URL(w.page.url()).searchParams.get("order")).toBe("oldest");
    const firstPage = await api<{ installs: { random_id: string }[]; next_cursor: string }>(
      "/api/installs?days=90&order=oldest&limit=50",
    );
    const ids = () =>
      w.page.locator("table.installs tbody tr").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-id")));
    expect(await ids()).toEqual(firstPage.installs.map((i) => i.random_id));
    await clickAndWait(w.page, "#next-page");
    const second = await api<{ installs: { random_id: string }[] }>(
      `/api/installs?days=90&order=oldest&limit=50&cursor=${firstPage.next_cursor}`,
    );
    expect(await ids()).toEqual(second.installs.map((i) => i.random_id));
    clean(w);
    await w.page.close();
  });

  test("free-text search finds the install by its error text, and the detail shows every field", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/installs`);
    await w.page.fill("#filter-q", "onerror=alert");
    await clickAndWait(w.page, "#filters button[type=submit]");
    const rows = w.page.locator("table.installs tbody tr");
    expect(await rows.count()).toBe(1);
    expect(await rows.first().getAttribute("data-id")).toBe(XSS_ID);
    await clickAndWait(w.page, "table.installs tbody tr a[aria-label^='details']");
    expect(new URL(w.page.url()).searchParams.get("id")).toBe(XSS_ID);
    const detail = await w.page.locator("#install-detail dl").textContent();
    for (const text of [XSS_ID, "xss-probe", "failed", "debian 12", "8.2.2"]) expect(detail).toContain(text);
    clean(w);
    await w.page.close();
  });
});

describe("an install's details", () => {
  /** Top of an element in the window (px), or null when it is not there. */
  const topOf = async (page: Page, selector: string) => (await page.locator(selector).first().boundingBox())?.y ?? null;

  test("open under their row, from anywhere on the row, where the eye is; Escape closes them with the row in place", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, reducedMotion: "reduce" });
    const w = await watchedPage(ctx);
    await openView(w.page, `${server.url}/installs?days=90`);
    const rows = w.page.locator("table.installs tbody tr.row");
    expect(await rows.count()).toBe(50);
    // The 45th row, near the bottom of the page, clicked on its host cell (not a link).
    const row = rows.nth(44);
    const id = (await row.getAttribute("data-id"))!;
    await row.scrollIntoViewIfNeeded();
    const before = (await row.boundingBox())!.y;
    await row.locator("td").nth(6).click();
    await w.page.waitForSelector("#install-detail");
    await w.page.waitForSelector("body[data-state=ready]");
    expect(new URL(w.page.url()).searchParams.get("id")).toBe(id);
    // The details are the row right under the clicked one, and both are in the window: the row
    // stayed where it was, or moved up just enough for its details to show.
    expect(await w.page.locator(`tr[data-id="${id}"] + tr.detail-row #install-detail`).count()).toBe(1);
    const after = (await w.page.locator(`tr[data-id="${id}"]`).first().boundingBox())!;
    expect(after.y).toBeGreaterThanOrEqual(0);
    expect(after.y).toBeLessThanOrEqual(before);
    const detail = (await w.page.locator("#install-detail").boundingBox())!;
    expect(detail.y).toBeCloseTo(after.y + after.height, -1);
    expect(detail.y).toBeLessThan(900 / 2);
    expect(await w.page.locator("#install-detail dl").textContent()).toContain(id);
    // The table did not grow wider than its panel.
    expect(
      await w.page.evaluate(
        () => document.querySelector(".table-wrap")!.scrollWidth - document.querySelector(".table-wrap")!.clientWidth,
      ),
    ).toBeLessThanOrEqual(1);
    // The keyboard is in the details.
    expect(await w.page.evaluate(() => document.activeElement?.id)).toBe("install-detail");
    const y = (await w.page.locator(`tr[data-id="${id}"]`).first().boundingBox())!.y;
    await w.page.keyboard.press("Escape");
    await w.page.waitForFunction(() => !document.getElementById("install-detail"));
    await w.page.waitForSelector("body[data-state=ready]");
    expect(new URL(w.page.url()).searchParams.get("id")).toBeNull();
    // Back on the row's link, the row where it was (unless the shorter page had to scroll back).
    expect(await w.page.evaluate(() => document.activeElement?.closest("tr")?.getAttribute("data-id"))).toBe(id);
    expect(await topOf(w.page, `tr[data-id="${id}"]`)).toBeGreaterThanOrEqual(y);

    // A row's other links keep their meaning: the app opens its page.
    const app = await rows.nth(3).locator("td").nth(1).textContent();
    await clickAndWait(w.page, "table.installs tbody tr.row >> nth=3 >> td >> nth=1 >> a");
    expect(new URL(w.page.url()).pathname).toBe("/app");
    expect(new URL(w.page.url()).searchParams.get("nsapp")).toBe(app);
    clean(w);
    await ctx.close();
  });

  test("the keyboard opens them from the row's link and closes them from their Close link, focus following", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/installs?days=90`);
    const link = w.page.locator("table.installs tbody tr.row a.row-link").nth(2);
    const id = await w.page.locator("table.installs tbody tr.row").nth(2).getAttribute("data-id");
    expect(await link.getAttribute("aria-expanded")).toBe("false");
    await link.focus();
    await w.page.keyboard.press("Enter");
    await w.page.waitForSelector("#install-detail");
    await w.page.waitForSelector("body[data-state=ready]");
    expect(await w.page.evaluate(() => document.activeElement?.id)).toBe("install-detail");
    expect(await w.page.locator(`tr[data-id="${id}"] a.row-link`).first().getAttribute("aria-expanded")).toBe("true");
    // Tab reaches the Close link first, inside the details.
    await w.page.keyboard.press("Tab");
    expect(await w.page.evaluate(() => document.activeElement?.id)).toBe("close-detail");
    await w.page.keyboard.press("Enter");
    await w.page.waitForFunction(() => !document.getElementById("install-detail"));
    await w.page.waitForSelector("body[data-state=ready]");
    expect(await w.page.evaluate(() => document.activeElement?.closest("tr")?.getAttribute("data-id"))).toBe(id);
    // The open row's link closes it too; selecting text on a row opens nothing.
    await link.click();
    await w.page.waitForSelector("#install-detail");
    await w.page.waitForSelector("body[data-state=ready]");
    await w.page.locator("table.installs tbody tr.row a.row-link").nth(2).click();
    await w.page.waitForFunction(() => !document.getElementById("install-detail"));
    await w.page.waitForSelector("body[data-state=ready]");
    const cell = w.page.locator("table.installs tbody tr.row").nth(5).locator("td").nth(5);
    const box = (await cell.boundingBox())!;
    await w.page.mouse.move(box.x + 2, box.y + box.height / 2);
    await w.page.mouse.down();
    await w.page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    await w.page.mouse.up();
    await w.page.waitForTimeout(300);
    expect(new URL(w.page.url()).searchParams.get("id")).toBeNull();
    clean(w);
    await w.page.close();
  });

  test("an install not on the page (a shared link) shows its details above the list", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/installs?days=90&outcome=success&id=${XSS_ID}`);
    expect(await w.page.locator("tr.detail-row").count()).toBe(0);
    const [detail, table] = [await topOf(w.page, "#install-detail"), await topOf(w.page, "table.installs")];
    expect(detail!).toBeLessThan(table!);
    clean(w);
    await w.page.close();
  });
});

describe("times", () => {
  test("one convention, UTC in 24-hour form, whatever the browser's zone and locale", async () => {
    // A browser in New York with a 12-hour locale.
    const ctx = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      timezoneId: "America/New_York",
      locale: "en-US",
    });
    const w = await watchedPage(ctx);
    await openView(w.page, `${server.url}/?days=1`);
    const updated = (await w.page.locator("#updated").textContent())!;
    expect(updated).toMatch(/^Updated \d\d:\d\d:\d\d UTC$/);
    const hour = Number(updated.slice(8, 10));
    expect([new Date().getUTCHours(), new Date(Date.now() - 60_000).getUTCHours()]).toContain(hour);
    expect(await w.page.locator("#updated").getAttribute("title")).toContain("UTC");
    // The chart's legend names its points in UTC: hover the last hour.
    const box = (await w.page.locator("section[aria-label='Installs over time'] .u-over").boundingBox())!;
    await w.page.mouse.move(box.x + box.width - 3, box.y + box.height / 2);
    const ts = await api<{ points: { t: string }[] }>("/api/stats/timeseries?days=1&interval=hour");
    const last = ts.points.at(-1)!.t;
    expect(await w.page.locator(".u-legend .u-series").first().locator(".u-value").textContent()).toBe(
      `${last.slice(0, 10)} ${last.slice(11, 16)} UTC`,
    );
    // The log and the details: UTC, as the API's instants.
    await openView(w.page, `${server.url}/installs?id=${RETRY_ID}`);
    const rec = await api<{ created_at: string }>(`/api/installs/${RETRY_ID}`);
    expect(await w.page.locator("#sort-time").textContent()).toContain("(UTC)");
    expect(await w.page.locator("#install-detail dl").textContent()).toContain(
      `started${rec.created_at.slice(0, 10)} ${rec.created_at.slice(11, 19)} UTC`,
    );
    clean(w);
    await ctx.close();
  });
});

type Group = {
  value: string | null;
  total: number;
  success: number;
  failed: number;
  blocked: number;
  aborted: number;
  unknown: number;
};
type Breakdown = { groups: Group[] };
const notSucceeded = (g: Group) => g.failed + g.blocked + g.aborted + g.unknown;

/** [value, count] of a bar list's rows ("" for a missing value). */
const barRows = (page: Page, section: string) =>
  page
    .locator(`section[aria-label='${section}'] .bar-row`)
    .evaluateAll((rows) =>
      rows.map((r) => [
        r.querySelector(".bar-label")!.getAttribute("data-value"),
        Number(r.querySelector(".bar-count")!.getAttribute("data-count")),
      ]),
    );

describe("today's clients", () => {
  test("the overview shows retries, repositories, platform and hardware as the API counts them", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/?days=1`);
    const attempts = await api<Breakdown>("/api/stats/breakdown?days=1&by=attempt&limit=10");
    const installs = attempts.groups.find((g) => g.value === "1")!.total;
    const again = attempts.groups.filter((g) => g.value !== "1");
    const retries = again.reduce((n, g) => n + g.total, 0);
    const rescued = again.reduce((n, g) => n + g.success, 0);
    expect(retries).toBeGreaterThanOrEqual(1);
    expect(rescued).toBeGreaterThanOrEqual(1);
    expect(num(await metric(w.page, "retries"))).toBe(retries);
    expect(num(await metric(w.page, "rescued"))).toBe(rescued);
    const retried = attempts.groups.find((g) => g.value === "2")!.total;
    expect(await metric(w.page, "retry_rate")).toBe(`${((retried / installs) * 100).toFixed(1)}%`);
    expect(await metric(w.page, "executions_per_install")).toBe(((installs + retries) / installs).toFixed(2));
    // The same numbers as the server's own summary of retries.
    const summary = await api<{ retries: { retries: number; rescued: number; installs: number } }>(
      "/api/stats/summary?days=1",
    );
    expect(summary.retries).toMatchObject({ retries, rescued, installs });
    expect(await barRows(w.page, "Runs by attempt")).toEqual(attempts.groups.map((g) => [g.value, g.total]));

    const panels: [string, string, number][] = [
      ["Platforms", "platform", 6],
      ["Architectures", "arch", 6],
      ["CPU vendors", "cpu_vendor", 6],
      ["GPU vendors", "gpu_vendor", 6],
      ["GPU passthrough", "gpu_passthrough", 6],
      ["Host GPU (v1 clients)", "host_gpu", 6],
      ["Repositories", "repo_source", 8],
      ["Repository slugs", "repo_slug", 8],
    ];
    for (const [title, by, limit] of panels) {
      const b = await api<Breakdown>(`/api/stats/breakdown?days=1&by=${by}&limit=${limit}`);
      expect(b.groups.length).toBeGreaterThan(0);
      expect(await barRows(w.page, title)).toEqual(b.groups.map((g) => [g.value ?? "", g.total]));
    }
    // A hardware row lists its runs.
    await clickAndWait(w.page, "section[aria-label='GPU passthrough'] a.bar-row:has([data-value='yes'])");
    expect(new URL(w.page.url()).searchParams.get("gpu_passthrough")).toBe("yes");
    expect(await w.page.locator(`tr[data-id="${RETRY_ID}"]`).count()).toBe(2);
    clean(w);
    await w.page.close();
  });

  test("failures show exit codes with their meaning and category, error categories and failing commands", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/failures?days=1`);
    const codes = await api<Breakdown>("/api/stats/breakdown?days=1&by=exit_code&limit=22");
    const expected = codes.groups
      .filter((g) => g.value !== null && g.value !== "0" && notSucceeded(g) > 0)
      .slice(0, 20);
    const rows = w.page.locator("table.exit-codes tbody tr");
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-code")))).toEqual(
      expected.map((g) => g.value),
    );
    const apt = w.page.locator("table.exit-codes tr[data-code='100'] td");
    expect(await apt.nth(1).textContent()).toBe("APT: install failed (broken packages or dependencies)");
    expect(await apt.nth(2).textContent()).toBe("dependency");
    expect(Number(await apt.nth(3).getAttribute("data-count"))).toBe(
      codes.groups.find((g) => g.value === "100")!.failed,
    );
    expect(await w.page.locator("table.exit-codes tr[data-code='22'] td").nth(1).textContent()).toContain("HTTP error");

    const categories = await api<Breakdown>("/api/stats/breakdown?days=1&by=error_category&limit=20");
    expect(await barRows(w.page, "Error categories")).toEqual(
      categories.groups.filter((g) => notSucceeded(g) > 0).map((g) => [g.value ?? "", notSucceeded(g)]),
    );
    const commands = await api<Breakdown>("/api/stats/breakdown?days=1&by=failed_command&limit=16");
    const probe = commands.groups.find((g) => g.value === FAILED_COMMAND)!;
    const command = w.page.locator("ol.commands li", { hasText: FAILED_COMMAND });
    expect(Number(await command.locator("[data-count]").getAttribute("data-count"))).toBe(notSucceeded(probe));

    // An exit code lists the runs that ended with it, the retried install's first execution among them.
    await clickAndWait(w.page, "table.exit-codes tr[data-code='100'] a");
    expect(new URL(w.page.url()).searchParams.get("exit_code")).toBe("100");
    const exits = await w.page.locator("table.installs tbody td:nth-child(4)").allTextContents();
    expect(exits.length).toBeGreaterThan(0);
    expect(new Set(exits)).toEqual(new Set(["100"]));
    expect(await w.page.locator(`tr[data-execution="${RETRY_ID}"]`).count()).toBe(1);
    // A category chip lists that category's runs.
    await openView(w.page, `${server.url}/failures?days=1`);
    await clickAndWait(w.page, "section[aria-label='Error categories'] a.bar-row:has([data-value='network'])");
    expect(new URL(w.page.url()).searchParams.get("error_category")).toBe("network");
    expect(await w.page.locator(`tr[data-id="${FORK_ID}"]`).count()).toBe(1);
    clean(w);
    await w.page.close();
  });

  test("the repo filter and the kind selector apply to every view and stay in the URL", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/?days=1`);
    await clickAndWait(w.page, "a[data-repo='external']");
    expect(new URL(w.page.url()).searchParams.get("repo_source")).toBe("external");
    const forks = await api<Record<string, number>>("/api/stats/summary?days=1&repo_source=external");
    expect(forks.total).toBeGreaterThanOrEqual(1);
    expect(num(await metric(w.page, "total"))).toBe(forks.total!);
    expect(await w.page.locator("a[data-repo='external']").getAttribute("aria-current")).toBe("true");

    await clickAndWait(w.page, "#nav a[href^='/failures']");
    expect(new URL(w.page.url()).searchParams.get("repo_source")).toBe("external");
    expect(num(await metric(w.page, "failed"))).toBe(forks.failed!);
    await clickAndWait(w.page, "#nav a[href^='/installs']");
    const listed = await api<{ installs: { execution_id: string }[] }>(
      "/api/installs?days=1&repo_source=external&limit=50",
    );
    expect(
      await w.page
        .locator("table.installs tbody tr")
        .evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-execution"))),
    ).toEqual(listed.installs.map((i) => i.execution_id));
    expect(await w.page.locator(`tr[data-id="${FORK_ID}"]`).count()).toBe(1);

    // Every kind, forks still chosen: a reload keeps both.
    await clickAndWait(w.page, "a[data-kind='all']");
    let url = new URL(w.page.url());
    expect([url.pathname, url.searchParams.get("kind"), url.searchParams.get("repo_source")]).toEqual([
      "/installs",
      "all",
      "external",
    ]);
    await w.page.reload();
    await w.page.waitForSelector("body[data-state=ready]");
    expect(await w.page.locator("a[data-kind='all']").getAttribute("aria-current")).toBe("true");
    // The filter form keeps the scope it does not show.
    await w.page.fill("#filter-nsapp", "fork-probe");
    await clickAndWait(w.page, "#filters button[type=submit]");
    url = new URL(w.page.url());
    expect([url.searchParams.get("kind"), url.searchParams.get("repo_source"), url.searchParams.get("nsapp")]).toEqual([
      "all",
      "external",
      "fork-probe",
    ]);
    expect(await w.page.locator("table.installs tbody tr").count()).toBe(1);

    // Tools: their own numbers, no retries; back to every repo and installs.
    await openView(w.page, `${server.url}/?days=1&kind=tool`);
    const tools = await api<Record<string, number>>("/api/stats/summary?days=1&kind=tool");
    expect(tools.total).toBeGreaterThanOrEqual(1);
    expect(num(await metric(w.page, "total"))).toBe(tools.total!);
    expect(await w.page.locator(".card-title").first().textContent()).toBe("Tool runs");
    expect(await w.page.locator("section[aria-label='Retries']").count()).toBe(0);
    await clickAndWait(w.page, "a[data-kind='install']");
    expect(new URL(w.page.url()).search).toBe("?days=1");
    clean(w);
    await w.page.close();
  });

  // Todo until the read API accepts `repo_source=` (reports naming no repository, as its
  // documentation says): src/read/query.ts refuses empty values today (400).
  test("reports that name no repository are a choice of the repo filter", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/?days=1`);
    await clickAndWait(w.page, "a[data-repo='none']");
    expect(new URL(w.page.url()).searchParams.get("repo_source")).toBe("none");
    const none = await api<Record<string, number>>("/api/stats/summary?days=1&repo_source=");
    expect(num(await metric(w.page, "total"))).toBe(none.total!);
    clean(w);
    await w.page.close();
  });

  test("an install's details list its executions, each with its status timeline", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/installs?id=${RETRY_ID}`);
    type Rec = { execution_id: string; attempt: number; outcome: string; timeline: Record<string, string | null> };
    const detail = await api<Rec & { executions: Rec[] }>(`/api/installs/${RETRY_ID}`);
    expect(detail.executions.map((e) => e.attempt)).toEqual([1, 2]);
    const items = w.page.locator("#install-detail li.execution");
    expect(await items.evaluateAll((lis) => lis.map((li) => li.getAttribute("data-execution")))).toEqual([
      RETRY_ID,
      RETRY_EXECUTION,
    ]);
    const first = items.nth(0);
    expect(await first.locator(".badge").textContent()).toBe("Failed");
    expect(await first.locator(".exit").textContent()).toBe(
      "exit 100: APT: install failed (broken packages or dependencies)",
    );
    expect(await first.locator(".failed-command").textContent()).toBe(`Failed at line 42: ${FAILED_COMMAND}`);
    expect(await first.locator("details pre").textContent()).toContain("E: Unable to locate package");
    expect(await items.nth(1).locator(".badge").textContent()).toBe("Success");
    // Every status at the time the server first saw it.
    for (const [i, e] of detail.executions.entries()) {
      for (const step of ["installing", "validation", "configuring", "finished"]) {
        expect(e.timeline[step]).not.toBeNull();
        expect(await items.nth(i).locator(`[data-step=${step}] time`).getAttribute("datetime")).toBe(e.timeline[step]!);
      }
    }
    const fields = await w.page.locator("#install-detail dl").textContent();
    for (const text of [
      "retry-probe",
      "executions2",
      "exit code0: Success",
      "GPU passthroughyes",
      "/telemetry v2",
      "ProxmoxVE (community-scripts/ProxmoxVE)",
    ])
      expect(fields).toContain(text);
    // The log shows both executions, the retry marked with its attempt.
    expect(await w.page.locator(`tr[data-execution="${RETRY_EXECUTION}"] .attempt`).textContent()).toBe(" #2");
    clean(w);
    await w.page.close();
  });
});

describe("untrusted text", () => {
  test("an error text holding markup is shown as text in the log, the detail and the failures view, and runs nothing", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/installs?id=${XSS_ID}`);
    expect(await w.page.locator("#error-text").textContent()).toBe(XSS);
    expect(await w.page.locator(`tr[data-id="${XSS_ID}"] .error-cell`).textContent()).toBe(XSS);
    await openView(w.page, `${server.url}/failures?days=1`);
    expect(await w.page.locator("table.signatures").textContent()).toContain("<img src=x onerror=alert(1)>");
    // Nothing was parsed as markup: no injected elements exist, no alert ran.
    expect(await w.page.locator("main img, main script").count()).toBe(0);
    await w.page.waitForTimeout(300);
    clean(w);
    await w.page.close();
  });
});

describe("URL state", () => {
  test("window, filters and floor survive a reload; back and forward replay the views", async () => {
    const w = await watchedPage(context);
    const start = `${server.url}/failures?days=7&type=lxc&min_runs=3`;
    await openView(w.page, start);
    const before = await metric(w.page, "failed");
    await w.page.reload();
    await w.page.waitForSelector("body[data-state=ready]");
    expect(w.page.url()).toBe(start);
    expect(await metric(w.page, "failed")).toBe(before);
    expect(await w.page.locator(".range .seg[aria-current=true]").textContent()).toBe("7d");
    expect(await w.page.locator("#min-runs").inputValue()).toBe("3");
    expect(await w.page.locator(".chips").textContent()).toContain("Type: lxc");

    await clickAndWait(w.page, "#nav a[href^='/installs']");
    expect(new URL(w.page.url()).searchParams.get("type")).toBe("lxc");
    await clickAndWait(w.page, ".seg:has-text('90d')");
    expect(new URL(w.page.url()).searchParams.get("days")).toBe("90");

    await w.page.goBack();
    await w.page.waitForSelector("body[data-state=ready]");
    expect(new URL(w.page.url()).searchParams.get("days")).toBe("7");
    await w.page.goBack();
    await w.page.waitForSelector("body[data-state=ready]");
    expect(w.page.url()).toBe(start);
    expect(await w.page.locator("#nav a[aria-current=page]").textContent()).toBe("Failures");
    expect(await metric(w.page, "failed")).toBe(before);
    await w.page.goForward();
    await w.page.waitForSelector("body[data-state=ready]");
    expect(new URL(w.page.url()).pathname).toBe("/installs");
    clean(w);
    await w.page.close();
  });
});

describe("keyboard, live refresh, access", () => {
  test("views are reachable with the keyboard alone", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/`);
    // Tab to the Failures link in the navigation and press Enter.
    for (let i = 0; i < 20; i++) {
      await w.page.keyboard.press("Tab");
      if ((await w.page.evaluate(() => document.activeElement?.textContent)) === "Failures") break;
    }
    await w.page.keyboard.press("Enter");
    await w.page.waitForURL(/\/failures/);
    await w.page.waitForSelector("body[data-state=ready]");
    expect(await w.page.locator("#nav a[aria-current=page]").textContent()).toBe("Failures");
    clean(w);
    await w.page.close();
  });

  test("live refresh can be paused, stays paused across a reload, and resuming fetches new data", async () => {
    const w = await watchedPage(context);
    await openView(w.page, `${server.url}/`);
    expect(await w.page.locator("#live").getAttribute("aria-pressed")).toBe("true");
    await w.page.click("#live");
    expect(await w.page.locator("#live").getAttribute("aria-pressed")).toBe("false");
    await w.page.reload();
    await w.page.waitForSelector("body[data-state=ready]");
    expect(await w.page.locator("#live").getAttribute("aria-pressed")).toBe("false");
    // A new install arrives while paused; resuming fetches the view again and shows it.
    const before = num(await metric(w.page, "total"));
    expect(await post("/upload", startReport("dashboard-live-0001", { nsapp: "live-probe" }))).toBe(201);
    await w.page.click("#live");
    await w.page.waitForFunction(
      (n) => Number(document.querySelector('[data-metric="total"]')?.textContent?.replace(/[^0-9]/g, "")) === n,
      before + 1,
    );
    expect(await w.page.locator("#live").getAttribute("aria-pressed")).toBe("true");
    clean(w);
    await w.page.close();
  });

  test("the theme button overrides the system theme and is remembered across reloads", async () => {
    const ctx = await browser.newContext({ colorScheme: "light" });
    const w = await watchedPage(ctx);
    await openView(w.page, `${server.url}/`);
    const theme = () => w.page.evaluate(() => document.documentElement.dataset.theme);
    expect(await theme()).toBe("light");
    await w.page.click("#theme"); // auto -> light
    await w.page.click("#theme"); // light -> dark
    await w.page.waitForSelector("body[data-state=ready]");
    expect(await theme()).toBe("dark");
    await w.page.reload();
    await w.page.waitForSelector("body[data-state=ready]");
    expect(await theme()).toBe("dark");
    expect(await w.page.locator("#theme").textContent()).toBe("Theme: dark");
    clean(w);
    await ctx.close();
  });

  test("with a read token the dashboard asks for it once, then shows the data; an empty database shows empty states and how to connect", async () => {
    const bin = await compiledBinary();
    const dir = tempDir("installstats-dash-token-");
    const guarded = await startServer(bin, ["--db", join(dir, "empty.db")], {
      INSTALLSTATS_READ_TOKEN: "s3cret-token",
    });
    try {
      const ctx = await browser.newContext();
      const page = await ctx.newPage();
      await openView(page, `${guarded.url}/`);
      expect(await page.locator("#token").count()).toBe(1);
      await page.fill("#token", "s3cret-token");
      await page.click(".token-form button[type=submit]");
      await page.waitForSelector("main .cards");
      expect(num(await metric(page, "total"))).toBe(0);
      expect(await page.locator("main .empty").first().textContent()).toBe("No installs in this window.");
      expect(await page.locator("#first-run").count()).toBe(1);
      await ctx.close();
    } finally {
      await guarded.stop();
    }
  });
});

describe("first run", () => {
  test("a server with no report says how to connect both kinds of scripts, with its own address, and how to try it; the commands work", async () => {
    const bin = await compiledBinary();
    const fresh = await startServer(bin, ["--db", join(tempDir("installstats-dash-first-"), "first.db")]);
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const w = await watchedPage(ctx);
      for (const path of ["/", "/failures", "/installs", "/app"]) {
        await openView(w.page, fresh.url + path);
        expect(await w.page.locator("#first-run").count(), path).toBe(1);
      }
      await openView(w.page, `${fresh.url}/`);
      await w.page.screenshot({ path: join(SHOTS, "first-run-light.png"), fullPage: true });
      const copy = (name: string) => w.page.locator(`[data-copy="${name}"] code`).textContent();
      // This server's address, as the browser reached it.
      expect(await copy("the TELEMETRY_URL setting")).toBe(`export TELEMETRY_URL=${fresh.url}/telemetry`);
      expect(await copy("the base URL for old scripts")).toBe(fresh.url);
      expect(await w.page.locator("#first-run").textContent()).toContain("/upload/updatestatus");
      // Opened as 127.0.0.1: other hosts need the network address.
      expect(await w.page.locator("#loopback-note").count()).toBe(1);
      const commands = await w.page.locator("#first-run .try code").allTextContents();
      expect(commands).toHaveLength(3);
      for (const c of commands) expect(c).toStartWith(`scripts/client.sh --url ${fresh.url} `);
      // Copy: the clipboard when the page may use it, else the text is selected.
      await w.page.locator("[data-copy='the TELEMETRY_URL setting'] button").click();
      await w.page.waitForFunction(
        () =>
          (document.querySelector("[data-copy='the TELEMETRY_URL setting'] [role=status]")?.textContent ?? "") !== "",
      );

      // The commands shown, run as shown: the view fills and the guide goes away.
      for (const c of commands) await client(fresh.url, c.split(" ").slice(3));
      await w.page.reload();
      await w.page.waitForSelector("body[data-state=ready]");
      expect(await w.page.locator("#first-run").count()).toBe(0);
      const summary = (await (await fetch(`${fresh.url}/api/stats/summary`)).json()) as {
        total: number;
        retries: { installs: number };
      };
      expect(summary.retries.installs).toBe(3);
      expect(num(await metric(w.page, "total"))).toBe(summary.total);
      clean(w);
      await ctx.close();
    } finally {
      await fresh.stop();
    }
  });
});
