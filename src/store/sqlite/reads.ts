// Read queries over SQLite: install listings (keyset pagination), streaming iteration, stored
// rollup cells (parsed through the cell cache) and error signatures. Open hours are the store's.
import type { Database, SQLQueryBindings } from "bun:sqlite";
import { and, asc, desc, eq, gte, inArray, isNotNull, isNull, lt, lte, ne, or, sql, getTableColumns, getTableName, type SQL } from "drizzle-orm";
import type { KnownSignature } from "../../domain/error-signature.ts";
import type { Install } from "../../domain/install.ts";
import { addColumn, fromColumns, type Grain, type RollupData, type RollupPart } from "../../domain/rollup.ts";
import type { InstallFilter, ListCursor, RollupCell, RollupSelection } from "../contract.ts";
import { cellKey, type CellCache } from "./cell-cache.ts";
import type { Db } from "./database.ts";
import { errorSignatures, installs, rollupState, rollups } from "./schema.ts";

const installColumns = getTableColumns(installs);
const installKeys = Object.keys(installColumns) as (keyof Install)[];
const CREATED_AT = installKeys.indexOf("createdAt");
// Text, integer and real columns come back from SQLite as they are; only the boolean needs
// Drizzle's mapping. Skipping the identity calls doubles the speed of streamed reads (export).
const needsMapping = installKeys.map((key) => installColumns[key].columnType === "SQLiteBoolean");

/** Turns a raw SQLite row (values in column order) into a typed install, as Drizzle would. */
function decodeInstall(values: unknown[]): Install {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < installKeys.length; i++) {
    const value = values[i] ?? null;
    row[installKeys[i]!] = value !== null && needsMapping[i] ? installColumns[installKeys[i]!].mapFromDriverValue(value) : value;
  }
  return row as unknown as Install;
}

/** The parts asked for, and only those: a reader sees the same cell whatever else a write cached. */
function only(data: RollupData, parts: readonly RollupPart[], have: ReadonlySet<RollupPart>): RollupData {
  if (have.size === parts.length) return data;
  const { nsapp, ...rest } = data.dims;
  const withData = parts.includes("data");
  const dims: RollupData["dims"] = withData ? rest : {};
  if (nsapp && parts.includes("apps")) dims.nsapp = nsapp;
  return { dims, dur: withData ? data.dur : {}, err: parts.includes("errors") ? data.err : {} };
}

/** Rows per chunk of installChunks unless the caller says otherwise. */
const CHUNK_ROWS = 1000;

const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

type TextColumn = typeof installs.nsapp | typeof installs.status | typeof installs.type | typeof installs.osType | typeof installs.osVersion | typeof installs.pveVersion | typeof installs.method;

/** Exact match; "" matches installs without the value (stored as null). */
function matches(column: TextColumn, value: string | undefined): SQL | undefined {
  if (value === undefined) return undefined;
  return value === "" ? or(isNull(column), eq(column, "")) : eq(column, value);
}

function whereOf(f: InstallFilter): SQL | undefined {
  const c: (SQL | undefined)[] = [
    matches(installs.nsapp, f.nsapp),
    matches(installs.status, f.status),
    f.outcome === undefined ? undefined : eq(installs.outcome, f.outcome),
    matches(installs.type, f.type),
    matches(installs.osType, f.osType),
    matches(installs.osVersion, f.osVersion),
    matches(installs.pveVersion, f.pveVersion),
    matches(installs.method, f.method),
    f.from === undefined ? undefined : gte(installs.createdAt, f.from),
    f.to === undefined ? undefined : lt(installs.createdAt, f.to),
    f.until === undefined ? undefined : lte(installs.createdAt, f.until),
  ];
  if (f.q !== undefined && f.q !== "") {
    const pattern = `%${escapeLike(f.q)}%`;
    c.push(or(sql`${installs.nsapp} LIKE ${pattern} ESCAPE '\\'`, sql`${installs.error} LIKE ${pattern} ESCAPE '\\'`));
  }
  return and(...c);
}

export type SqliteReads = ReturnType<typeof createSqliteReads>;

export function createSqliteReads(sqlite: Database, db: Db, cells: CellCache) {
  // rowid is the cursor's tie-breaker: it grows with insertion.
  const seq = sql<number>`${installs}.rowid`;
  // total_changes() moves with this connection's commits, data_version with other connections'.
  const changes = sqlite.query<{ c: number; v: number }, []>("SELECT total_changes() AS c, (SELECT data_version FROM pragma_data_version) AS v");

  function* installChunks(filter: InstallFilter, { offset = 0, limit = Number.POSITIVE_INFINITY, chunkRows = CHUNK_ROWS } = {}): Generator<Install[], void> {
    if (!Number.isSafeInteger(offset) || offset < 0 || limit <= 0) return;
    let remaining = limit;
    let after: ListCursor | null = null;
    while (remaining > 0) {
      const n = Math.min(chunkRows, remaining);
      // One lower bound only: with two (the window's and the cursor's) SQLite cannot tell which is
      // larger and starts the index range at the first, rescanning from the window start on every
      // chunk (quadratic). So the cursor's time replaces the window's start.
      const where = whereOf(after ? { ...filter, from: Math.max(filter.from ?? after.createdAt, after.createdAt) } : filter);
      const keyset = after ? sql`(${installs.createdAt}, ${seq}) > (${after.createdAt}, ${after.seq})` : undefined;
      const query = db
        .select({ ...installColumns, seq })
        .from(installs)
        .where(and(where, keyset))
        .orderBy(asc(installs.createdAt), asc(seq))
        .limit(n)
        .offset(after ? 0 : offset) // only the first chunk skips; the rest continue by keyset
        .toSQL();
      const rows = sqlite.query(query.sql).values(...(query.params as SQLQueryBindings[])) as unknown[][];
      const last = rows.at(-1);
      if (!last) return;
      yield rows.map(decodeInstall);
      if (rows.length < n) return;
      remaining -= rows.length;
      after = { createdAt: last[CREATED_AT] as number, seq: last[installKeys.length] as number };
    }
  }

  const table = getTableName(rollups);
  const cellWhere = `"${rollups.grain.name}" = $grain AND "${rollups.app.name}" = $app`;
  const cellBuckets = sqlite.query<{ bucket: number }, Record<"grain" | "app" | "from" | "to", string | number>>(
    `SELECT "${rollups.bucket.name}" AS bucket FROM "${table}" WHERE ${cellWhere} AND "${rollups.bucket.name}" >= $from AND "${rollups.bucket.name}" < $to ORDER BY "${rollups.bucket.name}"`,
  );
  const partOf = (column: { name: string }) =>
    sqlite.query<{ text: string }, Record<"grain" | "app" | "bucket", string | number>>(`SELECT "${column.name}" AS text FROM "${table}" WHERE ${cellWhere} AND "${rollups.bucket.name}" = $bucket`);
  const cellPart = { data: partOf(rollups.data), apps: partOf(rollups.apps), errors: partOf(rollups.errors) };

  // On the write path (every status update): bun:sqlite directly, decoded as installChunks does.
  const getInstall = sqlite.query<unknown[], [string]>(
    `SELECT ${installKeys.map((k) => `"${installColumns[k].name}"`).join(", ")} FROM "${getTableName(installs)}" WHERE "${installs.randomId.name}" = ?`,
  );
  const getFoldedUntil = db.select({ t: rollupState.foldedUntil }).from(rollupState).where(eq(rollupState.id, 1)).prepare();

  return {
    getInstall(randomId: string): Install | undefined {
      const [row] = getInstall.values(randomId);
      return row ? decodeInstall(row) : undefined;
    },
    installChunks,

    listInstalls(filter: InstallFilter, { limit, after, order = "newest" }: { limit: number; after?: ListCursor; order?: "newest" | "oldest" }) {
      const newest = order === "newest";
      // One bound per side only (see installChunks): the cursor's time replaces the window's bound
      // on the side the pages move towards.
      const bounded = !after
        ? filter
        : newest
          ? { ...filter, to: Math.min(filter.to ?? after.createdAt + 1, after.createdAt + 1) }
          : { ...filter, from: Math.max(filter.from ?? after.createdAt, after.createdAt) };
      const keyset = !after
        ? undefined
        : newest
          ? sql`(${installs.createdAt}, ${seq}) < (${after.createdAt}, ${after.seq})`
          : sql`(${installs.createdAt}, ${seq}) > (${after.createdAt}, ${after.seq})`;
      const direction = newest ? desc : asc;
      const rows = db
        .select({ ...installColumns, seq })
        .from(installs)
        .where(and(whereOf(bounded), keyset))
        .orderBy(direction(installs.createdAt), direction(seq))
        .limit(limit + 1)
        .all();
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const next: ListCursor | null = rows.length > limit && last ? { createdAt: last.createdAt, seq: last.seq } : null;
      return { rows: page.map(({ seq: _, ...row }): Install => row), next };
    },

    *iterateInstalls(filter: InstallFilter): Generator<Install> {
      for (const chunk of installChunks(filter)) yield* chunk;
    },

    errorTextCounts() {
      const n = sql<number>`count(*)`.mapWith(Number);
      return db
        .select({ error: sql<string>`${installs.error}`, count: n })
        .from(installs)
        .where(and(isNotNull(installs.error), ne(installs.error, "")))
        .groupBy(installs.error)
        .orderBy(desc(n), asc(installs.error))
        .all();
    },

    changeMarker(): string {
      const { c, v } = changes.get()!;
      return `${c}:${v}`;
    },

    /** Stored cells of one grain and app slice, parsed through the cache. */
    storedRollups({ grain, app, from, to, parts }: RollupSelection): { bucket: number; data: RollupData }[] {
      return cellBuckets.all({ grain, app, from, to }).map(({ bucket }) => {
        const cell = cells.entry(cellKey(grain, bucket, app));
        for (const part of parts) {
          if (cell.have.has(part)) continue;
          addColumn(cell.data, part, cellPart[part].get({ grain, app, bucket })!.text);
          cell.have.add(part);
        }
        return { bucket, data: only(cell.data, parts, cell.have) };
      });
    },

    /** Every stored cell of one grain in [from, to), parsed afresh (verify, fold). */
    storedCells(grain: Grain, from: number, to: number): RollupCell[] {
      return db
        .select({ app: rollups.app, bucket: rollups.bucket, data: rollups.data, apps: rollups.apps, errors: rollups.errors })
        .from(rollups)
        .where(and(eq(rollups.grain, grain), gte(rollups.bucket, from), lt(rollups.bucket, to)))
        .all()
        .map(({ app, bucket, ...columns }) => ({ app, bucket, data: fromColumns(columns) }));
    },

    // Migration 0004 inserts the one row; without it nothing counts as folded, which is always correct.
    storedFoldedUntil: (): number => getFoldedUntil.get()?.t ?? 0,

    signatures(ids: readonly string[]): KnownSignature[] {
      if (ids.length === 0) return [];
      return db
        .select()
        .from(errorSignatures)
        .where(inArray(errorSignatures.id, [...ids]))
        .all()
        .map((s) => ({ ...s, apps: JSON.parse(s.apps) as string[] }));
    },

    recordSpan(): { first: number; last: number } | null {
      const span = db
        .select({ first: sql<number | null>`min(${installs.createdAt})`, last: sql<number | null>`max(${installs.createdAt})` })
        .from(installs)
        .get();
      return span?.first == null || span.last == null ? null : { first: span.first, last: span.last };
    },
  };
}
