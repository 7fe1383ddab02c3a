// The write side of the SQLite engine: every write op applied inside one transaction per batch,
// rollup deltas and error-signature sightings merged into their rows before COMMIT, the open
// hours' counts handed to memory after it.
import type { Database, Statement } from "bun:sqlite";
import { and, eq, lt, sql, getTableColumns, getTableName, type Placeholder } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { SignatureSightings, failureSignatureId } from "../../domain/error-signature.ts";
import type { Execution } from "../../domain/execution.ts";
import { decide, executionFromHeld, type HeldReport } from "../../domain/lifecycle.ts";
import type { Rejection } from "../../domain/rejection.ts";
import { GRAINS, RollupDeltas, emptyData, hoursFrom, isAllApps, isEmpty, storedSlicesOf, type RollupData, type RollupKey } from "../../domain/rollup.ts";
import { encodeCell } from "../../domain/rollup-codec.ts";
import type { OldHours } from "../shared/old-hours.ts";
import type { RelayPolicy } from "../../domain/relay.ts";
import type { ReportWrite } from "../contract/executions.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import type { ResultFor, WriteOp, WriteResult } from "../contract/store.ts";
import { Counters, createLogBudget } from "./budgets.ts";
import { decodeHeld, encodeHeld, type LeavingEntry } from "../shared/budgets.ts";
import { count, recount } from "../shared/counting.ts";
import { ALL_PARTS, cellKey, type CachedCell, type CellCache } from "./cell-cache.ts";
import type { Db } from "./database.ts";
import type { OpenHours } from "./open-hours.ts";
import { LEGACY_HELD_COST } from "./held.ts";
import type { SqliteReads } from "./reads.ts";
import { OF_INSTALL, STORED_KEYS, insertStored, setStored, storedRow, type StoredRow } from "./rows.ts";
import { encodeId } from "./ids.ts";
import { OUTCOMES } from "../../domain/outcome.ts";
import { createSqliteRelay } from "./relay.ts";
import { copyMarks, errorSignatures, executions, expiryState, heldReports, rejectedReports, rollupState, rollups } from "./schema.ts";
import { LEGACY_LOG_COST } from "./budgets.ts";
import { createAlertWrites } from "./alerts.ts";
import { createIssueWrites } from "./issues.ts";
import { importMarkName } from "../shared/marks.ts";

type Placeholders<T extends SQLiteTable> = { [K in keyof T["$inferInsert"]]-?: Placeholder<string & K> };

/** A placeholder for every column, so an insert can be prepared once and filled per row. */
function placeholdersFor<T extends SQLiteTable>(table: T): Placeholders<T> {
  const columns = Object.keys(getTableColumns(table));
  return Object.fromEntries(columns.map((name) => [name, sql.placeholder(name)])) as Placeholders<T>;
}

const byId = { id: sql.placeholder("id") };


/** The executions table's key and indexed columns (schema.ts): updateExecution leaves them as they are (random_id is stored as rid). */
const KEYS = ["executionId", "randomId", "createdAt", "nsapp"] as const;
const INDEXED_COLUMNS = new Set<string>([executions.executionId.name, executions.rid.name, executions.createdAt.name, executions.nsapp.name]);

/** Whether `after` keeps every key of `before`, so updateExecution can write it. */
const sameKeys = (before: Execution, after: Execution): boolean => KEYS.every((k) => before[k] === after[k]);

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
      sqlite.query<never, StoredRow>(`UPDATE "${getTableName(executions)}" SET ${setStored(INDEXED_COLUMNS)} WHERE "${executions.executionId.name}" = $executionId`),
    ),
    /** A whole row written back: every report that changes an execution may change any field. */
    replaceExecution: rowOf(
      sqlite.query<never, StoredRow>(insertStored(`ON CONFLICT DO UPDATE SET ${STORED_KEYS.filter((k) => k !== "executionId").map((k) => `"${executions[k].name}" = excluded."${executions[k].name}"`).join(", ")}`)),
    ),
    deleteExecutions: sqlite.query<never, [string | Uint8Array]>(`DELETE FROM "${getTableName(executions)}" WHERE ${OF_INSTALL}`),
    /** An execution in progress expired: outcome unknown as of `at` (updated_at is kept as an offset). */
    setOutcome: sqlite.query<never, { id: string | Uint8Array; code: number; at: number }>(
      `UPDATE "${getTableName(executions)}" SET "${executions.outcomeCode.name}" = $code, "${executions.updatedIn.name}" = $at - "${executions.createdAt.name}" WHERE "${executions.executionId.name}" = $id`,
    ),
    findHeld: sqlite.query<HeldRow, { id: string }>(`${selectHeld} WHERE "${heldReports.executionId.name}" = $id`),
    /** The oldest held reports received before $before (expiry, and the budget's overflow). */
    oldestHeld: sqlite.query<HeldRow, { before: number; limit: number }>(
      `${selectHeld} WHERE "${heldReports.receivedAt.name}" < $before ORDER BY "${heldReports.receivedAt.name}" LIMIT $limit`,
    ),
    putRollup: sqlite.query<never, Record<"grain" | "slice" | "bucket", number> & Record<"data" | "apps" | "errors", Uint8Array | null>>(
      `INSERT INTO "${getTableName(rollups)}" ("${rollups.grain.name}", "${rollups.slice.name}", "${rollups.bucket.name}", "${rollups.data.name}", "${rollups.apps.name}", "${rollups.errors.name}") VALUES ($grain, $slice, $bucket, $data, $apps, $errors)
       ON CONFLICT DO UPDATE SET "${rollups.data.name}" = excluded."${rollups.data.name}", "${rollups.apps.name}" = excluded."${rollups.apps.name}", "${rollups.errors.name}" = excluded."${rollups.errors.name}"`,
    ),
    deleteRollup: sqlite.query<never, Record<"grain" | "slice" | "bucket", number>>(`DELETE FROM "${getTableName(rollups)}" WHERE ${cell}`),
    /** Hour cells of hours before the ones kept (domain/rollup.ts hoursFrom). */
    dropOldHours: sqlite.query<never, { before: number }>(`DELETE FROM "${getTableName(rollups)}" WHERE "${rollups.grain.name}" = ${GRAINS.hour} AND "${rollups.bucket.name}" < $before`),
  };
}

/** A held report's row as the write path reads it. */
interface HeldRow {
  executionId: string;
  report: string;
  codec: string | null;
  data: Uint8Array | null;
  at: number;
  repaired: number;
}

const h = heldReports;
const selectHeld = `SELECT "${h.executionId.name}" AS executionId, "${h.report.name}" AS report, "${h.codec.name}" AS codec, "${h.data.name}" AS data, "${h.receivedAt.name}" AS at, "${h.repaired.name}" AS repaired FROM "${getTableName(h)}"`;

const heldOf = (row: HeldRow): HeldReport => ({ report: decodeHeld(row), at: row.at, repaired: row.repaired === 1 });

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
    deleteHeld: db.delete(heldReports).where(eq(heldReports.executionId, byId.id)).returning({ cost: heldCost }).prepare(),
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
    deleteRejectedOf: db.delete(rejectedReports).where(eq(rejectedReports.randomId, byId.id)).returning(leaving).prepare(),
    deleteHeldReturning: db.delete(heldReports).where(eq(heldReports.randomId, byId.id)).returning({ cost: heldCost, executionId: heldReports.executionId }).prepare(),
    insertRejected: db.insert(rejectedReports).values(placeholdersFor(rejectedReports)).prepare(),
    setFoldedUntil: db
      .insert(rollupState)
      .values({ id: 1, foldedUntil: sql.placeholder("until") })
      .onConflictDoUpdate({ target: rollupState.id, set: { foldedUntil: sql`excluded.folded_until` } })
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
      .onConflictDoUpdate({ target: expiryState.id, set: { checkedUntil: sql`min(${expiryState.checkedUntil}, excluded.checked_until)` } })
      .prepare(),
    copyMark: db.select({ id: copyMarks.rejectedId }).from(copyMarks).where(eq(copyMarks.source, sql.placeholder("source"))).prepare(),
    setCopyMark: db
      .insert(copyMarks)
      .values({ source: sql.placeholder("source"), rejectedId: sql.placeholder("id") })
      .onConflictDoUpdate({ target: copyMarks.source, set: { rejectedId: sql`excluded.rejected_id` } })
      .prepare(),
    getSignature: db.select().from(errorSignatures).where(eq(errorSignatures.id, byId.id)).prepare(),
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
interface BatchEffects {
  deltas: RollupDeltas;
  sightings: SignatureSightings;
  /** Deltas whose open-hour counts go into memory once the batch has committed. */
  open: RollupDeltas[];
  /** Set when the batch folds: hours before it leave memory after COMMIT. */
  foldedTo: number | null;
  /** Set when the batch held a report: the held budget is checked before COMMIT. */
  held: boolean;
}

/** A cell a write can merge into: every part parsed (a reader may have parsed only one). */
const whole = (cell: CachedCell): boolean => cell.have.size === ALL_PARTS.length;

/** Held reports applied on their own per statement while the held budget is exceeded. */
const OVERFLOW_CHUNK = 64;

export function createSqliteWrites(
  sqlite: Database,
  db: Db,
  reads: SqliteReads,
  cells: CellCache,
  openHours: OpenHours,
  oldHours: OldHours,
  limits: { current: StoreLimits },
  relayPolicy: { current: RelayPolicy | null },
) {
  const q = prepareStatements(db);
  const hot = prepareHotStatements(sqlite);
  const counters = new Counters(sqlite);
  const log = createLogBudget(sqlite, counters, limits);
  const alerts = createAlertWrites(db);
  const issues = createIssueWrites(db);
  const relay = createSqliteRelay(sqlite, counters, relayPolicy);

  /**
   * Logs `r` (a refusal or a repair) within the log's budget (budgets.ts): whole, head only, or
   * counted only; `headOnly`: its body's head only, with the whole body's size and hash.
   */
  const logRejection = (r: Rejection, at: number, result: string | null, headOnly = false) => {
    const placed = log.place(r, headOnly ? { size: r.body.byteLength, hash: null } : null);
    if (placed) q.insertRejected.run({ id: null, receivedAt: at, ...r, result, ...placed, replayedAt: null, replayResult: null });
  };

  const forgetHeld = (costs: readonly { cost: number }[]) => {
    for (const { cost } of costs) {
      counters.add("held.bytes", -cost);
      counters.add("held.count", -1);
    }
  };

  /**
   * A held report becomes the execution it describes, without its start report (it waited too
   * long, or held reports are past their budget): nothing acknowledged is dropped.
   */
  function applyHeldAlone(row: HeldRow, fx: BatchEffects): void {
    forgetHeld(q.deleteHeld.all({ id: row.executionId }));
    if (reads.getExecution(row.executionId) !== undefined) return; // applied meanwhile
    const held = heldOf(row);
    const execution = executionFromHeld(held, reads.attemptsOf(held.report.randomId) + 1);
    hot.insertExecution.run(execution);
    keepStuckMark(execution);
    count(fx, execution, 1, held.at);
    relay.releaseAlone(execution.executionId, execution);
  }

  /** Past the held budget, the oldest held reports are applied on their own until it fits again. */
  function keepHeldWithinBudget(fx: BatchEffects): void {
    while (counters.get("held.count") > 0 && counters.get("held.bytes") > limits.current.heldBytes) {
      const oldest = hot.oldestHeld.all({ before: Number.MAX_SAFE_INTEGER, limit: OVERFLOW_CHUNK });
      if (oldest.length === 0) return;
      for (const row of oldest) {
        if (counters.get("held.bytes") <= limits.current.heldBytes) return;
        applyHeldAlone(row, fx);
        counters.add("held.overflowed_total", 1);
      }
    }
  }

  /**
   * A repaired body is applied and kept raw in the log, with what its write came to; a duplicate
   * changed nothing and is not logged, repaired or not (docs/decisions/2026-11-21-ingestion.md).
   */
  const logRepair = (op: Extract<ReportWrite, { raw: Uint8Array }>, result: WriteResult, randomId: string) => {
    if (op.repairs.length === 0 || result.kind === "duplicate") return;
    logRejection(
      { endpoint: op.endpoint, reason: "repaired", field: null, message: `body repaired (${op.repairs.join(", ")}) and ${result.kind}`, randomId, body: op.raw },
      op.at,
      result.kind,
      op.headOnly,
    );
  };

  function heldFor(executionId: string): HeldReport | null {
    const held = hot.findHeld.get({ id: executionId });
    return held ? heldOf(held) : null;
  }

  /** The stuck mark as this batch sees it; null until read. */
  let stuckMark: number | null = null;

  /**
   * An execution in progress created before the stuck mark (import, replay at a report's own
   * time, a held report applied late) lowers it, or the stuck job would never look at it again
   * ("every execution created before the mark is final or was expired").
   */
  function keepStuckMark(execution: Execution): void {
    if (execution.outcome !== "in_progress") return;
    // Read once per batch: inside the transaction only this batch moves it (below and stuck-checked).
    stuckMark ??= q.stuckMark.get()?.t ?? 0;
    if (execution.createdAt >= stuckMark) return;
    q.lowerStuckMark.run({ to: execution.createdAt });
    stuckMark = execution.createdAt;
  }

  function applyReport(op: Extract<WriteOp, { kind: "report" }>, fx: BatchEffects): ResultFor<typeof op> {
    const { report } = op;
    const current = reads.getExecution(report.executionId);
    // The held reports' count is read once per batch (budgets): with none held, nothing to look up.
    const held = current === undefined && counters.get("held.count") > 0 ? heldFor(report.executionId) : null;
    const repaired = op.repairs.length > 0;
    const attempt = current === undefined ? reads.attemptsOf(report.randomId) + 1 : current.attempt;
    const decided = decide(current, report, { at: op.at, attempt, held, repaired });
    // Not held (its client's share is used up): applied on its own now, as it would be when it expired.
    const decision = decided.kind === "hold" && op.holdable === false ? { kind: "insert" as const, row: executionFromHeld({ report, at: op.at, repaired }, attempt) } : decided;
    let result: ResultFor<typeof op>;
    switch (decision.kind) {
      case "insert":
        hot.insertExecution.run(decision.row);
        keepStuckMark(decision.row);
        count(fx, decision.row, 1, op.at);
        relay.queue(report, decision.row, op.at);
        if (held) {
          forgetHeld(q.deleteHeld.all({ id: report.executionId }));
          relay.releaseAfterStart(report.executionId, decision.row);
        }
        result = { kind: "created", outcome: decision.row.outcome };
        break;
      case "update":
        (sameKeys(current!, decision.row) ? hot.updateExecution : hot.replaceExecution).run(decision.row);
        recount(fx, current!, decision.row, op.at);
        relay.queue(report, decision.row, op.at);
        result = { kind: "updated", outcome: decision.row.outcome };
        break;
      case "duplicate":
        // The status stands; a gap filled (a start's time after a ping, fields a ping lacked) is
        // written and recounted, and relayed: the upstream has not seen that report either.
        if (decision.row) {
          (sameKeys(current!, decision.row) ? hot.updateExecution : hot.replaceExecution).run(decision.row);
          recount(fx, current!, decision.row, op.at);
          relay.queue(report, decision.row, op.at);
        }
        if (decision.conflict) {
          logRejection({ endpoint: op.endpoint, reason: "already_final", field: "status", message: decision.conflict, randomId: report.randomId, body: op.raw }, op.at, "duplicate", op.headOnly);
        }
        result = { kind: "duplicate" };
        break;
      case "hold": {
        // A newer progress update replaces a held one: its cost leaves the budget first.
        forgetHeld(q.deleteHeld.all({ id: report.executionId }));
        const columns = encodeHeld(report);
        q.insertHeld.run({ executionId: report.executionId, randomId: report.randomId, receivedAt: op.at, repaired, ...columns });
        counters.add("held.bytes", columns.cost);
        counters.add("held.count", 1);
        relay.hold(report, op.at);
        fx.held = true;
        result = { kind: "held" };
        break;
      }
      case "already-final": {
        const message = `install ${report.randomId} already has a final status (${decision.outcome}); update not applied`;
        logRejection({ endpoint: op.endpoint, reason: "already_final", field: "status", message, randomId: report.randomId, body: op.raw }, op.at, null, op.headOnly);
        return { kind: "already-final", outcome: decision.outcome };
      }
    }
    logRepair(op, result, report.randomId);
    return result;
  }

  const { labels } = reads;
  /**
   * Cells a batch counts into, in place: each stored cell parsed whole (from the cache, or read)
   * the first time the batch touches it, and written back once at the end (storeTouched). A failed
   * transaction clears the cache, so nothing counted in a rolled-back batch outlives it.
   */
  const touched = new Map<string, { key: RollupKey; cell: CachedCell }>();
  const touch = (key: RollupKey): RollupData => {
    const id = cellKey(key.grain, key.bucket, key.app);
    let t = touched.get(id);
    if (!t) {
      let cell = cells.get(id);
      if (!cell || !whole(cell)) {
        cell = { have: new Set(ALL_PARTS), data: reads.storedCell(key.grain, key.app, key.bucket) ?? emptyData() };
        cells.set(id, cell);
      }
      touched.set(id, (t = { key, cell }));
    }
    return t.cell.data;
  };
  /** Deltas counted straight into the touched cells. */
  const deltasFrom = (foldedUntil: number) => new RollupDeltas(foldedUntil, storedSlicesOf, touch);

  /** Writes back every cell the batch touched (or removes it, when nothing is counted in it any more). */
  function storeTouched(): void {
    for (const [id, { key, cell }] of touched) {
      // Hours counted from this day's records (old-hours.ts) no longer hold.
      if (key.grain === GRAINS.day) oldHours.forgetDay(key.bucket);
      const row = { grain: key.grain, slice: labels.id(key.app), bucket: key.bucket };
      if (isEmpty(cell.data)) {
        hot.deleteRollup.run(row);
        cells.delete(id);
        continue;
      }
      hot.putRollup.run({ ...row, ...encodeCell(cell.data, isAllApps(key.app), labels) });
      cells.set(id, cell);
    }
    touched.clear();
  }

  function mergeSightings(sightings: SignatureSightings): void {
    for (const [id, seen] of sightings.seen) {
      const stored = q.getSignature.get({ id });
      const apps = new Set<string>(stored ? (JSON.parse(stored.apps) as string[]) : []);
      for (const app of seen.apps) apps.add(app);
      q.putSignature.run({
        id,
        signature: seen.signature,
        example: stored?.example ?? seen.example,
        firstSeen: Math.min(stored?.firstSeen ?? seen.firstSeen, seen.firstSeen),
        lastSeen: Math.max(stored?.lastSeen ?? seen.lastSeen, seen.lastSeen),
        apps: JSON.stringify([...apps].sort()),
      });
    }
  }

  function fold(op: Extract<WriteOp, { kind: "fold" }>, fx: BatchEffects): ResultFor<typeof op> {
    const from = fx.deltas.foldedUntil;
    if (op.until <= from) return { kind: "folded", hours: 0 };
    storeTouched();
    fx.open.push(fx.deltas);
    // The hours' cells as they stand with this batch's writes so far (memory changes only after COMMIT).
    const pending = fx.open.flatMap((d) => [...d.openCells().values()].map(({ key, data }) => ({ slice: key.app, bucket: key.bucket, data })));
    const folding = deltasFrom(op.until);
    const hours = new Set<number>();
    for (const { slice, bucket, data } of [...openHours.cellsOf(null, from, op.until), ...pending]) {
      if (bucket < from || bucket >= op.until) continue;
      folding.foldHour(slice, bucket, data);
      hours.add(bucket);
    }
    storeTouched();
    q.setFoldedUntil.run({ until: op.until });
    // Hours that leave the hour cells: their days' cells hold them.
    hot.dropOldHours.run({ before: hoursFrom(op.until) });
    fx.deltas = deltasFrom(op.until);
    fx.foldedTo = op.until;
    return { kind: "folded", hours: hours.size };
  }

  function apply(op: WriteOp, fx: BatchEffects): WriteResult {
    switch (op.kind) {
      case "report":
        return applyReport(op, fx);
      case "reject":
        logRejection(op.rejection, op.at, null, op.headOnly);
        return { kind: "logged" };
      case "load": {
        const { execution } = op;
        if (hot.insertExecution.run(execution).changes === 0) return { kind: "duplicate" };
        keepStuckMark(execution);
        count(fx, execution, 1, execution.updatedAt);
        return { kind: "created", outcome: execution.outcome };
      }
      case "load-held": {
        const { report, at, repaired } = op.held;
        if (reads.getExecution(report.executionId) !== undefined || hot.findHeld.get({ id: report.executionId })) return { kind: "duplicate" };
        const columns = encodeHeld(report);
        q.insertHeld.run({ executionId: report.executionId, randomId: report.randomId, receivedAt: at, repaired, ...columns });
        counters.add("held.bytes", columns.cost);
        counters.add("held.count", 1);
        fx.held = true;
        return { kind: "created" };
      }
      case "load-rejected": {
        const { entry, source } = op;
        if (entry.id <= (q.copyMark.get({ source })?.id ?? 0)) return { kind: "duplicate" };
        q.setCopyMark.run({ source, id: entry.id });
        const rejection: Rejection = { endpoint: entry.endpoint, reason: entry.reason, field: entry.field, message: entry.message, randomId: entry.randomId, body: entry.body };
        const placed = log.place(rejection, entry.bodyKept ? null : { size: entry.bodySize, hash: entry.bodySha256 });
        if (!placed) return { kind: "dropped" };
        q.insertRejected.run({ id: null, receivedAt: entry.receivedAt, ...rejection, result: entry.result, ...placed, replayedAt: entry.replayedAt, replayResult: entry.replayResult });
        return { kind: "created", bodyKept: placed.bodyStore !== "head" || placed.body.byteLength >= placed.bodySize };
      }
      case "delete": {
        const records = reads.getExecutions(op.randomId);
        if (records.length > 0) hot.deleteExecutions.run(encodeId(op.randomId));
        for (const record of records) count(fx, record, -1, op.at);
        const held = q.deleteHeldReturning.all({ id: op.randomId });
        forgetHeld(held);
        const logged = q.deleteRejectedOf.all({ id: op.randomId });
        log.release(logged);
        // The install's reports waiting to be relayed go too: its executions', and its held reports'.
        relay.forget([...records.map((r) => r.executionId), ...held.map((h) => h.executionId)]);
        return { kind: "deleted", found: records.length > 0 || held.length > 0 || logged.length > 0, executions: records.length };
      }
      case "expire": {
        const record = reads.getExecution(op.executionId);
        if (!record || record.outcome !== "in_progress") return { kind: "expired", changed: false };
        hot.setOutcome.run({ id: encodeId(op.executionId), code: OUTCOMES.indexOf("unknown"), at: op.at });
        count(fx, record, -1, op.at);
        count(fx, { ...record, outcome: "unknown", updatedAt: op.at }, 1, op.at);
        return { kind: "expired", changed: true };
      }
      case "forget-rejected": {
        const gone: LeavingEntry[] = q.forgetRejected.all({ before: op.before });
        log.release(gone);
        return { kind: "forgotten", count: gone.length };
      }
      case "drop-before":
        // One file, no periods: retention deletes installs one by one (maintenance/prune.ts).
        return { kind: "dropped", executions: 0, until: null };
      case "expire-held": {
        const due = hot.oldestHeld.all({ before: op.before, limit: op.limit });
        for (const row of due) applyHeldAlone(row, fx);
        counters.add("held.expired_total", due.length);
        return { kind: "expired-held", count: due.length };
      }
      case "stuck-checked":
        q.moveStuckMark.run({ from: op.from, until: op.until });
        stuckMark = null; // compare-and-set: read again when needed
        return { kind: "marked" };
      case "import-mark":
        q.setCopyMark.run({ source: importMarkName(op.source), id: op.position });
        return { kind: "marked" };
      case "mark-replayed":
        q.markReplayed.run({ id: op.rejectedId, at: op.at, result: op.result });
        return { kind: "marked" };
      case "fold":
        return fold(op, fx);
      case "alert-round":
        return alerts.round(op);
      case "alert-silence":
        return alerts.silence(op);
      case "alert-delivery":
        return alerts.delivery(op);
      case "alert-forget":
        return alerts.forget(op);
      case "relay-claim":
        return relay.claim(op);
      case "relay-settle":
        return relay.settle(op);
      case "relay-control":
        return relay.control(op);
      case "issue-claim":
        return issues.claim(op);
      case "issue-settle":
        return issues.settle(op);
      case "issue-forget":
        return issues.forget(op);
    }
  }

  const rebuildDay = sqlite.transaction((day: number, end: number) => {
    touched.clear();
    const deltas = deltasFrom(openHours.foldedUntil);
    for (const r of reads.iterateExecutions({ from: day, to: end })) deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
    storeTouched(); // month cells add up across the days, as they do when written live
  });

  const writeBatch = sqlite.transaction((ops: readonly WriteOp[]) => {
    touched.clear();
    const fx: BatchEffects = { deltas: deltasFrom(openHours.foldedUntil), sightings: new SignatureSightings(), open: [], foldedTo: null, held: false };
    counters.reset();
    stuckMark = null;
    const results = ops.map((op) => apply(op, fx));
    if (fx.held) keepHeldWithinBudget(fx);
    relay.trim(ops.reduce((at, op) => Math.max(at, op.at), 0));
    counters.flush();
    storeTouched();
    fx.open.push(fx.deltas);
    mergeSightings(fx.sightings);
    return { results, fx };
  });

  return {
    /** The budgets' counters as committed. */
    counters: () => counters.all(),
    /** The relay's outbox as committed. */
    relayStatus: () => relay.status(),
    /** One transaction; after COMMIT, folded hours leave memory and the open-hour counts join it. */
    write(ops: readonly WriteOp[]): WriteResult[] {
      let batch: { results: WriteResult[]; fx: BatchEffects };
      try {
        batch = writeBatch.immediate(ops);
      } catch (e) {
        cells.clear(); // it may hold merges that were rolled back
        oldHours.clear();
        labels.rollback();
        counters.reset();
        throw e;
      }
      labels.commit();
      const { results, fx } = batch;
      if (fx.foldedTo !== null) openHours.folded(fx.foldedTo);
      for (const d of fx.open) openHours.apply(d.open);
      return results;
    },

    /** Recounts the folded part of one day from its records into the stored cells (rebuild). */
    rebuildDay(day: number, end: number): void {
      try {
        rebuildDay.immediate(day, end);
      } catch (e) {
        cells.clear();
        labels.rollback();
        throw e;
      }
      labels.commit();
    },
  };
}
