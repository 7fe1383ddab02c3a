// What the upgrade tests share: the runs an earlier release stored, written into a database the
// way it kept them, and read back underneath the store (outcome, category, rollup version) on
// either engine, plus the outcome counts of the rollups over one day.
import { afterAll, beforeAll } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import type { Execution, Report } from "../../src/domain/execution.ts";
import { ALL_APPS, GRAINS, sliceKey } from "../../src/domain/rollup.ts";
import type { Store } from "../../src/store/contract/store.ts";
import { encodeHeld } from "../../src/store/common/budgets.ts";
import { openEngine } from "../../src/store/open.ts";
import { INSERT_COLUMNS, rowOf } from "../../src/store/postgres/rows.ts";
import { createDatabase, startPostgres, type PgServer } from "./postgres.ts";
import { execution, reportOp } from "./reports.ts";

const PG_MIGRATIONS = new URL("../../drizzle/postgres/", import.meta.url).pathname;

export const OPEN = { durability: "normal" as const, migrate: true, create: true };

/** An execution of jellyfin that started at `at` and ended a minute later as given. */
export const endedAt =
  (at: number) =>
  (
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
      createdAt: at,
      updatedAt: at + 60_000,
      durationMs: 60_000,
      installingAt: at,
      finishedAt: at + 60_000,
    });

/** Outcome counts (as OUTCOMES orders them) of the every-app install slice over the day of `at`. */
export async function dayTotals(store: Store, at: number): Promise<number[]> {
  const day = at - (at % 86_400_000);
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

export type StoredRow = { outcome: string; error_category: string | null };

/** The stored executions and rollup version of a database, read underneath the store. */
export interface Underneath {
  rows(): Promise<Map<string, StoredRow>>;
  rollupVersion(): Promise<number>;
}

export function sqliteUnderneath(location: string): Underneath {
  const sql = <T>(fn: (db: Database) => T): T => {
    const db = new Database(location);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  return {
    rows: async () =>
      sql(
        (db) =>
          new Map(
            db
              .query<{ id: string } & StoredRow, []>(
                "SELECT execution_id AS id, outcome, error_category FROM executions",
              )
              .all()
              .map((r) => [r.id, { outcome: r.outcome, error_category: r.error_category }]),
          ),
      ),
    rollupVersion: async () =>
      sql((db) => db.query<{ version: number }, []>("SELECT version FROM rollup_state").get()!.version),
  };
}

export function postgresUnderneath(pg: postgres.Sql): Underneath {
  return {
    async rows() {
      const rs = await pg<
        ({ id: string } & StoredRow)[]
      >`SELECT execution_id AS id, outcome, error_category FROM executions`;
      return new Map(rs.map((r) => [r.id, { outcome: r.outcome, error_category: r.error_category }]));
    },
    async rollupVersion() {
      const [r] = await pg<{ value: string }[]>`SELECT value FROM marks WHERE name = 'rollup_version'`;
      return Number(r?.value ?? 0);
    },
  };
}

/** Writes executions (as given, not normalized) and a held report through a current store at `at`. */
export async function writeThrough(location: string, stored: readonly Execution[], held: Report, at: number) {
  const engine = await openEngine(location, OPEN);
  try {
    await engine.store.write([...stored.map((e) => ({ kind: "load" as const, execution: e, at })), reportOp(held, at)]);
  } finally {
    await engine.close();
  }
}

/**
 * Forgets the PostgreSQL migrations from `tag` on so they run again on the next open, and undoes
 * what those after 0012 made (0013's rollup deltas and function, 0014's and 0015's indexes, 0016's
 * column), which cannot run over themselves: a current database made to look like one of an
 * earlier release. The deltas table is empty then (an engine folds what it appended when it closes).
 */
export async function forgetPostgresMigrationsFrom(pg: postgres.Sql, tag: string): Promise<void> {
  const journal = JSON.parse(readFileSync(join(PG_MIGRATIONS, "meta/_journal.json"), "utf8")) as {
    entries: { tag: string; when: number }[];
  };
  const from = journal.entries.find((e) => e.tag === tag);
  if (from === undefined) throw new Error(`no PostgreSQL migration ${tag}`);
  await pg`DELETE FROM drizzle.__drizzle_migrations WHERE created_at >= ${from.when}`;
  await pg`DROP TABLE rollup_deltas`;
  await pg`DROP FUNCTION installstats_begin(bigint, boolean, bigint[], text)`;
  await pg`DROP INDEX executions_heard_late, executions_failed`;
  await pg`ALTER TABLE execution_ids DROP COLUMN seq`;
}

/**
 * Executions and their ids written as the releases before PostgreSQL migration 0016 wrote them
 * (execution_ids without the rows' insertion order), into a database of such a schema with no
 * executions yet.
 */
export async function insertRowsBefore0016(tx: postgres.Sql, records: readonly Execution[]): Promise<void> {
  for (let i = 0; i < records.length; i += 500) {
    const json = JSON.stringify(records.slice(i, i + 500).map(rowOf));
    await tx.unsafe(
      `INSERT INTO executions (${INSERT_COLUMNS}) SELECT ${INSERT_COLUMNS} FROM json_populate_recordset(NULL::executions, $1::text::json)`,
      [json],
    );
  }
  await tx`INSERT INTO execution_ids (execution_id, random_id, created_at) SELECT execution_id, random_id, created_at FROM executions`;
}

/** Puts a held report into an SQLite database of an earlier schema, its budget as that release kept it. */
export function insertHeld(sqlite: Database, held: Report, at: number): void {
  const h = encodeHeld(held);
  sqlite.run(
    "INSERT INTO held_reports (execution_id, random_id, report, received_at, repaired, codec, data, cost) VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
    [held.executionId, held.randomId, h.report, at, h.codec, h.data, h.cost],
  );
  sqlite.run("UPDATE budget_counters SET value = value + 1 WHERE name = 'held.count'");
  sqlite.run("UPDATE budget_counters SET value = value + ? WHERE name = 'held.bytes'", [h.cost]);
}

/** In a describe: a folder for its tests, removed after them; each call names a new database file in it. */
export function sqliteFiles(prefix: string): { dir: string; next: () => string } {
  const dir = mkdtempSync(join(tmpdir(), `installstats-${prefix}-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  return { dir, next: () => join(dir, `prev-${++n}.db`) };
}

/** In a describe: a PostgreSQL server for its tests; each call makes a new database and a client of it. */
export function postgresDatabases(prefix: string): () => Promise<{ location: string; pg: postgres.Sql }> {
  let server: PgServer | undefined;
  let n = 0;
  const clients: postgres.Sql[] = [];
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    for (const c of clients) await c.end();
    await server?.stop();
  });
  return async () => {
    const location = await createDatabase(server!, `${prefix}_${++n}`);
    const pg = postgres(location, { max: 1, onnotice: () => {} });
    clients.push(pg);
    return { location, pg };
  };
}
