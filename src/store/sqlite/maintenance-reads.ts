// What maintenance reads before it writes: stuck installs, what retention would remove, and the
// rejected-reports log (listing and replay candidates).
import { and, asc, count, desc, eq, gt, gte, inArray, isNotNull, isNull, like, lt, notLike, or, type SQL } from "drizzle-orm";
import type { RejectReason } from "../../domain/rejection.ts";
import type { RejectedEntry } from "../contract.ts";
import type { Db } from "./database.ts";
import { expiryState, heldUpdates, installs, rejectedReports } from "./schema.ts";

type RejectedRow = typeof rejectedReports.$inferSelect;

const entryOf = ({ body, result, ...row }: RejectedRow): RejectedEntry => ({
  ...row,
  result: result as RejectedEntry["result"],
  body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength),
});

/** The queries behind the contract's MaintenanceReads, synchronous as bun:sqlite is (store.ts adapts them). */
export function createMaintenanceReads(db: Db) {
  const getStuckCheckedUntil = db.select({ t: expiryState.checkedUntil }).from(expiryState).where(eq(expiryState.id, 1)).prepare();
  const countOf = (table: typeof installs | typeof heldUpdates | typeof rejectedReports, where: SQL) => db.select({ n: count() }).from(table).where(where).get()?.n ?? 0;
  /** Not yet replayed, or replayed with a result that says to try again. */
  const open = (retryPrefix: string) => or(isNull(rejectedReports.replayedAt), like(rejectedReports.replayResult, `${retryPrefix}%`));

  return {
    stuckInstalls(from: number, before: number, limit: number): { randomId: string; createdAt: number }[] {
      return db
        .select({ randomId: installs.randomId, createdAt: installs.createdAt })
        .from(installs)
        .where(and(gte(installs.createdAt, from), lt(installs.createdAt, before), eq(installs.outcome, "in_progress")))
        .orderBy(asc(installs.createdAt))
        .limit(limit)
        .all();
    },

    stuckCheckedUntil: (): number => getStuckCheckedUntil.get()?.t ?? 0,

    countBefore: (cutoff: number) => ({
      installs: countOf(installs, lt(installs.createdAt, cutoff)),
      held: countOf(heldUpdates, lt(heldUpdates.receivedAt, cutoff)),
      rejected: countOf(rejectedReports, lt(rejectedReports.receivedAt, cutoff)),
    }),

    heldBefore: (cutoff: number, limit: number): string[] =>
      db.select({ id: heldUpdates.randomId }).from(heldUpdates).where(lt(heldUpdates.receivedAt, cutoff)).limit(limit).all().map((r) => r.id),

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
