// SQLite implementation of the Store: one connection, prepared statements, one transaction per batch.
import type { Database } from "bun:sqlite";
import { and, eq, gte, lt, sql, getTableColumns, type Placeholder } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./database.ts";
import { installs, heldUpdates, rejectedReports, rollups, rollupState, errorSignatures, type InstallRow } from "./schema.ts";
import { RESULT_STATUS, type Rejection, type Store, type WriteOp, type WriteResult } from "./store.ts";
import { deriveOutcome, isFinal } from "../ingest/outcome.ts";
import { createSqliteReads } from "./sqlite-reads.ts";
import { DAY, GRAINS, RollupDeltas, bucketStart, emptyData, fromColumns, isEmpty, mergeInto, toColumns, type RollupData } from "../report/rollup.ts";
import { SignatureSightings, failureSignatureId } from "../report/error-signature.ts";

type Placeholders<T extends SQLiteTable> = { [K in keyof T["$inferInsert"]]-?: Placeholder<string & K> };

/** A placeholder for every column, so an insert can be prepared once and filled per row. */
function placeholdersFor<T extends SQLiteTable>(table: T): Placeholders<T> {
  const columns = Object.keys(getTableColumns(table));
  return Object.fromEntries(columns.map((name) => [name, sql.placeholder(name)])) as Placeholders<T>;
}

const byId = { id: sql.placeholder("id") };
/** One rollup cell, by its key. */
const cellKey = and(eq(rollups.grain, sql.placeholder("grain")), eq(rollups.app, sql.placeholder("app")), eq(rollups.bucket, sql.placeholder("bucket")));

function prepareStatements(db: Db) {
  return {
    findInstall: db
      .select({ outcome: installs.outcome, createdAt: installs.createdAt })
      .from(installs)
      .where(eq(installs.randomId, byId.id))
      .prepare(),
    insertInstall: db.insert(installs).values(placeholdersFor(installs)).prepare(),
    finishInstall: db
      .update(installs)
      .set({
        status: sql`${sql.placeholder("status")}`,
        outcome: sql`${sql.placeholder("outcome")}`,
        error: sql`${sql.placeholder("error")}`,
        updatedAt: sql`${sql.placeholder("updatedAt")}`,
        durationMs: sql`${sql.placeholder("durationMs")}`,
        repaired: sql`${installs.repaired} OR ${sql.placeholder("repaired")}`,
      })
      .where(eq(installs.randomId, byId.id))
      .prepare(),
    findHeld: db.select().from(heldUpdates).where(eq(heldUpdates.randomId, byId.id)).prepare(),
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
    insertRejected: db
      .insert(rejectedReports)
      .values(placeholdersFor(rejectedReports))
      .prepare(),
    getRollup: db
      .select({ data: rollups.data, apps: rollups.apps, errors: rollups.errors })
      .from(rollups)
      .where(cellKey)
      .prepare(),
    putRollup: db
      .insert(rollups)
      .values({ ...placeholdersFor(rollups), id: sql`NULL` })
      .onConflictDoUpdate({
        target: [rollups.grain, rollups.app, rollups.bucket],
        set: { data: sql`excluded.data`, apps: sql`excluded.apps`, errors: sql`excluded.errors` },
      })
      .prepare(),
    deleteRollup: db
      .delete(rollups)
      .where(cellKey)
      .prepare(),
    firstHourCell: db
      .select({ bucket: sql<number | null>`min(${rollups.bucket})` })
      .from(rollups)
      .where(and(eq(rollups.grain, GRAINS.hour), gte(rollups.bucket, sql.placeholder("from"))))
      .prepare(),
    setFoldedUntil: db
      .insert(rollupState)
      .values({ id: 1, foldedUntil: sql.placeholder("until") })
      .onConflictDoUpdate({ target: rollupState.id, set: { foldedUntil: sql`excluded.folded_until` } })
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

export function createSqliteStore(sqlite: Database, db: Db): Store {
  const q = prepareStatements(db);
  const reads = createSqliteReads(sqlite, db);

  const logRejection = (r: Rejection, at: number) =>
    q.insertRejected.run({ id: null, receivedAt: at, ...r, body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength), replayedAt: null, replayResult: null });

  const logRepair = (op: Extract<WriteOp, { raw: Uint8Array }>, result: WriteResult, randomId: string) => {
    if (op.repairs.length === 0) return;
    logRejection(
      {
        endpoint: op.kind === "start" ? "upload" : "updatestatus",
        reason: "repaired",
        httpStatus: RESULT_STATUS[result.kind],
        field: null,
        message: `body repaired (${op.repairs.join(", ")}) and ${result.kind}`,
        randomId,
        body: op.raw,
      },
      op.at,
    );
  };

  /** What one batch changes besides the rows themselves; merged in before COMMIT. */
  interface BatchEffects {
    deltas: RollupDeltas;
    sightings: SignatureSightings;
  }

  /** Counts `row` into the rollups with `sign`; a failure's error text is also a sighting. */
  function count(fx: BatchEffects, row: InstallRow, sign: 1 | -1, at: number): void {
    fx.deltas.add(row, row.outcome, sign, failureSignatureId(row.outcome, row.error));
    if (sign === 1 && row.outcome === "failed" && row.error !== null) fx.sightings.see(row.error, row.nsapp, at);
  }

  function applyStart(op: Extract<WriteOp, { kind: "start" }>, fx: BatchEffects): WriteResult {
    const { report } = op;
    if (q.findInstall.get({ id: report.randomId })) return { kind: "duplicate" };
    const held = q.findHeld.get({ id: report.randomId });
    const row: InstallRow = {
      ...report,
      // A final status that arrived first wins over the start report's "installing";
      // its duration is unknown, since it came before the start.
      status: held?.status ?? report.status,
      outcome: held?.outcome ?? report.outcome,
      error: held?.error ?? report.error,
      createdAt: op.at,
      updatedAt: op.at,
      durationMs: null,
      repaired: op.repairs.length > 0 || (held?.repaired ?? false),
    };
    q.insertInstall.run(row);
    if (held) q.deleteHeld.run({ id: report.randomId });
    count(fx, row, 1, op.at);
    const result: WriteResult = { kind: "created", outcome: row.outcome };
    logRepair(op, result, report.randomId);
    return result;
  }

  function applyUpdate(op: Extract<WriteOp, { kind: "update" }>, fx: BatchEffects): WriteResult {
    const { update } = op;
    const record = reads.getInstall(update.randomId);
    // A record is open while its status is a progress status, even if it timed out (expire):
    // the late final status still applies then.
    const current = record ? deriveOutcome(record.status, null) : q.findHeld.get({ id: update.randomId })?.outcome;
    if (current !== undefined && isFinal(current)) {
      logRejection(
        {
          endpoint: "updatestatus",
          reason: "already_final",
          httpStatus: RESULT_STATUS.conflict,
          field: "status",
          message: `install ${update.randomId} already has a final status (${current}); update not applied`,
          randomId: update.randomId,
          body: op.raw,
        },
        op.at,
      );
      return { kind: "conflict", outcome: current };
    }
    const repaired = op.repairs.length > 0;
    let result: WriteResult;
    if (record) {
      const updated: InstallRow = {
        ...record,
        status: update.status,
        outcome: update.outcome,
        error: update.error,
        updatedAt: op.at,
        durationMs: isFinal(update.outcome) ? Math.max(0, op.at - record.createdAt) : null,
        repaired: record.repaired || repaired,
      };
      q.finishInstall.run({ id: update.randomId, ...updated });
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

  // Hot rollup cells stay parsed between batches: most batches touch the same current-hour and
  // current-day cells, and re-parsing them was a third of the write cost. The cache is dropped
  // when a transaction fails (it may hold uncommitted merges) and when another connection wrote
  // to the database (PRAGMA data_version moves), so it never disagrees with the stored rows.
  const cellCache = new Map<string, RollupData>();
  const CELL_CACHE_LIMIT = 4096;
  const dataVersion = sqlite.query("PRAGMA data_version");
  let seenVersion = -1;

  function checkCache(): void {
    const { data_version } = dataVersion.get() as { data_version: number };
    if (data_version !== seenVersion) cellCache.clear();
    seenVersion = data_version;
  }

  function mergeRollups(deltas: RollupDeltas): void {
    for (const [id, { key, data }] of deltas.cells) {
      let cell = cellCache.get(id);
      if (cell) cellCache.delete(id); // re-inserted below, as most recently used
      else {
        const stored = q.getRollup.get(key);
        cell = stored ? fromColumns(stored) : emptyData();
      }
      mergeInto(cell, data);
      if (isEmpty(cell)) {
        q.deleteRollup.run(key);
        continue;
      }
      q.putRollup.run({ ...key, ...toColumns(cell) });
      cellCache.set(id, cell);
      if (cellCache.size > CELL_CACHE_LIMIT) cellCache.delete(cellCache.keys().next().value!);
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

  function apply(op: WriteOp, fx: BatchEffects): WriteResult {
    switch (op.kind) {
      case "start":
        return applyStart(op, fx);
      case "update":
        return applyUpdate(op, fx);
      case "reject":
        logRejection(op.rejection, op.at);
        return { kind: "logged" };
      case "load": {
        if (q.findInstall.get({ id: op.row.randomId })) return { kind: "duplicate" };
        q.insertInstall.run(op.row);
        count(fx, op.row, 1, op.row.updatedAt);
        return { kind: "created", outcome: op.row.outcome };
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
      case "mark-replayed":
        q.markReplayed.run({ id: op.rejectedId, at: op.at, result: op.result });
        return { kind: "marked" };
      case "fold": {
        if (op.until <= fx.deltas.foldedUntil) return { kind: "folded", hours: 0 };
        // The hour cells must hold this batch's writes before they are read.
        mergeRollups(fx.deltas);
        const hours = fold(fx.deltas.foldedUntil, op.until);
        fx.deltas = new RollupDeltas(op.until);
        return { kind: "folded", hours };
      }
    }
  }

  /** Adds hour cells with bucket in [from, until) to day and month cells, a day at a time; returns the hours found. */
  function fold(from: number, until: number): number {
    const hours = new Set<number>();
    const first = q.firstHourCell.get({ from })?.bucket ?? until;
    for (let day = bucketStart(first, GRAINS.day); day < until; day += DAY) {
      const deltas = new RollupDeltas(until);
      for (const c of reads.rollupCells(GRAINS.hour, Math.max(day, from), Math.min(day + DAY, until))) {
        deltas.addHour(c.app, c.bucket, c.data);
        hours.add(c.bucket);
      }
      mergeRollups(deltas);
    }
    q.setFoldedUntil.run({ until });
    return hours.size;
  }

  const writeBatch = sqlite.transaction((ops: readonly WriteOp[]) => {
    checkCache();
    const fx: BatchEffects = { deltas: new RollupDeltas(reads.foldedUntil()), sightings: new SignatureSightings() };
    const results = ops.map((op) => apply(op, fx));
    mergeRollups(fx.deltas);
    mergeSightings(fx.sightings);
    return results;
  });

  return {
    ...reads,
    rebuildRollups(onDay) {
      const span = reads.recordSpan();
      sqlite.transaction(() => sqlite.run("DELETE FROM rollups"))();
      cellCache.clear();
      if (!span) return;
      const end = span.last - (span.last % DAY) + DAY;
      const foldedUntil = reads.foldedUntil();
      const rebuildDay = sqlite.transaction((day: number) => {
        const deltas = new RollupDeltas(foldedUntil);
        for (const r of reads.iterateInstalls({ from: day, to: day + DAY })) deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
        mergeRollups(deltas); // month cells add up across the days, as they do when written live
      });
      for (let day = span.first - (span.first % DAY); day < end; day += DAY) {
        onDay?.(day, end);
        rebuildDay.immediate(day);
      }
    },

    write(ops) {
      try {
        return writeBatch.immediate(ops);
      } catch (e) {
        cellCache.clear();
        throw e;
      }
    },
    close: () => sqlite.close(),
  };
}
