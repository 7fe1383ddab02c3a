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
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import type { Execution, Report } from "../../src/domain/execution.ts";
import { BLOCKED_EXIT_CODES, USER_ABORT_EXIT_CODES } from "../../src/domain/outcome.ts";
import { ALL_APPS, GRAINS, ROLLUP_VERSION, sliceKey } from "../../src/domain/rollup.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import type { Store } from "../../src/store/contract/store.ts";
import { encodeHeld } from "../../src/store/common/budgets.ts";
import { openEngine } from "../../src/store/open.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { insertOldExecutions, sqliteMigrationsUpTo } from "../helpers/cells.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";
import { execution, reportOp, uploadStart } from "../helpers/reports.ts";

setDefaultTimeout(60_000);

const T0 = Date.UTC(2026, 9, 5, 10, 0, 0);
const OPEN = { durability: "normal" as const, migrate: true, create: true };

const ended = (
  id: string,
  exitCode: number | null,
  category: string | null,
  outcome: Execution["outcome"] = "failed",
  status = "failed",
): Execution =>
  execution(id, {
    nsapp: "jellyfin",
    status,
    outcome,
    exitCode,
    errorCategory: category,
    error: exitCode === null ? null : `exit_code=${exitCode} | x`,
    createdAt: T0,
    updatedAt: T0 + 60_000,
    durationMs: 60_000,
    installingAt: T0,
    finishedAt: T0 + 60_000,
  });

/** Every code 0-255 as a failure the previous release stored (with the client's category), and endings the rule leaves alone. */
const FAILURES: Execution[] = Array.from({ length: 256 }, (_, code) => ended(`f${code}`, code, "unknown"));
const OTHERS: Execution[] = [
  ended("none", null, "unknown"),
  ended("s214", 214, null, "success", "success"),
  ended("a214", 214, "storage", "aborted", "aborted"),
  ended("u143", 143, "signal", "unknown", "unknown"),
];
const STORED = [...FAILURES, ...OTHERS];
const BLOCKED = [...BLOCKED_EXIT_CODES].length;
const ABORTS = [...USER_ABORT_EXIT_CODES].length;

/** What each stored row should be after the upgrade. */
function expected(e: Execution): { outcome: string; error_category: string | null } {
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

interface Previous {
  location: string;
  write(): Promise<void>;
  rows(): Promise<Map<string, { outcome: string; error_category: string | null }>>;
  rollupVersion(): Promise<number>;
}

/** Outcome counts (as OUTCOMES orders them) of the every-app install slice over the day of T0. */
async function counts(store: Store): Promise<number[]> {
  const day = T0 - (T0 % 86_400_000);
  const cells = await store.readRollups({
    grain: GRAINS.day,
    slice: sliceKey("install", null, ALL_APPS),
    from: day,
    to: day + 86_400_000,
    parts: ["data"],
  });
  const total = [0, 0, 0, 0, 0, 0];
  for (const { data } of cells)
    for (const c of Object.values(data.dims.type ?? {})) c.forEach((n, i) => (total[i]! += n));
  return total;
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
      const failed = 256 - BLOCKED - ABORTS + 1;
      expect(await counts(engine.store)).toEqual([1, failed, ABORTS + 1, 0, 1, BLOCKED]);
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
      const failed = 256 - BLOCKED - ABORTS + 1;
      expect(await counts(again.store)).toEqual([1, failed, ABORTS + 1, 0, 1, BLOCKED + 1]);
      expect((await verifyRollups(again.store)).mismatches).toEqual([]);
    } finally {
      await again.close();
    }
  });
}

describe("sqlite", () => {
  const dir = mkdtempSync(join(tmpdir(), "installstats-blocked-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  checks(async () => {
    const location = join(dir, `prev-${++n}.db`);
    const sql = <T>(fn: (db: Database) => T): T => {
      const db = new Database(location);
      try {
        return fn(db);
      } finally {
        db.close();
      }
    };
    return {
      location,
      async write() {
        const old = openDatabase(location, { durability: "normal", migrate: false });
        try {
          // The executions in the layout before 0017, then 0015-0017 over them: the layout main writes.
          migrate(old.db, { migrationsFolder: sqliteMigrationsUpTo(dir, 14) });
          old.sqlite.transaction(() => {
            insertOldExecutions(old.sqlite, STORED);
            const held = encodeHeld(HELD);
            old.sqlite.run(
              "INSERT INTO held_reports (execution_id, random_id, report, received_at, repaired, codec, data, cost) VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
              [HELD.executionId, HELD.randomId, held.report, T0, held.codec, held.data, held.cost],
            );
            old.sqlite.run("UPDATE budget_counters SET value = value + 1 WHERE name = 'held.count'");
            old.sqlite.run("UPDATE budget_counters SET value = value + ? WHERE name = 'held.bytes'", [held.cost]);
          })();
          migrate(old.db, { migrationsFolder: sqliteMigrationsUpTo(dir, 17) });
          old.sqlite.run("UPDATE rollup_state SET version = 4");
        } finally {
          old.sqlite.close();
        }
      },
      rows: async () =>
        sql(
          (db) =>
            new Map(
              (
                db.query("SELECT execution_id AS id, outcome, error_category FROM executions").all() as {
                  id: string;
                  outcome: string;
                  error_category: string | null;
                }[]
              ).map((r) => [r.id, { outcome: r.outcome, error_category: r.error_category }]),
            ),
        ),
      rollupVersion: async () =>
        sql((db) => (db.query("SELECT version FROM rollup_state").get() as { version: number }).version),
    };
  });
});

describe("postgres", () => {
  let server: PgServer;
  let n = 0;
  const clients: postgres.Sql[] = [];
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    for (const c of clients) await c.end();
    await server?.stop();
  });
  checks(async () => {
    const location = await createDatabase(server, `blocked_${++n}`);
    const pg = postgres(location, { max: 1, onnotice: () => {} });
    clients.push(pg);
    return {
      location,
      async write() {
        const engine = await openEngine(location, OPEN);
        try {
          await engine.store.write([
            ...STORED.map((e) => ({ kind: "load" as const, execution: e, at: T0 })),
            reportOp(HELD, T0),
          ]);
        } finally {
          await engine.close();
        }
        // 0012 runs again on open, over the rows as the previous release wrote them.
        await pg`DELETE FROM drizzle.__drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM drizzle.__drizzle_migrations)`;
        await pg`UPDATE marks SET value = 4 WHERE name = 'rollup_version'`;
      },
      async rows() {
        const rs = await pg<
          { id: string; outcome: string; error_category: string | null }[]
        >`SELECT execution_id AS id, outcome, error_category FROM executions`;
        return new Map(rs.map((r) => [r.id, { outcome: r.outcome, error_category: r.error_category }]));
      },
      async rollupVersion() {
        const [r] = await pg<{ value: string }[]>`SELECT value FROM marks WHERE name = 'rollup_version'`;
        return Number(r?.value ?? 0);
      },
    };
  });
});
