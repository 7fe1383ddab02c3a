// What the SQLite engine's write side works with (writes.ts, intake.ts, cells.ts): its prepared
// statements, the budgets' counters, the caches it merges into, and the state one batch carries.
// Built once per connection: bun:sqlite statements belong to the connection that prepared them.
import type { Database, Statement } from "bun:sqlite";
import { and, eq, lt, sql, getTableColumns, getTableName, type Placeholder } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { SignatureSightings } from "../../domain/error-signature.ts";
import type { Execution } from "../../domain/execution.ts";
import type { RecentlyUsed } from "../../domain/recently-used.ts";
import type { HeldReport } from "../../domain/lifecycle.ts";
import { GRAINS, type RollupData, type RollupDeltas, type RollupKey } from "../../domain/rollup.ts";
import type { OldHours } from "../common/old-hours.ts";
import type { RelayPolicy } from "../../domain/relay.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import { Counters, createLogBudget } from "./budgets.ts";
import { decodeHeld } from "../common/budgets.ts";
import type { Db } from "./database.ts";
import type { OpenHours } from "./open-hours.ts";
import { LEGACY_HELD_COST } from "./held.ts";
import type { SqliteReads } from "./reads.ts";
import { OF_INSTALL, STORED_KEYS, insertStored, setStored, storedRow, type StoredRow } from "./rows.ts";
import { createSqliteRelay } from "./relay.ts";
import {
  copyMarks,
  errorSignatures,
  executions,
  expiryState,
  heldReports,
  rejectedReports,
  rollupState,
  rollups,
} from "./schema.ts";
import { LEGACY_LOG_COST } from "./budgets.ts";
import { createAlertWrites } from "./alerts.ts";
import { createIssueWrites } from "./issues.ts";

type Placeholders<T extends SQLiteTable> = { [K in keyof T["$inferInsert"]]-?: Placeholder<string & K> };

/** A placeholder for every column, so an insert can be prepared once and filled per row. */
function placeholdersFor<T extends SQLiteTable>(table: T): Placeholders<T> {
  const columns = Object.keys(getTableColumns(table));
  return Object.fromEntries(columns.map((name) => [name, sql.placeholder(name)])) as Placeholders<T>;
}

const byId = { id: sql.placeholder("id") };

/** The executions table's key and indexed columns (schema.ts): updateExecution leaves them as they are (random_id is stored as rid). */
const KEYS = ["executionId", "randomId", "createdAt", "nsapp"] as const;
const INDEXED_COLUMNS = new Set<string>([
  executions.executionId.name,
  executions.rid.name,
  executions.createdAt.name,
  executions.nsapp.name,
]);

/** Whether `after` keeps every key of `before`, so updateExecution can write it. */
export const sameKeys = (before: Execution, after: Execution): boolean => KEYS.every((k) => before[k] === after[k]);

/** A statement writing an execution as its stored row (rows.ts). */
const rowOf = (statement: Statement<never, [StoredRow]>) => ({ run: (e: Execution) => statement.run(storedRow(e)) });

/**
 * Statements run for every report and every rollup cell of a batch, prepared on bun:sqlite
 * directly: Drizzle's per-call placeholder filling and row mapping cost as much as the
 * statements themselves there. The SQL is built from the schema, so names cannot drift.
 */
function prepareHotStatements(sqlite: Database) {
  const cell = `"${rollups.grain.name}" = $grain AND "${rollups.slice.name}" = $slice AND "${rollups.bucket.name}" = $bucket`;
  return {
    /** changes is 0 when the execution_id is stored already (a duplicate). */
    insertExecution: rowOf(sqlite.query<never, StoredRow>(insertStored("ON CONFLICT DO NOTHING"))),
    /**
     * A row written back but for the indexed keys, which it keeps (a progress ping, a final status):
     * SQLite rewrites every index whose column an UPDATE assigns, changed or not.
     */
    updateExecution: rowOf(
      sqlite.query<never, StoredRow>(
        `UPDATE "${getTableName(executions)}" SET ${setStored(INDEXED_COLUMNS)} WHERE "${executions.executionId.name}" = $executionId`,
      ),
    ),
    /** A whole row written back: every report that changes an execution may change any field. */
    replaceExecution: rowOf(
      sqlite.query<never, StoredRow>(
        insertStored(
          `ON CONFLICT DO UPDATE SET ${STORED_KEYS.filter((k) => k !== "executionId")
            .map((k) => `"${executions[k].name}" = excluded."${executions[k].name}"`)
            .join(", ")}`,
        ),
      ),
    ),
    deleteExecutions: sqlite.query<never, [string | Uint8Array]>(
      `DELETE FROM "${getTableName(executions)}" WHERE ${OF_INSTALL}`,
    ),
    /** An execution in progress expired: outcome unknown as of `at` (updated_at is kept as an offset). */
    setOutcome: sqlite.query<never, { id: string | Uint8Array; code: number; at: number }>(
      `UPDATE "${getTableName(executions)}" SET "${executions.outcomeCode.name}" = $code, "${executions.updatedIn.name}" = $at - "${executions.createdAt.name}" WHERE "${executions.executionId.name}" = $id`,
    ),
    findHeld: sqlite.query<HeldRow, { id: string }>(`${selectHeld} WHERE "${heldReports.executionId.name}" = $id`),
    /** The oldest held reports received before $before (expiry, and the budget's overflow). */
    oldestHeld: sqlite.query<HeldRow, { before: number; limit: number }>(
      `${selectHeld} WHERE "${heldReports.receivedAt.name}" < $before ORDER BY "${heldReports.receivedAt.name}" LIMIT $limit`,
    ),
    putRollup: sqlite.query<
      never,
      Record<"grain" | "slice" | "bucket", number> & Record<"data" | "apps" | "errors", Uint8Array | null>
    >(
      `INSERT INTO "${getTableName(rollups)}" ("${rollups.grain.name}", "${rollups.slice.name}", "${rollups.bucket.name}", "${rollups.data.name}", "${rollups.apps.name}", "${rollups.errors.name}") VALUES ($grain, $slice, $bucket, $data, $apps, $errors)
       ON CONFLICT DO UPDATE SET "${rollups.data.name}" = excluded."${rollups.data.name}", "${rollups.apps.name}" = excluded."${rollups.apps.name}", "${rollups.errors.name}" = excluded."${rollups.errors.name}"`,
    ),
    deleteRollup: sqlite.query<never, Record<"grain" | "slice" | "bucket", number>>(
      `DELETE FROM "${getTableName(rollups)}" WHERE ${cell}`,
    ),
    /** Hour cells of hours before the ones kept (domain/rollup.ts hoursFrom). */
    dropOldHours: sqlite.query<never, { before: number }>(
      `DELETE FROM "${getTableName(rollups)}" WHERE "${rollups.grain.name}" = ${GRAINS.hour} AND "${rollups.bucket.name}" < $before`,
    ),
    /** Month cells of [from, to), to be summed again from their days (cells.ts sumMonths). */
    dropMonths: sqlite.query<never, { from: number; to: number }>(
      `DELETE FROM "${getTableName(rollups)}" WHERE "${rollups.grain.name}" = ${GRAINS.month} AND "${rollups.bucket.name}" >= $from AND "${rollups.bucket.name}" < $to`,
    ),
  };
}

/** A held report's row as the write path reads it. */
export interface HeldRow {
  executionId: string;
  report: string;
  codec: string | null;
  data: Uint8Array | null;
  at: number;
  repaired: number;
}

const h = heldReports;
const selectHeld = `SELECT "${h.executionId.name}" AS executionId, "${h.report.name}" AS report, "${h.codec.name}" AS codec, "${h.data.name}" AS data, "${h.receivedAt.name}" AS at, "${h.repaired.name}" AS repaired FROM "${getTableName(h)}"`;

export const heldOf = (row: HeldRow): HeldReport => ({
  report: decodeHeld(row),
  at: row.at,
  repaired: row.repaired === 1,
});

/** What leaving log entries say about their bodies, for the budget's totals. */
const leaving = {
  bodyStore: rejectedReports.bodyStore,
  bodyHash: rejectedReports.bodyHash,
  cost: sql<number>`coalesce(${rejectedReports.cost}, ${sql.raw(LEGACY_LOG_COST)})`,
};
const heldCost = sql<number>`coalesce(${heldReports.cost}, ${sql.raw(LEGACY_HELD_COST)})`;

function prepareStatements(db: Db) {
  return {
    insertHeld: db.insert(heldReports).values(placeholdersFor(heldReports)).prepare(),
    /** Removes a held report; its cost leaves the held budget. */
    deleteHeld: db
      .delete(heldReports)
      .where(eq(heldReports.executionId, byId.id))
      .returning({ cost: heldCost })
      .prepare(),
    forgetRejected: db
      .delete(rejectedReports)
      .where(lt(rejectedReports.receivedAt, sql.placeholder("before")))
      .returning(leaving)
      .prepare(),
    markReplayed: db
      .update(rejectedReports)
      .set({ replayedAt: sql`${sql.placeholder("at")}`, replayResult: sql`${sql.placeholder("result")}` })
      .where(eq(rejectedReports.id, sql.placeholder("id")))
      .prepare(),
    deleteRejectedOf: db
      .delete(rejectedReports)
      .where(eq(rejectedReports.randomId, byId.id))
      .returning(leaving)
      .prepare(),
    deleteHeldReturning: db
      .delete(heldReports)
      .where(eq(heldReports.randomId, byId.id))
      .returning({ cost: heldCost, executionId: heldReports.executionId })
      .prepare(),
    insertRejected: db.insert(rejectedReports).values(placeholdersFor(rejectedReports)).prepare(),
    setFoldedUntil: db
      .insert(rollupState)
      .values({ id: 1, foldedUntil: sql.placeholder("until") })
      .onConflictDoUpdate({ target: rollupState.id, set: { foldedUntil: sql`excluded.folded_until` } })
      .prepare(),
    setMonthsFrom: db
      .update(rollupState)
      .set({ monthsFrom: sql`${sql.placeholder("from")}` })
      .where(eq(rollupState.id, 1))
      .prepare(),
    // Compare-and-set: a load of an older in-progress install may have lowered the mark meanwhile.
    moveStuckMark: db
      .update(expiryState)
      .set({ checkedUntil: sql`${sql.placeholder("until")}` })
      .where(and(eq(expiryState.id, 1), eq(expiryState.checkedUntil, sql.placeholder("from"))))
      .prepare(),
    stuckMark: db.select({ t: expiryState.checkedUntil }).from(expiryState).where(eq(expiryState.id, 1)).prepare(),
    lowerStuckMark: db
      .insert(expiryState)
      .values({ id: 1, checkedUntil: sql.placeholder("to") })
      .onConflictDoUpdate({
        target: expiryState.id,
        set: { checkedUntil: sql`min(${expiryState.checkedUntil}, excluded.checked_until)` },
      })
      .prepare(),
    copyMark: db
      .select({ id: copyMarks.rejectedId })
      .from(copyMarks)
      .where(eq(copyMarks.source, sql.placeholder("source")))
      .prepare(),
    setCopyMark: db
      .insert(copyMarks)
      .values({ source: sql.placeholder("source"), rejectedId: sql.placeholder("id") })
      .onConflictDoUpdate({ target: copyMarks.source, set: { rejectedId: sql`excluded.rejected_id` } })
      .prepare(),
    getSignature: db
      .select({ firstSeen: errorSignatures.firstSeen, lastSeen: errorSignatures.lastSeen, apps: errorSignatures.apps })
      .from(errorSignatures)
      .where(eq(errorSignatures.id, byId.id))
      .prepare(),
    /** A stored signature seen again: its span widened, its apps replaced when one was new. */
    seeSignature: db
      .update(errorSignatures)
      .set({
        firstSeen: sql`min(${errorSignatures.firstSeen}, ${sql.placeholder("firstSeen")})`,
        lastSeen: sql`max(${errorSignatures.lastSeen}, ${sql.placeholder("lastSeen")})`,
        apps: sql`coalesce(${sql.placeholder("apps")}, ${errorSignatures.apps})`,
      })
      .where(eq(errorSignatures.id, byId.id))
      .prepare(),
    putSignature: db
      .insert(errorSignatures)
      .values(placeholdersFor(errorSignatures))
      .onConflictDoUpdate({
        target: errorSignatures.id,
        set: { firstSeen: sql`excluded.first_seen`, lastSeen: sql`excluded.last_seen`, apps: sql`excluded.apps` },
      })
      .prepare(),
  };
}

/** What one batch changes besides the rows themselves; merged in before COMMIT (open hours: after). */
export interface BatchEffects {
  deltas: RollupDeltas;
  sightings: SignatureSightings;
  /** Deltas whose open-hour counts go into memory once the batch has committed. */
  open: RollupDeltas[];
  /** Set when the batch folds: hours before it leave memory after COMMIT. */
  foldedTo: number | null;
  /** Set when the batch held a report: the held budget is checked before COMMIT. */
  held: boolean;
}

/**
 * The month mark (rollupState.monthsFrom) as this connection knows it: month cells from `from` on
 * are summed from their day cells when the store next folds (cells.ts sumMonths), and read as
 * those sums meanwhile (rollup-reads.ts). `defer`: this connection counts no month cell at all and
 * moves the mark back to the earliest month it counts in (a bulk load: SqliteStoreOptions.deferMonths).
 */
export interface MonthMark {
  from: number;
  readonly defer: boolean;
}

/** The write side of one connection: made once (createWriteContext), passed to every step of a batch. */
export interface WriteContext {
  sqlite: Database;
  reads: SqliteReads;
  labels: SqliteReads["labels"];
  openHours: OpenHours;
  oldHours: OldHours;
  months: MonthMark;
  limits: { current: StoreLimits };
  q: ReturnType<typeof prepareStatements>;
  hot: ReturnType<typeof prepareHotStatements>;
  counters: Counters;
  log: ReturnType<typeof createLogBudget>;
  alerts: ReturnType<typeof createAlertWrites>;
  issues: ReturnType<typeof createIssueWrites>;
  relay: ReturnType<typeof createSqliteRelay>;
  /** The stuck mark as this batch sees it; null until read (intake.ts keepStuckMark). */
  stuckMark: number | null;
  /**
   * /telemetry runs in progress as this connection last wrote them, by execution id (intake.ts
   * applyReport): today's clients send four reports a run within minutes, and each looked its run
   * up again (a primary-key lookup and its 48 columns decoded, ~14 % of the write path's
   * instructions per /telemetry report). Kept true by forgetting them all whenever anything else
   * may write executions (writes.ts apply), a batch rolls back, or another connection commits
   * (store-state.ts recount). docs/decisions/2026-11-29-runs-in-flight-kept-as-written.md
   */
  inFlight: RecentlyUsed<Execution>;
  /**
   * Cells a batch counts into, in place (cells.ts touch): each stored cell decoded the first
   * time the batch touches it, and written back once at the end (storeTouched).
   */
  touched: Map<string, { key: RollupKey; data: RollupData }>;
}

export function createWriteContext(
  sqlite: Database,
  db: Db,
  reads: SqliteReads,
  openHours: OpenHours,
  oldHours: OldHours,
  months: MonthMark,
  limits: { current: StoreLimits },
  relayPolicy: { current: RelayPolicy | null },
  inFlight: RecentlyUsed<Execution>,
): WriteContext {
  const counters = new Counters(sqlite);
  return {
    sqlite,
    reads,
    labels: reads.labels,
    openHours,
    oldHours,
    months,
    limits,
    q: prepareStatements(db),
    hot: prepareHotStatements(sqlite),
    counters,
    log: createLogBudget(sqlite, counters, limits),
    alerts: createAlertWrites(db),
    issues: createIssueWrites(db),
    relay: createSqliteRelay(sqlite, counters, relayPolicy),
    stuckMark: null,
    inFlight,
    touched: new Map(),
  };
}
