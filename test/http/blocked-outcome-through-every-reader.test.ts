// The blocked outcome (docs/decisions/2026-11-27-blocked-adopted.md) as each reader answers it:
// the native API counts it on its own and leaves it out of the success rate and the failure
// drivers, listings select it, the original API says failed, the community's newest page sends it
// (and keeps it in its error panels), its older routes count it in their totals only, and the
// public stats carry it. One set of runs, every reader.
import { beforeAll, describe, expect, test } from "bun:test";
import { testApp, type TestApp } from "../helpers/app.ts";

/** id, final status, exit code, category */
const RUNS: [string, string, number, string][] = [
  ["s1", "success", 0, ""],
  ["s2", "success", 0, ""],
  ["s3", "success", 0, ""],
  ["f1", "failed", 100, "dependency"],
  ["b1", "failed", 214, "storage"],
  ["b2", "failed", 209, "proxmox"],
  ["t1", "failed", 143, "signal"], // SIGTERM sent as failed: the user's abort
  ["a1", "aborted", 130, "user_aborted"],
];

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ publicStats: true, publicMinInstalls: 5 });
  for (const [id, status, code, category] of RUNS) {
    const base = {
      payload_version: 2,
      random_id: id,
      execution_id: id,
      type: "lxc",
      nsapp: "jellyfin",
      os_type: "debian",
      os_version: "12",
      pve_version: "8.4.1",
      platform: "pve",
      repo_source: "ProxmoxVE",
    };
    expect((await t.post("/telemetry", { ...base, status: "installing" })).status).toBeLessThan(300);
    t.clock.advance(60_000);
    const ending = {
      status,
      exit_code: code,
      error: code === 0 ? "" : `exit_code=${code} | ${id}`,
      error_category: category,
    };
    expect((await t.post("/telemetry", { ...base, ...ending })).status).toBeLessThan(300);
  }
});

const get = async (path: string) => {
  const r = await t.get(path);
  expect(r.status, path).toBe(200);
  return r.body as Record<string, unknown>;
};

describe("native API", () => {
  test("summary: blocked counted apart, out of the success rate", async () => {
    expect(await get("/api/stats/summary")).toMatchObject({
      total: 8,
      success: 3,
      failed: 1,
      blocked: 2,
      aborted: 2,
      success_rate: 0.75,
    });
  });
  test("breakdown by exit code: each code under its outcome", async () => {
    const b = await get("/api/stats/breakdown?by=exit_code&limit=20");
    const byCode = new Map(
      (b.groups as { value: string; failed: number; blocked: number; aborted: number }[]).map((g) => [g.value, g]),
    );
    expect(byCode.get("214")).toMatchObject({ failed: 0, blocked: 1, aborted: 0 });
    expect(byCode.get("143")).toMatchObject({ failed: 0, blocked: 0, aborted: 1 });
    expect(byCode.get("100")).toMatchObject({ failed: 1, blocked: 0 });
  });
  test("listing: outcome=blocked selects them, with their category", async () => {
    const b = await get("/api/installs?outcome=blocked");
    const rows = b.installs as { execution_id: string; outcome: string; error_category: string }[];
    expect(rows.map((r) => [r.execution_id, r.outcome, r.error_category]).sort()).toEqual([
      ["b1", "blocked", "storage"],
      ["b2", "blocked", "proxmox"],
    ]);
  });
  test("failure drivers compare failed runs with finished ones: blocked is neither", async () => {
    expect(await get("/api/stats/drivers?min_runs=1")).toMatchObject({ failed: 1, runs: 4 });
  });
  test("error signatures are of failed runs", async () => {
    expect(await get("/api/stats/errors")).toMatchObject({ total_failed: 1 });
  });
});

describe("the original API", () => {
  test("/data/summary: blocked reads failed, as the client sent it", async () => {
    const s = await get("/data/summary");
    expect(s.status_count).toEqual({ done: 3, failed: 5 });
  });
});

describe("the community's routes", () => {
  test("/api/new: blocked in the headline, the groups and the daily points; in the error panels", async () => {
    const d = await get("/api/new?days=1");
    expect(d).toMatchObject({ runs: 8, success: 3, failed: 1, blocked: 2, aborted: 2, unfinished: 0 });
    expect(d.top_apps).toEqual([
      { label: "jellyfin", runs: 8, success: 3, failed: 1, blocked: 2, aborted: 2, unfinished: 0 },
    ]);
    expect((d.daily as { blocked: number }[]).reduce((n, p) => n + p.blocked, 0)).toBe(2);
    const codes = (d.exit_codes as { code: number; count: number }[]).map((c) => [c.code, c.count]).sort();
    expect(codes).toEqual([
      [100, 1],
      [209, 1],
      [214, 1],
    ]);
    expect((d.categories as { label: string }[]).map((c) => c.label).sort()).toEqual([
      "dependency",
      "proxmox",
      "storage",
    ]);
  });
  test("/api/script-detail sends blocked as /api/new does", async () => {
    expect(await get("/api/script-detail?app=jellyfin&days=1")).toMatchObject({ runs: 8, failed: 1, blocked: 2 });
  });
  test("/api/dashboard: in the totals only, its success rate the community's", async () => {
    expect(await get("/api/dashboard?days=1")).toMatchObject({
      total_installs: 8,
      success_count: 3,
      failed_count: 1,
      aborted_count: 2,
      success_rate: 75,
    });
  });
  test("/api/records: status blocked, selected by status=blocked", async () => {
    const r = await get("/api/records?status=blocked&days=1");
    expect(r.total).toBe(2);
    expect((r.records as { status: string }[]).map((x) => x.status)).toEqual(["blocked", "blocked"]);
  });
});

test("public stats carry blocked, out of the failure rate", async () => {
  const p = await get("/public/stats.json");
  const d30 = (p.windows as { days: number; total: Record<string, unknown> }[]).find((w) => w.days === 30)!;
  expect(d30.total).toMatchObject({ installs: 8, success: 3, failed: 1, blocked: 2, aborted: 2, failure_rate: 0.25 });
});
