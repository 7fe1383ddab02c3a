// SQLite implementation of the Store: one connection, prepared statements, one transaction per batch.
import type { Database } from "bun:sqlite";
import { eq, sql, getTableColumns, type Placeholder } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./database.ts";
import { installs, heldUpdates, rejectedReports } from "./schema.ts";
import { RESULT_STATUS, type Rejection, type Store, type WriteOp, type WriteResult } from "./store.ts";
import { isFinal } from "../ingest/outcome.ts";

type Placeholders<T extends SQLiteTable> = { [K in keyof T["$inferInsert"]]-?: Placeholder<string & K> };

/** A placeholder for every column, so an insert can be prepared once and filled per row. */
function placeholdersFor<T extends SQLiteTable>(table: T): Placeholders<T> {
  const columns = Object.keys(getTableColumns(table));
  return Object.fromEntries(columns.map((name) => [name, sql.placeholder(name)])) as Placeholders<T>;
}

const byId = { id: sql.placeholder("id") };

function prepareStatements(db: Db) {
  return {
    findInstall: db
      .select({ outcome: installs.outcome, createdAt: installs.createdAt })
      .from(installs)
      .where(eq(installs.randomId, byId.id))
      .prepare(),
    getInstall: db.select().from(installs).where(eq(installs.randomId, byId.id)).prepare(),
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
    insertRejected: db
      .insert(rejectedReports)
      .values(placeholdersFor(rejectedReports))
      .prepare(),
  };
}

export function createSqliteStore(sqlite: Database, db: Db): Store {
  const q = prepareStatements(db);

  const logRejection = (r: Rejection, at: number) =>
    q.insertRejected.run({ id: null, receivedAt: at, ...r, body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) });

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

  function applyStart(op: Extract<WriteOp, { kind: "start" }>): WriteResult {
    const { report } = op;
    if (q.findInstall.get({ id: report.randomId })) return { kind: "duplicate" };
    const held = q.findHeld.get({ id: report.randomId });
    const repaired = op.repairs.length > 0 || (held?.repaired ?? false);
    q.insertInstall.run({
      ...report,
      // A final status that arrived first wins over the start report's "installing";
      // its duration is unknown, since it came before the start.
      status: held?.status ?? report.status,
      outcome: held?.outcome ?? report.outcome,
      error: held?.error ?? report.error,
      createdAt: op.at,
      updatedAt: op.at,
      durationMs: null,
      repaired,
    });
    if (held) q.deleteHeld.run({ id: report.randomId });
    const result: WriteResult = { kind: "created", outcome: held?.outcome ?? report.outcome };
    logRepair(op, result, report.randomId);
    return result;
  }

  function applyUpdate(op: Extract<WriteOp, { kind: "update" }>): WriteResult {
    const { update } = op;
    const record = q.findInstall.get({ id: update.randomId });
    const current = record?.outcome ?? q.findHeld.get({ id: update.randomId })?.outcome;
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
      q.finishInstall.run({
        id: update.randomId,
        status: update.status,
        outcome: update.outcome,
        error: update.error,
        updatedAt: op.at,
        durationMs: isFinal(update.outcome) ? Math.max(0, op.at - record.createdAt) : null,
        repaired,
      });
      result = { kind: "updated", outcome: update.outcome };
    } else {
      q.upsertHeld.run({ ...update, receivedAt: op.at, repaired });
      result = { kind: "held" };
    }
    logRepair(op, result, update.randomId);
    return result;
  }

  function apply(op: WriteOp): WriteResult {
    switch (op.kind) {
      case "start":
        return applyStart(op);
      case "update":
        return applyUpdate(op);
      case "reject":
        logRejection(op.rejection, op.at);
        return { kind: "logged" };
    }
  }

  const writeBatch = sqlite.transaction((ops: readonly WriteOp[]) => ops.map(apply));

  return {
    write: (ops) => writeBatch.immediate(ops),
    getInstall: (randomId) => q.getInstall.get({ id: randomId }),
    close: () => sqlite.close(),
  };
}
