// Failure drivers: the statistic against published values, its behaviour at small counts and
// under many comparisons, and GET /api/stats/drivers against a recount from the raw records
// (rollup path over stored and open-hour cells, and the scan path).
import { beforeAll, describe, expect, test } from "bun:test";
import { driverDimensions, fisherGreater, newcombe, normalQuantile, rankDrivers, wilson, zFor, type RunCounts } from "../src/domain/drivers.ts";
import type { Execution } from "../src/domain/execution.ts";
import type { Dimension } from "../src/domain/rollup.ts";
import { DAY, HOUR } from "../src/domain/time.ts";
import { testApp } from "./helpers/app.ts";
import { prng } from "./helpers/random.ts";

const Z95 = 1.959964;
const near = (got: number, want: number, digits = 4) => expect(Math.abs(got - want)).toBeLessThan(0.5 * 10 ** -digits + 1e-12);

describe("the statistic", () => {
  test("normal quantiles match the tables", () => {
    const table: [number, number][] = [[0.5, 0], [0.975, 1.959964], [0.995, 2.575829], [0.999, 3.090232], [0.9999, 3.719016], [1e-6, -4.753424], [0.02, -2.053749], [0.9, 1.281552]];
    for (const [p, z] of table) near(normalQuantile(p), z, 5);
    expect(() => normalQuantile(0)).toThrow();
    expect(() => normalQuantile(1)).toThrow();
    // Bonferroni: one comparison is the plain 95% z; more comparisons widen it.
    near(zFor(0.05, 1), Z95, 5);
    near(zFor(0.05, 100), 3.480756, 5);
  });

  test("Wilson intervals match Newcombe (1998), table I", () => {
    const table: [number, number, number, number][] = [[81, 263, 0.2553, 0.3662], [15, 148, 0.0624, 0.1605], [0, 20, 0, 0.1611], [1, 29, 0.0061, 0.1718]];
    for (const [k, n, lo, hi] of table) {
      const [l, u] = wilson(k, n, Z95);
      near(l, lo);
      near(u, hi);
    }
    expect(wilson(0, 0, Z95)).toEqual([0, 1]);
    expect(wilson(7, 7, Z95)[1]).toBe(1);
  });

  test("differences match Newcombe's method 10 (1998, table II)", () => {
    const table: [number, number, number, number, number, number][] = [
      [56, 70, 48, 80, 0.0524, 0.3339],
      [9, 10, 3, 10, 0.1705, 0.809],
      [5, 56, 0, 29, -0.0381, 0.1926],
      [0, 10, 0, 20, -0.1611, 0.2775],
      [0, 10, 0, 10, -0.2775, 0.2775],
      [10, 10, 0, 20, 0.6791, 1],
      [10, 10, 0, 10, 0.6075, 1],
    ];
    for (const [a, n, b, m, lo, hi] of table) {
      const [l, u] = newcombe({ failed: a, runs: n }, { failed: b, runs: m }, Z95);
      near(l, lo);
      near(u, hi);
    }
  });

  test("Fisher's exact test, one-sided, matches hand-computed hypergeometric tails", () => {
    // Fisher's tea: 3 or more of 4 cups right out of 8 holding 4 marked.
    near(fisherGreater(3, 4, { failed: 4, runs: 8 }), 17 / 70, 9);
    near(fisherGreater(4, 4, { failed: 4, runs: 8 }), 1 / 70, 9);
    near(fisherGreater(5, 10, { failed: 5, runs: 20 }), 3003 / 184756, 9);
    expect(fisherGreater(0, 10, { failed: 5, runs: 20 })).toBe(1);
    expect(fisherGreater(6, 10, { failed: 5, runs: 20 })).toBe(0);
    // Large margins stay finite and tiny where they should.
    const p = fisherGreater(80, 250, { failed: 100, runs: 1000 });
    expect(p).toBeGreaterThan(0);
    expect(p).toBeLessThan(1e-20);
    near(fisherGreater(25, 250, { failed: 100, runs: 1000 }), 0.5, 0);
  });
});

const dims = (entries: [Dimension, [string, number, number][]][]) => new Map(entries.map(([d, values]) => [d, new Map(values.map(([v, failed, runs]) => [v, { failed, runs }]))]));

describe("rankDrivers", () => {
  test("finds a planted driver and says how it stands against the rest", () => {
    // 1000 runs, 100 failed; PVE 9.0.9 carries 250 runs and 80 failures.
    const a = rankDrivers({ failed: 100, runs: 1000 }, dims([["pve_version", [["9.0.9", 80, 250], ["8.4.1", 20, 750]]], ["arch", [["amd64", 95, 950], ["arm64", 5, 50]]]]), 20);
    expect(a.compared).toBe(4);
    expect(a.drivers.map((d) => [d.dimension, d.value])).toEqual([["pve_version", "9.0.9"]]);
    const d = a.drivers[0]!;
    expect([d.failed, d.runs, d.elsewhere.failed, d.elsewhere.runs]).toEqual([80, 250, 20, 750]);
    near(d.shareOfFailed, 0.8);
    near(d.shareOfRuns, 0.25);
    near(d.lift, 3.2);
    near(d.difference, 0.32 - 20 / 750);
    expect(d.differenceInterval[0]).toBeGreaterThan(0.2);
    expect(d.failureRateInterval[0]).toBeLessThan(0.32);
    expect(d.failureRateInterval[1]).toBeGreaterThan(0.32);
  });

  test("small counts do not shout: a few failures on a rare value are not a driver among many values compared, nor a value under min_runs", () => {
    // 40 kernel versions of 25 runs each, 10% failing; one host with 1 core: 3 of its 5 runs failed.
    const kernels: [string, number, number][] = Array.from({ length: 40 }, (_, i) => [`6.8.${i}`, i % 4 === 0 ? 3 : 2, 25]);
    const failedK = kernels.reduce((n, [, f]) => n + f, 0);
    const total = { failed: failedK + 0, runs: 1000 };
    const values = dims([["kernel_version", kernels], ["core_count", [["1", 3, 5], ["2", failedK - 3, 995]]]]);
    const a = rankDrivers(total, values, 1);
    expect(a.compared).toBe(42);
    // 60% of 5 runs against ~9%: p = 0.008, far above 0.05 / 42.
    expect(a.drivers).toEqual([]);
    // The same rate over 200 runs is one.
    expect(rankDrivers({ failed: 217, runs: 1000 }, dims([["kernel_version", kernels], ["core_count", [["1", 120, 200], ["2", 97, 800]]]]), 20).drivers.map((d) => d.value)).toEqual(["1"]);
    // Under the floor a value is not even compared.
    const floored = rankDrivers({ failed: 217, runs: 1000 }, dims([["core_count", [["1", 120, 200], ["2", 97, 800]]]]), 201);
    expect([floored.compared, floored.drivers.length]).toEqual([1, 0]);
  });

  test("not reported is never a driver; a value carrying every run is not compared; none of an empty window", () => {
    const a = rankDrivers({ failed: 100, runs: 1000 }, dims([["kernel_version", [["", 90, 300], ["6.8.12", 10, 700]]], ["platform", [["pve", 100, 1000]]]]), 20);
    expect(a.compared).toBe(1);
    expect(a.drivers).toEqual([]);
    expect(rankDrivers({ failed: 0, runs: 0 }, dims([["os", []]]), 20)).toEqual({ failed: 0, runs: 0, compared: 0, z: zFor(0.05, 0), alpha: 0.05, drivers: [] });
  });

  test("strongest first: by the lower bound of the excess failure rate, not the point estimate", () => {
    const a = rankDrivers(
      { failed: 300, runs: 3000 },
      dims([
        // 35% of 40 runs: a large estimate, a wide interval.
        ["ram_size", [["512", 14, 40], ["2048", 286, 2960]]],
        // 25% of 800 runs: a smaller estimate, known far better.
        ["os", [["debian 13", 200, 800], ["debian 12", 100, 2200]]],
      ]),
      20,
    );
    expect(a.drivers.map((d) => d.value)).toEqual(["debian 13", "512"]);
    expect(a.drivers[0]!.difference).toBeLessThan(a.drivers[1]!.difference);
    expect(a.drivers[0]!.differenceInterval[0]).toBeGreaterThan(a.drivers[1]!.differenceInterval[0]);
  });

  test("with nothing going on, hundreds of values compared leave the list empty in at least 95% of windows, rare failures and few runs included", () => {
    // [runs per value from, to), failure rate: common failures, rare ones (2% of 20-40 runs, where a
    // normal approximation lists a value in most windows), large values.
    for (const [lo, hi, rate] of [[20, 220, 0.1], [20, 40, 0.02], [20, 40, 0.1], [200, 2200, 0.1], [20, 220, 0.3]] as const) {
      let withDrivers = 0;
      const WINDOWS = 200;
      for (let seed = 1; seed <= WINDOWS; seed++) {
        const rnd = prng(seed);
        const byValue = new Map<string, RunCounts>();
        let failed = 0;
        let runs = 0;
        for (let v = 0; v < 300; v++) {
          const n = lo + Math.floor(rnd() * (hi - lo));
          let f = 0;
          for (let i = 0; i < n; i++) if (rnd() < rate) f++;
          byValue.set(`k${v}`, { failed: f, runs: n });
          failed += f;
          runs += n;
        }
        if (rankDrivers({ failed, runs }, new Map([["kernel_version", byValue]]), 1).drivers.length > 0) withDrivers++;
      }
      expect(`${lo}-${hi} runs at ${rate}: ${withDrivers / WINDOWS <= 0.05}`).toBe(`${lo}-${hi} runs at ${rate}: true`);
    }
  });

  test("app_version is compared within one app only", () => {
    expect(driverDimensions(false)).not.toContain("app_version");
    expect(driverDimensions(true)).toContain("app_version");
    for (const outcomeDim of ["status", "exit_code", "error_category", "failed_command", "nsapp"] as const) expect(driverDimensions(true)).not.toContain(outcomeDim);
  });
});

// ------------------------------------------------------------------ the endpoint against a recount

const t = await testApp();
const base = Date.parse("2026-03-01T00:00:00Z");
const FOLD_AT = base + 10 * DAY;
let executions: Execution[] = [];

/** The value of a dimension as the test reads it off a raw record (independently of domain/rollup.ts). */
function valueOf(e: Execution, dim: Dimension): string {
  const s = (v: string | number | null) => (v === null ? "" : String(v));
  switch (dim) {
    case "pve_version": return s(e.pveVersion);
    case "kernel_version": return s(e.kernelVersion);
    case "os": return [e.osType, e.osVersion].filter((v) => v !== null).join(" ");
    case "arch": return s(e.arch);
    case "cpu_vendor": return s(e.cpuVendor);
    case "gpu_vendor": return s(e.gpuVendor);
    case "gpu_passthrough": return s(e.gpuPassthrough);
    case "host_gpu": return s(e.hostGpu);
    case "core_count": return s(e.coreCount);
    case "ram_size": return s(e.ramSize);
    case "type": return e.type;
    case "ct_type": return s(e.ctType);
    case "method": return s(e.method);
    case "platform": return s(e.platform);
    case "repo_source": return s(e.repoSource);
    case "repo_slug": return s(e.repoSlug);
    case "app_version": return s(e.appVersion);
    case "attempt": return e.attempt >= 4 ? "4+" : String(e.attempt);
    default: throw new Error(`not compared: ${dim}`);
  }
}

/** The drivers of the executions `keep` selects, recounted from the raw records. */
function recount(keep: (e: Execution) => boolean, oneApp: boolean, minRuns: number) {
  const total = { failed: 0, runs: 0 };
  const values = new Map<Dimension, Map<string, RunCounts>>(driverDimensions(oneApp).map((d) => [d, new Map()]));
  for (const e of executions) {
    if (!keep(e) || (e.outcome !== "success" && e.outcome !== "failed")) continue;
    const failed = e.outcome === "failed" ? 1 : 0;
    total.failed += failed;
    total.runs += 1;
    for (const [dim, m] of values) {
      const v = valueOf(e, dim);
      const c = m.get(v) ?? { failed: 0, runs: 0 };
      c.failed += failed;
      c.runs += 1;
      m.set(v, c);
    }
  }
  return rankDrivers(total, values, minRuns);
}

const APPS = ["jellyfin", "docker", "homeassistant"];
const PVE = ["8.4.1", "9.0.9", "9.0.10"];
const KERNELS: Record<string, string> = { "8.4.1": "6.8.12-9-pve", "9.0.9": "6.14.8-2-pve", "9.0.10": "6.14.11-4-pve" };

beforeAll(async () => {
  t.clock.advance(base - t.clock());
  t.sqlite.run("UPDATE rollup_state SET folded_until = ?", [base]);
  const rnd = prng(29);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  let folded = false;
  for (let i = 0; i < 900; i++) {
    const at = base + Math.floor((i / 900) * 20 * DAY);
    if (!folded && at >= FOLD_AT) {
      folded = true;
      expect(await t.writer.submit({ kind: "fold", until: FOLD_AT, at: FOLD_AT })).toMatchObject({ kind: "folded" });
    }
    t.clock.advance(at - t.clock());
    const nsapp = pick(APPS);
    const pve = pick(PVE);
    // Planted: jellyfin on PVE 9.0.9 fails 70% of the time; everything else about 8%.
    const failRate = nsapp === "jellyfin" && pve === "9.0.9" ? 0.7 : 0.08;
    const outcome = rnd() < 0.05 ? "aborted" : rnd() < failRate ? "failed" : "success";
    const randomId = `drv-${i}`;
    const fields = {
      payload_version: 2, random_id: randomId, execution_id: randomId, type: rnd() < 0.9 ? "lxc" : "vm", nsapp, ct_type: 1, disk_size: 8,
      core_count: pick([1, 2, 4]), ram_size: pick([1024, 2048, 4096]), os_type: "debian", os_version: pick(["12", "13"]), pve_version: pve, method: pick(["default", "advanced"]),
      cpu_vendor: pick(["intel", "amd"]), gpu_vendor: pick(["intel", "nvidia", ""]), gpu_passthrough: pick(["yes", "no"]), arch: "amd64", platform: "pve",
      kernel_version: KERNELS[pve], app_version: nsapp === "jellyfin" ? pick(["10.10.7", "10.11.0"]) : "", repo_source: pick(["ProxmoxVE", "ProxmoxVED"]), repo_slug: "",
    };
    expect((await t.post("/telemetry", { ...fields, status: "installing" })).status).toBeLessThan(300);
    const final = outcome === "success" ? { status: "success", exit_code: 0 } : outcome === "failed" ? { status: "failed", exit_code: 100, error: "exit_code=100 | APT failed", error_category: "dependency" } : { status: "aborted", exit_code: 130, error_category: "user_aborted" };
    expect((await t.post("/telemetry", { ...fields, ...final })).status).toBeLessThan(300);
    // Some failures are retried: a second execution of the same install.
    if (outcome === "failed" && rnd() < 0.3) {
      const retry = { ...fields, execution_id: `${randomId}-b` };
      expect((await t.post("/telemetry", { ...retry, status: "installing" })).status).toBeLessThan(300);
      expect((await t.post("/telemetry", { ...retry, ...(rnd() < 0.5 ? { status: "success", exit_code: 0 } : final) })).status).toBeLessThan(300);
    }
  }
  for await (const e of t.store.iterateExecutions({})) executions.push(e);
});

interface DriversJson {
  source: string;
  failed: number;
  runs: number;
  compared: number;
  total_drivers: number;
  drivers: { dimension: Dimension; value: string; failed: number; runs: number; elsewhere: { failed: number; runs: number }; difference_low: number; share_of_failed: number; share_of_runs: number }[];
}
const drivers = async (query: string) => {
  const res = await t.get(`/api/stats/drivers?${query}`);
  expect(res.status).toBe(200);
  return res.body as unknown as DriversJson;
};
const WINDOW = `from=${new Date(base).toISOString()}&to=${new Date(base + 21 * DAY).toISOString()}`;
const inWindow = (e: Execution) => e.createdAt >= base && e.createdAt < base + 21 * DAY;
const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

function expectRecount(got: DriversJson, want: ReturnType<typeof recount>): void {
  expect([got.failed, got.runs, got.compared, got.total_drivers]).toEqual([want.failed, want.runs, want.compared, want.drivers.length]);
  expect(got.drivers.map((d) => [d.dimension, d.value, d.failed, d.runs, d.elsewhere.failed, d.elsewhere.runs, d.difference_low])).toEqual(
    want.drivers.slice(0, got.drivers.length).map((d) => [d.dimension, d.value, d.failed, d.runs, d.elsewhere.failed, d.elsewhere.runs, round4(d.differenceInterval[0])]),
  );
}

describe("GET /api/stats/drivers", () => {
  test("the data span folded and open hours, with retries and aborts", () => {
    expect(executions.length).toBeGreaterThan(900);
    expect(executions.some((e) => e.attempt === 2)).toBe(true);
    expect(executions.some((e) => e.outcome === "aborted")).toBe(true);
    expect(executions.some((e) => e.createdAt < FOLD_AT) && executions.some((e) => e.createdAt >= FOLD_AT)).toBe(true);
  });

  test("one app, from rollups: equals the recount, and the planted host version leads", async () => {
    const got = await drivers(`nsapp=jellyfin&${WINDOW}&limit=100`);
    expect(got.source).toBe("rollup");
    expectRecount(got, recount((e) => inWindow(e) && e.nsapp === "jellyfin" && e.kind === "install", true, 20));
    const top = got.drivers[0]!;
    // PVE 9.0.9 and its kernel travel together: either may lead, both are listed.
    expect(["pve_version=9.0.9", "kernel_version=6.14.8-2-pve"]).toContain(`${top.dimension}=${top.value}`);
    expect(got.drivers.map((d) => `${d.dimension}=${d.value}`)).toEqual(expect.arrayContaining(["pve_version=9.0.9", "kernel_version=6.14.8-2-pve"]));
    expect(top.share_of_failed).toBeGreaterThan(top.share_of_runs * 1.5);
  });

  test("every app, every kind, a repo, a short window: each equals the recount", async () => {
    const cases: [string, (e: Execution) => boolean, boolean][] = [
      [WINDOW, (e) => inWindow(e) && e.kind === "install", false],
      [`kind=all&${WINDOW}`, inWindow, false],
      [`repo_source=ProxmoxVED&${WINDOW}`, (e) => inWindow(e) && e.kind === "install" && e.repoSource === "ProxmoxVED", false],
      [`nsapp=docker&from=${new Date(base + 3 * DAY + 5 * HOUR).toISOString()}&to=${new Date(base + 14 * DAY + 7 * HOUR).toISOString()}`,
        (e) => e.createdAt >= base + 3 * DAY + 5 * HOUR && e.createdAt < base + 14 * DAY + 7 * HOUR && e.kind === "install" && e.nsapp === "docker", true],
    ];
    for (const [query, keep, oneApp] of cases) {
      const got = await drivers(`${query}&limit=100&min_runs=10`);
      expect(got.source).toBe("rollup");
      expectRecount(got, recount(keep, oneApp, 10));
    }
  });

  test("a filter rollups cannot answer gives the same answer: rollups alone when it leaves nothing out, else a scan", async () => {
    // Every run is on platform pve: the filter leaves nothing out, so the rollups without it answer (read/stats.ts).
    const kept = await drivers(`platform=pve&nsapp=jellyfin&${WINDOW}&limit=100`);
    const rolled = await drivers(`nsapp=jellyfin&${WINDOW}&limit=100`);
    expect(kept.source).toBe("rollup");
    expect({ ...kept, window: null }).toEqual({ ...rolled, window: null });
    // A narrower one: jellyfin on debian 13 only.
    const narrow = await drivers(`os_type=debian&os_version=13&nsapp=jellyfin&${WINDOW}&limit=100&min_runs=5`);
    expect(narrow.source).toBe("scan");
    expectRecount(narrow, recount((e) => inWindow(e) && e.kind === "install" && e.nsapp === "jellyfin" && e.osVersion === "13", true, 5));
  });

  test("limit cuts the list, not the count; min_runs leaves rare values out of the comparison", async () => {
    const all = await drivers(`nsapp=jellyfin&${WINDOW}&limit=100`);
    const one = await drivers(`nsapp=jellyfin&${WINDOW}&limit=1`);
    expect(one.drivers).toEqual(all.drivers.slice(0, 1));
    expect(one.total_drivers).toBe(all.total_drivers);
    const high = await drivers(`nsapp=jellyfin&${WINDOW}&min_runs=100000`);
    expect([high.compared, high.drivers.length]).toEqual([0, 0]);
  });

  test("outcome filters, bad numbers and unknown parameters are refused, naming the parameter", async () => {
    for (const [query, field] of [["outcome=failed", "outcome"], ["status=failed", "status"], ["exit_code=100", "exit_code"], ["error_category=network", "error_category"], ["min_runs=0", "min_runs"], ["limit=101", "limit"], ["by=os", "by"], ["days=0", "days"]] as const) {
      const res = await t.get(`/api/stats/drivers?${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: "invalid_field", field });
    }
  });

  test("an empty window answers zeros and no drivers", async () => {
    const got = await drivers("from=2020-01-01&to=2020-02-01");
    expect(got).toMatchObject({ failed: 0, runs: 0, failure_rate: null, compared: 0, drivers: [] });
  });
});
