// Open hours: hours at or after the fold mark. Their hour cells (of the stored slices) live only
// here, in memory, and are stored when the fold job closes them
// (docs/decisions/2026-11-21-open-hours-in-memory.md). They are a function of the raw records, so
// the store recounts them whenever it cannot vouch for them: at open, and after another connection
// wrote or moved the fold mark.
//
// A record is counted into one cell only, its leaf slice's (kind, repo class, platform class, app:
// leafSliceOf); the other stored slice of an hour (those classes', every app) is the sum of its leaves, made
// when read and kept until a write changes that hour. Counting every record into each of its
// slices was the largest part of a report's CPU (docs/decisions/2026-11-27-open-hours-leaf-cells.md).
// Counting finds a record's leaf by its app and then its classes, without making the slice's key:
// the key's text and its lookup were a tenth of a start report's instructions.
import { failureSignatureId } from "../../domain/error-signature.ts";
import { kindOfType, type Execution, type Kind } from "../../domain/execution.ts";
import {
  ALL_APPS,
  GRAINS,
  addLeaf,
  appSlice,
  bucketStart,
  countLeaf,
  emptyData,
  isEmpty,
  leafSliceOf,
  mergeInto,
  parseSlice,
  platformClass,
  repoClass,
  sliceKey,
  type OpenCount,
  type RollupData,
  type RollupRecord,
} from "../../domain/rollup.ts";
import type { RollupCell } from "../contract/executions.ts";

interface Leaf {
  /** Its slice key (leafSliceOf). */
  slice: string;
  kind: Kind;
  repo: string;
  platform: string;
  /** The app slice ("=<nsapp>"). */
  app: string;
  byHour: Map<number, RollupData>;
}

/** The stored slices a leaf adds into (domain/rollup.ts storedSlicesOf): itself, and every app of its repo and platform classes. */
const slicesOfLeaf = (l: Leaf): string[] => [
  sliceKey(l.kind, l.repo, l.app, l.platform),
  sliceKey(l.kind, l.repo, ALL_APPS, l.platform),
];

/** What a slice key selects, with its app as an app slice ("=<nsapp>"; null: every app). */
function sliceOf(slice: string): { kind: Kind; repo: string | null; platform: string | null; app: string | null } {
  const { kind, repo, platform, nsapp } = parseSlice(slice);
  return { kind, repo, platform, app: nsapp === null ? null : appSlice(nsapp) };
}
const isLeaf = (s: ReturnType<typeof sliceOf>): boolean => s.repo !== null && s.platform !== null && s.app !== null;

export class OpenHours {
  /** The leaves by slice key (reads), */
  private readonly leaves = new Map<string, Leaf>();
  /** and by nsapp ("" for none; counting): an app has a leaf per kind, repo and platform class it ran under, a few. */
  private readonly leavesOfApp = new Map<string, Leaf[]>();
  /** Sums made for reads, by hour: dropped when a write changes the hour. */
  private readonly sums = new Map<number, Map<string, RollupData | null>>();
  /** The fold mark these cells start at. */
  foldedUntil = 0;

  /** The leaf a record counts in (leafSliceOf), made if new. */
  private leafOf(r: RollupRecord): Leaf {
    const nsapp = r.nsapp ?? "";
    const kind = kindOfType(r.type);
    const repo = repoClass(r.repoSource);
    const platform = platformClass(r);
    let ofApp = this.leavesOfApp.get(nsapp);
    if (ofApp === undefined) this.leavesOfApp.set(nsapp, (ofApp = []));
    for (const leaf of ofApp) if (leaf.kind === kind && leaf.repo === repo && leaf.platform === platform) return leaf;
    const leaf: Leaf = { slice: leafSliceOf(r)[0]!, kind, repo, platform, app: appSlice(r.nsapp), byHour: new Map() };
    ofApp.push(leaf);
    this.leaves.set(leaf.slice, leaf);
    return leaf;
  }

  private forget(leaf: Leaf): void {
    this.leaves.delete(leaf.slice);
    const nsapp = leaf.app.slice(1);
    const ofApp = this.leavesOfApp.get(nsapp)!.filter((l) => l !== leaf);
    if (ofApp.length > 0) this.leavesOfApp.set(nsapp, ofApp);
    else this.leavesOfApp.delete(nsapp);
  }

  private static cellOf(leaf: Leaf, hour: number): RollupData {
    let cell = leaf.byHour.get(hour);
    if (cell === undefined) leaf.byHour.set(hour, (cell = emptyData()));
    return cell;
  }

  /** Forgets everything and counts `rows` (those created from `foldedUntil` on) afresh. */
  recount(foldedUntil: number, rows: Iterable<Execution>): void {
    this.leaves.clear();
    this.leavesOfApp.clear();
    this.sums.clear();
    this.foldedUntil = foldedUntil;
    for (const r of rows)
      countLeaf(OpenHours.cellOf(this.leafOf(r), bucketStart(r.createdAt, GRAINS.hour)), {
        r,
        outcome: r.outcome,
        sign: 1,
        errorSig: failureSignatureId(r.outcome, r.error),
      });
  }

  /** Counts committed changes in; cells a removal emptied go, as a recount would not have them. */
  apply(counts: readonly OpenCount[]): void {
    for (const c of counts) {
      if (c.r.createdAt < this.foldedUntil) continue; // folded in the same batch
      const leaf = this.leafOf(c.r);
      const hour = bucketStart(c.r.createdAt, GRAINS.hour);
      countLeaf(OpenHours.cellOf(leaf, hour), c);
      this.sums.delete(hour);
      if (c.sign < 0) this.dropIfEmpty(leaf, hour);
    }
  }

  /** The fold mark moved to `until`: the hours before it are stored now. */
  folded(until: number): void {
    this.foldedUntil = until;
    for (const leaf of this.leaves.values()) {
      for (const hour of leaf.byHour.keys()) if (hour < until) leaf.byHour.delete(hour);
      if (leaf.byHour.size === 0) this.forget(leaf);
    }
    for (const hour of this.sums.keys()) if (hour < until) this.sums.delete(hour);
  }

  /** Cells of one slice (or of every stored slice, `null`) with bucket in [from, to), oldest first. */
  cellsOf(slice: string | null, from: number, to: number): RollupCell[] {
    if (slice === null) return this.everyCell(from, to);
    const want = sliceOf(slice);
    const leaf = isLeaf(want) ? this.leaves.get(slice) : undefined;
    if (leaf)
      return [...leaf.byHour]
        .filter(([bucket]) => bucket >= from && bucket < to)
        .map(([bucket, data]) => ({ slice, bucket, data }))
        .sort((a, b) => a.bucket - b.bucket);
    const out: RollupCell[] = [];
    for (const bucket of this.hours(from, to)) {
      const data = this.sum(slice, bucket, want);
      if (data) out.push({ slice, bucket, data });
    }
    return out.sort((a, b) => a.bucket - b.bucket);
  }

  /**
   * The cells of several stored slices summed per hour in [from, to), oldest first: kept until a
   * write changes the hour (a read of a slice of every repo and platform adds up a dozen; summing
   * a day's open hours again for every read was a tenth of /api/new's CPU at 1M).
   */
  summedOf(slices: readonly string[], from: number, to: number): { bucket: number; data: RollupData }[] {
    if (slices.length === 1) return this.cellsOf(slices[0]!, from, to);
    const key = `+${slices.join(",")}`;
    const out: { bucket: number; data: RollupData }[] = [];
    for (const bucket of this.hours(from, to)) {
      let byHour = this.sums.get(bucket);
      if (!byHour) this.sums.set(bucket, (byHour = new Map()));
      let data = byHour.get(key);
      if (data === undefined) {
        data = null;
        for (const slice of slices) {
          const cell = this.sum(slice, bucket, sliceOf(slice));
          if (cell) mergeInto((data ??= emptyData()), cell);
        }
        byHour.set(key, data);
      }
      if (data) out.push({ bucket, data });
    }
    return out.sort((a, b) => a.bucket - b.bucket);
  }

  /** Every stored slice's cells: the leaves and the sums of every app of their repo classes. */
  private everyCell(from: number, to: number): RollupCell[] {
    const out: RollupCell[] = [];
    for (const bucket of this.hours(from, to)) {
      const slices = new Set<string>();
      for (const leaf of this.leaves.values())
        if (leaf.byHour.has(bucket)) for (const s of slicesOfLeaf(leaf)) slices.add(s);
      for (const slice of slices) {
        const data = this.sum(slice, bucket, sliceOf(slice));
        if (data) out.push({ slice, bucket, data });
      }
    }
    return out.sort((a, b) => a.bucket - b.bucket);
  }

  /** The hours in [from, to) that have a cell. */
  private hours(from: number, to: number): Set<number> {
    const hours = new Set<number>();
    for (const leaf of this.leaves.values())
      for (const hour of leaf.byHour.keys()) if (hour >= from && hour < to) hours.add(hour);
    return hours;
  }

  /** A slice's cell of one hour: a leaf's own, or the sum of the leaves it contains (null: none). */
  private sum(slice: string, hour: number, want: ReturnType<typeof sliceOf>): RollupData | null {
    if (isLeaf(want)) return this.leaves.get(slice)?.byHour.get(hour) ?? null;
    let byHour = this.sums.get(hour);
    if (!byHour) this.sums.set(hour, (byHour = new Map()));
    const known = byHour.get(slice);
    if (known !== undefined) return known;
    let data: RollupData | null = null;
    for (const leaf of this.leaves.values()) {
      if (
        leaf.kind !== want.kind ||
        (want.repo !== null && leaf.repo !== want.repo) ||
        (want.platform !== null && leaf.platform !== want.platform) ||
        (want.app !== null && leaf.app !== want.app)
      )
        continue;
      const cell = leaf.byHour.get(hour);
      if (cell) addLeaf((data ??= emptyData()), cell, want.app === null ? leaf.app : null);
    }
    byHour.set(slice, data);
    return data;
  }

  private dropIfEmpty(leaf: Leaf, hour: number): void {
    const cell = leaf.byHour.get(hour);
    if (!cell || !isEmpty(cell)) return;
    leaf.byHour.delete(hour);
    if (leaf.byHour.size === 0) this.forget(leaf);
  }
}
