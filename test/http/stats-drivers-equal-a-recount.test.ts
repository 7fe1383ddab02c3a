// GET /api/stats/drivers against a recount from the raw records (rollup path over stored and
// open-hour cells, and the scan path); the statistic itself: test/unit/failure-drivers-statistic-matches-published-values.test.ts.
import { beforeAll, describe, expect, test } from "bun:test";
import { driverDimensions, rankDrivers, type RunCounts } from "../../src/domain/drivers.ts";
import type { Execution } from "../../src/domain/execution.ts";
import type { Dimension } from "../../src/domain/rollup.ts";
import { DAY, HOUR } from "../../src/domain/time.ts";
import { testApp } from "../helpers/app.ts";
import { prng } from "../helpers/random.ts";

const t = await testApp();
const base = Date.parse("2026-03-01T00:00:00Z");
const FOLD_AT = base + 10 * DAY;
let executions: Execution[] = [];

/** The value of a dimension as the test reads it off a raw record (independently of domain/rollup.ts). */
function valueOf(e: Execution, dim: Dimension): string {
  const s = (v: string | number | null) => (v === null ? "" : String(v));
  switch (dim) {
    case "pve_version":
      return s(e.pveVersion);
    case "kernel_version":
      return s(e.kernelVersion);
    case "os":
      return [e.osType, e.osVersion].filter((v) => v !== null).join(" ");
    case "arch":
      return s(e.arch);
    case "cpu_vendor":
      return s(e.cpuVendor);
    case "gpu_vendor":
      return s(e.gpuVendor);
    case "gpu_passthrough":
      return s(e.gpuPassthrough);
    case "host_gpu":
      return s(e.hostGpu);
    case "core_count":
      return s(e.coreCount);
    case "ram_size":
      return s(e.ramSize);
    case "type":
      return e.type;
    case "ct_type":
      return s(e.ctType);
    case "method":
      return s(e.method);
    case "platform":
      return s(e.platform);
    case "repo_source":
      return s(e.repoSource);
    case "repo_slug":
      return s(e.repoSlug);
    case "app_version":
      return s(e.appVersion);
    case "attempt":
      return e.attempt >= 4 ? "4+" : String(e.attempt);
    default:
      throw new Error(`not compared: ${dim}`);
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
      payload_version: 2,
      random_id: randomId,
      execution_id: randomId,
      type: rnd() < 0.9 ? "lxc" : "vm",
      nsapp,
      ct_type: 1,
      disk_size: 8,
      core_count: pick([1, 2, 4]),
      ram_size: pick([1024, 2048, 4096]),
      os_type: "debian",
      os_version: pick(["12", "13"]),
      pve_version: pve,
      method: pick(["default", "advanced"]),
      cpu_vendor: pick(["intel", "amd"]),
      gpu_vendor: pick(["intel", "nvidia", ""]),
      gpu_passthrough: pick(["yes", "no"]),
      arch: "amd64",
      platform: "pve",
      kernel_version: KERNELS[pve],
      app_version: nsapp === "jellyfin" ? pick(["10.10.7", "10.11.0"]) : "",
      repo_source: pick(["ProxmoxVE", "ProxmoxVED"]),
      repo_slug: "",
    };
    expect((await t.post("/telemetry", { ...fields, status: "installing" })).status).toBeLessThan(300);
    const final =
      outcome === "success"
        ? { status: "success", exit_code: 0 }
        : outcome === "failed"
          ? { status: "failed", exit_code: 100, error: "exit_code=100 | APT failed", error_category: "dependency" }
          : { status: "aborted", exit_code: 130, error_category: "user_aborted" };
    expect((await t.post("/telemetry", { ...fields, ...final })).status).toBeLessThan(300);
    // Some failures are retried: a second execution of the same install.
    if (outcome === "failed" && rnd() < 0.3) {
      const retry = { ...fields, execution_id: `${randomId}-b` };
      expect((await t.post("/telemetry", { ...retry, status: "installing" })).status).toBeLessThan(300);
      expect(
        (await t.post("/telemetry", { ...retry, ...(rnd() < 0.5 ? { status: "success", exit_code: 0 } : final) }))
          .status,
      ).toBeLessThan(300);
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
  drivers: {
    dimension: Dimension;
    value: string;
    failed: number;
    runs: number;
    elsewhere: { failed: number; runs: number };
    difference_low: number;
    share_of_failed: number;
    share_of_runs: number;
  }[];
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
  expect([got.failed, got.runs, got.compared, got.total_drivers]).toEqual([
    want.failed,
    want.runs,
    want.compared,
    want.drivers.length,
  ]);
  expect(
    got.drivers.map((d) => [
      d.dimension,
      d.value,
      d.failed,
      d.runs,
      d.elsewhere.failed,
      d.elsewhere.runs,
      d.difference_low,
    ]),
  ).toEqual(
    want.drivers
      .slice(0, got.drivers.length)
      .map((d) => [
        d.dimension,
        d.value,
        d.failed,
        d.runs,
        d.elsewhere.failed,
        d.elsewhere.runs,
        round4(d.differenceInterval[0]),
      ]),
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
    expectRecount(
      got,
      recount((e) => inWindow(e) && e.nsapp === "jellyfin" && e.kind === "install", true, 20),
    );
    const top = got.drivers[0]!;
    // PVE 9.0.9 and its kernel travel together: either may lead, both are listed.
    expect(["pve_version=9.0.9", "kernel_version=6.14.8-2-pve"]).toContain(`${top.dimension}=${top.value}`);
    expect(got.drivers.map((d) => `${d.dimension}=${d.value}`)).toEqual(
      expect.arrayContaining(["pve_version=9.0.9", "kernel_version=6.14.8-2-pve"]),
    );
    expect(top.share_of_failed).toBeGreaterThan(top.share_of_runs * 1.5);
  });

  test("every app, every kind, a repo, a short window: each equals the recount", async () => {
    const cases: [string, (e: Execution) => boolean, boolean][] = [
      [WINDOW, (e) => inWindow(e) && e.kind === "install", false],
      [`kind=all&${WINDOW}`, inWindow, false],
      [
        `repo_source=ProxmoxVED&${WINDOW}`,
        (e) => inWindow(e) && e.kind === "install" && e.repoSource === "ProxmoxVED",
        false,
      ],
      [
        `nsapp=docker&from=${new Date(base + 3 * DAY + 5 * HOUR).toISOString()}&to=${new Date(base + 14 * DAY + 7 * HOUR).toISOString()}`,
        (e) =>
          e.createdAt >= base + 3 * DAY + 5 * HOUR &&
          e.createdAt < base + 14 * DAY + 7 * HOUR &&
          e.kind === "install" &&
          e.nsapp === "docker",
        true,
      ],
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
    expectRecount(
      narrow,
      recount((e) => inWindow(e) && e.kind === "install" && e.nsapp === "jellyfin" && e.osVersion === "13", true, 5),
    );
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
    for (const [query, field] of [
      ["outcome=failed", "outcome"],
      ["status=failed", "status"],
      ["exit_code=100", "exit_code"],
      ["error_category=network", "error_category"],
      ["min_runs=0", "min_runs"],
      ["limit=101", "limit"],
      ["by=os", "by"],
      ["days=0", "days"],
    ] as const) {
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
