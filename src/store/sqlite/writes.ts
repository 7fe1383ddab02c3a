// The write side of the SQLite engine: every write op applied inside one transaction per batch,
// rollup deltas and error-signature sightings merged into their rows before COMMIT, the open
// hours' counts handed to memory after it.
import type { Database } from "bun:sqlite";
import { and, eq, lt, sql, getTableColumns, getTableName, type Placeholder } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { SignatureSightings, failureSignatureId } from "../../domain/error-signature.ts";
import type { Install } from "../../domain/install.ts";
import { deriveOutcome, isFinal, type Outcome } from "../../domain/outcome.ts";
import type { Rejection } from "../../domain/rejection.ts";
import { RollupDeltas, emptyData, fromColumns, isEmpty, mergeInto, toColumns, type RollupColumns, type RollupKey } from "../../domain/rollup.ts";
import type { ReportWrite, ResultFor, WriteOp, WriteResult } from "../contract.ts";
import { ALL_PARTS, cellKey, type CachedCell, type CellCache } from "./cell-cache.ts";
import type { Db } from "./database.ts";
import type { OpenHours } from "./open-hours.ts";
import type { SqliteReads } from "./reads.ts";
import { errorSignatures, expiryState, heldUpdates, installs, rejectedReports, rollupState, rollups } from "./schema.ts";

type Placeholders<T extends SQLiteTable> = { [K in keyof T["$inferInsert"]]-?: Placeholder<string & K> };

/** A placeholder for every column, so an insert can be prepared once and filled per row. */
function placeholdersFor<T extends SQLiteTable>(table: T): Placeholders<T> {
  const columns = Object.keys(getTableColumns(table));
  return Object.fromEntries(columns.map((name) => [name, sql.placeholder(name)])) as Placeholders<T>;
}

const byId = { id: sql.placeholder("id") };

/** An INSERT of every column of `table`, each bound by its property name. */
function insertAll<T extends SQLiteTable>(table: T, tail: string): string {
  const columns = Object.entries(getTableColumns(table));
  return `INSERT INTO "${getTableName(table)}" (${columns.map(([, c]) => `"${c.name}"`).join(", ")}) VALUES (${columns.map(([key]) => `$${key}`).join(", ")}) ${tail}`;
}

/**
 * Statements run for every report and every rollup cell of a batch, prepared on bun:sqlite
 * directly: Drizzle's per-call placeholder filling and row mapping cost as much as the
 * statements themselves there. The SQL is built from the schema, so names cannot drift.
 */
function prepareHotStatements(sqlite: Database) {
  const cell = `"${rollups.grain.name}" = $grain AND "${rollups.app.name}" = $app AND "${rollups.bucket.name}" = $bucket`;
  return {
    /** changes is 0 when the random_id is stored already (a duplicate). */
    insertInstall: sqlite.query<never, Install>(insertAll(installs, "ON CONFLICT DO NOTHING")),
    findHeld: sqlite.query<{ status: string; outcome: Outcome; error: string | null; repaired: number }, { id: string }>(
      `SELECT "${heldUpdates.status.name}" AS status, "${heldUpdates.outcome.name}" AS outcome, "${heldUpdates.error.name}" AS error, "${heldUpdates.repaired.name}" AS repaired FROM "${getTableName(heldUpdates)}" WHERE "${heldUpdates.randomId.name}" = $id`,
    ),
    getRollup: sqlite.query<RollupColumns, Record<keyof RollupKey, string | number>>(
      `SELECT "${rollups.data.name}" AS data, "${rollups.apps.name}" AS apps, "${rollups.errors.name}" AS errors FROM "${getTableName(rollups)}" WHERE ${cell}`,
    ),
    putRollup: sqlite.query<never, Record<keyof RollupKey | keyof RollupColumns, string | number>>(
      `INSERT INTO "${getTableName(rollups)}" ("${rollups.grain.name}", "${rollups.app.name}", "${rollups.bucket.name}", "${rollups.data.name}", "${rollups.apps.name}", "${rollups.errors.name}") VALUES ($grain, $app, $bucket, $data, $apps, $errors)
       ON CONFLICT DO UPDATE SET "${rollups.data.name}" = excluded."${rollups.data.name}", "${rollups.apps.name}" = excluded."${rollups.apps.name}", "${rollups.errors.name}" = excluded."${rollups.errors.name}"`,
    ),
    deleteRollup: sqlite.query<never, Record<keyof RollupKey, string | number>>(`DELETE FROM "${getTableName(rollups)}" WHERE ${cell}`),
    finishInstall: sqlite.query<never, Pick<Install, "randomId" | "status" | "outcome" | "error" | "updatedAt" | "durationMs" | "repaired">>(
      `UPDATE "${getTableName(installs)}" SET ${(["status", "outcome", "error", "updatedAt", "durationMs"] as const).map((k) => `"${installs[k].name}" = $${k}`).join(", ")}, "${installs.repaired.name}" = "${installs.repaired.name}" OR $repaired WHERE "${installs.randomId.name}" = $randomId`,
    ),
  };
}

function prepareStatements(db: Db) {
  return {
    upsertHeld: db
      .insert(heldUpdates)
      .values(placeholdersFor(heldUpdates))
      .onConflictDoUpdate({
        target: heldUpdates.randomId,
        set: {
          status: sql`excluded.status`,
          outcome: sql`excluded.outcome`,
          error: sql`excluded.error`,
          receivedAt: sql`excluded.received_at`,
          repaired: sql`excluded.repaired`,
        },
      })
      .prepare(),
    deleteHeld: db.delete(heldUpdates).where(eq(heldUpdates.randomId, byId.id)).prepare(),
    deleteInstall: db.delete(installs).where(eq(installs.randomId, byId.id)).prepare(),
    forgetRejected: db
      .delete(rejectedReports)
      .where(lt(rejectedReports.receivedAt, sql.placeholder("before")))
      .returning({ id: rejectedReports.id })
      .prepare(),
    markReplayed: db
      .update(rejectedReports)
      .set({ replayedAt: sql`${sql.placeholder("at")}`, replayResult: sql`${sql.placeholder("result")}` })
      .where(eq(rejectedReports.id, sql.placeholder("id")))
      .prepare(),
    deleteRejectedOf: db.delete(rejectedReports).where(eq(rejectedReports.randomId, byId.id)).returning({ id: rejectedReports.id }).prepare(),
    deleteHeldReturning: db.delete(heldUpdates).where(eq(heldUpdates.randomId, byId.id)).returning({ id: heldUpdates.randomId }).prepare(),
    setOutcome: db
      .update(installs)
      .set({ outcome: sql`${sql.placeholder("outcome")}`, updatedAt: sql`${sql.placeholder("updatedAt")}` })
      .where(eq(installs.randomId, byId.id))
      .prepare(),
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
    lowerStuckMark: db
      .insert(expiryState)
      .values({ id: 1, checkedUntil: sql.placeholder("to") })
      .onConflictDoUpdate({ target: expiryState.id, set: { checkedUntil: sql`min(${expiryState.checkedUntil}, excluded.checked_until)` } })
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
}

/** A cell a write can merge into: every part parsed (a reader may have parsed only one). */
const whole = (cell: CachedCell): boolean => cell.have.size === ALL_PARTS.length;

export function createSqliteWrites(sqlite: Database, db: Db, reads: SqliteReads, cells: CellCache, openHours: OpenHours) {
  const q = prepareStatements(db);
  const hot = prepareHotStatements(sqlite);

  const logRejection = (r: Rejection, at: number, result: string | null) =>
    q.insertRejected.run({ id: null, receivedAt: at, ...r, result, body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength), replayedAt: null, replayResult: null });

  /** A repaired body is applied and kept raw in the log, with what its write came to. */
  const logRepair = (op: Extract<ReportWrite, { raw: Uint8Array }>, result: WriteResult, randomId: string) => {
    if (op.repairs.length === 0) return;
    logRejection(
      { endpoint: op.endpoint, reason: "repaired", field: null, message: `body repaired (${op.repairs.join(", ")}) and ${result.kind}`, randomId, body: op.raw },
      op.at,
      result.kind,
    );
  };

  /** Counts `row` into the rollups with `sign`; a failure's error text is also a sighting. */
  function count(fx: BatchEffects, row: Install, sign: 1 | -1, at: number): void {
    fx.deltas.add(row, row.outcome, sign, failureSignatureId(row.outcome, row.error));
    if (sign === 1 && row.outcome === "failed" && row.error !== null) fx.sightings.see(row.error, row.nsapp, at);
  }

  function applyStart(op: Extract<WriteOp, { kind: "start" }>, fx: BatchEffects): ResultFor<typeof op> {
    const { report } = op;
    const held = hot.findHeld.get({ id: report.randomId });
    const row: Install = {
      ...report,
      // A final status that arrived first wins over the start report's "installing";
      // its duration is unknown, since it came before the start.
      status: held?.status ?? report.status,
      outcome: held?.outcome ?? report.outcome,
      error: held?.error ?? report.error,
      createdAt: op.at,
      updatedAt: op.at,
      durationMs: null,
      repaired: op.repairs.length > 0 || held?.repaired === 1,
    };
    // A held update exists only while its start report is not stored, so a duplicate has none.
    if (hot.insertInstall.run(row).changes === 0) return { kind: "duplicate" };
    if (held) q.deleteHeld.run({ id: report.randomId });
    count(fx, row, 1, op.at);
    const result = { kind: "created", outcome: row.outcome } as const;
    logRepair(op, result, report.randomId);
    return result;
  }

  function applyUpdate(op: Extract<WriteOp, { kind: "update" }>, fx: BatchEffects): ResultFor<typeof op> {
    const { update } = op;
    const record = reads.getInstall(update.randomId);
    // A record is open while its status is a progress status, even if it timed out (expire):
    // the late final status still applies then.
    const current = record ? deriveOutcome(record.status, null) : hot.findHeld.get({ id: update.randomId })?.outcome;
    if (current !== undefined && isFinal(current)) {
      const message = `install ${update.randomId} already has a final status (${current}); update not applied`;
      logRejection({ endpoint: op.endpoint, reason: "already_final", field: "status", message, randomId: update.randomId, body: op.raw }, op.at, null);
      return { kind: "already-final", outcome: current };
    }
    const repaired = op.repairs.length > 0;
    let result: ResultFor<typeof op>;
    if (record) {
      const updated: Install = {
        ...record,
        status: update.status,
        outcome: update.outcome,
        error: update.error,
        updatedAt: op.at,
        durationMs: isFinal(update.outcome) ? Math.max(0, op.at - record.createdAt) : null,
        repaired: record.repaired || repaired,
      };
      const { randomId, status, outcome, error, updatedAt, durationMs } = updated;
      hot.finishInstall.run({ randomId, status, outcome, error, updatedAt, durationMs, repaired: updated.repaired });
      count(fx, record, -1, op.at);
      count(fx, updated, 1, op.at);
      result = { kind: "updated", outcome: update.outcome };
    } else {
      q.upsertHeld.run({ ...update, receivedAt: op.at, repaired });
      result = { kind: "held" };
    }
    logRepair(op, result, update.randomId);
    return result;
  }

  /** Merges a batch's deltas into the stored cells, through the cell cache. */
  function mergeRollups(deltas: RollupDeltas): void {
    for (const { key, data } of deltas.cells.values()) {
      const id = cellKey(key.grain, key.bucket, key.app);
      let cell = cells.get(id);
      if (!cell || !whole(cell)) {
        const stored = hot.getRollup.get(key);
        cell = { have: new Set(ALL_PARTS), data: stored ? fromColumns(stored) : emptyData() };
      }
      mergeInto(cell.data, data);
      if (isEmpty(cell.data)) {
        hot.deleteRollup.run(key);
        cells.delete(id);
        continue;
      }
      hot.putRollup.run({ ...key, ...toColumns(cell.data) });
      cells.set(id, cell);
    }
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
    mergeRollups(fx.deltas);
    fx.open.push(fx.deltas);
    // The hours' cells as they stand with this batch's writes so far (memory changes only after COMMIT).
    const pending = fx.open.flatMap((d) => [...d.openCells().values()].map(({ key, data }) => ({ app: key.app, bucket: key.bucket, data })));
    const folding = new RollupDeltas(op.until);
    const hours = new Set<number>();
    for (const { app, bucket, data } of [...openHours.cellsOf(null, from, op.until), ...pending]) {
      if (bucket < from || bucket >= op.until) continue;
      folding.foldHour(app, bucket, data);
      hours.add(bucket);
    }
    mergeRollups(folding);
    q.setFoldedUntil.run({ until: op.until });
    fx.deltas = new RollupDeltas(op.until);
    fx.foldedTo = op.until;
    return { kind: "folded", hours: hours.size };
  }

  function apply(op: WriteOp, fx: BatchEffects): WriteResult {
    switch (op.kind) {
      case "start":
        return applyStart(op, fx);
      case "update":
        return applyUpdate(op, fx);
      case "reject":
        logRejection(op.rejection, op.at, null);
        return { kind: "logged" };
      case "load": {
        if (hot.insertInstall.run(op.install).changes === 0) return { kind: "duplicate" };
        if (op.install.outcome === "in_progress") q.lowerStuckMark.run({ to: op.install.createdAt });
        count(fx, op.install, 1, op.install.updatedAt);
        return { kind: "created", outcome: op.install.outcome };
      }
      case "delete": {
        const record = reads.getInstall(op.randomId);
        if (record) {
          q.deleteInstall.run({ id: op.randomId });
          count(fx, record, -1, op.at);
        }
        const held = q.deleteHeldReturning.all({ id: op.randomId }).length > 0;
        const logged = q.deleteRejectedOf.all({ id: op.randomId }).length > 0;
        return { kind: "deleted", found: record !== undefined || held || logged };
      }
      case "expire": {
        const record = reads.getInstall(op.randomId);
        if (!record || record.outcome !== "in_progress") return { kind: "expired", changed: false };
        q.setOutcome.run({ id: op.randomId, outcome: "unknown", updatedAt: op.at });
        count(fx, record, -1, op.at);
        count(fx, { ...record, outcome: "unknown", updatedAt: op.at }, 1, op.at);
        return { kind: "expired", changed: true };
      }
      case "forget-rejected":
        return { kind: "forgotten", count: q.forgetRejected.all({ before: op.before }).length };
      case "stuck-checked":
        q.moveStuckMark.run({ from: op.from, until: op.until });
        return { kind: "marked" };
      case "mark-replayed":
        q.markReplayed.run({ id: op.rejectedId, at: op.at, result: op.result });
        return { kind: "marked" };
      case "fold":
        return fold(op, fx);
    }
  }

  const writeBatch = sqlite.transaction((ops: readonly WriteOp[]) => {
    const fx: BatchEffects = { deltas: new RollupDeltas(openHours.foldedUntil), sightings: new SignatureSightings(), open: [], foldedTo: null };
    const results = ops.map((op) => apply(op, fx));
    mergeRollups(fx.deltas);
    fx.open.push(fx.deltas);
    mergeSightings(fx.sightings);
    return { results, fx };
  });

  return {
    /** One transaction; after COMMIT, folded hours leave memory and the open-hour counts join it. */
    write(ops: readonly WriteOp[]): WriteResult[] {
      let batch: { results: WriteResult[]; fx: BatchEffects };
      try {
        batch = writeBatch.immediate(ops);
      } catch (e) {
        cells.clear(); // it may hold merges that were rolled back
        throw e;
      }
      const { results, fx } = batch;
      if (fx.foldedTo !== null) openHours.folded(fx.foldedTo);
      for (const d of fx.open) openHours.apply(d.open);
      return results;
    },

    /** Recounts the folded part of one day from its records into the stored cells (rebuild). */
    rebuildDay: sqlite.transaction((day: number, end: number) => {
      const deltas = new RollupDeltas(openHours.foldedUntil);
      for (const r of reads.iterateInstalls({ from: day, to: end })) deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
      mergeRollups(deltas); // month cells add up across the days, as they do when written live
    }),
  };
}
