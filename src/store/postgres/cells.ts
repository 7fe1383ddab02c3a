// Rollup cells of the PostgreSQL engine: one row per (grain, stored slice, bucket), its counts in
// the three binary parts the SQLite engine stores too (domain/rollup-codec.ts), so a cell is one
// row to read and to write, not one per dimension value (docs/decisions.md, "Rollup cells on
// PostgreSQL": counter rows took ~3.6 KB per execution). A batch adds its deltas to the cells it
// touches: each cell's row is made if new and locked in key order, merged by the domain's rule
// (mergeInto), written back, or removed when nothing is counted in it any more. Nodes writing the
// same cell wait for each other's commit; the key order keeps them from waiting in a cycle.
import type { Sql } from "postgres";
import { GRAINS, bucketStart, emptyData, hoursFrom, isAllApps, isEmpty, mergeInto, type Grain, type RollupData, type RollupKey, type RollupPart } from "../../domain/rollup.ts";
import { UnknownLabelError, decodePart, encodeCell, labelsOf } from "../../domain/rollup-codec.ts";
import { DAY } from "../../domain/time.ts";
import type { RollupCell } from "../contract.ts";
import { LabelCache } from "../shared/labels.ts";

/** A connection inside a transaction (transaction.ts). */
type Tx = Sql;

/**
 * The label dictionary of a server (the primary, or a replica for its reads). New labels are
 * inserted by a statement of their own on the pool, committed at once, before a batch locks any
 * cell: a batch never waits on another's uncommitted label, and a label of a batch that then
 * rolls back is only unused. Labels another node made are loaded when a cell names one.
 */
export class PgLabels {
  readonly cache = new LabelCache();

  constructor(private readonly pg: Sql) {}

  /** Every label in `wanted` has an id (in the table and here). */
  async ensure(wanted: Iterable<string>): Promise<void> {
    const missing = [...new Set(wanted)].filter((l) => !this.cache.has(l)).sort();
    if (missing.length === 0) return;
    await this.pg`INSERT INTO rollup_labels (label) SELECT l FROM unnest(${missing}::text[]) AS u(l) ORDER BY l ON CONFLICT (label) DO NOTHING`;
    this.cache.learn(await this.pg<{ id: number; label: string }[]>`SELECT id, label FROM rollup_labels WHERE label = ANY(${missing}::text[])`);
  }

  /** Every label of the table (ids are not given in commit order across nodes: all, not only the newest). */
  async load(): Promise<void> {
    this.cache.learn(await this.pg<{ id: number; label: string }[]>`SELECT id, label FROM rollup_labels`);
  }

  /** The id of a slice, if any cell ever had it (looked up once more when not known here). */
  async sliceId(slice: string): Promise<number | undefined> {
    if (!this.cache.has(slice)) this.cache.learn(await this.pg<{ id: number; label: string }[]>`SELECT id, label FROM rollup_labels WHERE label = ${slice}`);
    return this.cache.has(slice) ? this.cache.id(slice) : undefined;
  }

  /** The text of a label id, loading the table once when it is not known here. */
  async text(id: number): Promise<string | undefined> {
    if (this.cache.text(id) === undefined) await this.load();
    return this.cache.text(id);
  }

  /** Decodes a stored part into `d`, loading the labels once when it names one not known here. */
  async decode(d: RollupData, part: RollupPart, stored: unknown): Promise<void> {
    try {
      decodePart(d, part, stored, this.cache);
    } catch (e) {
      if (!(e instanceof UnknownLabelError)) throw e;
      await this.load();
      decodePart(d, part, stored, this.cache);
    }
  }
}

const PARTS: readonly RollupPart[] = ["data", "apps", "errors"];
type Parts = Record<RollupPart, Buffer | null>;
type Row = { grain: number; slice: number; bucket: number } & Parts;

const keyText = (k: RollupKey): string => `${k.grain}|${k.bucket}|${k.app}`;

/** A stored cell, whole. */
async function decodeRow(labels: PgLabels, row: Parts): Promise<RollupData> {
  const d = emptyData();
  for (const part of PARTS) await labels.decode(d, part, row[part]);
  return d;
}

/** Adds cell deltas (negative counts take away) to the stored cells, in one transaction. */
export async function addRollups(tx: Tx, labels: PgLabels, deltas: Iterable<{ key: RollupKey; data: RollupData }>): Promise<void> {
  const given = [...deltas];
  if (given.length === 0) return;
  // Labels first, committed on their own, before any cell is locked (PgLabels).
  const wanted = new Set<string>();
  for (const { key, data } of given) {
    wanted.add(key.app);
    labelsOf(data, wanted);
  }
  await labels.ensure(wanted);
  const ids = labels.cache;
  const list = given
    .map((d) => ({ ...d, slice: ids.id(d.key.app) }))
    .sort((a, b) => a.key.grain - b.key.grain || a.slice - b.slice || a.key.bucket - b.key.bucket);
  // Each cell's row as it stands, locked: made empty if new; a no-op update of one that exists.
  const empty = encodeCell(emptyData(), false, ids).data!;
  const stored = await tx<Row[]>`
    INSERT INTO rollup_cells (grain, slice, bucket, data)
    SELECT g, s, b, ${Buffer.from(empty)}::bytea FROM unnest(${list.map((c) => c.key.grain)}::smallint[], ${list.map((c) => c.slice)}::int[], ${list.map((c) => c.key.bucket)}::bigint[]) AS u(g, s, b)
    ORDER BY g, s, b
    ON CONFLICT (grain, slice, bucket) DO UPDATE SET grain = excluded.grain
    RETURNING grain, slice, bucket, data, apps, errors`;
  const rows = new Map(stored.map((r) => [`${r.grain}|${r.bucket}|${r.slice}`, r]));
  const put: { grain: number; slice: number; bucket: number; parts: Record<RollupPart, Uint8Array | null> }[] = [];
  const gone: { grain: number; slice: number; bucket: number }[] = [];
  for (const { key, data, slice } of list) {
    const merged = mergeInto(await decodeRow(labels, rows.get(`${key.grain}|${key.bucket}|${slice}`)!), data);
    const row = { grain: key.grain, slice, bucket: key.bucket };
    if (isEmpty(merged)) gone.push(row);
    else put.push({ ...row, parts: encodeCell(merged, isAllApps(key.app), ids) });
  }
  const bytes = (p: Uint8Array | null) => (p === null ? null : Buffer.from(p.buffer, p.byteOffset, p.byteLength));
  if (put.length > 0) {
    await tx`
      UPDATE rollup_cells AS c SET data = u.data, apps = u.apps, errors = u.errors
      FROM unnest(${put.map((p) => p.grain)}::smallint[], ${put.map((p) => p.slice)}::int[], ${put.map((p) => p.bucket)}::bigint[],
        ${put.map((p) => bytes(p.parts.data))}::bytea[], ${put.map((p) => bytes(p.parts.apps))}::bytea[], ${put.map((p) => bytes(p.parts.errors))}::bytea[]) AS u(grain, slice, bucket, data, apps, errors)
      WHERE c.grain = u.grain AND c.slice = u.slice AND c.bucket = u.bucket`;
  }
  if (gone.length > 0) {
    await tx`
      DELETE FROM rollup_cells WHERE (grain, slice, bucket) IN (
        SELECT * FROM unnest(${gone.map((k) => k.grain)}::smallint[], ${gone.map((k) => k.slice)}::int[], ${gone.map((k) => k.bucket)}::bigint[]))`;
  }
}

/**
 * Adds the hour cells of [from, until) to the day and month cells that contain them, a day of
 * hours at a time (memory stays one day's cells); the number of hours that had a cell. Hour cells
 * before the hours kept for `until` (hoursFrom) go: their days hold them.
 */
export async function foldHours(tx: Tx, labels: PgLabels, from: number, until: number): Promise<number> {
  let hours = 0;
  for (let day = bucketStart(from, GRAINS.day); day < until; day += DAY) {
    const rows = await tx<Row[]>`
      SELECT grain, slice, bucket, data, apps, errors FROM rollup_cells
      WHERE grain = ${GRAINS.hour} AND bucket >= ${Math.max(from, day)} AND bucket < ${Math.min(until, day + DAY)}`;
    const sums = new Map<string, { key: RollupKey; data: RollupData }>();
    for (const row of rows) {
      const slice = await labels.text(row.slice);
      if (slice === undefined) throw new UnknownLabelError(row.slice);
      const data = await decodeRow(labels, row);
      for (const grain of [GRAINS.day, GRAINS.month] as const) {
        const key = { grain, app: slice, bucket: bucketStart(row.bucket, grain) };
        const k = keyText(key);
        const sum = sums.get(k) ?? { key, data: emptyData() };
        mergeInto(sum.data, data);
        sums.set(k, sum);
      }
    }
    hours += new Set(rows.map((r) => r.bucket)).size;
    await addRollups(tx, labels, sums.values());
  }
  await tx`DELETE FROM rollup_cells WHERE grain = ${GRAINS.hour} AND bucket < ${hoursFrom(until)}`;
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

/** The row versions of the day cells of `slices` on `day` (what a day's counted hours depend on). */
export async function dayVersions(pg: Sql, labels: PgLabels, slices: readonly string[], day: number): Promise<string> {
  const ids: number[] = [];
  for (const s of slices) {
    const id = await labels.sliceId(s);
    if (id !== undefined) ids.push(id);
  }
  if (ids.length === 0) return "";
  const rows = await pg<{ slice: number; version: string }[]>`
    SELECT slice, ${pg.unsafe(VERSION)} AS version FROM rollup_cells WHERE grain = ${GRAINS.day} AND bucket = ${day} AND slice = ANY(${ids}::int[]) ORDER BY slice`;
  return rows.map((r) => `${r.slice}:${r.version}`).join(",");
}

/** Stored cells of one grain with bucket in [from, to), of one stored slice (or all), with the parts asked for; oldest first. */
export async function readCells(pg: Sql, labels: PgLabels, cache: CellParts, grain: Grain, from: number, to: number, slice: string | null, parts: readonly RollupPart[]): Promise<RollupCell[]> {
  let sliceIs = pg`TRUE`;
  if (slice !== null) {
    const id = await labels.sliceId(slice);
    if (id === undefined) return [];
    sliceIs = pg`slice = ${id}`;
  }
  const stored = await pg<{ slice: number; bucket: number; version: string }[]>`
    SELECT slice, bucket, ${pg.unsafe(VERSION)} AS version FROM rollup_cells WHERE grain = ${grain} AND ${sliceIs} AND bucket >= ${from} AND bucket < ${to}`;
  const keyOf = (s: number, bucket: number) => `${grain}|${bucket}|${s}`;
  const stale = stored.filter((c) => {
    const cached = cache.get(keyOf(c.slice, c.bucket));
    return cached?.version !== c.version || parts.some((p) => cached.parts[p] === undefined);
  });
  if (stale.length > 0 && parts.length > 0) {
    const rows = await pg<({ slice: number; bucket: number; version: string } & Partial<Parts>)[]>`
      SELECT slice, bucket, ${pg.unsafe(VERSION)} AS version, ${pg.unsafe(parts.join(", "))} FROM rollup_cells
      WHERE grain = ${grain} AND (slice, bucket) IN (SELECT * FROM unnest(${stale.map((c) => c.slice)}::int[], ${stale.map((c) => c.bucket)}::bigint[]))`;
    for (const row of rows) {
      for (const part of parts) {
        const d = emptyData();
        await labels.decode(d, part, row[part]);
        cache.put(keyOf(row.slice, row.bucket), row.version, part, d);
      }
    }
  }
  const cells: RollupCell[] = [];
  for (const c of stored) {
    const name = await labels.text(c.slice);
    if (name === undefined) throw new UnknownLabelError(c.slice);
    if (parts.length === 0) {
      cells.push({ slice: name, bucket: c.bucket, data: emptyData() });
      continue;
    }
    const cached = cache.get(keyOf(c.slice, c.bucket));
    // Gone between the two reads (it came to nothing): as if read after.
    if (cached) cells.push({ slice: name, bucket: c.bucket, data: assemble(cached.parts, parts) });
  }
  // Slices by code point, as SQLite compares text (the server's collation may not).
  return cells.sort((a, b) => a.bucket - b.bucket || (a.slice < b.slice ? -1 : a.slice > b.slice ? 1 : 0));
}
