// An install type filter over every dimension (/api/new's ctype) read from the apps' own slices:
// the cells of every app less those of the other types' apps (or the type's apps summed), equal
// to a scan of the filter, with no scan while each app is of one type; an app of two types, or an
// app whose type changed since it was learned, falls back to the scan and still answers the same.
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startReport, testApp } from "../helpers/app.ts";
import { createStats } from "../../src/read/stats.ts";
import { SCANNED, dimensionSums, foldRecords, summarize, type Cell } from "../../src/read/aggregate.ts";
import type { ExecutionFilter, StoreReads } from "../../src/store/contract/executions.ts";

setDefaultTimeout(120_000);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const APPS: Record<string, string> = {
  docker: "lxc",
  adguard: "lxc",
  jellyfin: "lxc",
  "haos-vm": "vm",
  "debian-vm": "vm",
  "turnkey-wp": "turnkey",
  "post-pve-install": "pve",
};
const ERRORS = ["exit code 1", "curl: (6) Could not resolve host: github.com", "exit code 100"];

const t = await testApp();
const base = Date.parse("2026-03-01T00:00:00Z");
let n = 0;

/** One run of `app` as `type` at `at`, ended as the counter picks (success, failure with a text, or still going). */
async function run(app: string, type: string, at: number): Promise<void> {
  const id = `run-${n++}`;
  t.clock.advance(at - t.clock());
  const start = await t.post(
    "/upload",
    startReport(id, { nsapp: app, type, ct_type: type === "vm" ? 2 : 1, core_count: 1 + (n % 4), method: "default" }),
  );
  expect(start.status).toBeLessThan(300);
  const end = n % 5;
  if (end === 4) return;
  t.clock.advance(HOUR / 2);
  const body =
    end === 3
      ? { status: "failed", error: ERRORS[n % ERRORS.length], random_id: id }
      : { status: "done", error: "none", random_id: id };
  expect((await t.post("/upload/updatestatus", body)).status).toBeLessThan(300);
}

beforeAll(async () => {
  t.clock.advance(base - t.clock());
  t.sqlite.run("UPDATE rollup_state SET folded_until = ?", [base]);
  for (let day = 0; day < 40; day++)
    for (const [i, [app, type]] of Object.entries(APPS).entries())
      for (let k = 0; k <= (i * 7 + day) % 4; k++) await run(app, type, base + day * DAY + (i + k * 5) * HOUR);
  // Days 0-29 in stored cells; the rest in open hours.
  expect(await t.writer.submit({ kind: "fold", until: base + 30 * DAY, at: t.clock() })).toMatchObject({
    kind: "folded",
  });
});

describe("an install type over every dimension, from the apps' slices", () => {
  const w = { from: base + 3 * HOUR, to: base + 40 * DAY + 5 * HOUR };
  const DIMS = ["nsapp", "type", "os", "core_count", "failure", "error_category", "attempt"] as const;
  const scanned: ExecutionFilter[] = [];
  const store: StoreReads = Object.create(t.store);
  store.executionChunks = (f, page) => {
    scanned.push(f);
    return t.store.executionChunks(f, page);
  };
  const sums = (cells: readonly Cell[], plan = SCANNED) =>
    Object.fromEntries(
      [...dimensionSums(cells, plan, DIMS)].map(([d, v]) => [
        d,
        Object.fromEntries([...v].filter(([, c]) => c.some((x) => x !== 0)).sort()),
      ]),
    );
  const FILTERS: ExecutionFilter[] = [
    { kind: "install", type: "lxc" },
    { kind: "install", type: "vm" },
    { kind: "install", type: "turnkey" },
    { kind: "tool", type: "pve" },
    { type: "lxc" },
    { kind: "install", type: "lxc", platformClass: "pve" },
  ];

  /** The filter's cells as /api/new reads them, against a fold of the filter's records; how many scans it took. */
  async function compare(f: ExecutionFilter): Promise<number> {
    scanned.length = 0;
    const got = await createStats(store, new Map()).cells(f, w);
    const scans = scanned.length;
    const want = await foldRecords(t.store.executionChunks({ ...f, from: w.from, to: w.to }), (r) => r.createdAt);
    expect([f, sums(got.cells, got.plan)]).toEqual([f, sums(want)]);
    expect([f, summarize(got.cells, got.plan)]).toEqual([f, summarize(want, SCANNED)]);
    return scans;
  }

  test("apps of one type each: no scan, the same counts, durations and failures as a scan", async () => {
    for (const f of FILTERS) expect([f, await compare(f)]).toEqual([f, 0]);
  });

  test("an app run as two types (its newest the other one): the scan answers, as before", async () => {
    await run("docker", "vm", base + 39 * DAY + 20 * HOUR);
    for (const f of FILTERS.slice(0, 2)) expect([f, await compare(f)]).toEqual([f, 1]);
    // Its type as learned is now stale for the other filters too: learned afresh, still equal.
    for (const f of FILTERS.slice(2)) await compare(f);
  });
});
