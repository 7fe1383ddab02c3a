// Read queries of the PostgreSQL engine: executions (keyset and numbered pages, chunks), rollup
// cells (cells.ts), error signatures, the maintenance reads.
import { and, asc, count, desc, inArray, sql, getTableColumns, type SQL } from "drizzle-orm";
import type { Sql } from "postgres";
import type { KnownSignature } from "../../domain/error-signature.ts";
import type { Execution } from "../../domain/execution.ts";
import { OUTCOMES, type Outcome } from "../../domain/outcome.ts";
import type { HeldReport } from "../../domain/lifecycle.ts";
import type { RejectReason } from "../../domain/rejection.ts";
import {
  GRAINS,
  hoursFrom,
  storedSlicesIn,
  withEverySlice,
  type RollupData,
  type RollupPart,
} from "../../domain/rollup.ts";
import { DAY } from "../../domain/time.ts";
import type {
  AppType,
  ExecutionFilter,
  HeardFilter,
  ListCursor,
  PageQuery,
  RollupSelection,
  StoreReads,
} from "../contract/executions.ts";
import type { RejectedEntry } from "../contract/rejected.ts";
import { filterWhere, pageSortColumn, pageWhere, type Like } from "../common/filter.ts";
import { decodeHeld, entryBody } from "../common/budgets.ts";
import { CellParts, PgLabels, dayVersions, readCells } from "./cells.ts";
import { OldHours, countHours, daysOf, sliceFilter } from "../common/old-hours.ts";
import { onlyKept, sumByBucket } from "../common/sum-cells.ts";
import type { PgDb } from "./database.ts";
import { errorSignatures, executions, rejectedReports } from "./schema.ts";
import { MARKS } from "./intake.ts";
import { getMark } from "./writes.ts";
import { importMarkName } from "../common/marks.ts";
import { LATE_MS, nearFrom } from "../common/heard.ts";

const like: Like = (column, pattern) => sql`${column} ILIKE ${pattern} ESCAPE '\\'`;
/** One install's executions, found through execution_ids (an index on random_id, then each row's own index entry). */
const ofInstall = (randomId: string | undefined): SQL | undefined =>
  randomId === undefined
    ? undefined
    : sql`(${executions.createdAt}, ${executions.seq}) IN (SELECT created_at, seq FROM execution_ids WHERE random_id = ${randomId})`;
/**
 * An outcome written into the statement: PostgreSQL uses a partial index (schema.ts
 * executions_failed) only where it can prove the index's condition, which a bound parameter of a
 * generic plan does not. An outcome that is none of OUTCOMES matches nothing, as the text did.
 */
const outcomeIs = (outcome: Outcome | undefined): SQL | undefined => {
  if (outcome === undefined) return undefined;
  return OUTCOMES.includes(outcome) ? sql`${executions.outcome} = ${sql.raw(`'${outcome}'`)}` : sql`1 = 0`;
};
const whereOf = (f: ExecutionFilter): SQL | undefined =>
  and(filterWhere(executions, { ...f, outcome: undefined }, like), outcomeIs(f.outcome), ofInstall(f.randomId));

const { seq: _seq, ...executionColumns } = getTableColumns(executions);
const CHUNK_ROWS = 1000;
/** Rows per chunk of held reports and log entries unless the caller says otherwise (bodies and reports may be large). */
const SIDE_CHUNK_ROWS = 200;

const ALL_PARTS: readonly RollupPart[] = ["data", "apps", "errors"];

interface HeldRow {
  executionId: string;
  report: string;
  codec: string | null;
  data: Buffer | null;
  receivedAt: number;
  repaired: boolean;
}

interface RejectedRow {
  id: number;
  receivedAt: number;
  endpoint: RejectedEntry["endpoint"];
  reason: RejectReason;
  result: string | null;
  field: string | null;
  message: string;
  randomId: string | null;
  body: Buffer;
  replayedAt: number | null;
  replayResult: string | null;
  bodyStore: string;
  bodySize: number;
  bodyHash: string | null;
  sharedCodec: string | null;
  sharedData: Buffer | null;
}
const toRejected = ({
  body,
  bodyStore,
  bodySize,
  bodyHash,
  sharedCodec,
  sharedData,
  result,
  ...r
}: RejectedRow): RejectedEntry => ({
  ...r,
  result: result as RejectedEntry["result"],
  ...entryBody({ bodyStore, body, bodySize, sharedCodec, sharedData }),
  bodySha256: bodyHash,
});
/** Every column of the log, and the shared body where there is one. */
const SELECT_REJECTED = sql`SELECT r.id, r.received_at AS "receivedAt", r.endpoint, r.reason, r.result, r.field, r.message, r.random_id AS "randomId", r.body,
  r.replayed_at AS "replayedAt", r.replay_result AS "replayResult", r.body_store AS "bodyStore", r.body_size AS "bodySize", r.body_hash AS "bodyHash",
  b.codec AS "sharedCodec", b.data AS "sharedData"
  FROM rejected_reports r LEFT JOIN bodies b ON r.body_store = 'shared' AND b.hash = r.body_hash`;

/** What the reads of one connection pool work with (createPostgresReads): passed to each read. */
interface ReadContext {
  pg: Sql;
  db: PgDb;
  labels: PgLabels;
  cells: CellParts;
  old: OldHours;
}

async function* executionChunks(
  { db }: ReadContext,
  filter: ExecutionFilter,
  { offset = 0, limit = Number.POSITIVE_INFINITY, chunkRows = CHUNK_ROWS } = {},
): AsyncGenerator<Execution[], void> {
  if (!Number.isSafeInteger(offset) || offset < 0 || limit <= 0) return;
  let remaining = limit;
  let after: ListCursor | null = null;
  while (remaining > 0) {
    const n = Math.min(chunkRows, remaining);
    const keyset: SQL | undefined = after
      ? sql`(${executions.createdAt}, ${executions.seq}) > (${after.createdAt}, ${after.seq})`
      : undefined;
    const rows: (Execution & { seq: number })[] = await db
      .select({ ...executionColumns, seq: executions.seq })
      .from(executions)
      .where(and(whereOf(filter), keyset))
      .orderBy(asc(executions.createdAt), asc(executions.seq))
      .limit(n)
      .offset(after ? 0 : offset);
    const last = rows.at(-1);
    if (!last) return;
    yield rows.map(({ seq: _, ...row }) => row);
    if (rows.length < n) return;
    remaining -= rows.length;
    after = { createdAt: last.createdAt, seq: last.seq };
  }
}

async function listExecutions(
  { db }: ReadContext,
  filter: ExecutionFilter,
  { limit, after, order = "newest" }: { limit: number; after?: ListCursor; order?: "newest" | "oldest" },
) {
  const newest = order === "newest";
  const keyset = !after
    ? undefined
    : newest
      ? sql`(${executions.createdAt}, ${executions.seq}) < (${after.createdAt}, ${after.seq})`
      : sql`(${executions.createdAt}, ${executions.seq}) > (${after.createdAt}, ${after.seq})`;
  const direction = newest ? desc : asc;
  const rows = await db
    .select({ ...executionColumns, seq: executions.seq })
    .from(executions)
    .where(and(whereOf(filter), keyset))
    .orderBy(direction(executions.createdAt), direction(executions.seq))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const next: ListCursor | null = rows.length > limit && last ? { createdAt: last.createdAt, seq: last.seq } : null;
  return { rows: page.map(({ seq: _, ...row }) => row), next };
}

async function typesOfApps({ db }: ReadContext, apps: readonly string[]): Promise<AppType[]> {
  const out: AppType[] = [];
  for (const nsapp of apps) {
    const [row] = await db
      .select({ type: executions.type })
      .from(executions)
      .where(sql`${executions.nsapp} = ${nsapp}`)
      .orderBy(desc(executions.createdAt), desc(executions.seq))
      .limit(1);
    if (row) out.push({ nsapp, type: row.type });
  }
  return out;
}

async function pageExecutions({ db }: ReadContext, filter: ExecutionFilter, page: PageQuery) {
  const where = and(pageWhere(executions, filter, page, like), ofInstall(filter.randomId));
  const [counted] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(executions)
    .where(where);
  const direction = page.descending ? desc : asc;
  // Absent values before every value, as on SQLite (PostgreSQL puts nulls last ascending).
  const column = pageSortColumn(executions, page.sort);
  const order = page.descending ? sql`${column} DESC NULLS LAST` : sql`${column} ASC NULLS FIRST`;
  const rows = await db
    .select(executionColumns)
    .from(executions)
    .where(where)
    .orderBy(page.sort === "created" ? direction(column) : order, desc(executions.createdAt), desc(executions.seq))
    .limit(page.limit)
    .offset(page.offset);
  return { rows, total: counted?.n ?? 0 };
}

/** Reported at or after `t`. */
const heard = (t: number): SQL => sql`${executions.updatedAt} >= ${t}`;
/** Heard from since `t` though started before the near range: in the partial index (schema.ts executions_heard_late). */
const heardLate = (t: number): SQL | undefined =>
  and(sql.raw(`"updated_at" - "created_at" > ${LATE_MS}`), heard(t), sql`${executions.createdAt} < ${nearFrom(t)}`);

async function countUpdatedSince(
  { db }: ReadContext,
  filter: HeardFilter,
  since: readonly number[],
): Promise<number[]> {
  const n = async (where: SQL | undefined) =>
    (
      await db
        .select({ n: count() })
        .from(executions)
        .where(and(whereOf(filter), where))
    )[0]?.n ?? 0;
  return Promise.all(
    since.map(
      async (t) => (await n(and(sql`${executions.createdAt} >= ${nearFrom(t)}`, heard(t)))) + (await n(heardLate(t))),
    ),
  );
}

async function listUpdatedSince(
  { db }: ReadContext,
  filter: HeardFilter,
  since: number,
  limit: number,
): Promise<Execution[]> {
  const newest = (where: SQL | undefined) =>
    db
      .select(executionColumns)
      .from(executions)
      .where(and(whereOf(filter), where))
      .orderBy(desc(executions.updatedAt))
      .limit(limit);
  const [near, late] = await Promise.all([
    newest(and(sql`${executions.createdAt} >= ${nearFrom(since)}`, heard(since))),
    newest(heardLate(since)),
  ]);
  return [...near, ...late].sort((a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt).slice(0, limit);
}

async function errorTextCounts({ pg }: ReadContext): Promise<{ error: string; count: number }[]> {
  const rows = await pg<{ error: string; count: number }[]>`
    SELECT error, count(*)::int AS count FROM executions WHERE error IS NOT NULL AND error <> '' GROUP BY error`;
  return rows
    .map((r) => ({ error: r.error, count: r.count }))
    .sort((a, b) => b.count - a.count || (a.error < b.error ? -1 : a.error > b.error ? 1 : 0));
}

async function changeMarker({ pg }: ReadContext): Promise<string> {
  // The set of transactions this snapshot sees: it changes when a writing transaction begins
  // or ends, on any node, and the marker is read before the data it keys.
  const [row] = await pg<{ s: string }[]>`SELECT pg_current_snapshot()::text AS s`;
  return row!.s;
}

async function readRollups(
  ctx: ReadContext,
  { grain, slice, from, to, parts }: RollupSelection,
): Promise<{ bucket: number; data: RollupData }[]> {
  const { pg, labels, cells } = ctx;
  const out: { bucket: number; data: RollupData }[] = [];
  // Hours before the hour cells: counted from their days' records while those days' cells stand (old-hours.ts).
  const first = grain === GRAINS.hour ? hoursFrom(await getMark(pg, MARKS.foldedUntil)) : Number.NEGATIVE_INFINITY;
  if (from < first) {
    const end = Math.min(to, first);
    const span = daysOf(from, end);
    const days = (await readCells(pg, labels, cells, GRAINS.day, span.from, span.to, storedSlicesIn(slice), [])).map(
      (c) => c.bucket,
    );
    const counted = await ctx.old.read(
      slice,
      from,
      end,
      days,
      async (s, day) => countHours(executionChunks(ctx, sliceFilter(s, day, day + DAY)), s),
      (s, day) => dayVersions(pg, storedSlicesIn(s), day),
    );
    for (const c of counted) out.push({ bucket: c.bucket, data: onlyKept(c.data, parts) });
  }
  const start = Math.max(from, first);
  if (start < to) {
    const lists = new Map<string, { bucket: number; data: RollupData }[]>();
    for (const c of await readCells(pg, labels, cells, grain, start, to, storedSlicesIn(slice), parts)) {
      const list = lists.get(c.slice);
      if (list) list.push({ bucket: c.bucket, data: c.data });
      else lists.set(c.slice, [{ bucket: c.bucket, data: c.data }]);
    }
    out.push(...sumByBucket([...lists.values()]));
  }
  return out;
}

async function signatures({ db }: ReadContext, ids: readonly string[]): Promise<KnownSignature[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .select()
    .from(errorSignatures)
    .where(inArray(errorSignatures.id, [...ids]));
  return rows.map((s) => ({ ...s, apps: JSON.parse(s.apps) as string[] }));
}

async function recordSpan({ pg }: ReadContext): Promise<{ first: number; last: number } | null> {
  const [span] = await pg<
    { first: number | null; last: number | null }[]
  >`SELECT min(created_at) AS first, max(created_at) AS last FROM executions`;
  return span?.first == null || span.last == null ? null : { first: span.first, last: span.last };
}

async function stuckExecutions({ pg }: ReadContext, from: number, before: number, limit: number) {
  return pg<{ executionId: string; createdAt: number }[]>`
    SELECT execution_id AS "executionId", created_at AS "createdAt" FROM executions
    WHERE outcome = 'in_progress' AND created_at >= ${from} AND created_at < ${before} ORDER BY created_at, seq LIMIT ${limit}`;
}

async function countBefore({ pg }: ReadContext, cutoff: number) {
  const [row] = await pg<{ executions: number; held: number; rejected: number }[]>`SELECT
    (SELECT count(*)::int FROM executions WHERE created_at < ${cutoff}) AS executions,
    (SELECT count(*)::int FROM held_reports WHERE received_at < ${cutoff}) AS held,
    (SELECT count(*)::int FROM rejected_reports WHERE received_at < ${cutoff}) AS rejected`;
  return row!;
}

async function heldBefore({ pg }: ReadContext, cutoff: number, limit: number): Promise<string[]> {
  const rows = await pg<
    { randomId: string }[]
  >`SELECT random_id AS "randomId" FROM held_reports WHERE received_at < ${cutoff} ORDER BY received_at LIMIT ${limit}`;
  return rows.map((r) => r.randomId);
}

async function listRejected(
  { db }: ReadContext,
  { limit, reason, before }: { limit: number; reason?: RejectReason; before?: number },
): Promise<RejectedEntry[]> {
  const rows = await db.execute<RejectedRow & Record<string, unknown>>(
    sql`${SELECT_REJECTED} WHERE ${reason === undefined ? sql`TRUE` : sql`r.reason = ${reason}`} AND ${before === undefined ? sql`TRUE` : sql`r.id < ${before}`} ORDER BY r.id DESC LIMIT ${limit}`,
  );
  return [...rows].map(toRejected);
}

async function replayCandidates(
  { db }: ReadContext,
  {
    reasons,
    retryPrefix,
    afterId,
    limit,
  }: { reasons: readonly RejectReason[]; retryPrefix: string; afterId: number; limit: number },
): Promise<RejectedEntry[]> {
  if (reasons.length === 0) return [];
  const rows = await db.execute<RejectedRow & Record<string, unknown>>(
    // A head-only entry whose body was longer than its head cannot be replayed.
    sql`${SELECT_REJECTED} WHERE r.reason IN ${[...reasons]} AND r.id > ${afterId}
      AND (r.replayed_at IS NULL OR starts_with(r.replay_result, ${retryPrefix}))
      AND NOT (r.body_store = 'head' AND r.body_size > octet_length(r.body)) ORDER BY r.id LIMIT ${limit}`,
  );
  return [...rows].map(toRejected);
}

async function* heldChunks(
  { pg }: ReadContext,
  { chunkRows = SIDE_CHUNK_ROWS }: { chunkRows?: number } = {},
): AsyncGenerator<HeldReport[], void> {
  let after: { at: number; id: string } | null = null;
  for (;;) {
    const keyset = after ? pg`(received_at, execution_id) > (${after.at}, ${after.id})` : pg`TRUE`;
    const rows: HeldRow[] = await pg<HeldRow[]>`
      SELECT execution_id AS "executionId", report, codec, data, received_at AS "receivedAt", repaired FROM held_reports
      WHERE ${keyset} ORDER BY received_at, execution_id LIMIT ${chunkRows}`;
    const last = rows.at(-1);
    if (!last) return;
    yield rows.map((r) => ({ report: decodeHeld(r), at: r.receivedAt, repaired: r.repaired }));
    if (rows.length < chunkRows) return;
    after = { at: last.receivedAt, id: last.executionId };
  }
}

async function* rejectedChunks(
  { db }: ReadContext,
  { afterId = 0, chunkRows = SIDE_CHUNK_ROWS }: { afterId?: number; chunkRows?: number } = {},
): AsyncGenerator<RejectedEntry[], void> {
  for (let after = afterId; ; ) {
    const rows = [
      ...(await db.execute<RejectedRow & Record<string, unknown>>(
        sql`${SELECT_REJECTED} WHERE r.id > ${after} ORDER BY r.id LIMIT ${chunkRows}`,
      )),
    ];
    const last = rows.at(-1);
    if (!last) return;
    yield rows.map(toRejected);
    if (rows.length < chunkRows) return;
    after = last.id;
  }
}

async function countReplayed(
  { db }: ReadContext,
  reasons: readonly RejectReason[],
  retryPrefix: string,
): Promise<number> {
  if (reasons.length === 0) return 0;
  const [row] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(rejectedReports)
    .where(
      and(
        inArray(rejectedReports.reason, [...reasons]),
        sql`replayed_at IS NOT NULL AND NOT starts_with(replay_result, ${retryPrefix})`,
      ),
    );
  return row?.n ?? 0;
}

export function createPostgresReads(pg: Sql, db: PgDb, labels = new PgLabels(pg)) {
  const ctx: ReadContext = { pg, db, labels, cells: new CellParts(), old: new OldHours() };
  // Issue links are read on the primary only (issues.ts).
  const reads: Omit<StoreReads, "issueLinks"> = {
    getExecutions: async (randomId) =>
      db
        .select(executionColumns)
        .from(executions)
        .where(ofInstall(randomId))
        .orderBy(asc(executions.attempt), asc(executions.createdAt)),
    listExecutions: (filter, page) => listExecutions(ctx, filter, page),
    typesOfApps: (apps) => typesOfApps(ctx, apps),
    pageExecutions: (filter, page) => pageExecutions(ctx, filter, page),
    executionChunks: (filter, page) => executionChunks(ctx, filter, page),
    countUpdatedSince: (filter, since) => countUpdatedSince(ctx, filter, since),
    listUpdatedSince: (filter, since, limit) => listUpdatedSince(ctx, filter, since, limit),
    async *iterateExecutions(filter) {
      for await (const chunk of executionChunks(ctx, filter)) yield* chunk;
    },
    errorTextCounts: () => errorTextCounts(ctx),
    changeMarker: () => changeMarker(ctx),
    readRollups: (selection) => readRollups(ctx, selection),
    rollupCells: async (grain, from, to) =>
      withEverySlice(
        await readCells(pg, labels, ctx.cells, grain, from, to, null, ALL_PARTS),
        (slice, bucket, data) => ({ slice, bucket, data }),
      ),
    foldedUntil: () => getMark(pg, MARKS.foldedUntil),
    signatures: (ids) => signatures(ctx, ids),
    recordSpan: () => recordSpan(ctx),
  };

  return {
    ...reads,
    stuckExecutions: (from: number, before: number, limit: number) => stuckExecutions(ctx, from, before, limit),
    stuckCheckedUntil: () => getMark(pg, MARKS.stuckCheckedUntil),
    importMark: (source: string) => getMark(pg, importMarkName(source)),
    countBefore: (cutoff: number) => countBefore(ctx, cutoff),
    heldBefore: (cutoff: number, limit: number) => heldBefore(ctx, cutoff, limit),
    listRejected: (opts: Parameters<typeof listRejected>[1]) => listRejected(ctx, opts),
    replayCandidates: (opts: Parameters<typeof replayCandidates>[1]) => replayCandidates(ctx, opts),
    heldChunks: (opts?: { chunkRows?: number }) => heldChunks(ctx, opts),
    rejectedChunks: (opts?: { afterId?: number; chunkRows?: number }) => rejectedChunks(ctx, opts),
    countReplayed: (reasons: readonly RejectReason[], retryPrefix: string) => countReplayed(ctx, reasons, retryPrefix),
  };
}
