// The community service's read API (telemetry-service): /api/dashboard, /api/repo-slugs and
// /api/exit-codes against a recount of the reports sent, with its repo rules (ProxmoxVE takes
// reports that name no repo, "all" takes every repo), its day clamping, and hostile strings.
import { describe, expect, test } from "bun:test";
import { EXIT_CODE_EXPLANATIONS } from "../src/domain/exit-codes.ts";
import { startReport, testApp, type TestApp } from "./helpers/app.ts";

interface Run {
  id: string;
  app: string;
  type: "lxc" | "vm" | "pve" | "addon";
  repo: string | null;
  slug: string | null;
  /** null: still installing. */
  final: "success" | "failed" | null;
  os?: string;
}

const RUNS: Run[] = [
  { id: "n1", app: "nginx", type: "lxc", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: "success" },
  { id: "n2", app: "nginx", type: "lxc", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: "success", os: "ubuntu" },
  { id: "n3", app: "nginx", type: "vm", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: "failed" },
  { id: "d1", app: "docker", type: "lxc", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: "success" },
  { id: "d2", app: "docker", type: "lxc", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: null },
  { id: "t1", app: "post-pve-install", type: "pve", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: "success" },
  { id: "a1", app: "netdata", type: "addon", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: "failed" },
  { id: "v1", app: "nginx", type: "lxc", repo: "ProxmoxVED", slug: "me/ProxmoxVED", final: "success" },
];
/** Old clients (/upload): no repo_source at all. */
const OLD: { id: string; app: string; final: "done" | null }[] = [
  { id: "o1", app: "pihole", final: "done" },
  { id: "o2", app: "pihole", final: null },
];

async function load(t: TestApp) {
  for (const r of RUNS) {
    const base = {
      payload_version: 2, random_id: r.id, execution_id: r.id, type: r.type, nsapp: r.app, ct_type: 1, disk_size: 4, core_count: 2, ram_size: 2048,
      os_type: r.os ?? "debian", os_version: "12", pve_version: "8.4.1", method: "default", gpu_vendor: r.app === "nginx" ? "intel" : "",
      ...(r.repo ? { repo_source: r.repo } : {}), ...(r.slug ? { repo_slug: r.slug } : {}),
    };
    const final = r.final === "failed" ? { status: "failed", exit_code: 100, error: `exit code 100: apt-get failed for ${r.app}`, error_category: "dependency", install_duration: 30 } : { status: "success", exit_code: 0, install_duration: 60 };
    if (r.type === "pve" || r.type === "addon") {
      expect((await t.post("/telemetry", { ...base, ...final })).status).toBe(201); // a one-shot: its only report
      continue;
    }
    expect((await t.post("/telemetry", { ...base, status: "installing" })).status).toBe(201);
    if (r.final) {
      t.clock.advance(60_000);
      expect((await t.post("/telemetry", { ...base, ...final })).status).toBe(200);
    }
  }
  for (const o of OLD) {
    expect((await t.post("/upload", startReport(o.id, { nsapp: o.app }))).status).toBe(201);
    if (o.final) expect((await t.post("/upload/updatestatus", { status: o.final, error: "none", random_id: o.id })).status).toBe(200);
  }
}

type Dashboard = Record<string, unknown> & {
  total_installs: number; success_count: number; failed_count: number; installing_count: number; success_rate: number; total_all_time: number;
  top_apps: { app: string; count: number }[]; type_stats: { type: string; count: number }[]; os_distribution: { os: string; count: number }[];
  top_tools: { tool: string; count: number }[]; top_addons: { addon: string; count: number }[]; total_tools: number; total_addons: number;
  repo_slugs: { slug: string; count: number }[]; error_categories: { category: string; count: number }[];
  error_analysis: { pattern: string; count: number; unique_apps: number; apps: string }[]; daily_stats: { date: string; success: number; failed: number }[];
  gpu_stats: { vendor: string; passthrough: string; count: number }[];
};

/** What the original would count for a repo filter, recounted from the plan. */
function expected(repo: "default" | "all" | "ProxmoxVED") {
  const runs = RUNS.filter((r) => repo === "all" || (repo === "default" ? r.repo === "ProxmoxVE" || r.repo === null : r.repo === repo));
  const old = repo === "ProxmoxVED" ? [] : OLD;
  const count = <T>(xs: T[], key: (x: T) => string) => {
    const m = new Map<string, number>();
    for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
    return m;
  };
  const success = runs.filter((r) => r.final === "success").length + old.filter((o) => o.final === "done").length;
  const failed = runs.filter((r) => r.final === "failed").length;
  return {
    total: runs.length + old.length,
    success,
    failed,
    installing: runs.filter((r) => r.final === null).length + old.filter((o) => o.final === null).length,
    apps: count([...runs.map((r) => r.app), ...old.map((o) => o.app)], (a) => a),
    types: count([...runs.map((r) => r.type), ...old.map(() => "lxc")], (a) => a),
    slugs: count(runs.filter((r) => r.slug), (r) => r.slug!),
  };
}

const asMap = <T extends { count: number }>(rows: T[], key: (r: T) => string) => new Map(rows.map((r) => [key(r), r.count]));

describe("telemetry-service compatible API", () => {
  test("/api/dashboard (repo ProxmoxVE by default, with reports naming no repo) equals a recount of what was sent", async () => {
    const t = await testApp();
    await load(t);
    const res = await t.get("/api/dashboard");
    expect(res.status).toBe(200);
    const d = res.body as Dashboard;
    const e = expected("default");
    expect({ total: d.total_installs, success: d.success_count, failed: d.failed_count, installing: d.installing_count }).toEqual({ total: e.total, success: e.success, failed: e.failed, installing: e.installing });
    expect(d.success_rate).toBeCloseTo((e.success / (e.success + e.failed)) * 100, 6);
    expect(d.total_all_time).toBe(e.total);
    expect(asMap(d.top_apps, (r) => r.app)).toEqual(e.apps);
    expect(asMap(d.type_stats, (r) => r.type)).toEqual(e.types);
    expect(asMap(d.os_distribution, (r) => r.os)).toEqual(new Map([["debian", e.total - 1], ["ubuntu", 1]]));
    expect(d.top_tools).toEqual([{ tool: "post-pve-install", count: 1 }]);
    expect(d.top_addons).toEqual([{ addon: "netdata", count: 1 }]);
    expect([d.total_tools, d.total_addons]).toEqual([1, 1]);
    expect(asMap(d.repo_slugs, (r) => r.slug)).toEqual(e.slugs);
    expect(d.error_categories).toEqual([{ category: "dependency", count: 2 }]);
    expect(d.error_analysis.reduce((n, p) => n + p.count, 0)).toBe(e.failed);
    expect(d.error_analysis.flatMap((p) => p.apps.split(", ")).sort()).toEqual(["netdata", "nginx"]);
    expect(d.daily_stats).toEqual([{ date: "2026-06-01", success: e.success, failed: e.failed }]);
    expect(d.gpu_stats).toEqual([{ vendor: "intel", passthrough: "", count: 3 }]);
    expect(d.avg_install_duration).toBeGreaterThan(0);
    // The newest records, as the original lists them (zero values left out, ClickHouse's time format).
    const recent = d.recent_records as Record<string, unknown>[];
    expect(recent).toHaveLength(e.total);
    expect(recent.map((r) => r.random_id)).toEqual(["o2", "o1", "a1", "t1", "d2", "d1", "n3", "n2", "n1"].filter((id) => id !== "v1"));
    expect(recent.find((r) => r.random_id === "n3")).toMatchObject({ nsapp: "nginx", type: "vm", status: "failed", exit_code: 100, error_category: "dependency", repo_source: "ProxmoxVE", gpu_vendor: "intel" });
    expect(recent.find((r) => r.random_id === "o2")).not.toHaveProperty("repo_source");
    expect(String(recent[0]!.created)).toMatch(/^2026-06-01 \d{2}:\d{2}:\d{2}\.\d{3}$/);
  });

  test("repo=all takes every repo, repo=ProxmoxVED only its own; slug narrows to one repository", async () => {
    const t = await testApp();
    await load(t);
    const all = (await t.get("/api/dashboard?repo=all")).body as Dashboard;
    expect(all.total_installs).toBe(expected("all").total);
    expect(asMap(all.top_apps, (r) => r.app)).toEqual(expected("all").apps);
    const ved = (await t.get("/api/dashboard?repo=ProxmoxVED")).body as Dashboard;
    expect([ved.total_installs, ved.success_count]).toEqual([1, 1]);
    const slug = (await t.get("/api/dashboard?repo=all&slug=me/ProxmoxVED")).body as Dashboard;
    expect(slug.top_apps).toEqual([{ app: "nginx", count: 1 }]);
    expect((await t.get("/api/repo-slugs")).body).toEqual({ repo_slugs: [{ slug: "community-scripts/ProxmoxVE", count: 7 }] });
    expect((await t.get("/api/repo-slugs?repo=all")).body).toEqual({ repo_slugs: [{ slug: "community-scripts/ProxmoxVE", count: 7 }, { slug: "me/ProxmoxVED", count: 1 }] });
  });

  test("days as the original reads them: today by default, clamped to 1-365, garbage is the default; yesterday's reports only in longer windows", async () => {
    const t = await testApp();
    await load(t);
    t.clock.advance(24 * 3_600_000);
    expect((await t.post("/upload", startReport("today-1", { nsapp: "pihole" }))).status).toBe(201);
    const total = async (q: string) => ((await t.get(`/api/dashboard${q}`)).body as Dashboard).total_installs;
    expect(await total("")).toBe(1);
    expect(await total("?days=abc")).toBe(1);
    expect(await total("?days=-5")).toBe(1);
    expect(await total("?days=2")).toBe(expected("default").total + 1);
    for (const q of ["?days=0", "?days=100000", "?days=9223372036854775807"]) expect(await total(q)).toBe(expected("default").total + 1);
    // Go's Sscanf("%d"): "1e9" reads as 1; past a 64-bit int it fails and the default (1) stands.
    expect(await total("?days=1e9")).toBe(1);
    expect(await total("?days=99999999999999999999")).toBe(1);
    const daily = ((await t.get("/api/dashboard?days=2")).body as Dashboard).daily_stats;
    expect(daily.map((p) => p.date)).toEqual(["2026-06-01", "2026-06-02"]);
  });

  test("/api/exit-codes is the reference list; hostile strings neither crash nor reach prototypes", async () => {
    const t = await testApp();
    await load(t);
    const codes = (await t.get("/api/exit-codes")).body as Record<string, string>;
    expect(Object.keys(codes).length).toBe(EXIT_CODE_EXPLANATIONS.size);
    expect(codes["100"]).toBe(EXIT_CODE_EXPLANATIONS.get(100)!);
    for (const repo of ["__proto__", "constructor", "toString"]) {
      const res = await t.get(`/api/dashboard?repo=${repo}&slug=${repo}`);
      expect(res.status).toBe(200);
      expect((res.body as Dashboard).total_installs).toBe(0);
    }
    const long = await t.get(`/api/dashboard?repo=${"x".repeat(200)}`);
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ error: "invalid_field", field: "repo" });
  });
});
