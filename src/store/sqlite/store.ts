// SQLite implementation of the Store: one connection, prepared statements, one transaction per batch.
import type { Database } from "bun:sqlite";
import { and, eq, lt, sql, getTableColumns, getTableName, type Placeholder } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./database.ts";
import { installs, heldUpdates, rejectedReports, rollups, rollupState, expiryState, errorSignatures, type InstallRow, type Outcome } from "./schema.ts";
import { RESULT_STATUS, type Rejection, type Store, type WriteOp, type WriteResult } from "../contract.ts";
import { deriveOutcome, isFinal } from "../../domain/outcome.ts";
import { createSqliteReads } from "./reads.ts";
import { ALL_APPS, DAY, GRAINS, RollupDeltas, appSlice, bucketStart, countHour, emptyData, fromColumns, isEmpty, mergeInto, toColumns, type OpenCount, type RollupColumns, type RollupData, type RollupKey } from "../../domain/rollup.ts";
import { SignatureSightings, failureSignatureId } from "../../domain/error-signature.ts";

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
    insertInstall: sqlite.query<never, InstallRow>(insertAll(installs, "ON CONFLICT DO NOTHING")),
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
    finishInstall: sqlite.query<never, Pick<InstallRow, "randomId" | "status" | "outcome" | "error" | "updatedAt" | "durationMs" | "repaired">>(
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
    insertRejected: db
      .insert(rejectedReports)
      .values(placeholdersFor(rejectedReports))
      .prepare(),
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

export function createSqliteStore(sqlite: Database, db: Db): Store {
  const q = prepareStatements(db);
  const hot = prepareHotStatements(sqlite);
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

  /** What one batch changes besides the rows themselves; merged in before COMMIT (open hours: after). */
  interface BatchEffects {
    deltas: RollupDeltas;
    sightings: SignatureSightings;
    /** Deltas of open hours, applied to the in-memory cells once the batch has committed. */
    open: RollupDeltas[];
    /** Set when the batch folds: hours before it leave memory after COMMIT. */
    foldedTo: number | null;
  }

  /** Counts `row` into the rollups with `sign`; a failure's error text is also a sighting. */
  function count(fx: BatchEffects, row: InstallRow, sign: 1 | -1, at: number): void {
    fx.deltas.add(row, row.outcome, sign, failureSignatureId(row.outcome, row.error));
    if (sign === 1 && row.outcome === "failed" && row.error !== null) fx.sightings.see(row.error, row.nsapp, at);
  }

  function applyStart(op: Extract<WriteOp, { kind: "start" }>, fx: BatchEffects): WriteResult {
    const { report } = op;
    const held = hot.findHeld.get({ id: report.randomId });
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
      repaired: op.repairs.length > 0 || held?.repaired === 1,
    };
    // A held update exists only while its start report is not stored, so a duplicate has none.
    if (hot.insertInstall.run(row).changes === 0) return { kind: "duplicate" };
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
    const current = record ? deriveOutcome(record.status, null) : hot.findHeld.get({ id: update.randomId })?.outcome;
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

  // Hot rollup cells stay parsed between batches: batches often touch the same stored cells, and
  // re-parsing them was a third of the write cost. The cache is dropped when a transaction fails
  // (it may hold uncommitted merges) and when another connection wrote to the database (PRAGMA
  // data_version moves), so it never disagrees with the stored rows.
  const cellCache = new Map<string, RollupData>();
  const CELL_CACHE_LIMIT = 4096;

  // Open hours (at or after foldedUntil, see RollupDeltas): their hour cells live here, app ->
  // bucket -> cell, and are never stored until folded. They are a function of the raw records,
  // so they are recounted from them whenever this connection cannot vouch for them: at open, and
  // after another connection wrote or the fold mark moved behind this connection's back.
  let foldedUntil = 0;
  const openCells = new Map<string, Map<number, RollupData>>();
  const dataVersion = sqlite.query<{ data_version: number }, []>("PRAGMA data_version");
  let seenVersion = -1;

  function openCell(app: string, hour: number): RollupData {
    let byBucket = openCells.get(app);
    if (!byBucket) openCells.set(app, (byBucket = new Map()));
    let cell = byBucket.get(hour);
    if (!cell) byBucket.set(hour, (cell = emptyData()));
    return cell;
  }

  /** Counts records into the open cells; cells a removal emptied go, as a recount would not have them. */
  function applyOpen(counts: readonly OpenCount[]): void {
    for (const c of counts) {
      if (c.r.createdAt < foldedUntil) continue; // folded in the same batch
      countHour(openCell, c);
      if (c.sign < 0) for (const app of [ALL_APPS, appSlice(c.r.nsapp)]) dropIfEmpty(app, bucketStart(c.r.createdAt, GRAINS.hour));
    }
  }

  function dropIfEmpty(app: string, hour: number): void {
    const byBucket = openCells.get(app);
    const cell = byBucket?.get(hour);
    if (!byBucket || !cell || !isEmpty(cell)) return;
    byBucket.delete(hour);
    if (byBucket.size === 0) openCells.delete(app);
  }

  function recountOpen(): void {
    cellCache.clear();
    openCells.clear();
    foldedUntil = reads.foldedUntil();
    for (const r of reads.iterateInstalls({ from: foldedUntil })) countHour(openCell, { r, outcome: r.outcome, sign: 1, errorSig: failureSignatureId(r.outcome, r.error) });
  }

  /** Recounts what this connection can no longer vouch for; cheap when nothing changed. */
  function checkState(): void {
    const { data_version } = dataVersion.get()!;
    if (data_version !== seenVersion || reads.foldedUntil() !== foldedUntil) recountOpen();
    seenVersion = data_version;
  }

  function openCellsOf(app: string | null, from: number, to: number): { app: string; bucket: number; data: RollupData }[] {
    const out: { app: string; bucket: number; data: RollupData }[] = [];
    for (const [slice, byBucket] of app === null ? openCells : [[app, openCells.get(app)] as const]) {
      for (const [bucket, data] of byBucket ?? []) if (bucket >= from && bucket < to) out.push({ app: slice, bucket, data });
    }
    return out.sort((a, b) => a.bucket - b.bucket);
  }

  function mergeRollups(deltas: RollupDeltas): void {
    reads.forgetCells(deltas.cells.keys());
    for (const [id, { key, data }] of deltas.cells) {
      let cell = cellCache.get(id);
      if (cell) cellCache.delete(id); // re-inserted below, as most recently used
      else {
        const stored = hot.getRollup.get(key);
        cell = stored ? fromColumns(stored) : emptyData();
      }
      mergeInto(cell, data);
      if (isEmpty(cell)) {
        hot.deleteRollup.run(key);
        continue;
      }
      hot.putRollup.run({ ...key, ...toColumns(cell) });
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
        if (hot.insertInstall.run(op.row).changes === 0) return { kind: "duplicate" };
        if (op.row.outcome === "in_progress") q.lowerStuckMark.run({ to: op.row.createdAt });
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
      case "stuck-checked":
        q.moveStuckMark.run({ from: op.from, until: op.until });
        return { kind: "marked" };
      case "mark-replayed":
        q.markReplayed.run({ id: op.rejectedId, at: op.at, result: op.result });
        return { kind: "marked" };
      case "fold": {
        const from = fx.deltas.foldedUntil;
        if (op.until <= from) return { kind: "folded", hours: 0 };
        mergeRollups(fx.deltas);
        fx.open.push(fx.deltas);
        // The hours' cells as they stand with this batch's writes so far (memory changes only after COMMIT).
        const cells = [...openCellsOf(null, from, op.until), ...fx.open.flatMap((d) => [...d.openCells().values()].map(({ key, data }) => ({ ...key, data })))];
        const folding = new RollupDeltas(op.until);
        const hours = new Set<number>();
        for (const { app, bucket, data } of cells) {
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
    }
  }

  const writeBatch = sqlite.transaction((ops: readonly WriteOp[]) => {
    const fx: BatchEffects = { deltas: new RollupDeltas(foldedUntil), sightings: new SignatureSightings(), open: [], foldedTo: null };
    const results = ops.map((op) => apply(op, fx));
    mergeRollups(fx.deltas);
    fx.open.push(fx.deltas);
    mergeSightings(fx.sightings);
    return { results, fx };
  });

  /** After COMMIT: folded hours leave memory, the batch's open-hour deltas join it. */
  function committed(fx: BatchEffects): void {
    if (fx.foldedTo !== null) {
      foldedUntil = fx.foldedTo;
      for (const [app, byBucket] of openCells) {
        for (const bucket of byBucket.keys()) if (bucket < foldedUntil) byBucket.delete(bucket);
        if (byBucket.size === 0) openCells.delete(app);
      }
    }
    for (const d of fx.open) applyOpen(d.open);
    seenVersion = dataVersion.get()!.data_version; // our own commit does not move it; checked anyway
  }

  recountOpen();
  seenVersion = dataVersion.get()!.data_version;

  return {
    ...reads,

    readRollups({ grain, app, from, to, parts }) {
      checkState();
      if (grain !== GRAINS.hour || to <= foldedUntil) return reads.readRollups({ grain, app, from, to, parts });
      const stored = from < foldedUntil ? reads.readRollups({ grain, app, from, to: foldedUntil, parts }) : [];
      return [...stored, ...openCellsOf(app, Math.max(from, foldedUntil), to)];
    },

    rollupCells(grain, from, to) {
      checkState();
      const stored = reads.rollupCells(grain, from, to);
      return grain === GRAINS.hour ? [...stored, ...openCellsOf(null, Math.max(from, foldedUntil), to)] : stored;
    },

    foldedUntil() {
      checkState();
      return foldedUntil;
    },

    rebuildRollups(onDay) {
      const span = reads.recordSpan();
      sqlite.transaction(() => sqlite.run("DELETE FROM rollups"))();
      reads.forgetCells("all");
      recountOpen();
      if (!span) return;
      const end = Math.min(span.last - (span.last % DAY) + DAY, foldedUntil);
      const rebuildDay = sqlite.transaction((day: number) => {
        const deltas = new RollupDeltas(foldedUntil);
        for (const r of reads.iterateInstalls({ from: day, to: Math.min(day + DAY, foldedUntil) })) deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
        mergeRollups(deltas); // month cells add up across the days, as they do when written live
      });
      for (let day = span.first - (span.first % DAY); day < end; day += DAY) {
        onDay?.(day, end);
        rebuildDay.immediate(day);
      }
    },

    write(ops) {
      checkState();
      let batch: { results: WriteResult[]; fx: BatchEffects };
      try {
        batch = writeBatch.immediate(ops);
      } catch (e) {
        cellCache.clear();
        throw e;
      }
      committed(batch.fx);
      return batch.results;
    },
    close: () => sqlite.close(),
  };
}
