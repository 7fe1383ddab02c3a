// What maintenance reads before it writes: stuck executions, what retention would remove, and the
// rejected-reports log (listing and replay candidates).
import {
  and,
  asc,
  count,
  desc,
  eq,
  getTableColumns,
  gt,
  gte,
  inArray,
  isNotNull,
  isNull,
  lt,
  not,
  or,
  sql,
  type SQL,
} from "drizzle-orm";
import type { HeldReport } from "../../domain/lifecycle.ts";
import type { RejectReason } from "../../domain/rejection.ts";
import type { RejectedEntry } from "../contract/rejected.ts";
import type { Db } from "./database.ts";
import { decodeHeld, entryBody } from "../common/budgets.ts";
import { importMarkName } from "../common/marks.ts";
import { bodies, copyMarks, executions, expiryState, heldReports, rejectedReports } from "./schema.ts";

type RejectedRow = typeof rejectedReports.$inferSelect & { sharedCodec: string | null; sharedData: Buffer | null };

const entryOf = ({
  body,
  result,
  bodyStore,
  bodySize,
  bodyHash,
  cost: _,
  sharedCodec,
  sharedData,
  ...row
}: RejectedRow): RejectedEntry => ({
  ...row,
  result: result as RejectedEntry["result"],
  ...entryBody({ bodyStore, body, bodySize, sharedCodec, sharedData }),
  bodySha256: bodyHash,
});

/** Every column of the log, and the shared body where there is one. */
const withBodies = { ...getTableColumns(rejectedReports), sharedCodec: bodies.codec, sharedData: bodies.data };
const sharedBody = and(eq(rejectedReports.bodyStore, "shared"), eq(bodies.hash, rejectedReports.bodyHash));
/** A head-only entry whose body was longer than its head cannot be replayed. */
const truncated = and(
  eq(rejectedReports.bodyStore, "head"),
  sql`${rejectedReports.bodySize} > length(${rejectedReports.body})`,
);

/** Rows per chunk of heldChunks and rejectedChunks unless the caller says otherwise (bodies and reports may be large). */
const CHUNK_ROWS = 200;

type Counted = typeof executions | typeof heldReports | typeof rejectedReports;
const countOf = (db: Db, table: Counted, where: SQL) =>
  db.select({ n: count() }).from(table).where(where).get()?.n ?? 0;

// A plain, case-sensitive prefix (LIKE is case-insensitive in SQLite and reads _ and % as wildcards).
const startsWith = (prefix: string): SQL =>
  sql`substr(${rejectedReports.replayResult}, 1, ${prefix.length}) = ${prefix}`;
/** Not yet replayed, or replayed with a result that says to try again. */
const open = (retryPrefix: string) => or(isNull(rejectedReports.replayedAt), startsWith(retryPrefix));

function stuckExecutions(db: Db, from: number, before: number, limit: number) {
  return db
    .select({ executionId: executions.executionId, createdAt: executions.createdAt })
    .from(executions)
    .where(
      and(gte(executions.createdAt, from), lt(executions.createdAt, before), eq(executions.outcome, "in_progress")),
    )
    .orderBy(asc(executions.createdAt))
    .limit(limit)
    .all();
}

const importMark = (db: Db, source: string): number =>
  db
    .select({ position: copyMarks.rejectedId })
    .from(copyMarks)
    .where(eq(copyMarks.source, importMarkName(source)))
    .get()?.position ?? 0;

const countBefore = (db: Db, cutoff: number) => ({
  executions: countOf(db, executions, lt(executions.createdAt, cutoff)),
  held: countOf(db, heldReports, lt(heldReports.receivedAt, cutoff)),
  rejected: countOf(db, rejectedReports, lt(rejectedReports.receivedAt, cutoff)),
});

const heldBefore = (db: Db, cutoff: number, limit: number): string[] =>
  db
    .select({ id: heldReports.randomId })
    .from(heldReports)
    .where(lt(heldReports.receivedAt, cutoff))
    .limit(limit)
    .all()
    .map((r) => r.id);

function listRejected(
  db: Db,
  { limit, reason, before }: { limit: number; reason?: RejectReason; before?: number },
): RejectedEntry[] {
  const where: SQL[] = [];
  if (reason) where.push(eq(rejectedReports.reason, reason));
  if (before !== undefined) where.push(lt(rejectedReports.id, before));
  return db
    .select(withBodies)
    .from(rejectedReports)
    .leftJoin(bodies, sharedBody)
    .where(and(...where))
    .orderBy(desc(rejectedReports.id))
    .limit(limit)
    .all()
    .map(entryOf);
}

function replayCandidates(
  db: Db,
  {
    reasons,
    retryPrefix,
    afterId,
    limit,
  }: { reasons: readonly RejectReason[]; retryPrefix: string; afterId: number; limit: number },
): RejectedEntry[] {
  return db
    .select(withBodies)
    .from(rejectedReports)
    .leftJoin(bodies, sharedBody)
    .where(
      and(
        inArray(rejectedReports.reason, [...reasons] as RejectReason[]),
        open(retryPrefix),
        gt(rejectedReports.id, afterId),
        not(truncated!),
      ),
    )
    .orderBy(asc(rejectedReports.id))
    .limit(limit)
    .all()
    .map(entryOf);
}

/** Every held report, oldest first (received_at, then execution_id), a query per chunk. */
function* heldChunks(db: Db, { chunkRows = CHUNK_ROWS }: { chunkRows?: number } = {}): Generator<HeldReport[], void> {
  let after: { at: number; id: string } | null = null;
  for (;;) {
    const rows = db
      .select()
      .from(heldReports)
      .where(
        after ? sql`(${heldReports.receivedAt}, ${heldReports.executionId}) > (${after.at}, ${after.id})` : undefined,
      )
      .orderBy(asc(heldReports.receivedAt), asc(heldReports.executionId))
      .limit(chunkRows)
      .all();
    const last = rows.at(-1);
    if (!last) return;
    yield rows.map((r) => ({ report: decodeHeld(r), at: r.receivedAt, repaired: r.repaired }));
    if (rows.length < chunkRows) return;
    after = { at: last.receivedAt, id: last.executionId };
  }
}

/** Log entries with an id above `afterId`, oldest first, a query per chunk. */
function* rejectedChunks(
  db: Db,
  { afterId = 0, chunkRows = CHUNK_ROWS }: { afterId?: number; chunkRows?: number } = {},
): Generator<RejectedEntry[], void> {
  for (let after = afterId; ; ) {
    const rows = db
      .select(withBodies)
      .from(rejectedReports)
      .leftJoin(bodies, sharedBody)
      .where(gt(rejectedReports.id, after))
      .orderBy(asc(rejectedReports.id))
      .limit(chunkRows)
      .all();
    const last = rows.at(-1);
    if (!last) return;
    yield rows.map(entryOf);
    if (rows.length < chunkRows) return;
    after = last.id;
  }
}

const countReplayed = (db: Db, reasons: readonly RejectReason[], retryPrefix: string): number =>
  countOf(
    db,
    rejectedReports,
    and(
      inArray(rejectedReports.reason, [...reasons]),
      isNotNull(rejectedReports.replayedAt),
      not(startsWith(retryPrefix)),
    )!,
  );

/** The queries behind the contract's maintenance, rejected-log and transfer reads (contract/maintenance.ts, rejected.ts, transfer.ts), synchronous as bun:sqlite is (store.ts adapts them). */
export function createMaintenanceReads(db: Db) {
  const getStuckCheckedUntil = db
    .select({ t: expiryState.checkedUntil })
    .from(expiryState)
    .where(eq(expiryState.id, 1))
    .prepare();
  return {
    stuckExecutions: (from: number, before: number, limit: number): { executionId: string; createdAt: number }[] =>
      stuckExecutions(db, from, before, limit),
    stuckCheckedUntil: (): number => getStuckCheckedUntil.get()?.t ?? 0,
    importMark: (source: string): number => importMark(db, source),
    countBefore: (cutoff: number) => countBefore(db, cutoff),
    heldBefore: (cutoff: number, limit: number): string[] => heldBefore(db, cutoff, limit),
    listRejected: (opts: Parameters<typeof listRejected>[1]): RejectedEntry[] => listRejected(db, opts),
    replayCandidates: (opts: Parameters<typeof replayCandidates>[1]): RejectedEntry[] => replayCandidates(db, opts),
    heldChunks: (opts?: { chunkRows?: number }) => heldChunks(db, opts),
    rejectedChunks: (opts?: { afterId?: number; chunkRows?: number }) => rejectedChunks(db, opts),
    countReplayed: (reasons: readonly RejectReason[], retryPrefix: string): number =>
      countReplayed(db, reasons, retryPrefix),
  };
}
