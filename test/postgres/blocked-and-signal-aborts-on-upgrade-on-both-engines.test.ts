// The community's outcome rule (docs/decisions/2026-11-27-blocked-adopted.md) reaches the data a
// database of the release before it holds, on both engines: the migrations (drizzle/sqlite 0018,
// drizzle/postgres 0012) move failures that ended with a code raised before the script ran to
// blocked and those that ended with 129 or 143 to the user's aborts, the rollups are recounted once
// (ROLLUP_VERSION 5: six counts per value), a held report is read with the rule, verify finds every
// cell equal to a recount, and opening again changes nothing.
//
// "The previous release" stored these runs as failed, with rollups of version 4. On SQLite it is a
// database of the migrations up to 0017 (the layout main writes) with the executions put in it; on
// PostgreSQL (same layout) a current database whose newest migration is forgotten, so it runs again
// on open over the rows as the previous release wrote them, and whose rollups are marked version 4.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import type { Execution, Report } from "../../src/domain/execution.ts";
import { BLOCKED_EXIT_CODES, USER_ABORT_EXIT_CODES } from "../../src/domain/outcome.ts";
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
  type StoredRow,
  type Underneath,
} from "../helpers/upgrade.ts";

setDefaultTimeout(60_000);

const T0 = Date.UTC(2026, 9, 5, 10, 0, 0);
const ended = endedAt(T0);

/** Every code 0-255 as a failure the previous release stored (with the client's category), and endings the rule leaves alone. */
const FAILURES: Execution[] = Array.from({ length: 256 }, (_, code) => ended(`f${code}`, code, "unknown"));
const OTHERS: Execution[] = [
  ended("none", null, "unknown"),
  ended("s214", 214, null, "success", "success"),
  ended("a214", 214, "storage", "aborted", "aborted"),
  ended("u143", 143, "signal", "unknown", "unknown"),
];
const STORED = [...FAILURES, ...OTHERS];
const BLOCKED = BLOCKED_EXIT_CODES.size;
const ABORTS = USER_ABORT_EXIT_CODES.size;
/** Failed after the upgrade: every other code, and the failure without one. */
const FAILED = 256 - BLOCKED - ABORTS + 1;

/** What each stored row should be after the upgrade. */
function expected(e: Execution): StoredRow {
  if (e.outcome === "failed" && e.exitCode !== null && USER_ABORT_EXIT_CODES.has(e.exitCode))
    return { outcome: "aborted", error_category: "user_aborted" };
  if (e.outcome === "failed" && e.exitCode !== null && BLOCKED_EXIT_CODES.has(e.exitCode))
    return { outcome: "blocked", error_category: e.errorCategory };
  return { outcome: e.outcome, error_category: e.errorCategory };
}

/** A final report held by the previous release (its start had not come): failed 209. */
const HELD: Report = {
  ...uploadStart("h209"),
  fields: null,
  status: "failed",
  outcome: "failed",
  error: "exit code 209",
  exitCode: 209,
  errorCategory: "proxmox",
};

interface Previous extends Underneath {
  location: string;
  /** Writes STORED and HELD as the previous release kept them, its rollups of version 4. */
  write(): Promise<void>;
}

function checks(make: () => Promise<Previous>) {
  test("failures with blocked codes become blocked, 129 and 143 aborts, the rest stays; rollups recounted once", async () => {
    const db = await make();
    await db.write();
    expect(await db.rollupVersion()).toBe(4);
    const before = await db.rows();
    expect(before.get("f214")).toEqual({ outcome: "failed", error_category: "unknown" });
    expect(before.get("f143")).toEqual({ outcome: "failed", error_category: "unknown" });

    const engine = await openEngine(db.location, OPEN);
    try {
      const after = await db.rows();
      for (const e of STORED) expect([e.executionId, after.get(e.executionId)]).toEqual([e.executionId, expected(e)]);
      expect(await db.rollupVersion()).toBe(ROLLUP_VERSION);
      expect((await engine.store.getExecutions("f231"))[0]).toMatchObject({
        status: "failed",
        outcome: "blocked",
        exitCode: 231,
      });
      // success, failed, aborted, in progress, unknown, blocked
      expect(await dayTotals(engine.store, T0)).toEqual([1, FAILED, ABORTS + 1, 0, 1, BLOCKED]);
      const verified = await verifyRollups(engine.store);
      expect(verified.mismatches).toEqual([]);
      expect(verified.records).toBe(STORED.length);

      // The held report's start comes: the execution it makes is blocked.
      await engine.store.write([reportOp(uploadStart("h209", { nsapp: "jellyfin" }), T0 + 120_000)]);
      expect((await engine.store.getExecutions("h209"))[0]).toMatchObject({
        status: "failed",
        outcome: "blocked",
        errorCategory: "proxmox",
        exitCode: 209,
      });
      expect((await verifyRollups(engine.store)).mismatches).toEqual([]);
    } finally {
      await engine.close();
    }
    // Opened again: nothing left to do, nothing recounted twice.
    const again = await openEngine(db.location, OPEN);
    try {
      expect(await dayTotals(again.store, T0)).toEqual([1, FAILED, ABORTS + 1, 0, 1, BLOCKED + 1]);
      expect((await verifyRollups(again.store)).mismatches).toEqual([]);
    } finally {
      await again.close();
    }
  });
}

describe("sqlite", () => {
  const files = sqliteFiles("blocked");
  checks(async () => {
    const location = files.next();
    return {
      location,
      ...sqliteUnderneath(location),
      async write() {
        const old = openDatabase(location, { durability: "normal", migrate: false });
        try {
          // The executions in the layout before 0017, then 0015-0017 over them: the layout main writes.
          migrate(old.db, { migrationsFolder: sqliteMigrationsUpTo(files.dir, 14) });
          old.sqlite.transaction(() => {
            insertOldExecutions(old.sqlite, STORED);
            insertHeld(old.sqlite, HELD, T0);
          })();
          migrate(old.db, { migrationsFolder: sqliteMigrationsUpTo(files.dir, 17) });
          old.sqlite.run("UPDATE rollup_state SET version = 4");
        } finally {
          old.sqlite.close();
        }
      },
    };
  });
});

describe("postgres", () => {
  const database = postgresDatabases("blocked");
  checks(async () => {
    const { location, pg } = await database();
    return {
      location,
      ...postgresUnderneath(pg),
      async write() {
        await writeThrough(location, STORED, HELD, T0);
        // 0012 (and those after it) runs again on open, over the rows as the previous release wrote them.
        await forgetPostgresMigrationsFrom(pg, "0012_blocked_outcome");
        await pg`UPDATE marks SET value = 4 WHERE name = 'rollup_version'`;
      },
    };
  });
});
