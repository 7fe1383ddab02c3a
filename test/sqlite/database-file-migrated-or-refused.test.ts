// Opening the database: deliberate setup, embedded migrations on fresh and existing files,
// refusal of files that are not ours.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { join } from "node:path";
import { APPLICATION_ID, migrationsFolder, openDatabase } from "../../src/store/sqlite/database.ts";
import { tempDir } from "../helpers/tmp.ts";
import { DatabaseOpenError } from "../../src/store/engine.ts";

const journalEntries = () =>
  (JSON.parse(readFileSync(join(migrationsFolder(), "meta/_journal.json"), "utf8")) as { entries: unknown[] }).entries
    .length;

describe("openDatabase", () => {
  test("a fresh file gets WAL, the chosen synchronous level, a busy timeout and every migration", async () => {
    const path = join(tempDir(), "fresh.db");
    for (const [durability, level] of [
      ["full", 2],
      ["normal", 1],
    ] as const) {
      const { sqlite } = openDatabase(path, { durability, migrate: true });
      expect(sqlite.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(sqlite.query("PRAGMA synchronous").get()).toEqual({ synchronous: level });
      expect(sqlite.query("PRAGMA busy_timeout").get()).toEqual({ timeout: 5000 });
      expect(sqlite.query("PRAGMA application_id").get()).toEqual({ application_id: APPLICATION_ID });
      const tables = sqlite
        .query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .all()
        .map((r) => (r as { name: string }).name);
      expect(tables).toEqual(
        expect.arrayContaining([
          "executions",
          "held_reports",
          "rejected_reports",
          "bodies",
          "rollups",
          "__drizzle_migrations",
        ]),
      );
      // The tables of the install model are gone (migrations 0007-0008 moved their data).
      expect(tables).not.toContain("installs");
      expect(tables).not.toContain("held_updates");
      expect(sqlite.query("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({ n: journalEntries() });
      sqlite.close();
    }
  });

  test("reopening an existing database keeps its data and applies nothing twice", async () => {
    const path = join(tempDir(), "existing.db");
    const first = openDatabase(path, { durability: "full", migrate: true });
    // (Stored columns since migration 0017: random_id, kind and outcome are virtual; since 0018
    // type and status are stored as codes, store/sqlite/codes.ts.)
    first.sqlite.run(
      "INSERT INTO executions (execution_id, attempt, type_code, status_code, outcome_code, created_at, updated_in) VALUES ('keep', 1, 0, 3, 3, 1, 0)",
    );
    first.sqlite.close();
    const again = openDatabase(path, { durability: "full", migrate: true });
    expect(again.sqlite.query("SELECT random_id FROM executions").all()).toEqual([{ random_id: "keep" }]);
    expect(again.sqlite.query("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({ n: journalEntries() });
    again.sqlite.close();
  });

  test("upgrading to the stuck-scan mark starts it at the oldest install still in progress, or after the newest", async () => {
    // A database at migration 0004, with the in-progress index the upgrade replaces.
    const before5 = join(tempDir(), "migrations-0004");
    cpSync(migrationsFolder(), before5, { recursive: true });
    const journal = JSON.parse(readFileSync(join(before5, "meta/_journal.json"), "utf8")) as {
      entries: { idx: number }[];
    };
    journal.entries = journal.entries.filter((e) => e.idx <= 4);
    writeFileSync(join(before5, "meta/_journal.json"), JSON.stringify(journal));
    const upgrade = (rows: [string, string, number][]) => {
      const path = join(tempDir(), "upgrade.db");
      const old = openDatabase(path, { durability: "normal", migrate: false });
      migrate(old.db, { migrationsFolder: before5 });
      for (const [id, outcome, at] of rows)
        old.sqlite.run(
          "INSERT INTO installs (random_id, type, status, outcome, created_at, updated_at) VALUES (?, 'lxc', 'x', ?, ?, ?)",
          [id, outcome, at, at],
        );
      old.sqlite.close();
      const { sqlite } = openDatabase(path, { durability: "normal", migrate: true });
      const mark = (sqlite.query("SELECT checked_until AS t FROM expiry_state").get() as { t: number }).t;
      const indexes = sqlite
        .query("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'installs_in_progress'")
        .all();
      sqlite.close();
      expect(indexes).toEqual([]);
      return mark;
    };
    expect(
      upgrade([
        ["a", "success", 100],
        ["b", "in_progress", 200],
        ["c", "in_progress", 300],
        ["d", "failed", 400],
      ]),
    ).toBe(200);
    expect(
      upgrade([
        ["a", "success", 100],
        ["d", "failed", 400],
      ]),
    ).toBe(401);
    expect(upgrade([])).toBe(0);
  });

  test("another application's SQLite file is refused and left byte-for-byte unchanged", async () => {
    const path = join(tempDir(), "foreign.db");
    const other = new Database(path);
    other.run("CREATE TABLE notes (body TEXT)");
    other.close();
    const before = readFileSync(path);
    expect(() => openDatabase(path, { durability: "full", migrate: true })).toThrow(DatabaseOpenError);
    expect(readFileSync(path)).toEqual(before);
  });

  test("a corrupted file gives a clear error and is not overwritten", async () => {
    const path = join(tempDir(), "corrupt.db");
    writeFileSync(path, "this is not a database at all ".repeat(200));
    const before = readFileSync(path);
    expect(() => openDatabase(path, { durability: "full", migrate: true })).toThrow(/not a usable SQLite database/);
    expect(readFileSync(path)).toEqual(before);
  });
});
