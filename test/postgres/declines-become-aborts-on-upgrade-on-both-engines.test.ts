// Declines stored before the rule (docs/decisions/2026-11-27-declines-are-aborts.md) become aborts
// when a database of the release before it is opened, on both engines: the migration moves the
// executions (drizzle/sqlite 0015, drizzle/postgres 0010) before the later ones change the layout
// (SQLite 0016-0018, PostgreSQL 0011-0012), the rollups are recounted (ROLLUP_VERSION: SQLite's
// rollup_state, PostgreSQL's rollup_version mark), a held report is read with the rule, and verify
// finds every cell equal to a recount.
//
// "The previous release" stores declines as it did: failed, counted as failed, rollups of version 2.
// On SQLite it is a database of the migrations up to 0014 with the executions and the held report
// put in its layout. On PostgreSQL (whose executions kept their layout) it is made from a current
// database: its three newest migrations are forgotten and undone where running them again needs it
// (so they run again on open, over the rows as the previous release wrote them), and its rollups
// are marked as version 2.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Execution, Report } from "../../src/domain/execution.ts";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { ROLLUP_VERSION } from "../../src/domain/rollup.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { openEngine } from "../../src/store/open.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { insertOldExecutions, sqliteMigrationsUpTo } from "../helpers/cells.ts";
import { reportOp, uploadStart } from "../helpers/reports.ts";
import {
  forgetPostgresMigrationsFrom,
  OPEN,
  dayTotals,
  endedAt,
  insertHeld,
  postgresDatabases,
  postgresUnderneath,
  sqliteFiles,
  sqliteUnderneath,
  writeThrough,
  type Underneath,
} from "../helpers/upgrade.ts";

setDefaultTimeout(60_000);

const T0 = Date.UTC(2026, 9, 5, 10, 0, 0);

/** What the previous release stored: every decline a failure, with the client's category. */
const ended = endedAt(T0);
const STORED: Execution[] = [
  ended("d113", 113, "unknown"),
  ended("d114", 114, "shell"),
  ended("d122", 122, null),
  ended("d253", 253, "config"),
  ended("d254", 254, "unknown"),
  ended("f199", 199, "unknown"),
  ended("f100", 100, "dependency"),
  ended("a130", 130, "user_aborted", "aborted", "aborted"),
  ended("ok", 0, null, "success", "success"),
];
/** A final report held by the previous release (its start had not come): failed 114. */
const HELD: Report = {
  ...uploadStart("h114"),
  fields: null,
  status: "failed",
  outcome: "failed",
  error: "exit code 114",
  exitCode: 114,
  errorCategory: "unknown",
};

interface Previous extends Underneath {
  location: string;
  /** Writes STORED and HELD as the previous release kept them, its rollups of version 2. */
  write(): Promise<void>;
}

/** The stored outcome and category of an execution, read underneath the store. */
const row = async (db: Previous, id: string) => (await db.rows()).get(id);

function checks(make: () => Promise<Previous>) {
  test("declines become aborts, the rest stays, the rollups are recounted and equal a recount", async () => {
    const db = await make();
    await db.write();
    expect(await db.rollupVersion()).toBe(2);
    // Before: what the previous release kept.
    expect(await row(db, "d113")).toEqual({ outcome: "failed", error_category: "unknown" });

    const engine = await openEngine(db.location, OPEN);
    try {
      for (const id of ["d113", "d114", "d122", "d253", "d254"])
        expect(await row(db, id)).toEqual({ outcome: "aborted", error_category: "user_aborted" });
      expect(await row(db, "f199")).toEqual({ outcome: "failed", error_category: "unknown" });
      expect(await row(db, "f100")).toEqual({ outcome: "failed", error_category: "dependency" });
      expect(await row(db, "a130")).toEqual({ outcome: "aborted", error_category: "user_aborted" });
      expect(await db.rollupVersion()).toBe(ROLLUP_VERSION);
      const [execution] = await engine.store.getExecutions("d254");
      expect(execution).toMatchObject({
        status: "failed",
        outcome: "aborted",
        errorCategory: "user_aborted",
        exitCode: 254,
      });
      // success, failed, aborted, in progress, unknown, blocked
      expect(await dayTotals(engine.store, T0)).toEqual([1, 2, 6, 0, 0, 0]);
      const verified = await verifyRollups(engine.store);
      expect(verified.mismatches).toEqual([]);
      expect(verified.records).toBe(STORED.length);

      // The held report's start comes: the execution it makes is an abort too.
      const start = uploadStart("h114", { nsapp: "jellyfin" });
      await engine.store.write([reportOp(start, T0 + 120_000)]);
      expect((await engine.store.getExecutions("h114"))[0]).toMatchObject({
        status: "failed",
        outcome: "aborted",
        errorCategory: "user_aborted",
        exitCode: 114,
      });
      expect((await verifyRollups(engine.store)).mismatches).toEqual([]);
    } finally {
      await engine.close();
    }
    // Opened again: nothing left to do, nothing recounted twice.
    const again = await openEngine(db.location, OPEN);
    try {
      expect(await dayTotals(again.store, T0)).toEqual([1, 2, 7, 0, 0, 0]);
      expect((await verifyRollups(again.store)).mismatches).toEqual([]);
    } finally {
      await again.close();
    }
  });
}

describe("sqlite", () => {
  const files = sqliteFiles("decline");
  checks(async () => {
    const location = files.next();
    return {
      location,
      ...sqliteUnderneath(location),
      async write() {
        const old = openDatabase(location, { durability: "normal", migrate: false });
        try {
          migrate(old.db, { migrationsFolder: sqliteMigrationsUpTo(files.dir, 14) });
          old.sqlite.transaction(() => {
            insertOldExecutions(old.sqlite, STORED);
            insertHeld(old.sqlite, HELD, T0);
            old.sqlite.run("UPDATE rollup_state SET version = 2");
          })();
        } finally {
          old.sqlite.close();
        }
      },
    };
  });
});

describe("postgres", () => {
  const database = postgresDatabases("decline");
  checks(async () => {
    const { location, pg } = await database();
    return {
      location,
      ...postgresUnderneath(pg),
      async write() {
        await writeThrough(location, STORED, HELD, T0);
        // 0011 runs again (it drops the cells and makes the label dictionary), 0010 and those after it over the rows as they are.
        await forgetPostgresMigrationsFrom(pg, "0010_declines_abort");
        await pg`DROP TABLE rollup_labels`;
        await pg`UPDATE marks SET value = 2 WHERE name = 'rollup_version'`;
      },
    };
  });
});
