// Cells as the read side asks for them, made of what an engine stores: the parts asked for only,
// and a slice of every repo or platform as the sum of its stored slices' cells (domain/rollup.ts storedSlicesIn).
import { RecentlyUsed } from "../../domain/recently-used.ts";
import { emptyData, mergeInto, settle, type RollupData, type RollupPart } from "../../domain/rollup.ts";

const EVERY_PART: ReadonlySet<RollupPart> = new Set(["data", "apps", "errors"]);

/** The parts asked for, and only those (`have`: the parts `data` holds): a reader sees the same cell whatever else a write cached. */
export function only(
  data: RollupData,
  parts: readonly RollupPart[],
  have: ReadonlySet<RollupPart> = EVERY_PART,
): RollupData {
  if (have.size === parts.length) return data;
  const withData = parts.includes("data");
  const { nsapp } = data.dims;
  let dims: RollupData["dims"] = {};
  if (withData) {
    const { nsapp: _apps, ...rest } = data.dims;
    dims = rest;
  }
  if (nsapp && parts.includes("apps")) dims.nsapp = nsapp;
  return { dims, dur: withData ? data.dur : {}, err: parts.includes("errors") ? data.err : {} };
}

const projections = new WeakMap<RollupData, Map<string, RollupData>>();

/**
 * `only(data, parts)` of a settled cell, made once per parts asked and settled in turn: a reader
 * keeps what it derives from settled cells by their identities (read/settled.ts), and a projection
 * made afresh on every read would be a new, open cell each time.
 */
export function onlyKept(data: RollupData, parts: readonly RollupPart[]): RollupData {
  const key = parts.join(",");
  let byParts = projections.get(data);
  if (byParts === undefined) projections.set(data, (byParts = new Map()));
  let out = byParts.get(key);
  if (out === undefined) {
    out = only(data, parts);
    byParts.set(key, out === data ? out : settle(out));
  }
  return out;
}

/** A number per decoded cell object, never reused: a sum remembers what it added up without holding it. */
const cellIds = new WeakMap<RollupData, number>();
let nextCellId = 0;
function idOf(data: RollupData): number {
  let id = cellIds.get(data);
  if (id === undefined) {
    id = nextCellId++;
    cellIds.set(data, id);
  }
  return id;
}

/**
 * Sums of cells kept while the cells summed are the same objects: an engine that keeps its decoded
 * cells, and decodes a cell afresh when its bytes change, gets the sum it made last time for as
 * long as nothing it adds up changed. A slice of every repo and platform adds up to a dozen stored
 * slices: summing them on every read cost 10-30 % more CPU than the four repo classes did. The
 * inputs are remembered by number, not held: a cell the engine's own cache let go is freed (and a
 * cell decoded again is another number, so its sum is made again).
 */
export class SumCache {
  private readonly sums: RecentlyUsed<{ inputs: number[]; data: RollupData }>;

  constructor(limit = 4096) {
    this.sums = new RecentlyUsed(limit);
  }

  sum(key: string, inputs: RollupData[]): RollupData {
    const ids = inputs.map(idOf);
    const hit = this.sums.get(key);
    if (hit && hit.inputs.length === ids.length && hit.inputs.every((id, i) => id === ids[i])) return hit.data;
    // Cells may be shared with a cache: summed into a copy of their own.
    const data = emptyData();
    for (const d of inputs) mergeInto(data, d);
    settle(data);
    this.sums.set(key, { inputs: ids, data });
    return data;
  }

  clear(): void {
    this.sums.clear();
  }
}

type Bucketed = { bucket: number; data: RollupData };

/** What sumOfLists made of a store's lists, kept while they are the same object. */
const summedLists = new WeakMap<object, { key: string; cells: readonly Bucketed[] }>();

/**
 * sumByBucket of a store's cells as one map of lists (slice -> cells) that the store hands out
 * again, the same object, for as long as the rows under it are unchanged: the sums are taken from
 * the last call with that map. A window's questions read the same cells again and again, and
 * checking each bucket's kept sum (a key made and looked up, every cell's number) was ~20 % of
 * the CPU of three windows' top apps.
 */
export function sumOfLists(
  lists: ReadonlyMap<string, readonly Bucketed[]>,
  kept: { cache: SumCache; key: string },
): readonly Bucketed[] {
  const made = summedLists.get(lists);
  if (made !== undefined && made.key === kept.key) return made.cells;
  const cells = sumByBucket([...lists.values()], kept);
  summedLists.set(lists, { key: kept.key, cells });
  return cells;
}

/**
 * Cells of several stored slices (those a slice of every repo or platform adds up) as one cell per
 * bucket, oldest first. With `kept`, sums are reused while their cells stay the same objects
 * (SumCache; `key` names the slices and shape read): only for cells nothing changes in place.
 */
export function sumByBucket(
  lists: readonly (readonly Bucketed[])[],
  kept?: { cache: SumCache; key: string },
): readonly Bucketed[] {
  const nonEmpty = lists.filter((l) => l.length > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? [];
  const byBucket = new Map<number, RollupData[]>();
  for (const list of nonEmpty) {
    for (const c of list) {
      const inputs = byBucket.get(c.bucket);
      if (inputs) inputs.push(c.data);
      else byBucket.set(c.bucket, [c.data]);
    }
  }
  return [...byBucket]
    .sort((a, b) => a[0] - b[0])
    .map(([bucket, inputs]) => {
      if (inputs.length === 1) return { bucket, data: inputs[0]! };
      if (kept) return { bucket, data: kept.cache.sum(`${kept.key}|${bucket}`, inputs) };
      const data = emptyData();
      for (const d of inputs) mergeInto(data, d);
      return { bucket, data };
    });
}
