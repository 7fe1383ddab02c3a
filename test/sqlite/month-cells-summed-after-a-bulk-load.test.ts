// A bulk load's month cells (OpenOptions.deferMonths): its records count in day cells only, the
// months they fall in are read as the sums of their days meanwhile, and the next fold stores those
// sums. A store reading and writing beside it, opening after a load that never folded, or
// rebuilding answers as one that counted every month cell as it went.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { ALL_APPS, GRAINS, sliceKey, type Grain } from "../../src/domain/rollup.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { generateExecutions, seedDatabase, seedOptions } from "../../src/seed/seed.ts";
import type { Store } from "../../src/store/contract/store.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { createSqliteStore } from "../../src/store/sqlite/store.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(120_000);

const END = Date.UTC(2026, 10, 21, 12, 0, 0);
const MONTH_STARTS = [Date.UTC(2026, 7, 1), Date.UTC(2026, 8, 1), Date.UTC(2026, 9, 1), Date.UTC(2026, 10, 1)];
const dir = tempDir("installstats-month-mark-"); // removed with the run's directory

function open(path: string, deferMonths = false) {
  const { sqlite, db } = openDatabase(path, { durability: "normal", migrate: true });
  return { sqlite, store: createSqliteStore(sqlite, db, { deferMonths }) };
}

async function load(store: Store, rows: readonly Execution[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 400)
    await store.write(
      rows.slice(i, i + 400).map((execution) => ({ kind: "load", execution, at: execution.createdAt })),
    );
}

const fold = async (store: Store) => store.write([{ kind: "fold", until: await store.foldedUntil(), at: END }]);

/** Every day and month cell the store answers, in one order; and the month cells of two slices as read for a window. */
async function answers(store: Store) {
  const all = async (grain: Grain) =>
    (await store.rollupCells(grain, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER))
      .map((c) => ({ ...c }))
      .sort((a, b) => a.slice.localeCompare(b.slice) || a.bucket - b.bucket);
  const months = async (slice: string) =>
    store.readRollups({
      grain: GRAINS.month,
      slice,
      from: MONTH_STARTS[1]!,
      to: END,
      parts: ["data", "apps", "errors"],
    });
  return {
    days: await all(GRAINS.day),
    months: await all(GRAINS.month),
    everyApp: await months(sliceKey("install", null, ALL_APPS)),
    oneApp: await months(sliceKey("install", null, "=docker")),
  };
}

const storedMonthCells = (sqlite: ReturnType<typeof open>["sqlite"]) =>
  (sqlite.query(`SELECT count(*) AS n FROM rollups WHERE grain = ${GRAINS.month}`).get() as { n: number }).n;
const monthsStored = (sqlite: ReturnType<typeof open>["sqlite"]) =>
  (
    sqlite.query(`SELECT DISTINCT bucket FROM rollups WHERE grain = ${GRAINS.month} ORDER BY bucket`).all() as {
      bucket: number;
    }[]
  ).map((r) => r.bucket);
const mark = (sqlite: ReturnType<typeof open>["sqlite"]) =>
  (sqlite.query("SELECT months_from AS m FROM rollup_state WHERE id = 1").get() as { m: number | null }).m;

describe("month cells of a bulk load", () => {
  const rows = [
    ...generateExecutions(seedOptions({ records: 4000, days: 100, end: END, seed: 11, profile: "upload" })),
  ];
  const older = rows.filter((r) => r.createdAt < MONTH_STARTS[2]!);
  const newer = rows.filter((r) => r.createdAt >= MONTH_STARTS[2]!);

  test("counted in days only, read as their days' sums, stored by the next fold; beside and after it the same answers", async () => {
    expect(older.length).toBeGreaterThan(1000);
    expect(newer.length).toBeGreaterThan(1000);
    const reference = open(":memory:"); // every month counted as records come
    const path = join(dir, "bulk.db");
    const bulk = open(path, true);

    // The newer months first: October is summed once the load is a day into November.
    await load(bulk.store, newer);
    expect(mark(bulk.sqlite)).toBe(MONTH_STARTS[3]!);
    expect(monthsStored(bulk.sqlite)).toEqual([MONTH_STARTS[2]!]);
    // Then the older ones: the mark moves back to the month of the oldest record loaded (100 days
    // before 21 November: August), and on to September once the load has passed August.
    await load(bulk.store, older);
    expect(mark(bulk.sqlite)).toBe(MONTH_STARTS[1]!);
    expect(monthsStored(bulk.sqlite)).toEqual([MONTH_STARTS[0]!, MONTH_STARTS[2]!]);
    await load(reference.store, newer);
    await load(reference.store, older);
    expect(storedMonthCells(reference.sqlite)).toBeGreaterThan(0);

    const want = await answers(reference.store);
    expect(want.everyApp.length).toBe(3); // September to November
    expect(want.oneApp.length).toBeGreaterThan(0);
    expect(await answers(bulk.store)).toEqual(want);
    expect(await verifyRollups(bulk.store)).toMatchObject({ ok: true, records: rows.length });

    // Another connection, as a load that never folded leaves the file: the same answers, and its
    // own writes into the months after the mark count in their days only.
    const beside = open(path);
    expect(await answers(beside.store)).toEqual(want);
    const late = rows.slice(0, 30).map((r, i) => ({
      ...r,
      executionId: `late-${i}`,
      randomId: `late-${i}`,
      createdAt: r.createdAt + 86_400_000,
      updatedAt: r.updatedAt + 86_400_000,
    }));
    await load(beside.store, late);
    await load(reference.store, late);
    const after = await answers(reference.store);
    expect(after).not.toEqual(want);
    expect(await answers(beside.store)).toEqual(after);
    expect(await answers(bulk.store)).toEqual(after);
    expect(monthsStored(beside.sqlite)).toEqual([MONTH_STARTS[0]!, MONTH_STARTS[2]!]);

    // The next fold (here the other connection's, in a batch with a report of the open hour)
    // stores the sums and clears the mark.
    const now = Date.now();
    const current = { ...rows[0]!, executionId: "now-1", randomId: "now-1", createdAt: now, updatedAt: now };
    expect(now).toBeGreaterThanOrEqual(await beside.store.foldedUntil());
    await beside.store.write([
      { kind: "load", execution: current, at: now },
      { kind: "fold", until: await beside.store.foldedUntil(), at: now },
    ]);
    expect(mark(beside.sqlite)).toBeNull();
    expect(storedMonthCells(beside.sqlite)).toBe(storedMonthCells(reference.sqlite));
    expect(await answers(beside.store)).toEqual(after);
    expect(await answers(bulk.store)).toEqual(after);
    expect(await verifyRollups(beside.store)).toMatchObject({ ok: true, records: rows.length + late.length + 1 });

    // Written cells are read back, not sums made again: a month cell changed in the file is what reads see.
    beside.sqlite.run(`DELETE FROM rollups WHERE grain = ${GRAINS.month}`);
    expect((await answers(beside.store)).months).toEqual([]);
    for (const s of [bulk, beside, reference]) s.sqlite.close();
  });

  test("a bulk load into months that have cells: those are read as sums until the fold replaces them", async () => {
    const path = join(dir, "added.db");
    const first = open(path);
    await load(first.store, older);
    const counted = storedMonthCells(first.sqlite);
    expect(counted).toBeGreaterThan(0);
    first.sqlite.close();
    const reference = open(":memory:");
    await load(reference.store, rows);
    const bulk = open(path, true);
    await load(bulk.store, newer);
    const more = older.slice(0, 200).map((r, i) => ({ ...r, executionId: `more-${i}`, randomId: `more-${i}` }));
    await load(bulk.store, more); // into months whose stored cells no longer hold
    await load(reference.store, more);
    expect(mark(bulk.sqlite)).toBe(MONTH_STARTS[0]!);
    // August and September as they were (not read any more), October summed as the load passed it.
    expect(monthsStored(bulk.sqlite)).toEqual(MONTH_STARTS.slice(0, 3));
    const want = await answers(reference.store);
    expect(await answers(bulk.store)).toEqual(want);
    await fold(bulk.store);
    expect(mark(bulk.sqlite)).toBeNull();
    expect(storedMonthCells(bulk.sqlite)).toBe(storedMonthCells(reference.sqlite));
    expect(await answers(bulk.store)).toEqual(want);
    expect(await verifyRollups(bulk.store)).toMatchObject({ ok: true, records: rows.length + more.length });
    for (const s of [bulk, reference]) s.sqlite.close();
  });

  test("a rebuild counts the months with their days and clears the mark", async () => {
    const path = join(dir, "rebuilt.db");
    const bulk = open(path, true);
    await load(bulk.store, rows);
    expect(mark(bulk.sqlite)).not.toBeNull();
    const want = await answers(bulk.store);
    bulk.sqlite.close();
    const plain = open(path);
    await plain.store.rebuildRollups();
    expect(mark(plain.sqlite)).toBeNull();
    expect(storedMonthCells(plain.sqlite)).toBeGreaterThan(0);
    expect(await answers(plain.store)).toEqual(want);
    plain.sqlite.close();
  });

  test("seedDatabase over a store opened for a bulk load ends with its months stored", async () => {
    const bulk = open(join(dir, "seeded.db"), true);
    await seedDatabase(bulk.store, seedOptions({ records: 3000, days: 70, end: END, seed: 5 }));
    expect(mark(bulk.sqlite)).toBeNull();
    expect(storedMonthCells(bulk.sqlite)).toBeGreaterThan(0);
    expect(await verifyRollups(bulk.store)).toMatchObject({ ok: true, records: 3000 });
    bulk.sqlite.close();
  });
});
