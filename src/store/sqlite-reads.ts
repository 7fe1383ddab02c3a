// Read queries over SQLite: install listings (keyset pagination), streaming iteration,
// rollup cells and error signatures.
import type { Database } from "bun:sqlite";
import { and, asc, desc, eq, gte, inArray, lt, or, sql, getTableColumns, type SQL } from "drizzle-orm";
import type { Db } from "./database.ts";
import { errorSignatures, installs, rollups, type InstallRow } from "./schema.ts";
import type { InstallFilter, ListCursor, RollupSelection, StoreReads } from "./store.ts";
import { fromColumns } from "../report/rollup.ts";

const installColumns = getTableColumns(installs);

/** Turns a raw SQLite row (column names) into a typed row, as Drizzle would. */
function decodeInstall(raw: Record<string, unknown>): InstallRow {
  const row: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(installColumns)) {
    const value = raw[column.name];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as InstallRow;
}

const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

export function whereOf(f: InstallFilter): SQL | undefined {
  const c: (SQL | undefined)[] = [
    f.nsapp === undefined ? undefined : eq(installs.nsapp, f.nsapp),
    f.status === undefined ? undefined : eq(installs.status, f.status),
    f.outcome === undefined ? undefined : eq(installs.outcome, f.outcome),
    f.type === undefined ? undefined : eq(installs.type, f.type),
    f.osType === undefined ? undefined : eq(installs.osType, f.osType),
    f.osVersion === undefined ? undefined : eq(installs.osVersion, f.osVersion),
    f.pveVersion === undefined ? undefined : eq(installs.pveVersion, f.pveVersion),
    f.method === undefined ? undefined : eq(installs.method, f.method),
    f.from === undefined ? undefined : gte(installs.createdAt, f.from),
    f.to === undefined ? undefined : lt(installs.createdAt, f.to),
  ];
  if (f.q !== undefined && f.q !== "") {
    const pattern = `%${escapeLike(f.q)}%`;
    c.push(or(sql`${installs.nsapp} LIKE ${pattern} ESCAPE '\\'`, sql`${installs.error} LIKE ${pattern} ESCAPE '\\'`));
  }
  return and(...c);
}

export function createSqliteReads(sqlite: Database, db: Db): StoreReads {
  const rowid = sql<number>`${installs}.rowid`;

  return {
    listInstalls(filter, { limit, after }) {
      const keyset = after ? sql`(${installs.createdAt}, ${rowid}) < (${after.createdAt}, ${after.rowid})` : undefined;
      const rows = db
        .select({ ...installColumns, rowid })
        .from(installs)
        .where(and(whereOf(filter), keyset))
        .orderBy(desc(installs.createdAt), desc(rowid))
        .limit(limit + 1)
        .all();
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const next: ListCursor | null = rows.length > limit && last ? { createdAt: last.createdAt, rowid: last.rowid } : null;
      return { rows: page.map(({ rowid: _, ...row }) => row), next };
    },

    *iterateInstalls(filter) {
      const query = db.select().from(installs).where(whereOf(filter)).orderBy(asc(installs.createdAt)).toSQL();
      const statement = sqlite.query(query.sql);
      try {
        for (const raw of statement.iterate(...(query.params as never[]))) yield decodeInstall(raw as Record<string, unknown>);
      } finally {
        statement.finalize();
      }
    },

    readRollups({ grain, app, from, to, parts }: RollupSelection) {
      const want = new Set(parts);
      return db
        .select({
          bucket: rollups.bucket,
          data: want.has("data") ? rollups.data : sql<string>`''`,
          apps: want.has("apps") ? rollups.apps : sql<string>`''`,
          errors: want.has("errors") ? rollups.errors : sql<string>`''`,
        })
        .from(rollups)
        .where(and(eq(rollups.grain, grain), eq(rollups.app, app), gte(rollups.bucket, from), lt(rollups.bucket, to)))
        .orderBy(asc(rollups.bucket))
        .all()
        .map(({ bucket, ...columns }) => ({ bucket, data: fromColumns(columns) }));
    },

    rollupCells(grain, from, to) {
      return db
        .select({ app: rollups.app, bucket: rollups.bucket, data: rollups.data, apps: rollups.apps, errors: rollups.errors })
        .from(rollups)
        .where(and(eq(rollups.grain, grain), gte(rollups.bucket, from), lt(rollups.bucket, to)))
        .all()
        .map(({ app, bucket, ...columns }) => ({ app, bucket, data: fromColumns(columns) }));
    },

    signatures(ids) {
      if (ids.length === 0) return [];
      return db.select().from(errorSignatures).where(inArray(errorSignatures.id, ids)).all();
    },

    recordSpan() {
      const span = db
        .select({ first: sql<number | null>`min(${installs.createdAt})`, last: sql<number | null>`max(${installs.createdAt})` })
        .from(installs)
        .get();
      return span?.first == null || span.last == null ? null : { first: span.first, last: span.last };
    },
  };
}
