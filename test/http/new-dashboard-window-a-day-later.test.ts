// /api/new and /api/script-detail a day later: what they kept for a window is carried to the next
// one (the day it lost taken out, the day it gained added) and must equal a recount of the runs in
// that window. An install type's failures count an app while its own failures are not 0: the type
// filter may read every app's cells less the other types' apps (stats.ts typeByApps), whose failures
// are taken out again, apps and all.
import { beforeAll, expect, test } from "bun:test";
import type { Execution } from "../../src/domain/execution.ts";
import { DAY, HOUR } from "../../src/domain/time.ts";
import { testApp, type TestApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

interface Run {
  id: string;
  at: number;
  app: string;
  type: "lxc" | "vm";
  failure: { code: number; category: string; error: string } | null;
}

const FFMPEG = {
  code: 100,
  category: "dependency",
  error: "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg",
};
const OOM = { code: 137, category: "resource", error: "exit_code=137 | Killed (OOM) while building" };
const APPS = [
  { app: "docker", type: "lxc" as const, fails: (d: number) => (d % 6 === 0 ? OOM : null) },
  { app: "jellyfin", type: "lxc" as const, fails: (d: number) => (d % 3 === 0 ? FFMPEG : null) },
  { app: "immich", type: "lxc" as const, fails: (d: number) => (d % 5 === 0 ? OOM : null) },
  // A VM failing with the containers' code and text: taken out of ctype=lxc again.
  { app: "haos", type: "vm" as const, fails: (d: number) => (d % 2 === 0 ? FFMPEG : d % 7 === 0 ? OOM : null) },
];

let t: TestApp;
/** The same runs, asked only at the end: its answers are made afresh, not carried from a window before. */
let fresh: TestApp;
const runs: Run[] = [];
let n = 0;

function runOf(app: (typeof APPS)[number], at: number, failure: Run["failure"]): Run {
  return { id: `r${n++}`, at, app: app.app, type: app.type, failure };
}

/** Minutes a run took: its successes give the median duration. */
const minutes = (r: Run) => 2 + (Number(r.id.slice(1)) % 13);
const load = (r: Run) =>
  finishedLoad(r.id, r.at, {
    nsapp: r.app,
    type: r.type,
    durationMs: minutes(r) * 60_000,
    updatedAt: r.at + minutes(r) * 60_000,
    finishedAt: r.at + minutes(r) * 60_000,
    ...(r.failure === null
      ? { status: "done", outcome: "success" }
      : {
          status: "failed",
          outcome: "failed",
          exitCode: r.failure.code,
          errorCategory: r.failure.category,
          error: r.failure.error,
        }),
  } satisfies Partial<Execution>);

async function write(list: Run[]): Promise<void> {
  runs.push(...list);
  await t.store.write(list.map(load));
  await fresh.store.write(list.map(load));
}

/** The days of the window `days` long that ends with today's current hour (the community's windowOf). */
function windowOf(days: number): { from: number; to: number } {
  const now = t.clock();
  return { from: now - (now % DAY) - (days - 1) * DAY, to: now - (now % HOUR) + HOUR };
}

type Why = { code: number; count: number; apps: number };
function recount(days: number, keep: (r: Run) => boolean) {
  const { from, to } = windowOf(days);
  const inWindow = runs.filter((r) => r.at >= from && r.at < to && keep(r));
  const group = (key: (r: Run) => string | number) => {
    const out = new Map<string | number, { count: number; apps: Set<string>; code: number }>();
    for (const r of inWindow) {
      if (r.failure === null) continue;
      const g = out.get(key(r)) ?? { count: 0, apps: new Set<string>(), code: r.failure.code };
      g.count++;
      g.apps.add(r.app);
      out.set(key(r), g);
    }
    return [...out.values()].map((g) => ({ code: g.code, count: g.count, apps: g.apps.size })).sort(order);
  };
  return {
    runs: inWindow.length,
    failed: inWindow.filter((r) => r.failure !== null).length,
    exit_codes: group((r) => r.failure!.code),
    signatures: group((r) => r.failure!.error),
  };
}

const order = (a: Why, b: Why) => b.count - a.count || a.code - b.code || a.apps - b.apps;

async function answer(path: string) {
  const res = await t.get(path);
  expect(res.status).toBe(200);
  const b = res.body as {
    runs: number;
    failed: number;
    exit_codes: Why[] | null;
    signatures: { exit_code: number; count: number; apps: number }[] | null;
  };
  return {
    runs: b.runs,
    failed: b.failed,
    exit_codes: (b.exit_codes ?? []).map(({ code, count, apps }) => ({ code, count, apps })).sort(order),
    signatures: (b.signatures ?? [])
      .map(({ exit_code, count, apps }) => ({ code: exit_code, count, apps }))
      .sort(order),
  };
}

beforeAll(async () => {
  t = await testApp();
  fresh = await testApp();
  // 40 days of stored day cells, every app every day; the containers are most of the runs.
  const today = t.clock() - (t.clock() % DAY);
  for (let d = 1; d <= 40; d++)
    for (const a of APPS)
      for (let k = 0; k < (a.type === "lxc" ? 3 : 1); k++)
        await write([runOf(a, today - d * DAY + (k + 1) * HOUR, k === 0 ? a.fails(d) : null)]);
});

test("ctype=lxc: an exit code's and a signature's apps are the containers that failed, not the VM taken out", async () => {
  const lxc = (r: Run) => r.type === "lxc";
  const got = await answer("/api/new?days=30&ctype=lxc");
  expect(got).toEqual(recount(30, lxc));
  // The VM shares both the code and the text: counted for ctype=vm and for every type.
  expect(await answer("/api/new?days=30&ctype=vm")).toEqual(recount(30, (r) => r.type === "vm"));
  expect(await answer("/api/new?days=30")).toEqual(recount(30, () => true));
});

test("a day later, and the next: every window equals a recount (the day lost taken out, the day gained added)", async () => {
  const paths: [string, (r: Run) => boolean][] = [
    ["/api/new?days=30", () => true],
    ["/api/new?days=30&ctype=lxc", (r) => r.type === "lxc"],
    ["/api/new?days=30&ctype=vm", (r) => r.type === "vm"],
    ["/api/new?days=7", () => true],
  ];
  for (let step = 0; step < 4; step++) {
    for (const [path, keep] of paths)
      expect([step, path, await answer(path)]).toEqual([
        step,
        path,
        recount(Number(new URLSearchParams(path.split("?")[1]).get("days")), keep),
      ]);
    // A day later, with a failure in the day that just ended: a stored day the next window gains.
    t.clock.advance(DAY);
    fresh.clock.advance(DAY);
    const yesterday = t.clock() - (t.clock() % DAY) - DAY;
    await write(APPS.map((a, i) => runOf(a, yesterday + (i + 2) * HOUR, i % 2 === 0 ? OOM : FFMPEG)));
  }
  // Every section (the median duration among them) as a server that never answered before makes it.
  for (const [path] of [...paths, ["/api/script-detail?app=jellyfin&days=30"] as const])
    expect([path, (await t.get(path)).body]).toEqual([path, (await fresh.get(path)).body]);
  // Script detail's exit codes over the same days.
  const detail = (await t.get("/api/script-detail?app=jellyfin&days=30")).body as {
    exit_codes: { code: number; count: number }[];
  };
  const { exit_codes } = recount(30, (r) => r.app === "jellyfin");
  expect(detail.exit_codes.map(({ code, count }) => ({ code, count }))).toEqual(
    exit_codes.map(({ code, count }) => ({ code, count })),
  );
});
