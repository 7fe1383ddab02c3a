// Rollup cells of the PostgreSQL engine: one row per (grain, slice, bucket), its counts in the
// three JSON columns the SQLite engine stores too (domain/rollup.ts toColumns), so a cell is one
// row to read and to write, not one per dimension value (docs/decisions.md, "Rollup cells on
// PostgreSQL": counter rows took ~3.6 KB per execution). A batch adds its deltas to the cells it
// touches: each cell's row is made if new and locked in key order, merged by the domain's rule
// (mergeInto), written back, or removed when nothing is counted in it any more. Nodes writing the
// same cell wait for each other's commit; the key order keeps them from waiting in a cycle.
import type { Sql, TransactionSql } from "postgres";
import { GRAINS, bucketStart, emptyData, fromColumns, isEmpty, mergeInto, toColumns, type Grain, type RollupColumns, type RollupData, type RollupKey, type RollupPart } from "../../domain/rollup.ts";
import { DAY } from "../../domain/time.ts";
import type { RollupCell } from "../contract.ts";

type Tx = TransactionSql;

const EMPTY: RollupColumns = toColumns(emptyData());

const keyText = (k: RollupKey): string => `${k.grain}|${k.bucket}|${k.app}`;
const byKey = (a: { key: RollupKey }, b: { key: RollupKey }) =>
  a.key.grain - b.key.grain || (a.key.app < b.key.app ? -1 : a.key.app > b.key.app ? 1 : 0) || a.key.bucket - b.key.bucket;

type Row = { grain: number; slice: string; bucket: number } & RollupColumns;

/** Adds cell deltas (negative counts take away) to the stored cells, in one transaction. */
export async function addRollups(tx: Tx, deltas: Iterable<{ key: RollupKey; data: RollupData }>): Promise<void> {
  const list = [...deltas].sort(byKey);
  if (list.length === 0) return;
  const grains = list.map((c) => c.key.grain);
  const slices = list.map((c) => c.key.app);
  const buckets = list.map((c) => c.key.bucket);
  // Each cell's row as it stands, locked: made empty if new; a no-op update of one that exists.
  const stored = await tx<Row[]>`
    INSERT INTO rollup_cells (grain, slice, bucket, data, apps, errors)
    SELECT g, s, b, ${EMPTY.data}, ${EMPTY.apps}, ${EMPTY.errors} FROM unnest(${grains}::smallint[], ${slices}::text[], ${buckets}::bigint[]) AS u(g, s, b)
    ORDER BY g, s, b
    ON CONFLICT (grain, slice, bucket) DO UPDATE SET grain = excluded.grain
    RETURNING grain, slice, bucket, data, apps, errors`;
  const rows = new Map(stored.map((r) => [keyText({ grain: r.grain as Grain, app: r.slice, bucket: r.bucket }), r]));
  const put: { key: RollupKey; columns: RollupColumns }[] = [];
  const gone: RollupKey[] = [];
  for (const { key, data } of list) {
    const merged = mergeInto(fromColumns(rows.get(keyText(key))!), data);
    if (isEmpty(merged)) gone.push(key);
    else put.push({ key, columns: toColumns(merged) });
  }
  if (put.length > 0) {
    await tx`
      UPDATE rollup_cells AS c SET data = u.data, apps = u.apps, errors = u.errors
      FROM unnest(${put.map((p) => p.key.grain)}::smallint[], ${put.map((p) => p.key.app)}::text[], ${put.map((p) => p.key.bucket)}::bigint[],
        ${put.map((p) => p.columns.data)}::text[], ${put.map((p) => p.columns.apps)}::text[], ${put.map((p) => p.columns.errors)}::text[]) AS u(grain, slice, bucket, data, apps, errors)
      WHERE c.grain = u.grain AND c.slice = u.slice AND c.bucket = u.bucket`;
  }
  if (gone.length > 0) {
    await tx`
      DELETE FROM rollup_cells WHERE (grain, slice, bucket) IN (
        SELECT * FROM unnest(${gone.map((k) => k.grain)}::smallint[], ${gone.map((k) => k.app)}::text[], ${gone.map((k) => k.bucket)}::bigint[]))`;
  }
}

/**
 * Adds the hour cells of [from, until) to the day and month cells that contain them, a day of
 * hours at a time (memory stays one day's cells); the number of hours that had a cell.
 */
export async function foldHours(tx: Tx, from: number, until: number): Promise<number> {
  let hours = 0;
  for (let day = bucketStart(from, GRAINS.day); day < until; day += DAY) {
    const rows = await tx<Row[]>`
      SELECT grain, slice, bucket, data, apps, errors FROM rollup_cells
      WHERE grain = ${GRAINS.hour} AND bucket >= ${Math.max(from, day)} AND bucket < ${Math.min(until, day + DAY)}`;
    const sums = new Map<string, { key: RollupKey; data: RollupData }>();
    for (const row of rows) {
      for (const grain of [GRAINS.day, GRAINS.month] as const) {
        const key = { grain, app: row.slice, bucket: bucketStart(row.bucket, grain) };
        const k = keyText(key);
        const sum = sums.get(k) ?? { key, data: emptyData() };
        mergeInto(sum.data, fromColumns(row));
        sums.set(k, sum);
      }
    }
    hours += new Set(rows.map((r) => r.bucket)).size;
    await addRollups(tx, sums.values());
  }
  return hours;
}

/** Removes every cell of every grain with its bucket in [from, to): nothing counted there is stored any more. */
export const dropCells = (tx: Tx, from: number, to: number) => tx`DELETE FROM rollup_cells WHERE bucket >= ${from} AND bucket < ${to}`;

/** Cells of one grain with bucket in [from, to), of one slice (or all), with the parts asked for; oldest first. */
export async function readCells(pg: Sql, grain: Grain, from: number, to: number, slice: string | null, parts: readonly RollupPart[]): Promise<RollupCell[]> {
  const columns = pg.unsafe(parts.length === 0 ? "''::text AS data" : parts.join(", "));
  const sliceIs = slice === null ? pg`TRUE` : pg`slice = ${slice}`;
  const rows = await pg<({ slice: string; bucket: number } & Partial<RollupColumns>)[]>`
    SELECT slice, bucket, ${columns} FROM rollup_cells WHERE grain = ${grain} AND ${sliceIs} AND bucket >= ${from} AND bucket < ${to}`;
  // Slices by code point, as SQLite compares text (the server's collation may not).
  return rows
    .map(({ slice: s, bucket, ...columns }) => ({ slice: s, bucket, data: fromColumns(columns) }))
    .sort((a, b) => a.bucket - b.bucket || (a.slice < b.slice ? -1 : a.slice > b.slice ? 1 : 0));
}
