// A SQLite store whose label dictionary is bounded (OpenOptions.labelLimit, as `installstats seed`
// opens it) stores exactly what an unbounded one stores, byte for byte, and reads it back: the
// labels it no longer holds are looked up in the table, never made twice.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Database } from "bun:sqlite";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { seedDatabase, seedOptions } from "../../src/seed/seed.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { createSqliteStore } from "../../src/store/sqlite/store.ts";

setDefaultTimeout(120_000);

const END = Date.UTC(2026, 10, 21, 12, 34, 56, 789);
const rows = (sqlite: Database, table: string, order: string) =>
  sqlite.query(`SELECT * FROM ${table} ORDER BY ${order}`).all();

describe("bounded label dictionary", () => {
  test("seeds the same labels and cells as an unbounded one, and reads them back", async () => {
    const options = seedOptions({ records: 4_000, days: 40, end: END, seed: 5, batchSize: 500, profile: "today" });
    const held = openDatabase(":memory:", { durability: "normal", migrate: true });
    const bounded = openDatabase(":memory:", { durability: "normal", migrate: true });
    await seedDatabase(createSqliteStore(held.sqlite, held.db), options);
    const store = createSqliteStore(bounded.sqlite, bounded.db, { labelLimit: 50 });
    await seedDatabase(store, options);

    const labels = rows(bounded.sqlite, "rollup_labels", "id");
    // Far more labels than the bound holds: most were looked up again, none made twice (the label is unique).
    expect(labels.length).toBeGreaterThan(20 * 50);
    expect(labels).toEqual(rows(held.sqlite, "rollup_labels", "id"));
    expect(rows(bounded.sqlite, "rollups", "1, 2, 3")).toEqual(rows(held.sqlite, "rollups", "1, 2, 3"));

    // Every stored cell decoded again through the bounded dictionary, and recounted from the records.
    const check = await verifyRollups(store);
    expect({ ok: check.ok, mismatches: check.mismatches }).toEqual({ ok: true, mismatches: [] });
    // A second bounded connection over the stored data: nothing loaded ahead, every label found.
    const again = createSqliteStore(bounded.sqlite, bounded.db, { labelLimit: 50 });
    expect((await verifyRollups(again)).ok).toBe(true);
  });
});
