// Rollup cells of the PostgreSQL engine: one row per (grain, slice, bucket), its counts in the
// three JSON columns the SQLite engine stores too (domain/rollup.ts toColumns), so a cell is one
// row to read and to write, not one per dimension value (docs/decisions.md, "Rollup cells on
// PostgreSQL": counter rows took ~3.6 KB per execution). A batch adds its deltas to the cells it
// touches: each cell's row is made if new and locked in key order, merged by the domain's rule
// (mergeInto), written back, or removed when nothing is counted in it any more. Nodes writing the
// same cell wait for each other's commit; the key order keeps them from waiting in a cycle.
import type { Sql } from "postgres";
import { GRAINS, bucketStart, emptyData, fromColumns, isEmpty, mergeInto, toColumns, type Grain, type RollupColumns, type RollupData, type RollupKey, type RollupPart } from "../../domain/rollup.ts";
import { DAY } from "../../domain/time.ts";
import type { RollupCell } from "../contract.ts";

/** A connection inside a transaction (transaction.ts). */
type Tx = Sql;

const EMPTY: RollupColumns = toColumns(emptyData());

const keyText = (k: RollupKey): string => `${k.grain}|${k.bucket}|${k.app}`;
const byKey = (a: { key: RollupKey }, b: { key: RollupKey }) =>
  a.key.grain - b.key.grain || (a.key.app < b.key.app ? -1 : a.key.app > b.key.app ? 1 : 0) || a.key.bucket - b.key.bucket;

type Row = { grain: number; slice: string; bucket: number } & RollupColumns;
type LockedRow = Row & { ctid: string };

/** Adds cell deltas (negative counts take away) to the stored cells, in one transaction. */
export async function addRollups(tx: Tx, deltas: Iterable<{ key: RollupKey; data: RollupData }>): Promise<void> {
  const list = [...deltas].sort(byKey);
  if (list.length === 0) return;
  const grains = list.map((c) => c.key.grain);
  const slices = list.map((c) => c.key.app);
  const buckets = list.map((c) => c.key.bucket);
  // Each cell's row as it stands, locked: made empty if new; a no-op update of one that exists.
  // Its ctid finds it again below: looked up by key, the planner chose the (grain, bucket) index
  // and read every slice of the hour for each cell (~180 buffers per cell, 3/4 of a batch's time).
  const stored = await tx<LockedRow[]>`
    INSERT INTO rollup_cells (grain, slice, bucket, data, apps, errors)
    SELECT g, s, b, ${EMPTY.data}, ${EMPTY.apps}, ${EMPTY.errors} FROM unnest(${grains}::smallint[], ${slices}::text[], ${buckets}::bigint[]) AS u(g, s, b)
    ORDER BY g, s, b
    ON CONFLICT (grain, slice, bucket) DO UPDATE SET grain = excluded.grain
    RETURNING ctid::text AS ctid, grain, slice, bucket, data, apps, errors`;
  const rows = new Map(stored.map((r) => [keyText({ grain: r.grain as Grain, app: r.slice, bucket: r.bucket }), r]));
  const put: { ctid: string; columns: RollupColumns }[] = [];
  const gone: string[] = [];
  for (const { key, data } of list) {
    const row = rows.get(keyText(key))!;
    const merged = mergeInto(fromColumns(row), data);
    if (isEmpty(merged)) gone.push(row.ctid);
    else put.push({ ctid: row.ctid, columns: toColumns(merged) });
  }
  if (put.length > 0) {
    const ctids = put.map((p) => p.ctid);
    await tx`
      UPDATE rollup_cells AS c SET data = u.data, apps = u.apps, errors = u.errors
      FROM unnest(${ctids}::tid[], ${put.map((p) => p.columns.data)}::text[], ${put.map((p) => p.columns.apps)}::text[], ${put.map((p) => p.columns.errors)}::text[]) AS u(id, data, apps, errors)
      WHERE c.ctid = ANY(${ctids}::tid[]) AND c.ctid = u.id`;
  }
  if (gone.length > 0) await tx`DELETE FROM rollup_cells WHERE ctid = ANY(${gone}::tid[])`;
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

/**
 * Parsed parts of stored cells with the version of the row they were parsed from (xmin and ctid:
 * every write of a row, on any node, makes a new version). Dashboards read the same folded cells
 * again and again; a read first asks for the versions (keys only, small) and fetches and parses
 * only the cells it has not parsed at that version. Least recently used cells go past `limit`.
 */
export class CellParts {
  private readonly cells = new Map<string, { version: string; parts: Partial<Record<RollupPart, RollupData>> }>();

  constructor(private readonly limit = 50_000) {}

  get(key: string) {
    const cell = this.cells.get(key);
    if (cell) {
      this.cells.delete(key); // re-inserted: a Map's order is least recently used first
      this.cells.set(key, cell);
    }
    return cell;
  }

  put(key: string, version: string, part: RollupPart, data: RollupData): void {
    let cell = this.cells.get(key);
    if (cell?.version !== version) this.cells.set(key, (cell = { version, parts: {} }));
    cell.parts[part] = data;
    for (const oldest of this.cells.keys()) {
      if (this.cells.size <= this.limit) break;
      this.cells.delete(oldest);
    }
  }
}

/** A cell of the parts asked for only, made of cached parsed parts (shared maps, a dims object of its own). */
function assemble(cached: Partial<Record<RollupPart, RollupData>>, parts: readonly RollupPart[]): RollupData {
  const d = emptyData();
  if (parts.includes("data") && cached.data) {
    d.dims = { ...cached.data.dims };
    d.dur = cached.data.dur;
  }
  if (parts.includes("apps") && cached.apps?.dims.nsapp) d.dims.nsapp = cached.apps.dims.nsapp;
  if (parts.includes("errors") && cached.errors) d.err = cached.errors.err;
  return d;
}

const VERSION = "xmin::text || '/' || ctid::text";

/** Cells of one grain with bucket in [from, to), of one slice (or all), with the parts asked for; oldest first. */
export async function readCells(pg: Sql, cache: CellParts, grain: Grain, from: number, to: number, slice: string | null, parts: readonly RollupPart[]): Promise<RollupCell[]> {
  const sliceIs = slice === null ? pg`TRUE` : pg`slice = ${slice}`;
  const stored = await pg<{ slice: string; bucket: number; version: string }[]>`
    SELECT slice, bucket, ${pg.unsafe(VERSION)} AS version FROM rollup_cells WHERE grain = ${grain} AND ${sliceIs} AND bucket >= ${from} AND bucket < ${to}`;
  const keyOf = (s: string, bucket: number) => keyText({ grain, app: s, bucket });
  const stale = stored.filter((c) => {
    const cached = cache.get(keyOf(c.slice, c.bucket));
    return cached?.version !== c.version || parts.some((p) => cached.parts[p] === undefined);
  });
  if (stale.length > 0 && parts.length > 0) {
    const rows = await pg<({ slice: string; bucket: number; version: string } & Partial<RollupColumns>)[]>`
      SELECT slice, bucket, ${pg.unsafe(VERSION)} AS version, ${pg.unsafe(parts.join(", "))} FROM rollup_cells
      WHERE grain = ${grain} AND (slice, bucket) IN (SELECT * FROM unnest(${stale.map((c) => c.slice)}::text[], ${stale.map((c) => c.bucket)}::bigint[]))`;
    for (const row of rows) for (const part of parts) cache.put(keyOf(row.slice, row.bucket), row.version, part, fromColumns({ [part]: row[part] }));
  }
  const cells: RollupCell[] = [];
  for (const c of stored) {
    if (parts.length === 0) {
      cells.push({ slice: c.slice, bucket: c.bucket, data: emptyData() });
      continue;
    }
    const cached = cache.get(keyOf(c.slice, c.bucket));
    // Gone between the two reads (it came to nothing): as if read after.
    if (cached) cells.push({ slice: c.slice, bucket: c.bucket, data: assemble(cached.parts, parts) });
  }
  // Slices by code point, as SQLite compares text (the server's collation may not).
  return cells.sort((a, b) => a.bucket - b.bucket || (a.slice < b.slice ? -1 : a.slice > b.slice ? 1 : 0));
}
