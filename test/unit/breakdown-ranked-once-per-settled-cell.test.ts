// A breakdown ranks a settled cell's groups once (read/aggregate.ts settledRanking) and counts
// the open cells' values on top. Whatever the options, the groups and their number must be those
// of ranking every cell's sums afresh: values the open cells raise, lower, bring or empty, ties,
// limits, a failure-rate ranking with its minimum of runs, and a filter on one value or outcome.
import { expect, test } from "bun:test";
import type { Execution } from "../../src/domain/execution.ts";
import { settle, type Dimension } from "../../src/domain/rollup.ts";
import { SCANNED, breakdown, foldRecords, type BreakdownOptions } from "../../src/read/aggregate.ts";
import { execution } from "../helpers/reports.ts";

const T = Date.UTC(2026, 9, 1);
const HOUR = 3_600_000;
const APPS = ["nginx", "docker", "zabbix", "yarr", "jellyfin", "", "null"];
const OUTCOMES = [
  ["done", "success"],
  ["failed", "failed"],
  ["aborted", "aborted"],
  ["installing", "in_progress"],
] as const;

/** A small seeded generator (xorshift32): integers in [0, n). */
function random(seed: number) {
  let x = seed;
  return (n: number) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

/** Cells of the records' hours (three at most); the first one's data settled when `settleFirst`. */
async function cells(records: Partial<Execution>[], settleFirst: boolean) {
  const list = records.map((over, i) => execution(`r${i}`, over));
  const folded = await foldRecords(
    (async function* () {
      yield list;
    })(),
    (x) => x.createdAt - (x.createdAt % HOUR),
  );
  folded.sort((a, b) => a.bucket - b.bucket);
  if (settleFirst && folded[0] !== undefined) settle(folded[0].data);
  return folded;
}

test("groups of a settled cell and open ones are those of every cell ranked afresh", async () => {
  const r = random(2026);
  for (let round = 0; round < 400; round++) {
    const records = Array.from({ length: 5 + r(60) }, (_, i) => {
      const [status, outcome] = OUTCOMES[r(OUTCOMES.length)]!;
      return {
        createdAt: T + (i < 3 ? 0 : r(3)) * HOUR + i,
        nsapp: APPS[r(APPS.length)]!,
        osType: ["debian", "ubuntu", "alpine"][r(3)]!,
        exitCode: [0, 1, 100][r(3)]!,
        status,
        outcome,
      } satisfies Partial<Execution>;
    });
    const by: Dimension = (["nsapp", "os", "exit_code"] as const)[r(3)]!;
    const o: BreakdownOptions = {
      by,
      sort: r(2) === 0 ? "volume" : "failure_rate",
      minRuns: r(4),
      limit: 1 + r(8),
    };
    const plan = {
      ...SCANNED,
      outcome: r(4) === 0 ? ("failed" as const) : null,
      only:
        r(4) === 0 ? { dim: by, value: { nsapp: APPS[r(APPS.length)]!, os: "debian 12", exit_code: "1" }[by] } : null,
    };
    const fresh = breakdown(await cells(records, false), plan, o);
    const kept = await cells(records, true);
    const got = breakdown(kept, plan, o);
    expect([round, got]).toEqual([round, fresh]);
    // Asked again with the open cells only partly there (a value raised, one gone), still the same as afresh.
    const fewer = kept.filter((c) => c.bucket < T + 2 * HOUR);
    expect([round, breakdown(fewer, plan, o)]).toEqual([
      round,
      breakdown(
        await cells(
          records.filter((x) => x.createdAt < T + 2 * HOUR),
          false,
        ),
        plan,
        o,
      ),
    ]);
  }
});
