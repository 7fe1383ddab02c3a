// Read queries over SQLite: execution listings (keyset pagination), streaming iteration, stored
// rollup cells (decoded ones kept while their bytes stand) and error signatures. Open hours are the store's.
import type { Database, SQLQueryBindings, Statement } from "bun:sqlite";
import { and, asc, count, desc, eq, gte, isNotNull, lt, ne, sql, getTableName, type SQL } from "drizzle-orm";
import type { KnownSignature } from "../../domain/error-signature.ts";
import type { Execution } from "../../domain/execution.ts";
import { OUTCOMES, type Outcome } from "../../domain/outcome.ts";
import { emptyData, settle, type Grain, type RollupData, type RollupPart } from "../../domain/rollup.ts";
import { StoredSum, UnknownLabelError, decodePart, type StoredParts } from "../../domain/rollup-codec.ts";
import type {
  AppType,
  ExecutionFilter,
  HeardFilter,
  ListCursor,
  PageQuery,
  RollupCell,
  RollupSelection,
} from "../contract/executions.ts";
import type { Db } from "./database.ts";
import { asDamage } from "./integrity.ts";
import { fromRow, joinError } from "./error-text.ts";
import { errorSignatures, executions, rollupLabels, rollupState, rollups } from "./schema.ts";
import { READ_KEYS, OF_INSTALL, SELECT_READ, decodeExecution, filterColumns, readColumns } from "./rows.ts";
import { encodeId } from "./ids.ts";
import { wordDecoder } from "./codes.ts";
import { LabelCache } from "../common/labels.ts";
import { LATE_MS, nearFrom } from "../common/heard.ts";
import { filterWhere, pageSortColumn, pageWhere, type Like } from "../common/filter.ts";
import { RecentlyUsed } from "../../domain/recently-used.ts";

const typeWord = wordDecoder("type");

const GRAIN_NAMES = ["hour", "day", "month"];
/** Names a rollup cell in an error: "rollup cell day *|lxc 2026-06-01T00:00:00.000Z". */
const cellName = (grain: number, app: string, bucket: number): string =>
  `rollup cell ${GRAIN_NAMES[grain] ?? grain} ${app} ${new Date(bucket).toISOString()}`;

const CREATED_AT = READ_KEYS.indexOf("createdAt");
/** Rows per chunk of executionChunks unless the caller says otherwise. */
const CHUNK_ROWS = 1000;

/** SQLite's LIKE ignores case for ASCII letters (the original's positionCaseInsensitive does too). */
const like: Like = (column, pattern) => sql`${column} LIKE ${pattern} ESCAPE '\\'`;
/** One install's executions by the indexes (rows.ts OF_INSTALL), not by the virtual random_id. */
const ofInstall = (randomId: string | undefined): SQL | undefined => {
  if (randomId === undefined) return undefined;
  const id = encodeId(randomId);
  return sql`((${executions.executionId} = ${id} AND ${executions.rid} IS NULL) OR ${executions.rid} = ${id})`;
};
/**
 * An outcome as its code written into the statement: SQLite uses a partial index (schema.ts
 * executions_failed) only for a term equal to its own, and compares the stored code instead of
 * the virtual word. An outcome that is none of OUTCOMES matches nothing, as the word did.
 */
const outcomeIs = (outcome: Outcome | undefined): SQL | undefined => {
  if (outcome === undefined) return undefined;
  const code = OUTCOMES.indexOf(outcome);
  return code < 0 ? sql`1 = 0` : sql`${executions.outcomeCode} = ${sql.raw(String(code))}`;
};
const whereOf = (f: ExecutionFilter): SQL | undefined =>
  and(
    filterWhere(filterColumns, { ...f, randomId: undefined, outcome: undefined }, like),
    outcomeIs(f.outcome),
    ofInstall(f.randomId),
  );

export type SqliteReads = ReturnType<typeof createSqliteReads>;

const PARTS: readonly RollupPart[] = ["data", "apps", "errors"];

/**
 * Cells as a read decoded them, by cell and by what was decoded (parts, dimensions), each with the
 * stored bytes it came from: a read that finds the same bytes again uses the cell as it is, so
 * nothing needs telling when a cell changes (labels never change their meaning). Dashboards ask
 * the same questions over the same cells again and again; least recently used go past `limit`.
 */
class DecodedCells {
  private readonly cells: RecentlyUsed<{ stored: (Uint8Array | null)[]; data: RollupData }>;

  constructor(limit: number) {
    this.cells = new RecentlyUsed(limit);
  }

  get(key: string, stored: readonly (Uint8Array | null)[]): RollupData | undefined {
    const hit = this.cells.get(key);
    return hit !== undefined && sameBytes(hit.stored, stored) ? hit.data : undefined;
  }

  set(key: string, stored: (Uint8Array | null)[], data: RollupData): void {
    this.cells.set(key, { stored, data });
  }
}

function sameBytes(a: readonly (Uint8Array | null)[], b: readonly (Uint8Array | null)[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue; // the same rows fetched once (FetchedRanges)
    if (x === null || y === null || x.length !== y.length || Buffer.compare(x, y) !== 0) return false;
  }
  return true;
}

/**
 * A range's rows, and what storedRollups made of them by shape: the same rows give the same cells
 * (a page's reads walked ~4,700 rows per /api/new, looking each up in DecodedCells).
 */
interface FetchedRange {
  rows: unknown[][];
  /** Shared by every read of the range: no one changes them. */
  decoded: Map<string, ReadonlyMap<string, readonly { bucket: number; data: RollupData }[]>>;
}

/**
 * Rows of the range queries fetched while no rollup cell changed: one page's aggregates ask for
 * the same cells again and again (a dashboard of 97 range queries asked 30 distinct ones, fetching
 * 4.9 MB of cell bytes at 1M), and reports mostly change executions and open hours, not stored
 * cells. A change of a cell by this connection, by any statement, moves a mark that TEMP triggers
 * keep (temp: this connection's own, no schema change). The mark is a random number, not a count:
 * a rolled-back change takes it back with the rows, and a later change never lands on a value seen
 * in between. Another connection's commit is the store's to notice (store-state.ts checkState,
 * which every rollup read passes first): it forgets the rows then (`clear`), as it recounts the
 * open hours, so the rows and the open hours a read adds up are of the same moment. Asking SQLite
 * for data_version here too cost 3-5 µs a range, dozens of ranges a request.
 */
class FetchedRanges {
  private readonly rows: RecentlyUsed<FetchedRange>;
  private at: number | null = null;
  private readonly mark: Statement<{ c: number }, []>;

  constructor(sqlite: Database, limit: number) {
    this.rows = new RecentlyUsed(limit);
    sqlite.run("CREATE TEMP TABLE IF NOT EXISTS rollup_changes (mark INTEGER NOT NULL)");
    sqlite.run("INSERT INTO temp.rollup_changes SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM temp.rollup_changes)");
    for (const op of ["INSERT", "UPDATE", "DELETE"])
      sqlite.run(
        `CREATE TEMP TRIGGER IF NOT EXISTS rollup_changes_${op.toLowerCase()} AFTER ${op} ON main."${table}" BEGIN UPDATE temp.rollup_changes SET mark = random(); END`,
      );
    this.mark = sqlite.query("SELECT mark AS c FROM temp.rollup_changes");
  }

  /** The rows of `key`, fetched by `fetch` unless fetched since the last change. */
  get(key: string, fetch: () => unknown[][]): FetchedRange {
    const { c } = this.mark.get()!;
    if (c !== this.at) {
      this.rows.clear();
      this.at = c;
    }
    let range = this.rows.get(key);
    if (range === undefined) {
      range = { rows: fetch(), decoded: new Map() };
      this.rows.set(key, range);
    }
    return range;
  }

  /** Another connection may have changed cells: every range is fetched afresh. */
  clear(): void {
    this.rows.clear();
  }
}

/** This connection's changes and other connections' commits so far: equal markers, same data. */
function changeMarker(q: ReturnType<typeof prepareReadStatements>): string {
  const { c, v } = q.changes.get()!;
  return `${c}:${v}`;
}

/**
 * Signatures read, kept until anything changes: a page asks for the same few dozen on every request
 * (their rows, apps parsed, were ~30 % of the error signatures' CPU). A report changes a
 * signature's last sighting and apps without touching a stored rollup cell (its hour is open), so
 * what is kept goes with this connection's changes and others' commits (`changeMarker`), not with
 * the rollups' mark; inside a transaction nothing is kept (a rollback leaves the marker as it was).
 */
class KnownSignatures {
  private readonly rows: RecentlyUsed<KnownSignature>;
  private at = "";

  constructor(
    private readonly sqlite: Database,
    private readonly q: ReturnType<typeof prepareReadStatements>,
    limit: number,
  ) {
    this.rows = new RecentlyUsed(limit);
  }

  of(ids: readonly string[]): KnownSignature[] {
    if (this.sqlite.inTransaction) return this.fetch(ids);
    const at = changeMarker(this.q);
    if (at !== this.at) {
      this.rows.clear();
      this.at = at;
    }
    // Each id once, found here or fetched (more ids than are kept still all answered).
    const found = new Map<string, KnownSignature>();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const kept = this.rows.get(id);
      if (kept === undefined) missing.push(id);
      else found.set(id, kept);
    }
    if (missing.length > 0)
      for (const s of this.fetch(missing)) {
        found.set(s.id, s);
        this.rows.set(s.id, s);
      }
    return [...found.values()];
  }

  private fetch(ids: readonly string[]): KnownSignature[] {
    return this.q.signaturesOf.all(JSON.stringify(ids)).map((s) => ({ ...s, apps: JSON.parse(s.apps) as string[] }));
  }
}

/**
 * The label dictionary of a connection: labels are loaded as they are met (another connection's),
 * given inside the write transaction by an INSERT (pending until it commits). With `limit`, at most
 * twice that many are held (common/labels.ts), nothing is loaded ahead, and a label not held is
 * looked up in the table by its unique text or its id.
 */
export function sqliteLabels(sqlite: Database, limit: number | null = null): { labels: LabelCache; load(): void } {
  const table = `"${getTableName(rollupLabels)}"`;
  const { id, label } = { id: `"${rollupLabels.id.name}"`, label: `"${rollupLabels.label.name}"` };
  const insert = sqlite.query<{ id: number }, [string]>(
    `INSERT INTO ${table} (${label}) VALUES (?) RETURNING ${id} AS id`,
  );
  const make = (text: string) => insert.get(text)!.id;
  if (limit !== null) {
    const idOf = sqlite.query<{ id: number }, [string]>(`SELECT ${id} AS id FROM ${table} WHERE ${label} = ?`);
    const textOf = sqlite.query<{ label: string }, [number]>(`SELECT ${label} AS label FROM ${table} WHERE ${id} = ?`);
    const source = { idOf: (text: string) => idOf.get(text)?.id, textOf: (n: number) => textOf.get(n)?.label };
    return { labels: new LabelCache(make, { limit, source }), load: () => {} };
  }
  const newer = sqlite.query<{ id: number; label: string }, [number]>(
    `SELECT ${id} AS id, ${label} AS label FROM ${table} WHERE ${id} > ?`,
  );
  const labels = new LabelCache(make);
  const load = () => labels.learn(newer.all(labels.newest));
  load();
  return { labels, load };
}

// rowid is the cursor's tie-breaker: it grows with insertion.
const seq = sql<number>`${executions}.rowid`;

const table = getTableName(rollups);
const PART_COLUMNS: Record<RollupPart, string> = {
  data: rollups.data.name,
  apps: rollups.apps.name,
  errors: rollups.errors.name,
};

/** The statements every read of a connection uses, prepared once. */
function prepareReadStatements(sqlite: Database, db: Db) {
  const cellWhere = `"${rollups.grain.name}" = $grain AND "${rollups.slice.name}" = $slice`;
  const sig = errorSignatures;
  return {
    // total_changes() moves with this connection's commits, data_version with other connections'.
    changes: sqlite.query<{ c: number; v: number }, []>(
      "SELECT total_changes() AS c, (SELECT data_version FROM pragma_data_version) AS v",
    ),
    wholeCell: sqlite.query<
      { data: unknown; apps: unknown; errors: unknown },
      Record<"grain" | "slice" | "bucket", number>
    >(
      `SELECT "${rollups.data.name}" AS data, "${rollups.apps.name}" AS apps, "${rollups.errors.name}" AS errors FROM "${table}" WHERE ${cellWhere} AND "${rollups.bucket.name}" = $bucket`,
    ),
    allCells: sqlite.query<
      { slice: number; bucket: number; data: unknown; apps: unknown; errors: unknown },
      Record<"grain" | "from" | "to", number>
    >(
      `SELECT "${rollups.slice.name}" AS slice, "${rollups.bucket.name}" AS bucket, "${rollups.data.name}" AS data, "${rollups.apps.name}" AS apps, "${rollups.errors.name}" AS errors
     FROM "${table}" WHERE "${rollups.grain.name}" = $grain AND "${rollups.bucket.name}" >= $from AND "${rollups.bucket.name}" < $to`,
    ),
    // On the write path (every report): bun:sqlite directly, decoded as executionChunks does.
    getExecution: sqlite.query<unknown[], [string | Uint8Array]>(
      `${SELECT_READ} WHERE "${executions.executionId.name}" = ?`,
    ),
    getExecutions: sqlite.query<unknown[], [string | Uint8Array]>(
      `${SELECT_READ} WHERE ${OF_INSTALL} ORDER BY "${executions.attempt.name}", "${executions.createdAt.name}"`,
    ),
    // The code alone: a whole row (wide, its error text in overflow pages) cost 8x as much.
    typeOfApp: sqlite.query<{ code: string | number }, [string]>(
      `SELECT "${executions.typeCode.name}" AS code FROM "${getTableName(executions)}" WHERE "${executions.nsapp.name}" = ? ORDER BY "${executions.createdAt.name}" DESC, rowid DESC LIMIT 1`,
    ),
    countAttempts: sqlite.query<{ n: number }, [string | Uint8Array]>(
      `SELECT count(*) AS n FROM "${getTableName(executions)}" WHERE ${OF_INSTALL}`,
    ),
    countRetries: sqlite.query<{ n: number }, [string | Uint8Array]>(
      `SELECT count(*) AS n FROM "${getTableName(executions)}" WHERE "${executions.rid.name}" = ?`,
    ),
    // Two subqueries: SQLite answers a lone min() or max() from the index, both in one SELECT by a full scan (~60 ms at 1M).
    recordSpan: sqlite.query<{ first: number | null; last: number | null }, []>(
      `SELECT (SELECT min("${executions.createdAt.name}") FROM "${getTableName(executions)}") AS first, (SELECT max("${executions.createdAt.name}") FROM "${getTableName(executions)}") AS last`,
    ),
    // One statement for any number of ids (an app page asks for one signature per app).
    signaturesOf: sqlite.query<Omit<KnownSignature, "apps"> & { apps: string }, [string]>(
      `SELECT "${sig.id.name}" AS id, "${sig.signature.name}" AS signature, "${sig.example.name}" AS example, "${sig.firstSeen.name}" AS firstSeen, "${sig.lastSeen.name}" AS lastSeen, "${sig.apps.name}" AS apps
     FROM "${getTableName(sig)}" WHERE "${sig.id.name}" IN (SELECT value FROM json_each(?))`,
    ),
    getFoldedUntil: db.select({ t: rollupState.foldedUntil }).from(rollupState).where(eq(rollupState.id, 1)).prepare(),
    getMonthsFrom: db.select({ t: rollupState.monthsFrom }).from(rollupState).where(eq(rollupState.id, 1)).prepare(),
    sliceSpans: sqlite.query<{ slice: number; first: number; last: number }, Record<"grain" | "from" | "to", number>>(
      `SELECT "${rollups.slice.name}" AS slice, min("${rollups.bucket.name}") AS first, max("${rollups.bucket.name}") AS last
     FROM "${table}" WHERE "${rollups.grain.name}" = $grain AND "${rollups.bucket.name}" >= $from AND "${rollups.bucket.name}" < $to GROUP BY "${rollups.slice.name}"`,
    ),
    sliceCells: sqlite.query<
      { bucket: number; data: unknown; apps: unknown; errors: unknown },
      Record<"grain" | "slice" | "from" | "to", number>
    >(
      `SELECT "${rollups.bucket.name}" AS bucket, "${rollups.data.name}" AS data, "${rollups.apps.name}" AS apps, "${rollups.errors.name}" AS errors
     FROM "${table}" WHERE ${cellWhere} AND "${rollups.bucket.name}" >= $from AND "${rollups.bucket.name}" < $to`,
    ),
  };
}

/** What the reads of one connection work with: made once (createSqliteReads), passed to each read. */
interface ReadContext {
  sqlite: Database;
  db: Db;
  labels: LabelCache;
  /** Loads the labels other connections added since. */
  load: () => void;
  q: ReturnType<typeof prepareReadStatements>;
  /** `SELECT slice, bucket, <parts>` of one grain, `n` slices, a bucket range: prepared once per shape (rangeOf). */
  ranges: Map<string, Statement<unknown[], SQLQueryBindings[]>>;
  decoded: DecodedCells;
  fetched: FetchedRanges;
  listings: Listings;
}

/**
 * The listing queries (listExecutions), prepared, by everything bound into them: a page that polls
 * lists the same window (whole hours) again and again, and building and preparing the query each
 * time was ~14 % of /api/scripts' CPU at 1M installs. Each run reads the rows afresh.
 */
const LISTINGS_MAX = 64;
type Listings = RecentlyUsed<ReturnType<typeof listingQuery>>;

function* executionChunks(
  { sqlite, db }: ReadContext,
  filter: ExecutionFilter,
  { offset = 0, limit = Number.POSITIVE_INFINITY, chunkRows = CHUNK_ROWS } = {},
): Generator<Execution[], void> {
  if (!Number.isSafeInteger(offset) || offset < 0 || limit <= 0) return;
  let remaining = limit;
  let after: ListCursor | null = null;
  while (remaining > 0) {
    const n = Math.min(chunkRows, remaining);
    // One lower bound only: with two (the window's and the cursor's) SQLite cannot tell which is
    // larger and starts the index range at the first, rescanning from the window start on every
    // chunk (quadratic). So the cursor's time replaces the window's start.
    const where = whereOf(
      after ? { ...filter, from: Math.max(filter.from ?? after.createdAt, after.createdAt) } : filter,
    );
    const keyset = after ? sql`(${executions.createdAt}, ${seq}) > (${after.createdAt}, ${after.seq})` : undefined;
    const query = db
      .select({ ...readColumns, seq })
      .from(executions)
      .where(and(where, keyset))
      .orderBy(asc(executions.createdAt), asc(seq))
      .limit(n)
      .offset(after ? 0 : offset) // only the first chunk skips; the rest continue by keyset
      .toSQL();
    const rows = sqlite.query(query.sql).values(...(query.params as SQLQueryBindings[])) as unknown[][];
    const last = rows.at(-1);
    if (!last) return;
    yield rows.map(decodeExecution);
    if (rows.length < n) return;
    remaining -= rows.length;
    after = { createdAt: last[CREATED_AT] as number, seq: last[READ_KEYS.length] as number };
  }
}

function rangeOf(
  { sqlite, ranges }: ReadContext,
  parts: readonly RollupPart[],
  n: number,
): Statement<unknown[], SQLQueryBindings[]> {
  const key = `${parts.join(",")}|${n}`;
  let q = ranges.get(key);
  if (!q) {
    const columns = [rollups.slice.name, rollups.bucket.name, ...parts.map((p) => PART_COLUMNS[p])]
      .map((c) => `"${c}"`)
      .join(", ");
    // INDEXED BY: by slice, then bucket. The planner took the (grain, bucket) index and read every slice's cells of the range (18k rows for one app's 30 days at 1M).
    ranges.set(
      key,
      (q = sqlite.query(
        `SELECT ${columns} FROM "${table}" INDEXED BY "rollups_cell" WHERE "${rollups.grain.name}" = ?1 AND "${rollups.bucket.name}" >= ?2 AND "${rollups.bucket.name}" < ?3 AND "${rollups.slice.name}" IN (${Array.from({ length: n }, (_, i) => `?${i + 4}`).join(", ")}) ORDER BY "${rollups.bucket.name}"`,
      )),
    );
  }
  return q;
}

/** Decodes a stored part into `d`; a label this connection has not met yet (another's) is loaded first. */
function decode(
  { labels, load }: ReadContext,
  d: RollupData,
  part: RollupPart,
  stored: unknown,
  dims?: ReadonlySet<string>,
): void {
  try {
    decodePart(d, part, stored, labels, dims);
  } catch (e) {
    if (!(e instanceof UnknownLabelError) || labels.text(e.labelId) !== undefined) throw e;
    load();
    decodePart(d, part, stored, labels, dims);
  }
}

/**
 * The id of a slice, if any cell has ever had it. The labels are loaded at open and whenever
 * another connection wrote (the store's checkState); this one's own are added as they commit.
 */
const sliceId = ({ labels }: ReadContext, slice: string): number | undefined =>
  labels.has(slice) ? labels.id(slice) : undefined;

/** Reported at or after `t`. */
const heard = (t: number): SQL => gte(executions.updatedAt, t);
/** Heard from since `t` though started before the near range: in the partial index (schema.ts executions_heard_late). */
const heardLate = (t: number): SQL | undefined =>
  and(sql.raw(`"updated_in" > ${LATE_MS}`), heard(t), lt(executions.createdAt, nearFrom(t)));

function countUpdatedSince({ db }: ReadContext, filter: HeardFilter, since: readonly number[]): number[] {
  const n = (where: SQL | undefined) =>
    db
      .select({ n: count() })
      .from(executions)
      .where(and(whereOf(filter), where))
      .get()?.n ?? 0;
  return since.map(
    (t) =>
      // Started since t: from the created_at index alone when no outcome is asked.
      n(gte(executions.createdAt, t)) +
      n(and(gte(executions.createdAt, nearFrom(t)), lt(executions.createdAt, t), heard(t))) +
      n(heardLate(t)),
  );
}

function listUpdatedSince({ db }: ReadContext, filter: HeardFilter, since: number, limit: number): Execution[] {
  const newest = (where: SQL | undefined) =>
    db
      .select(readColumns)
      .from(executions)
      .where(and(whereOf(filter), where))
      .orderBy(desc(executions.updatedAt))
      .limit(limit)
      .values() as unknown[][];
  return [...newest(and(gte(executions.createdAt, nearFrom(since)), heard(since))), ...newest(heardLate(since))]
    .map(decodeExecution)
    .sort((a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt)
    .slice(0, limit);
}

/** The prepared query of one listing: `limit` + 1 rows of `filter` after the cursor, in `order`. */
function listingQuery(
  db: Db,
  filter: ExecutionFilter,
  { limit, after, order }: { limit: number; after: ListCursor | undefined; order: "newest" | "oldest" },
) {
  const newest = order === "newest";
  // One bound per side only (see executionChunks): the cursor's time replaces the window's bound
  // on the side the pages move towards.
  const bounded = !after
    ? filter
    : newest
      ? { ...filter, to: Math.min(filter.to ?? after.createdAt + 1, after.createdAt + 1) }
      : { ...filter, from: Math.max(filter.from ?? after.createdAt, after.createdAt) };
  const keyset = !after
    ? undefined
    : newest
      ? sql`(${executions.createdAt}, ${seq}) < (${after.createdAt}, ${after.seq})`
      : sql`(${executions.createdAt}, ${seq}) > (${after.createdAt}, ${after.seq})`;
  const direction = newest ? desc : asc;
  return db
    .select({ ...readColumns, seq })
    .from(executions)
    .where(and(whereOf(bounded), keyset))
    .orderBy(direction(executions.createdAt), direction(seq))
    .limit(limit + 1)
    .prepare();
}

function listExecutions(
  { db, listings }: ReadContext,
  filter: ExecutionFilter,
  { limit, after, order = "newest" }: { limit: number; after?: ListCursor; order?: "newest" | "oldest" },
) {
  const page = { limit, after, order };
  const key = JSON.stringify([filter, page]);
  let query = listings.get(key);
  if (query === undefined) listings.set(key, (query = listingQuery(db, filter, page)));
  // Values in column order, decoded once (rows.ts decodeExecution), as executionChunks reads them:
  // Drizzle's mapped objects were copied twice more per row (a fifth of /api/errors' CPU).
  const rows = query.values() as unknown[][];
  const listed = rows.slice(0, limit);
  const last = listed.at(-1);
  const next: ListCursor | null =
    rows.length > limit && last
      ? { createdAt: last[CREATED_AT] as number, seq: last[READ_KEYS.length] as number }
      : null;
  return { rows: listed.map(decodeExecution), next };
}

function pageExecutions(
  { db }: ReadContext,
  filter: ExecutionFilter,
  page: PageQuery,
): { rows: Execution[]; total: number } {
  const where = and(
    pageWhere(filterColumns, { ...filter, randomId: undefined }, page, like),
    ofInstall(filter.randomId),
  );
  const [counted] = db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(executions)
    .where(where)
    .all();
  const direction = page.descending ? desc : asc;
  // By the word (the virtual column), not the code: pages are in the words' text order.
  const column = pageSortColumn(executions, page.sort);
  const rows = db
    .select(readColumns)
    .from(executions)
    .where(where)
    .orderBy(direction(column), desc(executions.createdAt), desc(seq))
    .limit(page.limit)
    .offset(page.offset)
    .all();
  return { rows: rows.map(fromRow), total: counted?.n ?? 0 };
}

function errorTextCounts({ db }: ReadContext): { error: string; count: number }[] {
  const n = sql<number>`count(*)`.mapWith(Number);
  // Equal texts are stored alike (the same head, the same compressed rest), so grouping by both
  // is exact; only a row written whole before migration 0010 differs, and is merged here.
  const groups = db
    .select({ error: sql<string>`${executions.error}`, rest: executions.errorRest, count: n })
    .from(executions)
    .where(and(isNotNull(executions.error), ne(executions.error, "")))
    .groupBy(executions.error, executions.errorRest)
    .all();
  const byText = new Map<string, number>();
  for (const { error, rest, count } of groups) {
    const text = joinError(error, rest)!;
    byText.set(text, (byText.get(text) ?? 0) + count);
  }
  return [...byText]
    .map(([error, count]) => ({ error, count }))
    .sort((a, b) => b.count - a.count || (a.error < b.error ? -1 : a.error > b.error ? 1 : 0));
}

/**
 * Stored cells of one grain of `slices` (stored slices: those a slice of every repo or platform adds up) in
 * [from, to), one query for them all, decoded afresh with only the parts and dimensions asked
 * for; per slice, oldest first.
 */
function storedRollups(
  ctx: ReadContext,
  { grain, from, to, parts, dims }: Omit<RollupSelection, "slice">,
  slices: readonly string[],
): ReadonlyMap<string, readonly { bucket: number; data: RollupData }[]> {
  const out = new Map<string, { bucket: number; data: RollupData }[]>();
  const ids: number[] = [];
  const names = new Map<number, { bucket: number; data: RollupData }[]>();
  for (const slice of slices) {
    const id = sliceId(ctx, slice);
    if (id === undefined) continue;
    const list: { bucket: number; data: RollupData }[] = [];
    out.set(slice, list);
    names.set(id, list);
    ids.push(id);
  }
  if (ids.length === 0 || from >= to) return out;
  const wanted = dims === undefined ? undefined : new Set<string>(dims);
  const shape = `${parts.join(",")}|${dims?.join(",") ?? "*"}`;
  const range = ctx.fetched.get(`${grain}|${from}|${to}|${parts.join(",")}|${ids.join(",")}`, () =>
    rangeOf(ctx, parts, ids.length).values(grain, from, to, ...ids),
  );
  const made = range.decoded.get(shape);
  if (made !== undefined) return made;
  for (const row of range.rows) {
    const [id, bucket] = row as [number, number];
    const stored = row.slice(2) as (Uint8Array | null)[];
    const key = `${grain}|${bucket}|${id}|${shape}`;
    let data = ctx.decoded.get(key, stored);
    if (data === undefined) {
      data = emptyData();
      try {
        for (let k = 0; k < parts.length; k++) decode(ctx, data, parts[k]!, stored[k], wanted);
      } catch (e) {
        throw asDamage(e, cellName(grain, ctx.labels.text(id) ?? `#${id}`, bucket));
      }
      // Decoded afresh when its bytes change, never changed in place.
      ctx.decoded.set(key, stored, settle(data));
    }
    names.get(id)!.push({ bucket, data });
  }
  range.decoded.set(shape, out);
  return out;
}

/** A stored cell's row with every part, decoded afresh; damage names the cell. */
function wholeData(ctx: ReadContext, row: Record<RollupPart, unknown>, grain: Grain, slice: string, bucket: number) {
  const data = emptyData();
  try {
    for (const part of PARTS) decode(ctx, data, part, row[part]);
  } catch (e) {
    throw asDamage(e, cellName(grain, slice, bucket));
  }
  return data;
}

/** A slice label's text, the dictionary loaded again once when it is not known yet. */
function sliceText({ labels, load }: ReadContext, id: number, where: string): string {
  const slice = labels.text(id) ?? (load(), labels.text(id));
  if (slice === undefined) throw asDamage(new Error(`slice label ${id} is not in the dictionary`), where);
  return slice;
}

/** One stored cell with every part, or undefined (the write path merges into it). */
function storedCell(ctx: ReadContext, grain: Grain, slice: string, bucket: number): RollupData | undefined {
  const id = sliceId(ctx, slice);
  if (id === undefined) return undefined;
  const row = ctx.q.wholeCell.get({ grain, slice: id, bucket });
  return row ? wholeData(ctx, row, grain, slice, bucket) : undefined;
}

/**
 * The stored cells of one slice and grain in [from, to) summed as stored (StoredSum: the months' sums
 * of a bulk load), read one by one, each one's stored bytes told to `read`; null when they count
 * nothing. Damage names the cell.
 */
function sliceSum(
  ctx: ReadContext,
  grain: Grain,
  slice: string,
  from: number,
  to: number,
  read: (bytes: number) => void,
): StoredParts | null {
  const id = sliceId(ctx, slice);
  if (id === undefined) return null;
  // A dimension's label another connection gave, not loaded here yet: the dictionary loaded again once.
  const sum = new StoredSum({ text: (id) => ctx.labels.text(id) ?? (ctx.load(), ctx.labels.text(id)) });
  for (const row of ctx.q.sliceCells.iterate({ grain, slice: id, from, to })) {
    try {
      sum.add(row);
    } catch (e) {
      throw asDamage(e, cellName(grain, slice, row.bucket));
    }
    read(storedBytes(row));
  }
  return sum.parts();
}

const storedBytes = (row: Record<RollupPart, unknown>): number =>
  PARTS.reduce((n, part) => {
    const stored = row[part];
    return n + (stored instanceof Uint8Array ? stored.byteLength : 0);
  }, 0);

/** Each slice with cells of `grain` in [from, to), with its first and last bucket there. */
function sliceSpans(
  ctx: ReadContext,
  grain: Grain,
  from: number,
  to: number,
): { slice: string; first: number; last: number }[] {
  return ctx.q.sliceSpans.all({ grain, from, to }).map(({ slice, first, last }) => ({
    slice: sliceText(ctx, slice, `rollup slices of grain ${grain}`),
    first,
    last,
  }));
}

/** Every stored cell of one grain in [from, to), parsed afresh (verify, fold). */
function storedCells(ctx: ReadContext, grain: Grain, from: number, to: number): RollupCell[] {
  return ctx.q.allCells.all({ grain, from, to }).map((row) => {
    const slice = sliceText(ctx, row.slice, cellName(grain, `#${row.slice}`, row.bucket));
    return { slice, bucket: row.bucket, data: wholeData(ctx, row, grain, slice, row.bucket) };
  });
}

export function createSqliteReads(
  sqlite: Database,
  db: Db,
  { labels, load }: ReturnType<typeof sqliteLabels> = sqliteLabels(sqlite),
) {
  const ctx: ReadContext = {
    sqlite,
    db,
    labels,
    load,
    q: prepareReadStatements(sqlite, db),
    ranges: new Map(),
    decoded: new DecodedCells(16_384),
    fetched: new FetchedRanges(sqlite, 256),
    listings: new RecentlyUsed(LISTINGS_MAX),
  };
  const { q } = ctx;
  const known = new KnownSignatures(sqlite, q, 1024);
  const chunks = (filter: ExecutionFilter, page?: Parameters<typeof executionChunks>[2]) =>
    executionChunks(ctx, filter, page);

  return {
    getExecution(executionId: string): Execution | undefined {
      const [row] = q.getExecution.values(encodeId(executionId));
      return row ? decodeExecution(row) : undefined;
    },
    getExecutions: (randomId: string): Execution[] => q.getExecutions.values(encodeId(randomId)).map(decodeExecution),
    /**
     * Executions of an install stored so far (a new one's attempt number is one more). With
     * `firstRunAbsent` (its first run, whose id is the install's, was just looked up and is not
     * stored) only its retries are counted: the small rid index, not a second primary-key lookup.
     */
    attemptsOf: (randomId: string, firstRunAbsent = false): number =>
      (firstRunAbsent ? q.countRetries : q.countAttempts).get(encodeId(randomId))?.n ?? 0,
    executionChunks: chunks,
    countUpdatedSince: (filter: HeardFilter, since: readonly number[]) => countUpdatedSince(ctx, filter, since),
    listUpdatedSince: (filter: HeardFilter, since: number, limit: number) =>
      listUpdatedSince(ctx, filter, since, limit),
    listExecutions: (filter: ExecutionFilter, page: Parameters<typeof listExecutions>[2]) =>
      listExecutions(ctx, filter, page),
    typesOfApps(apps: readonly string[]): AppType[] {
      const out: AppType[] = [];
      for (const nsapp of apps) {
        const row = q.typeOfApp.get(nsapp);
        if (row) out.push({ nsapp, type: typeWord(row.code) });
      }
      return out;
    },
    pageExecutions: (filter: ExecutionFilter, page: PageQuery) => pageExecutions(ctx, filter, page),
    *iterateExecutions(filter: ExecutionFilter): Generator<Execution> {
      for (const chunk of chunks(filter)) yield* chunk;
    },
    errorTextCounts: () => errorTextCounts(ctx),
    changeMarker: () => changeMarker(q),
    storedRollups: (selection: Omit<RollupSelection, "slice">, slices: readonly string[]) =>
      storedRollups(ctx, selection, slices),
    storedCell: (grain: Grain, slice: string, bucket: number) => storedCell(ctx, grain, slice, bucket),
    storedCells: (grain: Grain, from: number, to: number) => storedCells(ctx, grain, from, to),
    sliceSum: (grain: Grain, slice: string, from: number, to: number, read: (bytes: number) => void) =>
      sliceSum(ctx, grain, slice, from, to, read),
    sliceSpans: (grain: Grain, from: number, to: number) => sliceSpans(ctx, grain, from, to),

    /** The label dictionary (the write path gives new labels through it). */
    labels,
    loadLabels: load,
    /** Rollup rows fetched so far are forgotten (another connection committed: store-state.ts recount). */
    forgetFetched: () => ctx.fetched.clear(),

    // Migration 0004 inserts the one row; without it nothing counts as folded, which is always correct.
    storedFoldedUntil: (): number => q.getFoldedUntil.get()?.t ?? 0,
    /** Month cells from here on are summed from their day cells (rollupState.monthsFrom); Infinity: none. */
    storedMonthsFrom: (): number => q.getMonthsFrom.get()?.t ?? Number.POSITIVE_INFINITY,

    signatures: (ids: readonly string[]): KnownSignature[] => (ids.length === 0 ? [] : known.of(ids)),

    recordSpan(): { first: number; last: number } | null {
      const span = q.recordSpan.get();
      return span?.first == null || span.last == null ? null : { first: span.first, last: span.last };
    },
  };
}
