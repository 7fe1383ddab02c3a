// The read API against independent recounts: generated installs go in through HTTP (updates
// crossing hour and day boundaries, updates before their start, aborted, unknown, stuck), and
// every aggregate is compared with a plain recount of the raw rows.
import { beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { startReport, testApp } from "../helpers/app.ts";
import { errorSignature } from "../../src/domain/error-signature.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { ALL_APPS, OUTCOME_INDEX, sliceKey } from "../../src/domain/rollup.ts";
import { createStats } from "../../src/read/stats.ts";
import { SCANNED, breakdown, dimensionSums, errorCounts, foldRecords, summarize } from "../../src/read/aggregate.ts";
import type { ExecutionFilter, StoreReads } from "../../src/store/contract/executions.ts";
import { rewriteCell } from "../helpers/cells.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const APPS = Array.from({ length: 12 }, (_, i) => `app-${i}`);
const ERRORS = [
  "exit code 1",
  "exit code 100",
  "Failed at line 42: apt-get install -y curl",
  "curl: (6) Could not resolve host: github.com",
  "unable to create CT 105 - storage 'local-lvm' does not exist",
];

function prng(seed: number) {
  return () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
}

type Event = { t: number; path: string; body: object };

/** Installs over ~40 days; some updates come hours later, some before their start. */
function generate(n: number, start: number, seed = 7): Event[] {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const events: Event[] = [];
  for (let i = 0; i < n; i++) {
    const id = `gen-${seed}-${i}`;
    const t = start + Math.floor(rnd() * 40 * DAY);
    const app = APPS[Math.min(APPS.length - 1, Math.floor(rnd() ** 2 * APPS.length))]!;
    const vm = rnd() < 0.2;
    events.push({
      t,
      path: "/upload",
      body: startReport(id, {
        nsapp: app,
        type: vm ? "vm" : "lxc",
        ct_type: vm ? 2 : 1,
        os_type: pick(["debian", "ubuntu", "alpine"]),
        os_version: pick(["12", "24.04", "3.20"]),
        pve_version: pick(["8.2.2", "8.3.0", "9.0.3", "not found"]),
        method: pick(["default", "advanced"]),
        core_count: pick([1, 2, 4]),
        ram_size: pick([512, 2048]),
      }),
    });
    const r = rnd();
    const later = Math.floor(rnd() * 5 * HOUR); // often into the next hour, sometimes the next day
    if (r < 0.6)
      events.push({
        t: t + later,
        path: "/upload/updatestatus",
        body: { status: "done", error: "none", random_id: id },
      });
    else if (r < 0.8)
      events.push({
        t: t + later,
        path: "/upload/updatestatus",
        body: { status: "failed", error: `${pick(ERRORS)} on 10.0.0.${i % 250}`, random_id: id },
      });
    else if (r < 0.85)
      events.push({
        t: t + later,
        path: "/upload/updatestatus",
        body: { status: "failed", error: "INTERRUPTED", random_id: id },
      });
    else if (r < 0.88)
      events.push({ t: t + later, path: "/upload/updatestatus", body: { status: "weird", random_id: id } });
    else if (r < 0.93)
      events.push({ t: t - 1000, path: "/upload/updatestatus", body: { status: "done", random_id: id } }); // before its start
    // else: stays in progress
  }
  return events.sort((a, b) => a.t - b.t);
}

type Row = {
  random_id: string;
  nsapp: string | null;
  type: string;
  os_type: string | null;
  os_version: string | null;
  pve_version: string | null;
  method: string | null;
  status: string;
  outcome: string;
  error: string | null;
  created_at: number;
  duration_ms: number | null;
};

const t = await testApp();
const base = Date.parse("2026-03-01T00:00:00Z");
let rows: Row[] = [];

// Every regime of rollup cells is in the data: records of hours folded from the start (day 0-19,
// in every grain at once), hours folded by the fold job on day 30 (days 20-29), and hours still
// in hour cells only (day 30 on); updates arrive in each, some after their hour was folded.
const FOLDED_FIRST = base + 20 * DAY;
const FOLD_AT = base + 30 * DAY;

beforeAll(async () => {
  t.clock.advance(base - t.clock()); // the events are absolute times from `base`
  t.sqlite.run("UPDATE rollup_state SET folded_until = ?", [FOLDED_FIRST]); // the database is empty: any value is consistent
  let folded = false;
  for (const e of generate(1500, base)) {
    if (!folded && e.t >= FOLD_AT) {
      folded = true;
      expect(await t.writer.submit({ kind: "fold", until: FOLD_AT, at: FOLD_AT })).toMatchObject({
        kind: "folded",
        hours: expect.any(Number),
      });
    }
    t.clock.advance(e.t - t.clock());
    const res = await t.post(e.path, e.body);
    expect(res.status).toBeLessThan(300);
  }
  rows = t.sqlite.query("SELECT * FROM executions").all() as Row[];
});

const inWindow = (from: number, to: number) => rows.filter((r) => r.created_at >= from && r.created_at < to);
const countBy = <K extends string>(list: Row[], key: (r: Row) => K) => {
  const m = new Map<K, number>();
  for (const r of list) m.set(key(r), (m.get(key(r)) ?? 0) + 1);
  return m;
};
const outcomes = (list: Row[]) => {
  const c = countBy(list, (r) => r.outcome);
  return {
    total: list.length,
    success: c.get("success") ?? 0,
    failed: c.get("failed") ?? 0,
    aborted: c.get("aborted") ?? 0,
    in_progress: c.get("in_progress") ?? 0,
    unknown: c.get("unknown") ?? 0,
  };
};
const iso = (ms: number) => new Date(ms).toISOString();
const WINDOWS = [
  { name: "whole range", from: base - DAY, to: base + 45 * DAY },
  { name: "ragged hours", from: base + 3 * DAY + 5 * HOUR, to: base + 17 * DAY + 13 * HOUR },
  { name: "within one day", from: base + 10 * DAY + 2 * HOUR, to: base + 10 * DAY + 9 * HOUR },
  { name: "across the folded edge", from: base + 12 * DAY + 7 * HOUR, to: base + 36 * DAY + 1 * HOUR },
  { name: "unfolded hours only", from: base + 31 * DAY + 3 * HOUR, to: base + 44 * DAY },
];

describe("aggregates equal a recount of the raw rows", () => {
  test("the data has every case in it", async () => {
    const o = outcomes(rows);
    expect(o.total).toBe(1500);
    for (const k of ["success", "failed", "aborted", "in_progress", "unknown"] as const)
      expect(o[k]).toBeGreaterThan(10);
  });

  for (const w of WINDOWS) {
    test(`summary, ${w.name}`, async () => {
      const res = await t.get(`/api/stats/summary?from=${iso(w.from)}&to=${iso(w.to)}`);
      expect(res.status).toBe(200);
      const expected = outcomes(inWindow(w.from, w.to));
      expect(res.body).toMatchObject({ ...expected, source: "rollup" });
      expect(res.body.success_rate).toBeCloseTo(expected.success / (expected.success + expected.failed), 4);
    });

    test(`breakdown by every dimension, ${w.name}`, async () => {
      const dims: Record<string, (r: Row) => string> = {
        nsapp: (r) => r.nsapp ?? "",
        type: (r) => r.type,
        os: (r) => [r.os_type, r.os_version].filter((v) => v !== null).join(" "),
        pve_version: (r) => r.pve_version ?? "",
        method: (r) => r.method ?? "",
        status: (r) => r.status,
      };
      for (const [by, key] of Object.entries(dims)) {
        const res = await t.get(`/api/stats/breakdown?by=${by}&limit=1000&from=${iso(w.from)}&to=${iso(w.to)}`);
        const got = Object.fromEntries(
          (res.body.groups as { value: string; total: number; failed: number }[]).map((g) => [
            g.value,
            [g.total, g.failed],
          ]),
        );
        const want: Record<string, [number, number]> = {};
        for (const r of inWindow(w.from, w.to)) {
          const v = key(r);
          want[v] ??= [0, 0];
          want[v]![0]++;
          if (r.outcome === "failed") want[v]![1]++;
        }
        expect(got).toEqual(want);
      }
    });

    test(`errors by signature, ${w.name}`, async () => {
      const res = await t.get(`/api/stats/errors?limit=1000&from=${iso(w.from)}&to=${iso(w.to)}`);
      const failed = inWindow(w.from, w.to).filter((r) => r.outcome === "failed" && r.error !== null);
      const want = countBy(failed, (r) => errorSignature(r.error)!);
      const got = res.body.signatures as { signature: string; count: number; apps: string[]; example: string }[];
      expect(Object.fromEntries(got.map((s) => [s.signature, s.count]))).toEqual(Object.fromEntries(want));
      expect(res.body.total_failed).toBe(failed.length);
      for (const s of got) {
        const apps = new Set(failed.filter((r) => errorSignature(r.error) === s.signature).map((r) => r.nsapp));
        for (const app of apps) expect(s.apps).toContain(app!);
        expect(errorSignature(s.example)).toBe(s.signature); // the example really has that signature
      }
    });
  }

  test("signatures normalize numbers and masked addresses", async () => {
    const res = await t.get(`/api/stats/errors?from=${iso(base - DAY)}&to=${iso(base + 45 * DAY)}`);
    const sigs = (res.body.signatures as { signature: string }[]).map((s) => s.signature);
    expect(sigs).toContain("exit code <n> on <ip>");
    expect(sigs.length).toBeLessThanOrEqual(ERRORS.length);
  });

  test("timeseries per day and per hour, zero-filled", async () => {
    const from = base + 2 * DAY;
    const to = base + 9 * DAY;
    const daily = await t.get(`/api/stats/timeseries?interval=day&from=${iso(from)}&to=${iso(to)}`);
    const points = daily.body.points as { t: string; total: number; failed: number }[];
    expect(points.length).toBe(7);
    for (const p of points) {
      const start = Date.parse(p.t);
      const want = outcomes(inWindow(start, start + DAY));
      expect([p.total, p.failed]).toEqual([want.total, want.failed]);
    }
    const hourly = await t.get(`/api/stats/timeseries?interval=hour&from=${iso(from)}&to=${iso(from + DAY)}`);
    const hours = hourly.body.points as { t: string; total: number }[];
    expect(hours.length).toBe(24);
    expect(hours.map((p) => p.total)).toEqual(
      hours.map((p) => inWindow(Date.parse(p.t), Date.parse(p.t) + HOUR).length),
    );
    const weekly = await t.get(`/api/stats/timeseries?interval=week&from=${iso(base)}&to=${iso(base + 28 * DAY)}`);
    for (const p of weekly.body.points as { t: string; total: number }[]) {
      expect(new Date(p.t).getUTCDay()).toBe(1); // Monday
      expect(p.total).toBe(
        inWindow(Math.max(Date.parse(p.t), base), Math.min(Date.parse(p.t) + 7 * DAY, base + 28 * DAY)).length,
      );
    }
  });

  test("filters: app and outcome from rollups; other combinations by scan, with the same answers", async () => {
    const w = `from=${iso(base)}&to=${iso(base + 41 * DAY)}`;
    const all = inWindow(base, base + 41 * DAY);
    const app = await t.get(`/api/stats/breakdown?by=os&nsapp=app-0&outcome=failed&${w}`);
    expect(app.body.source).toBe("rollup");
    const want = countBy(
      all.filter((r) => r.nsapp === "app-0" && r.outcome === "failed"),
      (r) => `${r.os_type} ${r.os_version}`,
    );
    expect(
      Object.fromEntries((app.body.groups as { value: string; total: number }[]).map((g) => [g.value, g.total])),
    ).toEqual(Object.fromEntries(want));

    const scanned = await t.get(`/api/stats/breakdown?by=nsapp&type=vm&method=default&${w}&limit=100`);
    expect(scanned.body.source).toBe("scan");
    const wantScan = countBy(
      all.filter((r) => r.type === "vm" && r.method === "default"),
      (r) => r.nsapp ?? "",
    );
    expect(
      Object.fromEntries((scanned.body.groups as { value: string; total: number }[]).map((g) => [g.value, g.total])),
    ).toEqual(Object.fromEntries(wantScan));

    const text = await t.get(`/api/stats/summary?q=resolve+host&${w}`);
    expect(text.body.source).toBe("scan");
    expect(text.body.total).toBe(all.filter((r) => (r.error ?? "").toLowerCase().includes("resolve host")).length);
  });

  test("one dimension filter: rollups without it, less what it leaves out when that is fewer, equal a scan of the filter", async () => {
    // The store as stats reads it, noting which filters it scans.
    const scanned: ExecutionFilter[] = [];
    const store: StoreReads = Object.create(t.store);
    store.executionChunks = (f, page) => {
      scanned.push(f);
      return t.store.executionChunks(f, page);
    };
    const stats = createStats(store);
    // Ragged ends: hour cells, day cells and a month in between; folded and open hours.
    const w = { from: base + 3 * HOUR, to: base + 38 * DAY + 5 * HOUR };
    const direct = async (f: ExecutionFilter) =>
      foldRecords(t.store.executionChunks({ ...f, from: w.from, to: w.to }), (r) => r.createdAt - (r.createdAt % DAY));
    const count = async (f: ExecutionFilter) => {
      let n = 0;
      for await (const chunk of t.store.executionChunks({ ...f, from: w.from, to: w.to })) n += chunk.length;
      return n;
    };
    // Each filter with the filter without its dimension: the side read follows their counts.
    const cases: { f: ExecutionFilter; base: ExecutionFilter }[] = [
      { f: { type: "lxc" }, base: {} },
      { f: { type: "vm" }, base: {} },
      { f: { type: "lxc", outcome: "failed" }, base: {} },
      { f: { type: "lxc", nsapp: "app-0" }, base: { nsapp: "app-0" } },
      { f: { type: "vm", nsapp: "app-0", outcome: "success" }, base: { nsapp: "app-0" } },
      { f: { osType: "debian", osVersion: "12" }, base: {} },
      { f: { method: "advanced", kind: "install" }, base: { kind: "install" } },
      { f: { kind: "install", type: "lxc" }, base: { kind: "install" } },
      { f: { pveVersion: "" }, base: {} },
      { f: { platform: "" }, base: {} },
      { f: { platform: "", nsapp: "app-3", outcome: "failed" }, base: { nsapp: "app-3" } },
      { f: { platform: "pve" }, base: {} },
    ];
    const paths = new Set<string>();
    for (const { f, base: without } of cases) {
      const [kept, total] = [
        await count({
          ...without,
          outcome: undefined,
          ...Object.fromEntries(Object.entries(f).filter(([k]) => k !== "outcome")),
        }),
        await count(without),
      ];
      const path = kept === total ? "rollup" : kept === 0 ? "nothing" : total - kept < kept ? "complement" : "scan";
      paths.add(path);
      scanned.length = 0;
      const want = await direct(f);
      const sum = await stats.summary(f, w);
      expect([JSON.stringify(f), sum.source]).toEqual([
        JSON.stringify(f),
        path === "rollup" || path === "nothing" ? "rollup" : "scan",
      ]);
      expect(scanned.length).toBe(path === "rollup" || path === "nothing" ? 0 : 1);
      if (scanned.length === 1) expect(scanned[0]!.except !== undefined).toBe(path === "complement");
      // As rollups answer an outcome: durations of that outcome; retry counts of every outcome
      // (aggregate.ts retryStats), where a scan of the filter has only the filtered one.
      const scanPlan = { ...SCANNED, outcome: f.outcome ?? null };
      const { source: _s, retries, ...got } = sum;
      const { retries: wantRetries, ...wanted } = summarize(want, scanPlan);
      expect(got).toEqual(wanted);
      if (f.outcome === undefined || path === "scan") expect(retries).toEqual(wantRetries);
      for (const by of ["os", "nsapp", "method", "pve_version", "failure"] as const) {
        const { source: _b, ...groups } = await stats.breakdown(f, w, { by, sort: "volume", minRuns: 1, limit: 1000 });
        expect(groups).toEqual(breakdown(want, scanPlan, { by, sort: "volume", minRuns: 1, limit: 1000 }));
      }
      const errs = await stats.errors(f, w, 100);
      expect(errs.signatures.map((s) => [s.id, s.count])).toEqual(errorCounts(want));
      const every = await stats.cells(f, w);
      const dims = ["nsapp", "os", "type", "exit_code", "failure", "attempt"] as const;
      // Every outcome's counts, as cells hold them: the filtered outcome's are compared.
      const of = (c: number[]) =>
        f.outcome === undefined ? c : c.map((n, i) => (i === OUTCOME_INDEX[f.outcome!] ? n : 0));
      const sums = (m: Map<string, Map<string, number[]>>) =>
        Object.fromEntries(
          [...m].map(([d, v]) => [
            d,
            Object.fromEntries(
              [...v]
                .map(([k, c]) => [k, of(c)] as const)
                .filter(([, c]) => c.some((n) => n !== 0))
                .sort(),
            ),
          ]),
        );
      expect(sums(dimensionSums(every.cells, every.plan, dims))).toEqual(sums(dimensionSums(want, SCANNED, dims)));
    }
    expect([...paths].sort()).toEqual(["complement", "nothing", "rollup", "scan"]);
  });

  test("failure-rate ranking respects the minimum-runs floor", async () => {
    const res = await t.get(
      `/api/stats/breakdown?by=nsapp&sort=failure_rate&min_runs=40&from=${iso(base)}&to=${iso(base + 41 * DAY)}`,
    );
    const groups = res.body.groups as { success: number; failed: number; failure_rate: number }[];
    expect(groups.length).toBeGreaterThan(0);
    for (const g of groups) expect(g.success + g.failed).toBeGreaterThanOrEqual(40);
    for (let i = 1; i < groups.length; i++)
      expect(groups[i - 1]!.failure_rate).toBeGreaterThanOrEqual(groups[i]!.failure_rate);
  });

  test("duration percentiles are close to the exact ones", async () => {
    const res = await t.get(`/api/stats/summary?from=${iso(base - DAY)}&to=${iso(base + 45 * DAY)}`);
    const durations = rows
      .filter((r) => r.outcome === "success" && r.duration_ms !== null)
      .map((r) => r.duration_ms! / 1000)
      .sort((a, b) => a - b);
    const exact = (q: number) => durations[Math.ceil(q * durations.length) - 1]!;
    const d = res.body.duration as { n: number; median_s: number; p90_s: number };
    expect(d.n).toBe(durations.length);
    expect(Math.abs(d.median_s - exact(0.5)) / exact(0.5)).toBeLessThan(0.2);
    expect(Math.abs(d.p90_s - exact(0.9)) / exact(0.9)).toBeLessThan(0.2);
  });

  test("top apps over 30, 90 and 365 days", async () => {
    const res = await t.get("/api/stats/top-apps?limit=5");
    const now = t.clock();
    for (const [key, days] of [
      ["30d", 30],
      ["90d", 90],
      ["365d", 365],
    ] as const) {
      const win = res.body[key] as { total: number; apps: { nsapp: string; count: number; percent: number }[] };
      const to = Math.floor(now / HOUR) * HOUR + HOUR;
      const list = inWindow(to - days * DAY, to);
      expect(win.total).toBe(list.length);
      const want = [...countBy(list, (r) => r.nsapp ?? "")]
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .slice(0, 5);
      expect(win.apps.map((a) => [a.nsapp, a.count])).toEqual(want);
    }
  });

  test("rollups equal a full recount (verify), and verify notices a tampered cell", async () => {
    const ok = await verifyRollups(t.store);
    expect(ok).toMatchObject({ ok: true, records: 1500, mismatches: [], signatureGaps: 0 });
    // One count of a stored day cell of every app, one more than the records say.
    const cell = rewriteCell(t.sqlite, 1, sliceKey("install", "", ALL_APPS, "pve"), (d) => {
      const counts = Object.values(d.dims.type!)[0]!;
      counts[0] = counts[0] + 1;
    });
    const bad = await verifyRollups(t.store);
    expect(bad.ok).toBe(false);
    expect(bad.mismatches.length).toBe(1);
    t.sqlite.run("UPDATE rollups SET data = ?, apps = ?, errors = ? WHERE id = ?", [
      cell.before.data,
      cell.before.apps,
      cell.before.errors,
      cell.id,
    ]);
    expect((await verifyRollups(t.store)).ok).toBe(true);
  });

  test("open hours are not stored, and folding them changes no answer", async () => {
    const stored = (from: number) =>
      (t.sqlite.query("SELECT count(*) AS n FROM rollups WHERE bucket >= ?").get(from) as { n: number }).n;
    expect(stored(FOLD_AT)).toBe(0);
    const questions = WINDOWS.flatMap((w) => [
      `summary?from=${iso(w.from)}&to=${iso(w.to)}`,
      `breakdown?by=os&nsapp=app-1&from=${iso(w.from)}&to=${iso(w.to)}`,
      `timeseries?interval=day&from=${iso(w.from)}&to=${iso(w.to)}`,
    ]);
    const before = await Promise.all(questions.map((q) => t.get(`/api/stats/${q}`)));
    const result = await t.writer.submit({ kind: "fold", until: base + 45 * DAY, at: t.clock() });
    expect(result).toMatchObject({ kind: "folded" });
    expect(result.kind === "folded" && result.hours).toBeGreaterThan(100);
    expect(stored(FOLD_AT)).toBeGreaterThan(0);
    expect(await t.store.foldedUntil()).toBe(base + 45 * DAY);
    expect(await verifyRollups(t.store)).toMatchObject({ ok: true, records: 1500 });
    const after = await Promise.all(questions.map((q) => t.get(`/api/stats/${q}`)));
    expect(after.map((r) => r.body)).toEqual(before.map((r) => r.body));
    expect(await t.writer.submit({ kind: "fold", until: base + 40 * DAY, at: t.clock() })).toEqual({
      kind: "folded",
      hours: 0,
    }); // never backwards
  });
});

describe("listing", () => {
  test("cursor pagination walks every record once, newest first, with and without filters", async () => {
    for (const filter of ["", "&nsapp=app-1", "&outcome=failed&type=lxc"]) {
      const seen: { random_id: string; created_at: string }[] = [];
      let cursor: string | null = null;
      do {
        const res = await t.get(`/api/installs?limit=97${filter}${cursor ? `&cursor=${cursor}` : ""}`);
        expect(res.status).toBe(200);
        seen.push(...(res.body.installs as { random_id: string; created_at: string }[]));
        cursor = res.body.next_cursor as string | null;
      } while (cursor);
      const want = t.sqlite
        .query(
          `SELECT random_id FROM executions WHERE 1=1 ${filter.replace(/&(\w+)=([\w-]+)/g, (_, k, v) => ` AND ${k} = '${v}'`)} ORDER BY created_at DESC, rowid DESC`,
        )
        .all()
        .map((r) => (r as { random_id: string }).random_id);
      expect(seen.map((r) => r.random_id)).toEqual(want);
    }
  });

  /** Every page of a listing, following next_cursor to the end. */
  async function walk(query: string, limit: number): Promise<Row[]> {
    const seen: Row[] = [];
    let cursor: string | null = null;
    do {
      const res = await t.get(`/api/installs?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      seen.push(...(res.body.installs as Row[]));
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    return seen;
  }

  test("oldest first walks the same records in the opposite order, inside a window too", async () => {
    const from = base + 3 * DAY + 5 * HOUR;
    const to = base + 17 * DAY;
    for (const filter of ["", `&from=${iso(from)}&to=${iso(to)}&outcome=failed`]) {
      const newest = await walk(filter, 61);
      const oldest = await walk(`${filter}&order=oldest`, 61);
      expect(oldest.map((r) => r.random_id)).toEqual(newest.map((r) => r.random_id).reverse());
    }
    expect((await walk(`&from=${iso(from)}&to=${iso(to)}&order=oldest`, 500)).length).toBe(inWindow(from, to).length);
    expect((await t.get("/api/installs?order=sideways")).body).toMatchObject({
      error: "invalid_field",
      field: "order",
    });
  });

  test("signature lists exactly the failed installs whose error has that signature", async () => {
    const errors = await t.get("/api/stats/errors?from=2026-01-01&to=2026-12-31&limit=3");
    const signatures = errors.body.signatures as { id: string; signature: string; count: number }[];
    expect(signatures.length).toBe(3);
    for (const sig of signatures) {
      const listed = await walk(`&signature=${sig.id}`, 7);
      const want = rows.filter((r) => r.outcome === "failed" && errorSignature(r.error) === sig.signature);
      expect(listed.length).toBe(sig.count);
      expect(new Set(listed.map((r) => r.random_id))).toEqual(new Set(want.map((r) => r.random_id)));
      // Newest first, like every listing.
      const times = listed.map((r) => r.created_at);
      expect(times).toEqual([...times].sort().reverse());
    }
    expect((await t.get("/api/installs?signature=<script>")).body).toMatchObject({
      error: "invalid_field",
      field: "signature",
    });
  });

  test("windows: days, from/to with a date-only end meaning the whole day, and clear errors", async () => {
    const day = base + 5 * DAY;
    const res = await t.get(`/api/installs?limit=500&from=${iso(day).slice(0, 10)}&to=${iso(day).slice(0, 10)}`);
    expect((res.body.installs as unknown[]).length).toBe(inWindow(day, day + DAY).length);
    expect((await t.get("/api/stats/summary?from=yesterday")).body).toMatchObject({
      error: "invalid_field",
      field: "from",
    });
    expect((await t.get("/api/stats/summary?days=7&from=2026-01-01")).body).toMatchObject({
      error: "invalid_field",
      field: "days",
    });
    expect((await t.get("/api/stats/summary?from=2026-05-01&to=2026-04-01")).body).toMatchObject({
      error: "invalid_field",
      field: "from",
    });
    expect((await t.get("/api/stats/timeseries?interval=hour&days=60")).body).toMatchObject({
      error: "invalid_field",
      field: "interval",
    });
    expect((await t.get("/api/stats/breakdown?by=color")).body).toMatchObject({ error: "invalid_field", field: "by" });
    expect((await t.get("/api/installs?cursor=bogus")).body).toMatchObject({ error: "invalid_field", field: "cursor" });
  });
});

describe("rollups under concurrency", () => {
  test("concurrent starts and updates, updates racing their starts: rollups still equal a recount", async () => {
    const c = await testApp();
    const ids = Array.from({ length: 400 }, (_, i) => `race-${i}`);
    await Promise.all(
      ids.flatMap((id, i) => [
        c.post("/upload", startReport(id, { nsapp: APPS[i % APPS.length] })),
        c.post("/upload/updatestatus", {
          status: i % 4 ? "done" : "failed",
          error: `exit code ${i % 3}`,
          random_id: id,
        }),
      ]),
    );
    const check = await verifyRollups(c.store);
    expect(check).toMatchObject({ ok: true, records: 400 });
    const summary = await c.get("/api/stats/summary");
    expect(summary.body.total).toBe(400);
    expect((summary.body.success as number) + (summary.body.failed as number)).toBe(400);
  });
});
