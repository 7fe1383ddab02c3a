// What maintenance reads before it writes: stuck executions, what retention would remove, and the
// rejected-reports log (listing and replay candidates).
import { and, asc, count, desc, eq, gt, gte, inArray, isNotNull, isNull, like, lt, notLike, or, type SQL } from "drizzle-orm";
import type { RejectReason } from "../../domain/rejection.ts";
import type { RejectedEntry } from "../contract.ts";
import type { Db } from "./database.ts";
import { executions, expiryState, heldReports, rejectedReports } from "./schema.ts";

type RejectedRow = typeof rejectedReports.$inferSelect;

const entryOf = ({ body, result, ...row }: RejectedRow): RejectedEntry => ({
  ...row,
  result: result as RejectedEntry["result"],
  body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength),
});

/** The queries behind the contract's MaintenanceReads, synchronous as bun:sqlite is (store.ts adapts them). */
export function createMaintenanceReads(db: Db) {
  const getStuckCheckedUntil = db.select({ t: expiryState.checkedUntil }).from(expiryState).where(eq(expiryState.id, 1)).prepare();
  const countOf = (table: typeof executions | typeof heldReports | typeof rejectedReports, where: SQL) => db.select({ n: count() }).from(table).where(where).get()?.n ?? 0;
  /** Not yet replayed, or replayed with a result that says to try again. */
  const open = (retryPrefix: string) => or(isNull(rejectedReports.replayedAt), like(rejectedReports.replayResult, `${retryPrefix}%`));

  return {
    stuckExecutions(from: number, before: number, limit: number): { executionId: string; createdAt: number }[] {
      return db
        .select({ executionId: executions.executionId, createdAt: executions.createdAt })
        .from(executions)
        .where(and(gte(executions.createdAt, from), lt(executions.createdAt, before), eq(executions.outcome, "in_progress")))
        .orderBy(asc(executions.createdAt))
        .limit(limit)
        .all();
    },

    stuckCheckedUntil: (): number => getStuckCheckedUntil.get()?.t ?? 0,

    countBefore: (cutoff: number) => ({
      executions: countOf(executions, lt(executions.createdAt, cutoff)),
      held: countOf(heldReports, lt(heldReports.receivedAt, cutoff)),
      rejected: countOf(rejectedReports, lt(rejectedReports.receivedAt, cutoff)),
    }),

    heldBefore: (cutoff: number, limit: number): string[] =>
      db.select({ id: heldReports.randomId }).from(heldReports).where(lt(heldReports.receivedAt, cutoff)).limit(limit).all().map((r) => r.id),

    listRejected({ limit, reason, before }: { limit: number; reason?: RejectReason; before?: number }): RejectedEntry[] {
      const where: SQL[] = [];
      if (reason) where.push(eq(rejectedReports.reason, reason));
      if (before !== undefined) where.push(lt(rejectedReports.id, before));
      return db.select().from(rejectedReports).where(and(...where)).orderBy(desc(rejectedReports.id)).limit(limit).all().map(entryOf);
    },

    replayCandidates({ reasons, retryPrefix, afterId, limit }: { reasons: readonly RejectReason[]; retryPrefix: string; afterId: number; limit: number }): RejectedEntry[] {
      return db
        .select()
        .from(rejectedReports)
        .where(and(inArray(rejectedReports.reason, [...reasons] as RejectReason[]), open(retryPrefix), gt(rejectedReports.id, afterId)))
        .orderBy(asc(rejectedReports.id))
        .limit(limit)
        .all()
        .map(entryOf);
    },

    countReplayed: (reasons: readonly RejectReason[], retryPrefix: string): number =>
      countOf(
        rejectedReports,
        and(inArray(rejectedReports.reason, [...reasons]), isNotNull(rejectedReports.replayedAt), notLike(rejectedReports.replayResult, `${retryPrefix}%`))!,
      ),
  };
}
