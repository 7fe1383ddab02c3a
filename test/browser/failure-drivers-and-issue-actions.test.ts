// Why runs fail and acting on it, in headless Chromium against the compiled binary: the failure
// drivers' sentence and table on the app page and the Failures view, equal to the API's answer;
// from an error signature, the issue previewed (admin token asked for, kept for the tab), sent to
// a local fake of GitHub's API, linked, and never sent twice. The tracker's token, given to the
// server in its environment, appears on no page and in no log line.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { ROOT, tempDir } from "../helpers/tmp.ts";
import { launchBrowser, openView, watchedPage, type Watched } from "../helpers/browser.ts";
import { startFakeTracker, type FakeTracker } from "../helpers/trackers.ts";

setDefaultTimeout(180_000);

const SHOTS = join(ROOT, "test-artifacts/screenshots");
const ADMIN = "adm1n-f41lure-view";
const TRACKER_TOKEN = "ghp_fakeTrackerToken0123456789";
const APP = "drv-probe";
const ERROR =
  "exit_code=100 | APT: install failed | at line 42: apt-get install -y drv-probe-ffmpeg\n---\nE: Unable to locate package drv-probe-ffmpeg";

let server: RunningServer;
let browser: Browser;
let fake: FakeTracker;

async function api<T>(path: string, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(server.url + path, { headers });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function post(path: string, body: unknown): Promise<number> {
  return (
    await fetch(server.url + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    })
  ).status;
}

/** One execution of a current client: start, then final. */
async function run(n: number, pve: string, kernel: string, failed: boolean): Promise<void> {
  const id = `drv-view-${n}`;
  const fields = {
    payload_version: 2,
    random_id: id,
    execution_id: id,
    type: "lxc",
    nsapp: APP,
    ct_type: 1,
    disk_size: 8,
    core_count: 2,
    ram_size: 2048,
    os_type: "debian",
    os_version: "13",
    pve_version: pve,
    kernel_version: kernel,
    method: "default",
    arch: "amd64",
    platform: "pve",
    repo_source: "ProxmoxVE",
  };
  expect(await post("/telemetry", { ...fields, status: "installing" })).toBeLessThan(300);
  expect(
    await post("/telemetry", {
      ...fields,
      ...(failed
        ? { status: "failed", exit_code: 100, error_category: "dependency", error: ERROR }
        : { status: "success", exit_code: 0 }),
    }),
  ).toBeLessThan(300);
}

beforeAll(async () => {
  fake = startFakeTracker("github", { token: TRACKER_TOKEN, owner: "community-scripts", repo: "ProxmoxVE" });
  server = await startServer(await compiledBinary(), ["--db", join(tempDir("installstats-actions-"), "a.db")], {
    INSTALLSTATS_ADMIN_TOKEN: ADMIN,
    INSTALLSTATS_TRACKER: "github",
    INSTALLSTATS_TRACKER_URL: fake.url,
    INSTALLSTATS_TRACKER_REPO: "community-scripts/ProxmoxVE",
    INSTALLSTATS_TRACKER_TOKEN: TRACKER_TOKEN,
    INSTALLSTATS_TRACKER_LABELS: "bug,telemetry",
  });
  // PVE 9.0.9 carries half of the runs and nearly all the failures.
  let n = 0;
  for (let i = 0; i < 40; i++) await run(++n, "9.0.9", "6.14.8-2-pve", i < 30);
  for (let i = 0; i < 40; i++) await run(++n, "8.4.1", "6.8.12-9-pve", i < 2);
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  fake?.stop();
});

function clean(w: Watched): void {
  expect(w.problems).toEqual([]);
  expect(w.outside).toEqual([]);
}

interface Drivers {
  runs: number;
  failed: number;
  drivers: {
    dimension: string;
    value: string;
    failed: number;
    runs: number;
    share_of_failed: number;
    share_of_runs: number;
  }[];
}

const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
const words = (d: Drivers["drivers"][number]) =>
  d.dimension === "pve_version"
    ? `PVE ${d.value}`
    : d.dimension === "kernel_version"
      ? `kernel ${d.value}`
      : `${d.dimension} ${d.value}`;

describe("why runs fail", () => {
  test("the app page and the Failures view say it in one sentence and a table, as the API answers", async () => {
    const d = await api<Drivers>(`/api/stats/drivers?days=30&nsapp=${APP}&limit=8`);
    expect(d.drivers.length).toBeGreaterThanOrEqual(2);
    expect(["pve_version", "kernel_version"]).toContain(d.drivers[0]!.dimension);
    const top = d.drivers[0]!;
    const sentence = `${APP} failures: ${pct(top.share_of_failed)} on ${words(top)}, which carries ${pct(top.share_of_runs)} of its runs.`;
    expect(sentence).toMatch(
      /^drv-probe failures: 94% on (PVE 9\.0\.9|kernel 6\.14\.8-2-pve), which carries 50% of its runs\.$/,
    );
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const w = await watchedPage(ctx);
    for (const [path, shot] of [
      [`/app?nsapp=${APP}`, "drivers-app"],
      [`/failures?nsapp=${APP}`, "drivers-failures"],
    ] as const) {
      await openView(w.page, server.url + path);
      expect(await w.page.locator("#driver-sentence").textContent()).toBe(sentence);
      const rows = w.page.locator("#drivers table.drivers tbody tr");
      expect(await rows.count()).toBe(d.drivers.length);
      for (let i = 0; i < d.drivers.length; i++) {
        const row = rows.nth(i);
        expect([await row.getAttribute("data-dimension"), await row.getAttribute("data-value")]).toEqual([
          d.drivers[i]!.dimension,
          d.drivers[i]!.value,
        ]);
        const cell = row.locator("td[data-failed]");
        expect([Number(await cell.getAttribute("data-failed")), Number(await cell.getAttribute("data-runs"))]).toEqual([
          d.drivers[i]!.failed,
          d.drivers[i]!.runs,
        ]);
      }
      await w.page.locator("#drivers").screenshot({ path: join(SHOTS, `${shot}.png`) });
    }
    // An outcome filter is left out of the question, and the panel says so.
    await openView(w.page, `${server.url}/failures?nsapp=${APP}&outcome=failed`);
    expect(await w.page.locator("#driver-sentence").textContent()).toBe(sentence);
    expect(await w.page.locator("#drivers").textContent()).toContain("Asked without the filter on outcome");
    // A row leads to its failed runs.
    await w.page.locator('#drivers tr[data-dimension="pve_version"] a').click();
    await w.page.waitForSelector("body[data-state=ready]");
    expect(new URL(w.page.url()).searchParams.get("pve_version")).toBe("9.0.9");
    expect(new URL(w.page.url()).searchParams.get("outcome")).toBe("failed");
    clean(w);
    await ctx.close();
  });
});

describe("acting on a failure", () => {
  async function toIssue(page: Page): Promise<void> {
    await openView(page, `${server.url}/failures?nsapp=${APP}`);
    await page.locator("table.signatures a.open-issue").first().click();
    await page.waitForSelector("body[data-state=ready]");
  }

  test("from a signature: the admin token asked for, the issue previewed, sent once, linked; the tracker's token on no page", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const w = await watchedPage(ctx);
    const { page } = w;
    await toIssue(page);
    // No admin token in this tab yet: asked for, nothing requested.
    expect(await page.locator("#admin-token-form").count()).toBe(1);
    expect(fake.requests).toEqual([]);
    await page.fill("#admin-token", "wrong");
    await page.locator("#admin-token-form button[type=submit]").click();
    await page.waitForSelector("body[data-state=ready]");
    expect(await page.locator("#admin-token-form .error-box").count()).toBe(1);
    await page.fill("#admin-token", ADMIN);
    await page.locator("#admin-token-form button[type=submit]").click();
    await page.waitForSelector("#issue-preview");
    const signature = new URL(page.url()).searchParams.get("signature")!;
    expect(signature).toMatch(/^[0-9a-f]{16}$/);
    // The preview is the API's, for the same window and app; only a search went to the tracker.
    const preview = await api<{ issue: { title: string; body: string } }>(
      `/api/admin/issues/${signature}?days=30&nsapp=${APP}`,
      { authorization: `Bearer ${ADMIN}` },
    );
    expect(await page.inputValue("#issue-title")).toBe(preview.issue.title);
    expect(await page.inputValue("#issue-body")).toBe(preview.issue.body);
    expect(await page.inputValue("#issue-labels")).toBe("bug, telemetry");
    expect(fake.requests.every((r) => r.method === "GET" && r.path.startsWith("/search/issues"))).toBe(true);
    await page.screenshot({ path: join(SHOTS, "issue-preview.png"), fullPage: true });

    // Edited, then sent: one issue, with the edit and the marker.
    await page.fill("#issue-title", `${preview.issue.title} on PVE 9.0.9`);
    await page.locator("#issue-send").click();
    await page.waitForSelector("#issue-linked");
    expect(await page.locator("#issue-sent").textContent()).toBe("Opened #1 in community-scripts/ProxmoxVE.");
    expect(await page.locator("#issue-link").getAttribute("href")).toBe(
      `${fake.url}/community-scripts/ProxmoxVE/issues/1`,
    );
    const posted = fake.requests.filter((r) => r.method === "POST");
    expect(posted).toHaveLength(1);
    expect(posted[0]!.body).toMatchObject({
      title: `${preview.issue.title} on PVE 9.0.9`,
      labels: ["bug", "telemetry"],
    });
    expect(String(posted[0]!.body!.body)).toContain(`installstats-signature: ${signature}`);
    await page.screenshot({ path: join(SHOTS, "issue-linked.png"), fullPage: true });

    // The signature's row now shows its issue, to every reader; opening it again shows the link, sends nothing.
    await openView(page, `${server.url}/failures?nsapp=${APP}`);
    const link = page.locator("table.signatures a.issue-link").first();
    expect([await link.textContent(), await link.getAttribute("href")]).toEqual([
      "#1",
      `${fake.url}/community-scripts/ProxmoxVE/issues/1`,
    ]);
    await openView(page, `${server.url}/issue?signature=${signature}&nsapp=${APP}`);
    expect(await page.locator("#issue-linked").count()).toBe(1);
    expect(await page.locator("#issue-send").count()).toBe(0);
    const again = await fetch(`${server.url}/api/admin/issues/${signature}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { result: string }).result).toBe("linked");
    expect(fake.requests.filter((r) => r.method === "POST")).toHaveLength(1);

    // Forgotten (the issue deleted, say): the view searches again, finds it by its marker, links it.
    await page.locator("#issue-forget").click();
    await page.waitForSelector("#issue-existing");
    await page.locator("#issue-send").click();
    await page.waitForSelector("#issue-linked");
    expect(await page.locator("#issue-sent").textContent()).toBe(
      "Linked the tracker's issue #1 in community-scripts/ProxmoxVE.",
    );
    expect(fake.requests.filter((r) => r.method === "POST")).toHaveLength(1);

    // The tracker's token is on no page and in no log line; the admin token stays in this tab only.
    expect(await page.content()).not.toContain(TRACKER_TOKEN);
    expect(server.stderr()).not.toContain(TRACKER_TOKEN);
    expect(
      await page.evaluate(() => [
        sessionStorage.getItem("installstats.adminToken"),
        localStorage.getItem("installstats.adminToken"),
      ]),
    ).toEqual([ADMIN, null]);
    // The only console error: the refused admin token's 401.
    expect(w.problems.filter((p) => !p.includes("401"))).toEqual([]);
    expect(w.outside).toEqual([]);
    await ctx.close();
  });

  test("a tracker refusing the token: the form stays, with the tracker's answer", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const w = await watchedPage(ctx);
    await w.page.goto(server.url);
    await w.page.evaluate((t) => sessionStorage.setItem("installstats.adminToken", t), ADMIN);
    // A second signature of the same app, not linked yet.
    for (let i = 0; i < 3; i++) {
      const id = `drv-view-other-${i}`;
      const f = {
        payload_version: 2,
        random_id: id,
        execution_id: id,
        type: "lxc",
        nsapp: APP,
        pve_version: "8.4.1",
        os_type: "debian",
        os_version: "13",
      };
      await post("/telemetry", { ...f, status: "installing" });
      await post("/telemetry", {
        ...f,
        status: "failed",
        exit_code: 22,
        error_category: "network",
        error: "exit_code=22 | curl: (22) 404 | at line 9: curl -fsSL https://example.org/x",
      });
    }
    await openView(w.page, `${server.url}/failures?nsapp=${APP}`);
    await w.page.locator("table.signatures a.open-issue").first().click();
    await w.page.waitForSelector("#issue-preview");
    fake.fail(401, JSON.stringify({ message: "Bad credentials" }), 2);
    await w.page.locator("#issue-send").click();
    await w.page.waitForSelector("#issue-error");
    expect(await w.page.locator("#issue-error").textContent()).toMatch(
      /^Not sent: GitHub answered 401 Unauthorized: Bad credentials/,
    );
    expect(await w.page.locator("#issue-preview").count()).toBe(1);
    // The API answered it 502, which the browser logs as a failed resource load: that is the only console error.
    expect(w.problems.filter((p) => !p.includes("502"))).toEqual([]);
    expect(w.outside).toEqual([]);
    await ctx.close();
  });
});
