// The community service's read API (telemetry-service): /api/dashboard, /api/repo-slugs,
// /api/exit-codes, /api/records, /api/scripts and /api/errors against a recount of the reports
// sent, with its repo rules (ProxmoxVE takes reports that name no repo, "all" takes every repo),
// its day clamping, and hostile strings.
import { describe, expect, test } from "bun:test";
import { EXIT_CODE_EXPLANATIONS } from "../../src/domain/exit-codes.ts";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";

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
  {
    id: "n2",
    app: "nginx",
    type: "lxc",
    repo: "ProxmoxVE",
    slug: "community-scripts/ProxmoxVE",
    final: "success",
    os: "ubuntu",
  },
  { id: "n3", app: "nginx", type: "vm", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: "failed" },
  { id: "d1", app: "docker", type: "lxc", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: "success" },
  { id: "d2", app: "docker", type: "lxc", repo: "ProxmoxVE", slug: "community-scripts/ProxmoxVE", final: null },
  {
    id: "t1",
    app: "post-pve-install",
    type: "pve",
    repo: "ProxmoxVE",
    slug: "community-scripts/ProxmoxVE",
    final: "success",
  },
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
      payload_version: 2,
      random_id: r.id,
      execution_id: r.id,
      type: r.type,
      nsapp: r.app,
      ct_type: 1,
      disk_size: 4,
      core_count: 2,
      ram_size: 2048,
      os_type: r.os ?? "debian",
      os_version: "12",
      pve_version: "8.4.1",
      method: "default",
      gpu_vendor: r.app === "nginx" ? "intel" : "",
      ...(r.repo ? { repo_source: r.repo } : {}),
      ...(r.slug ? { repo_slug: r.slug } : {}),
    };
    const final =
      r.final === "failed"
        ? {
            status: "failed",
            exit_code: 100,
            error: `exit code 100: apt-get failed for ${r.app}`,
            error_category: "dependency",
            install_duration: 30,
          }
        : { status: "success", exit_code: 0, install_duration: 60 };
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
    if (o.final)
      expect((await t.post("/upload/updatestatus", { status: o.final, error: "none", random_id: o.id })).status).toBe(
        200,
      );
  }
}

type Dashboard = Record<string, unknown> & {
  total_installs: number;
  success_count: number;
  failed_count: number;
  installing_count: number;
  success_rate: number;
  total_all_time: number;
  top_apps: { app: string; count: number }[];
  type_stats: { type: string; count: number }[];
  os_distribution: { os: string; count: number }[];
  top_tools: { tool: string; count: number }[];
  top_addons: { addon: string; count: number }[];
  total_tools: number;
  total_addons: number;
  repo_slugs: { slug: string; count: number }[];
  error_categories: { category: string; count: number }[];
  error_analysis: { pattern: string; count: number; unique_apps: number; apps: string }[];
  daily_stats: { date: string; success: number; failed: number }[];
  gpu_stats: { vendor: string; passthrough: string; count: number }[];
};

/** What the original would count for a repo filter, recounted from the plan. */
function expected(repo: "default" | "all" | "ProxmoxVED") {
  const runs = RUNS.filter(
    (r) => repo === "all" || (repo === "default" ? r.repo === "ProxmoxVE" || r.repo === null : r.repo === repo),
  );
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
    slugs: count(
      runs.filter((r) => r.slug),
      (r) => r.slug!,
    ),
  };
}

const asMap = <T extends { count: number }>(rows: T[], key: (r: T) => string) =>
  new Map(rows.map((r) => [key(r), r.count]));

describe("telemetry-service compatible API", () => {
  test("/api/dashboard with repo=ProxmoxVE (reports naming no repo included) equals a recount of what was sent", async () => {
    const t = await testApp();
    await load(t);
    const res = await t.get("/api/dashboard?repo=ProxmoxVE");
    expect(res.status).toBe(200);
    const d = res.body as Dashboard;
    const e = expected("default");
    expect({
      total: d.total_installs,
      success: d.success_count,
      failed: d.failed_count,
      installing: d.installing_count,
    }).toEqual({ total: e.total, success: e.success, failed: e.failed, installing: e.installing });
    expect(d.success_rate).toBeCloseTo((e.success / (e.success + e.failed)) * 100, 6);
    expect(d.total_all_time).toBe(e.total);
    expect(asMap(d.top_apps, (r) => r.app)).toEqual(e.apps);
    expect(asMap(d.type_stats, (r) => r.type)).toEqual(e.types);
    expect(asMap(d.os_distribution, (r) => r.os)).toEqual(
      new Map([
        ["debian", e.total - 1],
        ["ubuntu", 1],
      ]),
    );
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
    expect(recent.map((r) => r.random_id)).toEqual(
      ["o2", "o1", "a1", "t1", "d2", "d1", "n3", "n2", "n1"].filter((id) => id !== "v1"),
    );
    expect(recent.find((r) => r.random_id === "n3")).toMatchObject({
      nsapp: "nginx",
      type: "vm",
      status: "failed",
      exit_code: 100,
      error_category: "dependency",
      repo_source: "ProxmoxVE",
      gpu_vendor: "intel",
    });
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
    expect((await t.get("/api/repo-slugs?repo=ProxmoxVE")).body).toEqual({
      repo_slugs: [{ slug: "community-scripts/ProxmoxVE", count: 7 }],
    });
    expect((await t.get("/api/repo-slugs?repo=all")).body).toEqual({
      repo_slugs: [
        { slug: "community-scripts/ProxmoxVE", count: 7 },
        { slug: "me/ProxmoxVED", count: 1 },
      ],
    });
  });

  test("days as the original reads them: today by default, clamped to 1-365, garbage is the default; yesterday's reports only in longer windows", async () => {
    const t = await testApp();
    await load(t);
    t.clock.advance(24 * 3_600_000);
    expect((await t.post("/upload", startReport("today-1", { nsapp: "pihole" }))).status).toBe(201);
    const total = async (q: string) =>
      ((await t.get(`/api/dashboard${q ? `${q}&` : "?"}repo=ProxmoxVE`)).body as Dashboard).total_installs;
    expect(await total("")).toBe(1);
    expect(await total("?days=abc")).toBe(1);
    expect(await total("?days=-5")).toBe(1);
    expect(await total("?days=2")).toBe(expected("default").total + 1);
    for (const q of ["?days=0", "?days=100000", "?days=9223372036854775807"])
      expect(await total(q)).toBe(expected("default").total + 1);
    // Go's Sscanf("%d"): "1e9" reads as 1; past a 64-bit int it fails and the default (1) stands.
    expect(await total("?days=1e9")).toBe(1);
    expect(await total("?days=99999999999999999999")).toBe(1);
    const daily = ((await t.get("/api/dashboard?days=2&repo=ProxmoxVE")).body as Dashboard).daily_stats;
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

  test("/api/dashboard failed_apps: apps with enough runs, highest failure rate first, each with its type", async () => {
    const t = await testApp();
    await load(t);
    // nginx reaches the day's minimum of 5 runs; its newest run is a VM.
    for (const [i, type] of (["lxc", "vm"] as const).entries()) {
      const base = {
        payload_version: 2,
        random_id: `x${i}`,
        execution_id: `x${i}`,
        type,
        nsapp: "nginx",
        repo_source: "ProxmoxVE",
      };
      expect((await t.post("/telemetry", { ...base, status: "installing" })).status).toBe(201);
      expect((await t.post("/telemetry", { ...base, status: "failed", exit_code: 1, error: "boom" })).status).toBe(200);
    }
    const d = (await t.get("/api/dashboard?repo=ProxmoxVE")).body as Dashboard & {
      failed_apps: Record<string, unknown>[];
    };
    expect(d.failed_apps).toHaveLength(1);
    expect(d.failed_apps[0]).toMatchObject({ app: "nginx", type: "vm", total_count: 5, failed_count: 3 });
    expect(d.failed_apps[0]!.failure_rate).toBeCloseTo(60, 6);
  });

  type Records = {
    records: Record<string, unknown>[];
    page: number;
    limit: number;
    total: number;
    total_pages: number;
  };
  const ids = (body: unknown) => (body as Records).records.map((r) => r.random_id);

  test("/api/records: numbered pages newest first with the total, the original's filters, sorts and clamping", async () => {
    const t = await testApp();
    await load(t);
    const newestFirst = ["o2", "o1", "a1", "t1", "d2", "d1", "n3", "n2", "n1"];
    const first = (await t.get("/api/records?repo=ProxmoxVE")).body as Records;
    expect(first).toMatchObject({ page: 1, limit: 50, total: 9, total_pages: 1 });
    expect(ids(first)).toEqual(newestFirst);
    // Pages of two: five pages, the last one short, past the end empty.
    const pages = await Promise.all(
      [1, 2, 3, 4, 5, 6].map(
        async (p) => (await t.get(`/api/records?limit=2&page=${p}&repo=ProxmoxVE`)).body as Records,
      ),
    );
    expect(pages.flatMap((p) => p.records.map((r) => r.random_id))).toEqual(newestFirst);
    expect(pages.map((p) => [p.total, p.total_pages, p.records.length])).toEqual([
      [9, 5, 2],
      [9, 5, 2],
      [9, 5, 2],
      [9, 5, 2],
      [9, 5, 1],
      [9, 5, 0],
    ]);
    // Status is the collapsed one: a run still going is listed by its step.
    expect(ids((await t.get("/api/records?status=failed&repo=ProxmoxVE")).body)).toEqual(["a1", "n3"]);
    expect(ids((await t.get("/api/records?status=installing&repo=ProxmoxVE")).body)).toEqual(["o2", "d2"]);
    expect(ids((await t.get("/api/records?status=success&repo=ProxmoxVE")).body)).toEqual([
      "o1",
      "t1",
      "d1",
      "n2",
      "n1",
    ]);
    // app: part of the name, any case; search when app is absent; LIKE's wildcards are plain text.
    expect(ids((await t.get("/api/records?app=NGI&repo=ProxmoxVE")).body)).toEqual(["n3", "n2", "n1"]);
    expect(ids((await t.get("/api/records?search=pi&repo=ProxmoxVE")).body)).toEqual(["o2", "o1"]);
    expect(ids((await t.get("/api/records?app=%25&repo=ProxmoxVE")).body)).toEqual([]);
    expect(ids((await t.get("/api/records?os=ubuntu&repo=ProxmoxVE")).body)).toEqual(["n2"]);
    expect(ids((await t.get("/api/records?type=vm&repo=ProxmoxVE")).body)).toEqual(["n3"]);
    // Sorts by a column, ties newest first; "-" for descending; an unknown sort is the default.
    expect(ids((await t.get("/api/records?sort=nsapp&repo=ProxmoxVE")).body)).toEqual([
      "d2",
      "d1",
      "a1",
      "n3",
      "n2",
      "n1",
      "o2",
      "o1",
      "t1",
    ]);
    expect(ids((await t.get("/api/records?sort=-exit_code&limit=2&repo=ProxmoxVE")).body)).toEqual(["a1", "n3"]);
    expect(ids((await t.get("/api/records?sort=nonsense&repo=ProxmoxVE")).body)).toEqual(newestFirst);
    // Repos as the dashboard reads them.
    expect((await t.get("/api/records?repo=all")).body).toMatchObject({ total: 10 });
    expect(ids((await t.get("/api/records?repo=ProxmoxVED")).body)).toEqual(["v1"]);
    expect(ids((await t.get("/api/records?repo=all&slug=me/ProxmoxVED")).body)).toEqual(["v1"]);
    // Clamped as there: limit 1-100, page from 1.
    expect((await t.get("/api/records?limit=1000&page=-3&repo=ProxmoxVE")).body).toMatchObject({ page: 1, limit: 100 });
    expect((await t.get("/api/records?limit=0&repo=ProxmoxVE")).body).toMatchObject({ limit: 1, total_pages: 9 });
    // Records as the original lists them, with the run's steps.
    const n3 = first.records.find((r) => r.random_id === "n3")!;
    expect(n3).toMatchObject({
      nsapp: "nginx",
      type: "vm",
      status: "failed",
      exit_code: 100,
      error_category: "dependency",
      repo_slug: "community-scripts/ProxmoxVE",
    });
    expect((JSON.parse(String(n3.pipeline)) as { s: string }[]).map((p) => p.s)).toEqual(["installing", "failed"]);
    expect(
      (JSON.parse(String(first.records.find((r) => r.random_id === "d2")!.pipeline)) as { s: string }[]).map(
        (p) => p.s,
      ),
    ).toEqual(["installing"]);
  });

  test("/api/scripts: every script's runs by outcome and its usual type; days=0 is all time", async () => {
    const t = await testApp();
    await load(t);
    type Scripts = {
      total_scripts: number;
      total_installs: number;
      top_scripts: Record<string, unknown>[];
      recent_scripts: Record<string, unknown>[];
    };
    const s = (await t.get("/api/scripts?repo=ProxmoxVE")).body as Scripts;
    const e = expected("default");
    expect([s.total_scripts, s.total_installs]).toEqual([e.apps.size, e.total]);
    expect(new Map(s.top_scripts.map((x) => [x.app, x.total]))).toEqual(e.apps);
    const nginx = s.top_scripts.find((x) => x.app === "nginx")!;
    expect(nginx).toMatchObject({
      type: "lxc",
      total: 3,
      success: 2,
      failed: 1,
      aborted: 0,
      installing: 0,
      days_old: 0,
      installs_per_day: 0,
    });
    expect(nginx.success_rate).toBeCloseTo(200 / 3, 6);
    expect(s.top_scripts.find((x) => x.app === "docker")).toMatchObject({ installing: 1, success: 1 });
    expect(s.top_scripts.find((x) => x.app === "netdata")).toMatchObject({ type: "addon", failed: 1 });
    expect(s.top_scripts.find((x) => x.app === "post-pve-install")).toMatchObject({ type: "pve", success: 1 });
    expect(s.recent_scripts.map((r) => r.app)).toEqual([
      "pihole",
      "pihole",
      "netdata",
      "post-pve-install",
      "docker",
      "docker",
      "nginx",
      "nginx",
      "nginx",
    ]);
    expect(s.recent_scripts[0]).toMatchObject({ status: "installing", os_type: "debian", method: "default" });
    t.clock.advance(40 * 24 * 3_600_000);
    expect(((await t.get("/api/scripts?repo=ProxmoxVE")).body as Scripts).total_installs).toBe(0);
    expect(((await t.get("/api/scripts?days=0&repo=ProxmoxVE")).body as Scripts).total_installs).toBe(e.total);
    expect(
      ((await t.get("/api/scripts?days=0&repo=all")).body as Scripts).top_scripts.find((x) => x.app === "nginx"),
    ).toMatchObject({ total: 4 });
  });

  test("an app's type in the listings is its newest run's, kept for a minute after it is read", async () => {
    const t = await testApp();
    await load(t);
    const typeOf = async (app: string) =>
      (
        (await t.get("/api/scripts?repo=all")).body as { top_scripts: { app: string; type: string }[] }
      ).top_scripts.find((x) => x.app === app)?.type;
    expect(await typeOf("nginx")).toBe("lxc");
    // nginx's newest run becomes a VM: the listing shows it once the kept type is a minute old.
    t.clock.advance(1_000);
    const vm = { payload_version: 2, type: "vm", nsapp: "nginx", status: "installing", repo_source: "ProxmoxVE" };
    expect((await t.post("/telemetry", { ...vm, random_id: "n4", execution_id: "n4" })).status).toBe(201);
    expect(await typeOf("nginx")).toBe("lxc");
    t.clock.advance(58_000); // 59 s after it was read
    expect(await typeOf("nginx")).toBe("lxc");
    t.clock.advance(1_000);
    expect(await typeOf("nginx")).toBe("vm");
  });

  test("/api/errors: failures by exit code, category and app, the newest failures, runs still going today, a daily timeline", async () => {
    const t = await testApp();
    await load(t);
    type Errors = Record<string, unknown> & {
      total_errors: number;
      total_installs: number;
      overall_fail_rate: number;
      stuck_installing: number;
      exit_code_stats: Record<string, unknown>[];
      category_stats: Record<string, unknown>[];
      app_errors: Record<string, unknown>[];
      recent_errors: Record<string, unknown>[];
      error_timeline: { date: string; failed: number; aborted: number }[];
    };
    const d = (await t.get("/api/errors?repo=ProxmoxVE")).body as Errors;
    const e = expected("default");
    expect([d.total_installs, d.total_errors, d.stuck_installing]).toEqual([e.total, e.failed, e.installing]);
    expect(d.overall_fail_rate).toBeCloseTo((e.failed / e.total) * 100, 6);
    expect(d.exit_code_stats).toEqual([
      {
        exit_code: 100,
        count: 2,
        description: EXIT_CODE_EXPLANATIONS.get(100)!,
        category: "dependency",
        percentage: 100,
      },
    ]);
    expect(d.category_stats).toEqual([
      { category: "dependency", count: 2, percentage: 100, top_apps: "netdata, nginx" },
    ]);
    expect(d.app_errors.map((a) => a.app)).toEqual(["netdata", "nginx"]);
    const nginx = d.app_errors[1]!;
    expect(nginx).toMatchObject({
      type: "lxc",
      total_count: 3,
      failed_count: 1,
      aborted_count: 0,
      top_exit_code: 100,
      top_category: "dependency",
    });
    expect(nginx.failure_rate).toBeCloseTo(100 / 3, 6);
    expect(String(nginx.top_error)).toContain("apt-get failed");
    expect(d.recent_errors.map((r) => [r.nsapp, r.status, r.exit_code])).toEqual([
      ["netdata", "failed", 100],
      ["nginx", "failed", 100],
    ]);
    expect(d.recent_errors[1]).toMatchObject({
      error: "exit code 100: apt-get failed for nginx",
      error_category: "dependency",
      os_type: "debian",
    });
    expect(d.error_timeline).toHaveLength(7);
    expect(d.error_timeline.at(-1)).toEqual({ date: "2026-06-01", failed: 2, aborted: 0 });
    // A day later the failures are still in the week; the runs started yesterday are no longer today's.
    t.clock.advance(24 * 3_600_000);
    const later = (await t.get("/api/errors?repo=ProxmoxVE")).body as Errors;
    expect([later.total_errors, later.stuck_installing]).toEqual([2, 0]);
    expect((await t.get("/api/errors?days=1&repo=ProxmoxVE")).body).toMatchObject({
      total_errors: 0,
      total_installs: 0,
    });
    expect((await t.get("/api/errors?repo=ProxmoxVED")).body).toMatchObject({ total_errors: 0, total_installs: 1 });
    for (const repo of ["__proto__", "constructor"]) {
      const res = await t.get(`/api/errors?repo=${repo}&slug=${repo}`);
      expect(res.status).toBe(200);
      expect((res.body as Errors).total_installs).toBe(0);
    }
  });
});
