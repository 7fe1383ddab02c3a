// Failure drivers, the statistic (src/domain/drivers.ts): its intervals and tests against published
// values, its behaviour at small counts and under many comparisons, and the ranking of drivers.
import { describe, expect, test } from "bun:test";
import {
  driverDimensions,
  fisherGreater,
  newcombe,
  normalQuantile,
  rankDrivers,
  wilson,
  zFor,
  type RunCounts,
} from "../../src/domain/drivers.ts";
import type { Dimension } from "../../src/domain/rollup.ts";
import { prng } from "../helpers/random.ts";

const Z95 = 1.959964;
const near = (got: number, want: number, digits = 4) =>
  expect(Math.abs(got - want)).toBeLessThan(0.5 * 10 ** -digits + 1e-12);

describe("the statistic", () => {
  test("normal quantiles match the tables", () => {
    const table: [number, number][] = [
      [0.5, 0],
      [0.975, 1.959964],
      [0.995, 2.575829],
      [0.999, 3.090232],
      [0.9999, 3.719016],
      [1e-6, -4.753424],
      [0.02, -2.053749],
      [0.9, 1.281552],
    ];
    for (const [p, z] of table) near(normalQuantile(p), z, 5);
    expect(() => normalQuantile(0)).toThrow();
    expect(() => normalQuantile(1)).toThrow();
    // Bonferroni: one comparison is the plain 95% z; more comparisons widen it.
    near(zFor(0.05, 1), Z95, 5);
    near(zFor(0.05, 100), 3.480756, 5);
  });

  test("Wilson intervals match Newcombe (1998), table I", () => {
    const table: [number, number, number, number][] = [
      [81, 263, 0.2553, 0.3662],
      [15, 148, 0.0624, 0.1605],
      [0, 20, 0, 0.1611],
      [1, 29, 0.0061, 0.1718],
    ];
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

const dims = (entries: [Dimension, [string, number, number][]][]) =>
  new Map(entries.map(([d, values]) => [d, new Map(values.map(([v, failed, runs]) => [v, { failed, runs }]))]));

describe("rankDrivers", () => {
  test("finds a planted driver and says how it stands against the rest", () => {
    // 1000 runs, 100 failed; PVE 9.0.9 carries 250 runs and 80 failures.
    const a = rankDrivers(
      { failed: 100, runs: 1000 },
      dims([
        [
          "pve_version",
          [
            ["9.0.9", 80, 250],
            ["8.4.1", 20, 750],
          ],
        ],
        [
          "arch",
          [
            ["amd64", 95, 950],
            ["arm64", 5, 50],
          ],
        ],
      ]),
      20,
    );
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
    const kernels: [string, number, number][] = Array.from({ length: 40 }, (_, i) => [
      `6.8.${i}`,
      i % 4 === 0 ? 3 : 2,
      25,
    ]);
    const failedK = kernels.reduce((n, [, f]) => n + f, 0);
    const total = { failed: failedK + 0, runs: 1000 };
    const values = dims([
      ["kernel_version", kernels],
      [
        "core_count",
        [
          ["1", 3, 5],
          ["2", failedK - 3, 995],
        ],
      ],
    ]);
    const a = rankDrivers(total, values, 1);
    expect(a.compared).toBe(42);
    // 60% of 5 runs against ~9%: p = 0.008, far above 0.05 / 42.
    expect(a.drivers).toEqual([]);
    // The same rate over 200 runs is one.
    expect(
      rankDrivers(
        { failed: 217, runs: 1000 },
        dims([
          ["kernel_version", kernels],
          [
            "core_count",
            [
              ["1", 120, 200],
              ["2", 97, 800],
            ],
          ],
        ]),
        20,
      ).drivers.map((d) => d.value),
    ).toEqual(["1"]);
    // Under the floor a value is not even compared.
    const floored = rankDrivers(
      { failed: 217, runs: 1000 },
      dims([
        [
          "core_count",
          [
            ["1", 120, 200],
            ["2", 97, 800],
          ],
        ],
      ]),
      201,
    );
    expect([floored.compared, floored.drivers.length]).toEqual([1, 0]);
  });

  test("not reported is never a driver; a value carrying every run is not compared; none of an empty window", () => {
    const a = rankDrivers(
      { failed: 100, runs: 1000 },
      dims([
        [
          "kernel_version",
          [
            ["", 90, 300],
            ["6.8.12", 10, 700],
          ],
        ],
        ["platform", [["pve", 100, 1000]]],
      ]),
      20,
    );
    expect(a.compared).toBe(1);
    expect(a.drivers).toEqual([]);
    expect(rankDrivers({ failed: 0, runs: 0 }, dims([["os", []]]), 20)).toEqual({
      failed: 0,
      runs: 0,
      compared: 0,
      z: zFor(0.05, 0),
      alpha: 0.05,
      drivers: [],
    });
  });

  test("strongest first: by the lower bound of the excess failure rate, not the point estimate", () => {
    const a = rankDrivers(
      { failed: 300, runs: 3000 },
      dims([
        // 35% of 40 runs: a large estimate, a wide interval.
        [
          "ram_size",
          [
            ["512", 14, 40],
            ["2048", 286, 2960],
          ],
        ],
        // 25% of 800 runs: a smaller estimate, known far better.
        [
          "os",
          [
            ["debian 13", 200, 800],
            ["debian 12", 100, 2200],
          ],
        ],
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
    for (const [lo, hi, rate] of [
      [20, 220, 0.1],
      [20, 40, 0.02],
      [20, 40, 0.1],
      [200, 2200, 0.1],
      [20, 220, 0.3],
    ] as const) {
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
    for (const outcomeDim of ["status", "exit_code", "error_category", "failed_command", "nsapp"] as const)
      expect(driverDimensions(true)).not.toContain(outcomeDim);
  });
});
