// Rollup cells of the PostgreSQL engine: one row per (grain, stored slice, bucket), its counts in
// the three binary parts the SQLite engine stores too (domain/rollup-codec.ts), so a cell is one
// row to read and to write, not one per dimension value (docs/decisions/2026-11-26-postgresql-rollup-cells.md:
// counter rows took ~3.6 KB per execution). A batch appends its deltas to rollup_deltas (appendDeltas)
// instead of merging them into the cells it touches: merging locked each cell until COMMIT, so nodes
// writing the same apps waited for each other, and decoding, merging and re-encoding the cells was
// a third of a node's CPU per report (docs/decisions/2026-11-27-postgresql-rollup-deltas.md). The
// fold (foldDeltas, in the background on one node at a time) merges them into the cells, each
// delta exactly once; every read adds the deltas not folded yet to the cells it reads (readCells).
import type { Sql } from "postgres";
import {
  GRAINS,
  bucketStart,
  cellId,
  emptyData,
  hoursFrom,
  isAllApps,
  isEmpty,
  mergeInto,
  type Grain,
  type RollupData,
  type RollupKey,
  type RollupPart,
} from "../../domain/rollup.ts";
import {
  UnknownLabelError,
  decodePart,
  encodeCell,
  labelsOf,
  type Labels,
  type StoredParts,
} from "../../domain/rollup-codec.ts";
import { RecentlyUsed } from "../../domain/recently-used.ts";
import { DAY } from "../../domain/time.ts";
import type { RollupCell } from "../contract/executions.ts";
import { LabelCache } from "../common/labels.ts";
import { only } from "../common/sum-cells.ts";

/** A connection inside a transaction (transaction.ts). */
type Tx = Sql;

/**
 * The label dictionary of a server (the primary, or a replica for its reads), as far as this node
 * has met it: committed labels only. Labels another node made are loaded when a cell names one.
 */
export class PgLabels {
  readonly cache = new LabelCache();
  /** The deltas this node appended, and the cells its folds wrote, decoded: kept with the labels their bytes were made with. */
  readonly appended = new AppendedDeltas();
  readonly written = new WrittenCells();

  constructor(private readonly pg: Sql) {}

  /** Every label of the table (ids are not given in commit order across nodes: all, not only the newest); on `via` inside a transaction. */
  async load(via: Sql = this.pg): Promise<void> {
    this.cache.learn(await via<{ id: number; label: string }[]>`SELECT id, label FROM rollup_labels`);
  }

  /** Decodes a stored part into `d`, loading the labels once when it names one not known here. */
  async decode(d: RollupData, part: RollupPart, stored: unknown, via: Sql = this.pg): Promise<void> {
    try {
      decodePart(d, part, stored, this.cache);
    } catch (e) {
      if (!(e instanceof UnknownLabelError)) throw e;
      await this.load(via);
      decodePart(d, part, stored, this.cache);
    }
  }

  /** The labels one batch gives and uses (BatchLabels). */
  batch(): BatchLabels {
    return new BatchLabels(this);
  }
}

/** A label the batch has no id for yet (BatchLabels.ensure makes it). */
class LabelNotMadeError extends Error {
  constructor(label: string) {
    super(`rollup label ${JSON.stringify(label)} was not made before it was used`);
  }
}

/**
 * A batch's labels: the committed ones, and those it inserts itself, in its own transaction, known
 * to the node only once it commits. Nothing is unique by text (schema.ts rollupLabels), so no batch
 * waits for another's uncommitted label, and none uses a label that another may roll back.
 */
export class BatchLabels implements Labels {
  private readonly ownIds = new Map<string, number>();
  private readonly ownTexts = new Map<number, string>();

  constructor(readonly shared: PgLabels) {}

  /** Every label in `wanted` has an id this batch may use. */
  async ensure(tx: Tx, wanted: Iterable<string>): Promise<void> {
    const missing = [...new Set(wanted)].filter((l) => !this.shared.cache.has(l) && !this.ownIds.has(l)).sort();
    if (missing.length === 0) return;
    const found = await tx<
      { id: number; label: string }[]
    >`SELECT min(id) AS id, label FROM rollup_labels WHERE label = ANY(${missing}::text[]) GROUP BY label`;
    this.shared.cache.learn(found);
    const rest = missing.filter((l) => !this.shared.cache.has(l));
    if (rest.length === 0) return;
    for (const { id, label } of await tx<
      { id: number; label: string }[]
    >`INSERT INTO rollup_labels (label) SELECT unnest(${rest}::text[]) RETURNING id, label`) {
      this.ownIds.set(label, id);
      this.ownTexts.set(id, label);
    }
  }

  id(label: string): number {
    const id = this.shared.cache.has(label) ? this.shared.cache.id(label) : this.ownIds.get(label);
    if (id === undefined) throw new LabelNotMadeError(label);
    return id;
  }

  text(id: number): string | undefined {
    return this.shared.cache.text(id) ?? this.ownTexts.get(id);
  }

  /** The batch committed: its labels are the node's. */
  commit(): void {
    this.shared.cache.learn([...this.ownIds].map(([label, id]) => ({ id, label })));
  }
}

const PARTS: readonly RollupPart[] = ["data", "apps", "errors"];
type Parts = Record<RollupPart, Buffer | null>;
type Row = { grain: number; slice: string; bucket: number } & Parts;
/** A row locked by this transaction, with where it is: no other can move it before COMMIT. */
type LockedRow = Row & { ctid: string };

const byKey = (a: { key: RollupKey }, b: { key: RollupKey }) =>
  a.key.grain - b.key.grain ||
  (a.key.app < b.key.app ? -1 : a.key.app > b.key.app ? 1 : 0) ||
  a.key.bucket - b.key.bucket;

/**
 * A pause for the event loop every so many steps of a long loop: the fold decodes and merges the
 * deltas of many batches in the node that answers reports, and done in one go (a second's deltas
 * then) it held requests back (p99 at 64 connections 38-50 -> 150-280 ms, bench-pg-profile).
 */
function pauses(every = 64): () => Promise<void> | undefined {
  let n = 0;
  return () => (++n % every === 0 ? new Promise<void>((resolve) => setImmediate(resolve)) : undefined);
}

/** A delta that changes nothing (a move within a cell that came back to where it was). */
const isNothing = (d: RollupData): boolean =>
  isEmpty(d) && Object.keys(d.dur).length === 0 && Object.keys(d.err).length === 0;

/** A part as hex text: postgres.js sends no arrays of bytea. */
const hex = (p: Uint8Array | null) =>
  p === null ? null : Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString("hex");

/** A delta row's three parts, as hex, in one text. */
const partsKey = (data: string | null, apps: string | null, errors: string | null): string =>
  `${data ?? ""}|${apps ?? ""}|${errors ?? ""}`;

/** Most deltas kept decoded between folds (a fold every 100 ms leaves a few hundred); past it they are forgotten, and decoded when folded. */
const APPENDED_MAX = 4096;

/**
 * The deltas this node appended, as they were before encoding, by their stored bytes: the fold on
 * the node that wrote them (with one node, every delta) takes them as they are instead of decoding
 * them again (decoding was ~10 % of a node's CPU for start reports). Keyed by the bytes, a delta is
 * only ever taken for bytes that decode to it; those of a batch that rolled back are never asked
 * for, and go when the memo is full. The data is never changed once kept (the fold only reads it).
 */
class AppendedDeltas {
  private readonly byBytes = new Map<string, RollupData>();

  keep(key: string, data: RollupData): void {
    if (this.byBytes.size >= APPENDED_MAX) this.byBytes.clear();
    this.byBytes.set(key, data);
  }

  take(key: string): RollupData | undefined {
    const data = this.byBytes.get(key);
    if (data !== undefined) this.byBytes.delete(key);
    return data;
  }
}

/** Most cells kept decoded between folds; past it the oldest kept goes. */
const WRITTEN_MAX = 2048;

const sameBytes = (kept: Uint8Array | null, stored: Buffer | null): boolean =>
  kept === null ? stored === null : stored !== null && stored.equals(kept);

/**
 * The cells this node's folds wrote, as they were before encoding, with the bytes written: the next
 * fold (100 ms later, mostly the same hour, day and month cells) takes a cell whose stored bytes
 * are still those instead of decoding it again (decoding stored cells was ~5 % of a node's CPU for
 * start reports). A cell that another node or a rolled-back fold changed has other bytes and is
 * decoded as before. A kept cell is taken out before it is changed, and kept again once written.
 */
class WrittenCells {
  private readonly byKey = new RecentlyUsed<{ parts: StoredParts; data: RollupData }>(WRITTEN_MAX);

  /** The cell stored as `row`, decoded, when its bytes are the ones this node wrote last. */
  take(key: string, row: Parts): RollupData | undefined {
    const kept = this.byKey.get(key);
    if (kept === undefined) return undefined;
    this.byKey.delete(key);
    const { parts } = kept;
    return sameBytes(parts.data, row.data) && sameBytes(parts.apps, row.apps) && sameBytes(parts.errors, row.errors)
      ? kept.data
      : undefined;
  }

  keep(key: string, parts: StoredParts, data: RollupData): void {
    this.byKey.set(key, { parts, data });
  }
}

/** A stored cell, whole; read in transaction `tx` (labels made by this batch known to `own`). */
async function decodeRow(tx: Tx, labels: BatchLabels, row: Parts): Promise<RollupData> {
  const d = emptyData();
  for (const part of PARTS) {
    try {
      decodePart(d, part, row[part], labels);
    } catch (e) {
      if (!(e instanceof UnknownLabelError)) throw e;
      await labels.shared.load(tx);
      decodePart(d, part, row[part], labels);
    }
  }
  return d;
}

/**
 * A batch's cell deltas (negative counts take away), appended to rollup_deltas in one statement:
 * no cell is read, locked or written (the fold merges them, foldDeltas).
 */
export async function appendDeltas(
  tx: Tx,
  labels: BatchLabels,
  deltas: Iterable<{ key: RollupKey; data: RollupData }>,
): Promise<void> {
  const list = [...deltas].filter(({ data }) => !isNothing(data));
  if (list.length === 0) return;
  const encode = () => list.map(({ key, data }) => encodeCell(data, isAllApps(key.app), labels));
  let parts: StoredParts[];
  try {
    // Labels are nearly always known already: collecting them first cost 3 % of a node's CPU.
    parts = encode();
  } catch (e) {
    if (!(e instanceof LabelNotMadeError)) throw e;
    const wanted = new Set<string>();
    for (const { data } of list) labelsOf(data, wanted);
    await labels.ensure(tx, wanted);
    parts = encode();
  }
  const data = parts.map((p) => hex(p.data));
  const apps = parts.map((p) => hex(p.apps));
  const errors = parts.map((p) => hex(p.errors));
  await tx`
    INSERT INTO rollup_deltas (grain, slice, bucket, data, apps, errors)
    SELECT g, s, b, decode(d, 'hex'), decode(a, 'hex'), decode(e, 'hex')
    FROM unnest(${list.map((c) => c.key.grain)}::smallint[], ${list.map((c) => c.key.app)}::text[], ${list.map((c) => c.key.bucket)}::bigint[],
      ${data}::text[], ${apps}::text[], ${errors}::text[]) AS u(g, s, b, d, a, e)`;
  list.forEach(({ data: delta }, i) =>
    labels.shared.appended.keep(partsKey(data[i] ?? null, apps[i] ?? null, errors[i] ?? null), delta),
  );
}

/**
 * Merges up to `limit` deltas into the cells and removes them, in the caller's transaction: a
 * delta is folded exactly once (removed by the transaction that merges it; a fold that fails
 * leaves both as they were). Deltas of one cell are summed first, so the cell is written once.
 * The number of deltas folded.
 */
export async function foldDeltas(tx: Tx, labels: BatchLabels, limit: number): Promise<number> {
  const rows = await tx<Row[]>`
    DELETE FROM rollup_deltas WHERE ctid = ANY(ARRAY(SELECT ctid FROM rollup_deltas LIMIT ${limit}))
    RETURNING grain, slice, bucket, data, apps, errors`;
  const sums = new Map<string, { key: RollupKey; data: RollupData }>();
  const pause = pauses();
  for (const row of rows) {
    await pause();
    const key = {
      grain: row.grain as Grain,
      app: row.slice,
      bucket: row.bucket,
    };
    const k = cellId(key.grain, key.bucket, key.app);
    const sum = sums.get(k) ?? { key, data: emptyData() };
    const mine = labels.shared.appended.take(partsKey(hex(row.data), hex(row.apps), hex(row.errors)));
    mergeInto(sum.data, mine ?? (await decodeRow(tx, labels, row)));
    sums.set(k, sum);
  }
  await mergeCells(
    tx,
    labels,
    [...sums.values()].filter(({ data }) => !isNothing(data)),
  );
  return rows.length;
}

/** Every delta merged into the cells (a batch that holds the fold lock alone: none can be added meanwhile). */
export async function foldAllDeltas(tx: Tx, labels: BatchLabels): Promise<void> {
  while ((await foldDeltas(tx, labels, FOLD_CHUNK)) === FOLD_CHUNK);
}

/** Most deltas one fold statement takes (memory: one chunk's rows and sums). */
export const FOLD_CHUNK = 20_000;

/**
 * Adds cell deltas (negative counts take away) to the stored cells, in one transaction: each
 * cell's row is made if new and locked in key order, merged by the domain's rule (mergeInto),
 * written back, or removed when nothing is counted in it any more. Only the fold, the hour fold,
 * and a rebuild write cells; batches append deltas (appendDeltas).
 */
export async function mergeCells(
  tx: Tx,
  labels: BatchLabels,
  deltas: Iterable<{ key: RollupKey; data: RollupData }>,
): Promise<void> {
  const list = [...deltas].sort(byKey);
  if (list.length === 0) return;
  // Labels first, before any cell is locked.
  const wanted = new Set<string>();
  for (const { data } of list) labelsOf(data, wanted);
  await labels.ensure(tx, wanted);
  // Each cell's row as it stands, locked: made empty if new; a no-op update of one that exists.
  // Its ctid finds it again below: looked up by key, the planner chose the (grain, bucket) index
  // and read every slice of the hour for each cell (~180 buffers per cell, 3/4 of a batch's time).
  const empty = encodeCell(emptyData(), false, labels).data;
  const stored = await tx<LockedRow[]>`
    INSERT INTO rollup_cells (grain, slice, bucket, data)
    SELECT g, s, b, ${Buffer.from(empty)}::bytea FROM unnest(${list.map((c) => c.key.grain)}::smallint[], ${list.map((c) => c.key.app)}::text[], ${list.map((c) => c.key.bucket)}::bigint[]) AS u(g, s, b)
    ORDER BY g, s, b
    ON CONFLICT (grain, slice, bucket) DO UPDATE SET grain = excluded.grain
    RETURNING ctid::text AS ctid, grain, slice, bucket, data, apps, errors`;
  const rows = new Map(stored.map((r) => [cellId(r.grain as Grain, r.bucket, r.slice), r]));
  const put: { ctid: string; parts: StoredParts }[] = [];
  const gone: string[] = [];
  const { written } = labels.shared;
  const pause = pauses(8); // a cell of every app takes ~0.2 ms to decode, merge and encode
  for (const { key, data } of list) {
    await pause();
    const k = cellId(key.grain, key.bucket, key.app);
    const row = rows.get(k)!;
    const merged = mergeInto(written.take(k, row) ?? (await decodeRow(tx, labels, row)), data);
    if (isEmpty(merged)) gone.push(row.ctid);
    else {
      const parts = encodeCell(merged, isAllApps(key.app), labels);
      put.push({ ctid: row.ctid, parts });
      written.keep(k, parts, merged);
    }
  }
  if (put.length > 0) {
    const ctids = put.map((p) => p.ctid);
    await tx`
      UPDATE rollup_cells AS c SET data = decode(u.data, 'hex'), apps = decode(u.apps, 'hex'), errors = decode(u.errors, 'hex')
      FROM unnest(${ctids}::tid[], ${put.map((p) => hex(p.parts.data))}::text[], ${put.map((p) => hex(p.parts.apps))}::text[], ${put.map((p) => hex(p.parts.errors))}::text[]) AS u(id, data, apps, errors)
      WHERE c.ctid = ANY(${ctids}::tid[]) AND c.ctid = u.id`;
  }
  if (gone.length > 0) await tx`DELETE FROM rollup_cells WHERE ctid = ANY(${gone}::tid[])`;
}

/**
 * Adds the hour cells of [from, until) to the day and month cells that contain them, a day of
 * hours at a time (memory stays one day's cells); the number of hours that had a cell. Hour cells
 * before the hours kept for `until` (hoursFrom) go: their days hold them.
 */
export async function foldHours(tx: Tx, labels: BatchLabels, from: number, until: number): Promise<number> {
  let hours = 0;
  for (let day = bucketStart(from, GRAINS.day); day < until; day += DAY) {
    const rows = await tx<Row[]>`
      SELECT grain, slice, bucket, data, apps, errors FROM rollup_cells
      WHERE grain = ${GRAINS.hour} AND bucket >= ${Math.max(from, day)} AND bucket < ${Math.min(until, day + DAY)}`;
    const sums = new Map<string, { key: RollupKey; data: RollupData }>();
    for (const row of rows) {
      const data = await decodeRow(tx, labels, row);
      for (const grain of [GRAINS.day, GRAINS.month] as const) {
        const key = {
          grain,
          app: row.slice,
          bucket: bucketStart(row.bucket, grain),
        };
        const k = cellId(key.grain, key.bucket, key.app);
        const sum = sums.get(k) ?? { key, data: emptyData() };
        mergeInto(sum.data, data);
        sums.set(k, sum);
      }
    }
    hours += new Set(rows.map((r) => r.bucket)).size;
    await mergeCells(tx, labels, sums.values());
  }
  await tx`DELETE FROM rollup_cells WHERE grain = ${GRAINS.hour} AND bucket < ${hoursFrom(until)}`;
  return hours;
}

/** Removes every cell and delta of every grain with its bucket in [from, to): nothing counted there is stored any more. */
export async function dropCells(tx: Tx, from: number, to: number): Promise<void> {
  await tx`DELETE FROM rollup_cells WHERE bucket >= ${from} AND bucket < ${to}`;
  await tx`DELETE FROM rollup_deltas WHERE bucket >= ${from} AND bucket < ${to}`;
}

/**
 * Parsed parts of stored cells with the version of the row they were parsed from (xmin and ctid:
 * every write of a row, on any node, makes a new version). Dashboards read the same folded cells
 * again and again; a read first asks for the versions (keys only, small) and fetches and parses
 * only the cells it has not parsed at that version. Least recently used cells go past `limit`.
 */
export class CellParts extends RecentlyUsed<{ version: string; parts: Partial<Record<RollupPart, RollupData>> }> {
  constructor(limit = 50_000) {
    super(limit);
  }

  put(key: string, version: string, part: RollupPart, data: RollupData): void {
    let cell = this.get(key);
    if (cell?.version !== version) this.set(key, (cell = { version, parts: {} }));
    cell.parts[part] = data;
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

/**
 * The row versions of the day cells of `slices` on `day`, and of their deltas not folded yet
 * (what a day's counted hours depend on); one statement, so both are of one moment.
 */
export async function dayVersions(pg: Sql, slices: readonly string[], day: number): Promise<string> {
  const rows = await pg<{ v: string }[]>`
    SELECT 'c' || slice || ':' || ${pg.unsafe(VERSION)} AS v FROM rollup_cells WHERE grain = ${GRAINS.day} AND bucket = ${day} AND slice = ANY(${slices}::text[])
    UNION ALL
    SELECT 'd' || slice || ':' || ${pg.unsafe(VERSION)} FROM rollup_deltas WHERE grain = ${GRAINS.day} AND bucket = ${day} AND slice = ANY(${slices}::text[])
    ORDER BY 1`;
  return rows.map((r) => r.v).join(",");
}

/** A cell's or a delta's key and row version (a delta's marked DELTA). */
type Listed = { slice: string; bucket: number; version: string };
/** How a delta's version starts in a listing (a cell's is digits). */
const DELTA = "d";

/**
 * Stored cells of one grain with bucket in [from, to), of some stored slices (or all: null), with
 * the parts asked for, each with the deltas not folded into it yet; oldest first. A cell that
 * comes to nothing with its deltas is not listed (the fold would remove it).
 */
export async function readCells(...args: Parameters<typeof tryReadCells>): Promise<RollupCell[]> {
  for (;;) {
    const cells = await tryReadCells(...args);
    if (cells) return cells;
  }
}

/** readCells, or null when a fold changed a cell between its two statements (read again). */
async function tryReadCells(
  pg: Sql,
  labels: PgLabels,
  cache: CellParts,
  grain: Grain,
  from: number,
  to: number,
  slices: readonly string[] | null,
  parts: readonly RollupPart[],
): Promise<RollupCell[] | null> {
  // One statement for every slice asked (a slice of every repo and platform adds up to a dozen):
  // the versions (keys only, small) of the cells and of the deltas not folded yet, of one moment.
  const sliceIs = () => (slices === null ? pg`TRUE` : pg`slice = ANY(${slices}::text[])`);
  const listed = await pg<Listed[]>`
    SELECT slice, bucket, ${pg.unsafe(VERSION)} AS version
    FROM rollup_cells WHERE grain = ${grain} AND ${sliceIs()} AND bucket >= ${from} AND bucket < ${to}
    UNION ALL
    SELECT slice, bucket, ${DELTA} || ${pg.unsafe(VERSION)}
    FROM rollup_deltas WHERE grain = ${grain} AND ${sliceIs()} AND bucket >= ${from} AND bucket < ${to}`;
  const keyOf = (s: string, bucket: number) => cellId(grain, bucket, s);
  const stored: Listed[] = [];
  const keys: string[] = []; // of `stored`
  const deltas = new Map<string, { slice: string; bucket: number; rows: Partial<Parts>[] }>();
  const deltaVersions: string[] = [];
  for (const row of listed) {
    const key = keyOf(row.slice, row.bucket);
    if (!row.version.startsWith(DELTA)) {
      stored.push(row);
      keys.push(key);
      continue;
    }
    deltaVersions.push(row.version.slice(DELTA.length));
    if (!deltas.has(key)) deltas.set(key, { slice: row.slice, bucket: row.bucket, rows: [] });
  }
  if (deltaVersions.length > 0) {
    // Their parts, by version: a fold since the listing removed some (read again).
    const rows = await pg<({ slice: string; bucket: number } & Parts)[]>`
      SELECT slice, bucket, data, apps, errors FROM rollup_deltas
      WHERE ctid = ANY(${deltaVersions.map((v) => v.slice(v.indexOf("/") + 1))}::tid[])
        AND ${pg.unsafe(VERSION)} = ANY(${deltaVersions}::text[])`;
    if (rows.length !== deltaVersions.length) return null;
    for (const row of rows) deltas.get(keyOf(row.slice, row.bucket))!.rows.push(row);
  }
  // A cell with deltas is read whole enough to say whether it comes to nothing (its data part).
  const withData: readonly RollupPart[] = parts.includes("data") ? parts : [...parts, "data"];
  const needOf = (key: string) => (deltas.size > 0 && deltas.has(key) ? withData : parts);
  // Parsed parts of each cell listed: kept from an earlier read at the same version, or fetched.
  const parsed = new Map<string, Partial<Record<RollupPart, RollupData>>>();
  const stale: (Listed & { key: string })[] = [];
  for (let i = 0; i < stored.length; i++) {
    const c = stored[i]!;
    const key = keys[i]!;
    const need = needOf(key);
    if (need.length === 0) continue;
    const cached = cache.get(key);
    if (cached?.version !== c.version || need.some((p) => cached.parts[p] === undefined)) stale.push({ ...c, key });
    else parsed.set(key, cached.parts);
  }
  if (stale.length > 0) {
    const rows = await pg<({ slice: string; bucket: number; version: string } & Partial<Parts>)[]>`
      SELECT slice, bucket, ${pg.unsafe(VERSION)} AS version, ${pg.unsafe(withData.join(", "))} FROM rollup_cells
      WHERE grain = ${grain} AND (slice, bucket) IN (SELECT * FROM unnest(${stale.map((c) => c.slice)}::text[], ${stale.map((c) => c.bucket)}::bigint[]))`;
    const versions = new Map(stale.map((c) => [c.key, c.version]));
    const fetched: [string, (typeof rows)[number]][] = rows.map((r) => [keyOf(r.slice, r.bucket), r]);
    // A fold between the two statements changed or removed a cell: its deltas may be in it now.
    if (rows.length !== stale.length || fetched.some(([key, r]) => versions.get(key) !== r.version)) return null;
    for (const [key, row] of fetched) {
      const got: Partial<Record<RollupPart, RollupData>> = {};
      for (const part of withData) {
        const d = emptyData();
        await labels.decode(d, part, row[part]);
        cache.put(key, row.version, part, d);
        got[part] = d;
      }
      parsed.set(key, got);
    }
  }
  const cells: RollupCell[] = [];
  for (let i = 0; i < stored.length; i++) {
    const c = stored[i]!;
    if (deltas.size > 0 && deltas.has(keys[i]!)) continue; // below, with its deltas
    const data = parts.length === 0 ? emptyData() : assemble(parsed.get(keys[i]!)!, parts);
    cells.push({ slice: c.slice, bucket: c.bucket, data });
  }
  for (const [key, { slice, bucket, rows }] of deltas) {
    // Summed into a copy: cached parts are shared.
    const cell = parsed.get(key);
    const sum = cell ? mergeInto(emptyData(), assemble(cell, withData)) : emptyData();
    for (const row of rows) {
      const d = emptyData();
      for (const part of withData) await labels.decode(d, part, row[part]);
      mergeInto(sum, d);
    }
    if (!isEmpty(sum)) cells.push({ slice, bucket, data: only(sum, parts, new Set(withData)) });
  }
  // Slices by code point, as SQLite compares text (the server's collation may not).
  return cells.sort((a, b) => a.bucket - b.bucket || (a.slice < b.slice ? -1 : a.slice > b.slice ? 1 : 0));
}
