// The community service's newest read API (community-scripts/telemetry-service newdash.go and
// service.go): GET /api/new, GET /api/script-detail, the install log's CSV, and the newer parameters
// of the routes served before (platform, platform_stats, repo absent = every repo, records with
// platform and the v2 fields). Every number is checked against a recount of the runs sent, done
// here the way the community's SQL counts (one run per execution; a failure's exit code makes it
// blocked or the user's abort; unfinished = neither success, failed, blocked nor aborted), on both the rollup path and the scan path, before and after the hours are
// folded into day cells.
import { beforeAll, describe, expect, test } from "bun:test";
import { DAY, HOUR } from "../../src/domain/time.ts";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";

type Ending =
  | { kind: "success" }
  | { kind: "failed"; code: number; category: string; error: string; command?: string }
  | { kind: "aborted"; code: number }
  | { kind: "v1-decline"; code: number }
  | { kind: "going"; step: "installing" | "configuring" };

interface Run {
  id: string;
  /** Days before today (0: today), and the hour of that day. */
  day: number;
  hour: number;
  app: string;
  type: "lxc" | "vm" | "addon" | "pve";
  client: "v2" | "v1" | "upload";
  repo: string | null;
  slug: string | null;
  platform: string | null;
  pve: string;
  os: [string, string];
  ct: number;
  cores: number;
  ram: number;
  disk: number;
  cpu: string;
  gpu: string;
  pass: string;
  arch: string | null;
  method: string;
  end: Ending;
}

const TODAY = Date.parse("2026-06-10T00:00:00Z");
const NOW = TODAY + 20 * HOUR;
const base: Omit<Run, "id" | "day" | "hour" | "app" | "end"> = {
  type: "lxc",
  client: "v2",
  repo: "ProxmoxVE",
  slug: "community-scripts/ProxmoxVE",
  platform: "pve",
  pve: "9.0.9",
  os: ["debian", "13"],
  ct: 1,
  cores: 2,
  ram: 2048,
  disk: 8,
  cpu: "intel",
  gpu: "",
  pass: "no",
  arch: "amd64",
  method: "default",
};
const fail = (code: number, category: string, error: string, command?: string): Ending => ({
  kind: "failed",
  code,
  category,
  error,
  ...(command ? { command } : {}),
});
const run = (id: string, day: number, hour: number, app: string, end: Ending, over: Partial<Run> = {}): Run => ({
  ...base,
  id,
  day,
  hour,
  app,
  end,
  ...over,
});

const RUNS: Run[] = [
  // jellyfin: a failure driver on incus (sent) and the same failure text on two apps
  run("j1", 0, 9, "jellyfin", { kind: "success" }),
  run(
    "j2",
    0,
    10,
    "jellyfin",
    fail(
      100,
      "dependency",
      "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg",
      "apt-get install -y ffmpeg",
    ),
    { platform: "incus", pve: "incus-6.0.1" },
  ),
  run(
    "j3",
    1,
    8,
    "jellyfin",
    fail(
      100,
      "dependency",
      "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg",
      "apt-get install -y ffmpeg",
    ),
    { platform: null, pve: "incus-6.0.2", cores: 4, ram: 4096 },
  ),
  run("j4", 2, 14, "jellyfin", { kind: "success" }, { cores: 4, ram: 4096, disk: 32, ct: 0 }),
  run("j5", 3, 7, "jellyfin", { kind: "v1-decline", code: 113 }, { client: "v1", pass: "igpu", arch: null }),
  run("j6", 3, 8, "jellyfin", { kind: "aborted", code: 254 }),
  // blocked: the host refused before the script ran (its category kept), and a SIGTERM sent as failed
  run("j7", 1, 15, "jellyfin", fail(214, "storage", "exit_code=214 | not enough storage on local-lvm")),
  run("i6", 2, 15, "immich", fail(143, "signal", "exit_code=143 | terminated"), { client: "v1" }),
  // immich: failures of several kinds, a slow success, a run still going
  run("i1", 0, 11, "immich", fail(1, "shell", "exit_code=1 | General error | at line 5: npm ci", "npm ci"), {
    cpu: "amd",
    gpu: "nvidia",
    pass: "yes",
  }),
  run("i2", 1, 12, "immich", fail(137, "resource", "exit_code=137 | Killed (OOM)"), { cpu: "amd" }),
  run("i3", 2, 13, "immich", { kind: "success" }, { os: ["ubuntu", "24.04"] }),
  run("i4", 0, 19, "immich", { kind: "going", step: "configuring" }),
  run(
    "i5",
    5,
    9,
    "immich",
    fail(
      100,
      "dependency",
      "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg",
      "apt-get install -y ffmpeg",
    ),
    { repo: "ProxmoxVED", slug: "community-scripts/ProxmoxVED" },
  ),
  // a fork, a VM, tools and addons, an ARM host
  run("f1", 1, 9, "nginx", { kind: "success" }, { repo: "external", slug: "me/ProxmoxVE", arch: "arm64" }),
  run("v1", 2, 9, "haos", { kind: "success" }, { type: "vm", ct: 2, disk: 32, os: ["homeassistant", "16"] }),
  run("t1", 0, 8, "post-pve-install", { kind: "success" }, { type: "pve" }),
  run("a1", 4, 8, "netdata", fail(7, "network", "exit_code=7 | curl: could not connect"), { type: "addon" }),
  // the old client: no repo, no platform sent (its host version says pve), no v2 fields
  run(
    "o1",
    0,
    7,
    "pihole",
    { kind: "success" },
    { client: "upload", repo: null, slug: null, platform: null, pve: "8.2.2", cpu: "", pass: "", arch: null },
  ),
  run(
    "o2",
    6,
    7,
    "pihole",
    fail(22, "network", "exit code 22: curl failed"), // its category derived from the code the text states
    { client: "upload", repo: null, slug: null, platform: null, pve: "8.2.2", cpu: "", pass: "", arch: null },
  ),
  // outside a 7-day window, inside 30
  run(
    "x1",
    12,
    9,
    "jellyfin",
    fail(
      100,
      "dependency",
      "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg",
      "apt-get install -y ffmpeg",
    ),
  ),
];

const startOf = (r: Run): number => TODAY - r.day * DAY + r.hour * HOUR;
const endOf = (r: Run): number => startOf(r) + 5 * 60_000;

function body(r: Run, status: string, ending: Record<string, unknown> = {}): Record<string, unknown> {
  const b: Record<string, unknown> = {
    random_id: r.id,
    execution_id: r.id,
    type: r.type,
    nsapp: r.app,
    status,
    ct_type: r.ct,
    disk_size: r.disk,
    core_count: r.cores,
    ram_size: r.ram,
    os_type: r.os[0],
    os_version: r.os[1],
    pve_version: r.pve,
    method: r.method,
    cpu_vendor: r.cpu,
    gpu_vendor: r.gpu,
    gpu_passthrough: r.pass,
    ...(r.platform ? { platform: r.platform } : {}),
    ...(r.repo ? { repo_source: r.repo } : {}),
    ...(r.slug ? { repo_slug: r.slug } : {}),
    ...(r.arch ? { arch: r.arch } : { has_arm: false }),
    install_duration: status === "installing" ? 0 : 300,
    ...ending,
  };
  if (r.client === "v2") Object.assign(b, { payload_version: 2, kernel_version: "6.8.12", app_version: "10.10" });
  return b;
}

async function send(t: TestApp, r: Run): Promise<void> {
  const ok = (res: { status: number }, what: string) => expect(res.status, `${r.id} ${what}`).toBeLessThan(300);
  const to = (at: number) => t.clock.advance(at - t.clock());
  to(startOf(r));
  if (r.client === "upload") {
    ok(
      await t.post(
        "/upload",
        startReport(r.id, {
          nsapp: r.app,
          type: r.type,
          ct_type: r.ct,
          disk_size: r.disk,
          core_count: r.cores,
          ram_size: r.ram,
          os_type: r.os[0],
          os_version: r.os[1],
          pve_version: r.pve,
          method: r.method,
        }),
      ),
      "start",
    );
    to(endOf(r));
    if (r.end.kind === "success")
      ok(await t.post("/upload/updatestatus", { status: "done", error: "none", random_id: r.id }), "done");
    if (r.end.kind === "failed")
      ok(await t.post("/upload/updatestatus", { status: "failed", error: r.end.error, random_id: r.id }), "failed");
    return;
  }
  const e = r.end;
  const final =
    e.kind === "success"
      ? body(r, "success", { exit_code: 0 })
      : e.kind === "failed"
        ? body(r, "failed", {
            exit_code: e.code,
            error: e.error,
            error_category: e.category,
            ...(e.command && r.client === "v2" ? { failed_command: e.command, failed_line: 12 } : {}),
          })
        : e.kind === "aborted"
          ? body(r, "aborted", {
              exit_code: e.code,
              error: `exit_code=${e.code} | declined`,
              error_category: "user_aborted",
            })
          : e.kind === "v1-decline"
            ? body(r, "failed", {
                exit_code: e.code,
                error: `exit_code=${e.code} | too small`,
                error_category: "unknown",
              })
            : null;
  if (r.type === "addon" || r.type === "pve") {
    ok(await t.post("/telemetry", final!), "one-shot");
    return;
  }
  ok(await t.post("/telemetry", body(r, "installing")), "start");
  if (e.kind === "going") {
    to(startOf(r) + 60_000);
    ok(await t.post("/telemetry", body(r, e.step)), e.step);
    return;
  }
  to(endOf(r));
  ok(await t.post("/telemetry", final!), "final");
}

// ------------------------------------------------------------------ the recount, as the community's SQL counts

type Outcome = "success" | "failed" | "blocked" | "aborted" | "unfinished";
// newdash.go's lists (telemetry-service d10f1897), as its multiIf reads them.
const USER_ABORT = [113, 114, 122, 129, 130, 143, 253, 254];
const BLOCKED = [
  103,
  104,
  105,
  106,
  107,
  108,
  109,
  110,
  111,
  116,
  117,
  118,
  119,
  120,
  121,
  123,
  200,
  ...Array.from({ length: 25 }, (_, i) => 203 + i),
  231,
];
const outcomeOf = (r: Run): Outcome =>
  r.end.kind === "success"
    ? "success"
    : r.end.kind === "failed"
      ? USER_ABORT.includes(r.end.code)
        ? "aborted"
        : BLOCKED.includes(r.end.code)
          ? "blocked"
          : "failed"
      : r.end.kind === "going"
        ? "unfinished"
        : "aborted";
const platformOf = (r: Run): string => r.platform ?? (r.pve.startsWith("incus") ? "incus" : "pve");
const windowStart = (days: number) => TODAY - (days - 1) * DAY;
const inWindow = (days: number) => RUNS.filter((r) => startOf(r) >= windowStart(days));

function group(runs: Run[], key: (r: Run) => string | null) {
  const m = new Map<
    string,
    {
      label: string;
      runs: number;
      success: number;
      failed: number;
      blocked: number;
      aborted: number;
      unfinished: number;
    }
  >();
  for (const r of runs) {
    const k = key(r);
    if (k === null) continue;
    const g = m.get(k) ?? { label: k, runs: 0, success: 0, failed: 0, blocked: 0, aborted: 0, unfinished: 0 };
    g.runs++;
    g[outcomeOf(r)]++;
    m.set(k, g);
  }
  return [...m.values()].sort((a, b) => b.runs - a.runs || (a.label < b.label ? -1 : 1));
}
function countBy(runs: Run[], key: (r: Run) => string | null) {
  return group(runs, key)
    .map((g) => ({ label: g.label, count: g.runs }))
    .sort((a, b) => b.count - a.count || (a.label < b.label ? -1 : 1));
}

// ------------------------------------------------------------------ the data set, loaded once

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
  for (const r of [...RUNS].sort((a, b) => startOf(a) - startOf(b))) await send(t, r);
  t.clock.advance(NOW - t.clock());
});

type Json = Record<string, unknown>;
const get = async (path: string, status = 200) => {
  const res = await t.get(path);
  expect(res.status, path).toBe(status);
  return res.body as Json;
};

describe("GET /api/new", () => {
  test("the whole page over 7 days, number for number, from rollups", async () => {
    const d = await get("/api/new");
    const runs = inWindow(7);
    const all = group(runs, () => "all")[0]!;
    expect(d).toMatchObject({ days: 7, platform: "", repo: "", repo_slug: "", type: "", min_runs: 10, warnings: null });
    expect({
      runs: d.runs,
      success: d.success,
      failed: d.failed,
      blocked: d.blocked,
      aborted: d.aborted,
      unfinished: d.unfinished,
    }).toEqual({
      runs: all.runs,
      success: all.success,
      failed: all.failed,
      blocked: all.blocked,
      aborted: all.aborted,
      unfinished: all.unfinished,
    });
    // j7 (214) is blocked, i6 (143, sent failed by v1) the user's abort
    expect([d.runs, d.blocked, d.aborted]).toEqual([19, 1, 3]);
    expect(d.all_time).toBe(RUNS.length);
    expect(d.median_duration).toBeGreaterThan(240);
    expect(d.median_duration).toBeLessThan(360); // 300 s in log bins (±9%)
    expect(d.top_apps).toEqual(group(runs, (r) => r.app).slice(0, 25));
    expect(d.by_platform).toEqual(group(runs, platformOf));
    expect(d.by_type).toEqual(group(runs, (r) => r.type));
    expect(d.by_repo).toEqual(group(runs, (r) => r.repo ?? "unknown"));
    expect(d.by_repo_slug).toEqual(group(runs, (r) => r.slug));
    expect(d.by_os).toEqual(group(runs, (r) => `${r.os[0]} ${r.os[1]}`));
    expect(d.by_host_version).toEqual(group(runs, (r) => r.pve));
    // Failed and blocked runs by category; declines and aborts (143 sent as failed too) are the user's and out of it.
    expect(d.categories).toEqual(
      countBy(
        runs.filter(
          (r) =>
            r.end.kind === "failed" &&
            r.end.category !== "" &&
            (outcomeOf(r) === "failed" || outcomeOf(r) === "blocked"),
        ),
        (r) => (r.end as { category: string }).category,
      ),
    );
    expect(d.categories).not.toContainEqual(expect.objectContaining({ label: "user_aborted" }));
    expect(d.by_privilege).toEqual(countBy(runs, (r) => (r.ct === 1 ? "unprivileged" : "privileged")));
    expect(d.by_cores).toEqual(countBy(runs, (r) => String(r.cores)));
    expect(d.by_ram).toEqual(countBy(runs, (r) => `${Math.floor(r.ram / 1024)} GB`));
    expect(d.by_disk).toEqual(countBy(runs, (r) => `${r.disk} GB`));
    expect(d.by_cpu).toEqual(countBy(runs, (r) => r.cpu || null));
    expect(d.by_gpu).toEqual(countBy(runs, (r) => r.gpu || null));
    expect(d.by_gpu_passthrough).toEqual(
      countBy(runs, (r) => (r.pass === "" ? null : r.client === "v2" ? r.pass : "host capability (pre-v2)")),
    );
    expect(d.by_arm).toEqual(countBy(runs, (r) => r.arch ?? "x86_64 (inferred)"));
    expect(d.by_method).toEqual(countBy(runs, (r) => r.method));
    expect(d.by_client).toEqual(countBy(runs, (r) => (r.client === "v2" ? "payload v2" : "pre-versioning")));
  });

  test("exit codes and the why: failed and blocked runs (not aborts), with the apps behind each", async () => {
    const d = await get("/api/new");
    // exit 100 failed jellyfin twice and immich once in 7 days (x1 is older); 214 blocked jellyfin; 143 is an abort
    expect(d.exit_codes).toEqual([
      { code: 100, desc: "APT: install failed (broken packages or dependencies)", count: 3, apps: 2 },
      { code: 1, desc: "General error", count: 1, apps: 1 },
      { code: 7, desc: "curl: could not connect to the server", count: 1, apps: 1 },
      { code: 22, desc: "curl: the server answered with an HTTP error (e.g. 404, 429, 5xx)", count: 1, apps: 1 },
      { code: 137, desc: "Killed (SIGKILL), often out of memory", count: 1, apps: 1 },
      { code: 214, desc: "Proxmox: not enough free storage", count: 1, apps: 1 },
    ]);
    const why = d.signatures as { category: string; exit_code: number; message: string; count: number; apps: number }[];
    expect(why[0]).toEqual({
      category: "dependency",
      exit_code: 100,
      message: "exit_code=<n> | apt failed | at line <n>: apt-get install -y ffmpeg",
      count: 3,
      apps: 2,
    });
    expect(why.reduce((n, s) => n + s.count, 0)).toBe(
      inWindow(7).filter((r) => outcomeOf(r) === "failed" || outcomeOf(r) === "blocked").length,
    );
    expect(why.find((s) => s.exit_code === 214)).toEqual({
      category: "storage",
      exit_code: 214,
      message: "exit_code=<n> | not enough storage on local-lvm",
      count: 1,
      apps: 1,
    });
    expect(why.find((s) => s.exit_code === 22)).toMatchObject({
      category: "network",
      message: "exit code <n>: curl failed",
      apps: 1,
    });
  });

  test("worst apps: ranked by failure rate over finished runs, the floor (min_runs) in the ranking", async () => {
    const d = await get("/api/new?days=1");
    expect(d.min_runs).toBe(5);
    // today: jellyfin 1 success 1 failed, immich 1 failed 1 going, ...; none reaches 5 finished runs: ranked by failures
    const worst = d.worst_apps as { label: string; failed: number }[];
    expect(
      worst
        .map((g) => g.label)
        .slice(0, 2)
        .sort(),
    ).toEqual(["immich", "jellyfin"]);
    expect(worst.every((g, i) => i === 0 || worst[i - 1]!.failed >= g.failed)).toBe(true);
  });

  test("daily: one point per day that had runs, oldest first", async () => {
    const d = await get("/api/new?days=30");
    const days = new Map<string, Run[]>();
    for (const r of inWindow(30))
      days.set(new Date(startOf(r)).toISOString().slice(0, 10), [
        ...(days.get(new Date(startOf(r)).toISOString().slice(0, 10)) ?? []),
        r,
      ]);
    const want = [...days]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([day, rs]) => {
        const { label: _, ...g } = group(rs, () => "x")[0]!;
        return { day, ...g };
      });
    expect(d.daily).toEqual(want);
    expect(d.min_runs).toBe(20);
  });

  test("the install log: the newest runs, every field, heard-from order", async () => {
    const d = await get("/api/new");
    const recent = d.recent as Json[];
    expect(recent).toHaveLength(19);
    expect(recent[0]).toMatchObject({ run: "i4", app: "immich", status: "configuring", exit_code: 0 });
    const j2 = recent.find((r) => r.run === "j2")!;
    expect(j2).toEqual({
      run: "j2",
      app: "jellyfin",
      type: "lxc",
      status: "failed",
      exit_code: 100,
      category: "dependency",
      platform: "incus",
      os: "debian 13",
      host_version: "incus-6.0.1",
      repo: "community-scripts/ProxmoxVE",
      method: "default",
      cores: 2,
      ram: 2048,
      disk: 8,
      privileged: false,
      duration: 300,
      last_seen: "2026-06-10 10:05",
      error: "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg",
      failed_command: "apt-get install -y ffmpeg",
      failed_line: 12,
      arch: "amd64",
      kernel_version: "6.8.12",
      app_version: "10.10",
      cpu_vendor: "intel",
      cpu_model: "",
      gpu_vendor: "",
      gpu_model: "",
      gpu_passthrough: "no",
      ram_speed: "",
      payload_version: 2,
    });
    // one meaning for a decline: v1 sent it failed, the log says aborted
    expect(recent.find((r) => r.run === "j5")).toMatchObject({
      status: "aborted",
      exit_code: 113,
      category: "user_aborted",
      payload_version: 0,
      gpu_passthrough: "igpu",
    });
    expect(recent.find((r) => r.run === "o1")).toMatchObject({
      status: "success",
      platform: "pve",
      repo: "",
      payload_version: 0,
      privileged: false,
    });
    expect(recent.find((r) => r.run === "v1")).toMatchObject({ type: "vm", privileged: true, disk: 32 });
  });

  test("live: what reported lately whatever the filters, the runs in flight", async () => {
    const d = await get("/api/new?days=30&platform=incus");
    // i4 configuring since 19:01, now 20:00: in flight, but not within 20 minutes
    expect(d.live_in_flight).toBe(0);
    expect(d.live_last_hour).toBe(1);
    expect(d.live_last_24h).toBe(
      RUNS.filter((r) => endOf(r) >= NOW - DAY || (r.end.kind === "going" && startOf(r) + 60_000 >= NOW - DAY)).length,
    );
    expect(d.live_now).toEqual([
      {
        run: "",
        app: "immich",
        type: "lxc",
        status: "configuring",
        exit_code: 0,
        category: "",
        platform: "pve",
        os: "debian 13",
        host_version: "",
        repo: "community-scripts/ProxmoxVE",
        method: "",
        cores: 0,
        ram: 0,
        disk: 0,
        privileged: false,
        duration: 59 * 60,
        last_seen: "2026-06-10 19:01",
        error: "",
        failed_command: "",
        failed_line: 0,
        arch: "",
        kernel_version: "",
        app_version: "",
        cpu_vendor: "",
        cpu_model: "",
        gpu_vendor: "",
        gpu_model: "",
        gpu_passthrough: "",
        ram_speed: "",
        payload_version: 0,
      },
    ]);
  });

  test.each([
    ["platform=incus", (r: Run) => platformOf(r) === "incus"],
    ["platform=pve", (r: Run) => platformOf(r) === "pve"],
    ["ctype=lxc", (r: Run) => r.type === "lxc"],
    ["ctype=vm", (r: Run) => r.type === "vm"],
    ["ctype=addon", (r: Run) => r.type === "addon"],
    ["ctype=pve", (r: Run) => r.type === "pve"],
    ["repo=ProxmoxVE", (r: Run) => r.repo === "ProxmoxVE" || r.repo === null],
    ["repo=ProxmoxVED", (r: Run) => r.repo === "ProxmoxVED"],
    ["repo=external", (r: Run) => r.repo === "external"],
    ["repo=all", () => true],
    ["slug=me/ProxmoxVE", (r: Run) => r.slug === "me/ProxmoxVE"],
    [
      "platform=pve&ctype=lxc&repo=ProxmoxVE",
      (r: Run) => platformOf(r) === "pve" && r.type === "lxc" && (r.repo === "ProxmoxVE" || r.repo === null),
    ],
  ] as const)("%s narrows every section to its runs (and nothing else)", async (q, keep) => {
    const d = await get(`/api/new?days=30&${q}`);
    const runs = inWindow(30).filter(keep);
    const all = group(runs, () => "all")[0] ?? {
      runs: 0,
      success: 0,
      failed: 0,
      blocked: 0,
      aborted: 0,
      unfinished: 0,
    };
    expect(
      {
        runs: d.runs,
        success: d.success,
        failed: d.failed,
        blocked: d.blocked,
        aborted: d.aborted,
        unfinished: d.unfinished,
      },
      q,
    ).toEqual({
      runs: all.runs,
      success: all.success,
      failed: all.failed,
      blocked: all.blocked,
      aborted: all.aborted,
      unfinished: all.unfinished,
    });
    expect(d.top_apps, q).toEqual(group(runs, (r) => r.app));
    expect(d.by_platform, q).toEqual(group(runs, platformOf));
    expect(d.by_os, q).toEqual(group(runs, (r) => `${r.os[0]} ${r.os[1]}`));
    expect(d.by_cores, q).toEqual(countBy(runs, (r) => String(r.cores)));
    expect(((d.recent as Json[] | null) ?? []).map((r) => r.run).sort(), q).toEqual(runs.map((r) => r.id).sort());
    expect(d.all_time, q).toBe(RUNS.length); // the all-time figure ignores the filters
  });

  test("parameters read as the Go handler reads them: clamps, defaults, unknown values ignored", async () => {
    const echo = async (q: string) => {
      const d = await get(`/api/new?${q}`);
      return [d.days, d.platform, d.repo, d.type, d.min_runs];
    };
    expect(await echo("")).toEqual([7, "", "", "", 10]);
    expect(await echo("days=0")).toEqual([1, "", "", "", 5]);
    expect(await echo("days=-3")).toEqual([1, "", "", "", 5]);
    expect(await echo("days=1000")).toEqual([365, "", "", "", 40]);
    expect(await echo("days=30abc")).toEqual([30, "", "", "", 20]);
    expect(await echo("days=abc")).toEqual([7, "", "", "", 10]);
    expect(await echo("platform=INCUS&ctype=%20VM%20&repo=all")).toEqual([7, "incus", "", "vm", 10]);
    expect(await echo("platform=lxd&ctype=turnkey")).toEqual([7, "", "", "", 10]);
    expect((await get("/api/new?repo=" + "x".repeat(200), 400)).field).toBe("repo");
  });

  test("an empty window: zero counts, empty breakdowns as [], sections filled row by row as null (as Go encodes them)", async () => {
    const d = await get("/api/new?slug=nobody/none");
    expect(d).toMatchObject({
      runs: 0,
      success: 0,
      failed: 0,
      blocked: 0,
      aborted: 0,
      unfinished: 0,
      daily: null,
      exit_codes: null,
      signatures: null,
      recent: null,
      warnings: null,
    });
    for (const k of [
      "top_apps",
      "worst_apps",
      "by_platform",
      "by_type",
      "by_repo",
      "by_os",
      "by_host_version",
      "by_repo_slug",
      "categories",
      "by_privilege",
      "by_cores",
      "by_ram",
      "by_disk",
      "by_cpu",
      "by_gpu",
      "by_gpu_passthrough",
      "by_arm",
      "by_method",
      "by_client",
    ]) {
      expect(d[k], k).toEqual([]);
    }
    expect(Object.keys(d)).toEqual([
      "days",
      "platform",
      "repo",
      "repo_slug",
      "type",
      "runs",
      "success",
      "failed",
      "blocked",
      "aborted",
      "unfinished",
      "all_time",
      "median_duration",
      "min_runs",
      "live_in_flight",
      "live_last_hour",
      "live_last_24h",
      "live_now",
      "warnings",
      "daily",
      "top_apps",
      "worst_apps",
      "by_platform",
      "by_type",
      "by_repo",
      "by_os",
      "by_host_version",
      "by_repo_slug",
      "categories",
      "exit_codes",
      "signatures",
      "by_privilege",
      "by_cores",
      "by_ram",
      "by_disk",
      "by_cpu",
      "by_gpu",
      "by_gpu_passthrough",
      "by_arm",
      "by_method",
      "by_client",
      "recent",
    ]);
  });

  test("the same answers once the hours are folded into day cells", async () => {
    const before = await Promise.all(
      [
        "/api/new",
        "/api/new?days=30",
        "/api/new?days=30&platform=incus",
        "/api/script-detail?app=jellyfin&days=30",
      ].map((p) => get(p)),
    );
    await t.store.write([{ kind: "fold", until: NOW - (NOW % HOUR), at: NOW }]);
    const after = await Promise.all(
      [
        "/api/new",
        "/api/new?days=30",
        "/api/new?days=30&platform=incus",
        "/api/script-detail?app=jellyfin&days=30",
      ].map((p) => get(p)),
    );
    expect(after).toEqual(before);
  });
});

describe("GET /api/new/log.csv", () => {
  test("the page's export: its columns, its filename, one row per log line; the log's filters", async () => {
    const res = await t.app.handle(new Request("http://localhost/api/new/log.csv?days=7"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/csv");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="telemetry-log-7d.csv"');
    const lines = (await res.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe(
      "last_seen,status,exit_code,category,app,type,platform,os,host_version,arch,repo,method,cores,ram,disk,privileged,duration,failed_command,failed_line,kernel_version,app_version,payload_version,error",
    );
    expect(lines).toHaveLength(1 + 19);
    expect(lines).toContain(
      "2026-06-10 10:05,failed,100,dependency,jellyfin,lxc,incus,debian 13,incus-6.0.1,amd64,community-scripts/ProxmoxVE,default,2,2048,8,false,300,apt-get install -y ffmpeg,12,6.8.12,10.10,2,exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg",
    );
    const filtered = await (
      await t.app.handle(new Request("http://localhost/api/new/log.csv?days=7&q=FFMPEG&status=failed"))
    ).text();
    expect(
      filtered
        .trimEnd()
        .split("\r\n")
        .slice(1)
        .map((l) => l.split(",")[4]),
    ).toEqual(["jellyfin", "jellyfin", "immich"]);
  });
});

describe("GET /api/script-detail", () => {
  test("one script: outcomes, daily series, exit codes, OS, platform, host versions, newest runs", async () => {
    const d = await get("/api/script-detail?app=jellyfin");
    const runs = inWindow(30).filter((r) => r.app === "jellyfin");
    const all = group(runs, () => "x")[0]!;
    expect(d).toMatchObject({
      app: "jellyfin",
      days: 30,
      repo: "",
      platform: "",
      runs: all.runs,
      success: all.success,
      failed: all.failed,
      blocked: all.blocked,
      aborted: all.aborted,
      unfinished: all.unfinished,
      min_runs: 20,
    });
    // blocked runs stay in the error panels, as the community's page keeps them
    expect(d.exit_codes).toEqual([
      { code: 100, desc: "APT: install failed (broken packages or dependencies)", count: 3 },
      { code: 214, desc: "Proxmox: not enough free storage", count: 1 },
    ]);
    expect(d.by_platform).toEqual(group(runs, platformOf));
    expect(d.by_os).toEqual(group(runs, (r) => `${r.os[0]} ${r.os[1]}`));
    expect(d.by_host_version).toEqual(group(runs, (r) => r.pve));
    expect(d.categories).toEqual([
      { label: "dependency", count: 3 },
      { label: "storage", count: 1 },
    ]);
    expect((d.daily as { runs: number }[]).reduce((n, p) => n + p.runs, 0)).toBe(runs.length);
    expect((d.recent as Json[]).map((r) => r.run).sort()).toEqual(runs.map((r) => r.id).sort());
  });

  test("platform and days narrow it; the app is required", async () => {
    const incus = await get("/api/script-detail?app=jellyfin&platform=incus&days=7");
    expect([incus.runs, incus.failed]).toEqual([2, 2]);
    expect((await get("/api/script-detail?app=jellyfin&days=0")).days).toBe(1);
    expect((await get("/api/script-detail?app=jellyfin&days=999")).days).toBe(365);
    expect(await get("/api/script-detail?app=%20%20", 400)).toEqual({
      error: "invalid_field",
      message: "missing app parameter",
      field: "app",
    });
    expect(await get("/api/script-detail", 400)).toMatchObject({ field: "app" });
    expect(await get("/api/script-detail?app=nosuchapp")).toMatchObject({
      runs: 0,
      daily: null,
      exit_codes: null,
      recent: null,
      by_os: [],
    });
  });
});

describe("the routes served before, at the newest service's parameters", () => {
  test("repo absent is every repository; ProxmoxVE keeps the reports naming none", async () => {
    const total = async (q: string) => (await get(`/api/dashboard?days=30${q}`)).total_installs as number;
    expect(await total("")).toBe(inWindow(30).length);
    expect(await total("&repo=all")).toBe(inWindow(30).length);
    expect(await total("&repo=ProxmoxVE")).toBe(
      inWindow(30).filter((r) => r.repo === "ProxmoxVE" || r.repo === null).length,
    );
    expect((await get("/api/records?days=30")).total as number).toBe(inWindow(30).length);
    expect((await get("/api/scripts?days=30")).total_installs as number).toBe(inWindow(30).length);
    expect((await get("/api/errors?days=30")).total_installs as number).toBe(inWindow(30).length);
    expect(((await get("/api/repo-slugs")).repo_slugs as { slug: string }[]).map((s) => s.slug).sort()).toEqual([
      "community-scripts/ProxmoxVE",
      "community-scripts/ProxmoxVED",
      "me/ProxmoxVE",
    ]);
  });

  test("platform narrows /api/dashboard, /api/records, /api/scripts and /api/errors; platform_stats counts runs by platform", async () => {
    const incus = inWindow(30).filter((r) => platformOf(r) === "incus");
    const all = await get("/api/dashboard?days=30");
    const only = await get("/api/dashboard?days=30&platform=incus");
    expect(only.total_installs).toBe(incus.length);
    expect(only.total_installs).not.toBe(all.total_installs);
    expect(only.failed_count).toBe(incus.filter((r) => outcomeOf(r) === "failed").length);
    expect(all.platform_stats).toEqual(
      countBy(inWindow(30), platformOf).map((c) => ({ platform: c.label, count: c.count })),
    );
    expect(only.platform_stats).toEqual([{ platform: "incus", count: 2 }]);
    expect(
      ((await get("/api/records?days=30&platform=incus")).records as Json[]).map((r) => r.random_id).sort(),
    ).toEqual(["j2", "j3"]);
    expect(
      ((await get("/api/scripts?days=30&platform=incus")).top_scripts as Json[]).map((s) => [s.app, s.total]),
    ).toEqual([["jellyfin", 2]]);
    expect((await get("/api/errors?days=30&platform=incus")).total_errors).toBe(2);
    expect((await get("/api/dashboard?days=30&platform=nonsense")).total_installs).toBe(all.total_installs);
  });

  test("/api/records: one record per run, created when it last reported, platform and the v2 fields; zero values left out", async () => {
    const records = (await get("/api/records?days=30&limit=100")).records as Json[];
    expect(records).toHaveLength(inWindow(30).length);
    const j2 = records.find((r) => r.random_id === "j2")!;
    expect(j2).toMatchObject({
      execution_id: "j2",
      status: "failed",
      created: "2026-06-10 10:05:00.000",
      platform: "incus",
      payload_version: 2,
      arch: "amd64",
      failed_command: "apt-get install -y ffmpeg",
      failed_line: 12,
      kernel_version: "6.8.12",
      app_version: "10.10",
    });
    expect((JSON.parse(j2.pipeline as string) as { s: string; t: string }[])[0]).toEqual({
      s: "installing",
      t: "2026-06-10 10:00:00.000",
    });
    // v1: no payload_version sent, none listed; a zero exit code and an empty error are left out
    const j5 = records.find((r) => r.random_id === "j5")!;
    expect(j5).toMatchObject({ status: "aborted", exit_code: 113, error_category: "user_aborted", platform: "pve" });
    expect("payload_version" in j5).toBe(false);
    const o1 = records.find((r) => r.random_id === "o1")!;
    for (const k of ["exit_code", "payload_version", "failed_line", "arch", "repo_source"])
      expect(k in o1, k).toBe(false);
    // still going: created is its last report
    expect(records.find((r) => r.random_id === "i4")).toMatchObject({
      status: "configuring",
      created: "2026-06-10 19:01:00.000",
    });
  });

  test("/healthz carries the server's time, as the community dashboard's health dialog reads it", async () => {
    const h = await get("/healthz");
    expect(h.time).toBe("2026-06-10T20:00:00Z");
    expect(h.status).toBe("ok");
  });
});
