// Aggregates over rollup cells: pure functions. The same functions answer from stored rollups
// and from a scan of raw records (which is folded into cells first), so both paths agree.
import type { ExecutionFilter } from "../store/contract/executions.ts";
import {
  ALL_APPS,
  GRAINS,
  OUTCOME_INDEX,
  addRecord,
  appSlice,
  binMiddleSeconds,
  bucketStart,
  DURATION_BINS,
  emptyData,
  isSettled,
  monthCeil,
  repoClass,
  sliceKey,
  valueMap,
  zeroCounts,
  type Counts,
  type Dimension,
  type Grain,
  type RollupData,
  type RollupRecord,
} from "../domain/rollup.ts";
import { KINDS } from "../domain/execution.ts";
import { FILTER_FIELDS, type DimensionField, type FilterField } from "../domain/fields.ts";
import type { RunCounts } from "../domain/drivers.ts";
import { failureSignatureId } from "../domain/error-signature.ts";
import type { Outcome } from "../domain/outcome.ts";
import { DAY, HOUR, WEEK } from "../domain/time.ts";

export interface Window {
  from: number;
  to: number;
}
export interface Span extends Window {
  grain: Grain;
}
export interface Cell {
  bucket: number;
  data: RollupData;
}

/**
 * A window as hour cells at its ragged edges, day cells inside those, and (when `months`) whole
 * calendar months in the middle; no instant is counted twice. Timeseries by day or week pass
 * `months: false`, since a month cell cannot be split into days. Day and month cells hold only
 * folded hours (before `foldedUntil`), so the part of the window from there on is read as hour cells.
 */
export function decompose(
  { from, to }: Window,
  { months, foldedUntil }: { months: boolean; foldedUntil: number },
): Span[] {
  const cut = Math.min(Math.max(foldedUntil, from), to);
  const spans = coarse({ from, to: cut }, months);
  if (cut < to) {
    const last = spans.at(-1);
    if (last?.grain === GRAINS.hour) last.to = to;
    else spans.push({ grain: GRAINS.hour, from: cut, to });
  }
  return spans;
}

function coarse({ from, to }: Window, months: boolean): Span[] {
  const firstDay = Math.ceil(from / DAY) * DAY;
  const lastDay = Math.floor(to / DAY) * DAY;
  if (firstDay >= lastDay) return from < to ? [{ grain: GRAINS.hour, from, to }] : [];
  const spans: Span[] = [];
  if (from < firstDay) spans.push({ grain: GRAINS.hour, from, to: firstDay });
  const firstMonth = monthCeil(firstDay);
  const lastMonth = bucketStart(lastDay, GRAINS.month);
  if (months && firstMonth < lastMonth) {
    if (firstDay < firstMonth) spans.push({ grain: GRAINS.day, from: firstDay, to: firstMonth });
    spans.push({ grain: GRAINS.month, from: firstMonth, to: lastMonth });
    if (lastMonth < lastDay) spans.push({ grain: GRAINS.day, from: lastMonth, to: lastDay });
  } else {
    spans.push({ grain: GRAINS.day, from: firstDay, to: lastDay });
  }
  if (lastDay < to) spans.push({ grain: GRAINS.hour, from: lastDay, to });
  return spans;
}

/** Filter fields rollups count as a dimension of the same name (nsapp, repo source and kind are slices, outcome the counts; the platform class is a slice too). */
const DIMENSION_FILTERS = FILTER_FIELDS.filter(
  (f): f is Extract<FilterField, DimensionField> => "dimension" in f && !("slice" in f),
).map((f) => {
  const dim: Dimension = f.name;
  return { dim, key: f.key };
});
/** Filter fields rollups cannot select (one install's executions): a read with one scans. */
const UNCOUNTED = FILTER_FIELDS.filter((f) => !("dimension" in f) && !("slice" in f) && f.name !== "outcome").map(
  (f) => f.key,
);

/** Filters on dimensions rollups can select (everything in ExecutionFilter but kind, repo source, platform class, app, outcome, time, text), with the filter fields behind each. */
function dimensionFilters(
  f: ExecutionFilter,
): { dim: Dimension; value: string; fields: (keyof ExecutionFilter)[] }[] | null {
  if ((f.osType === undefined) !== (f.osVersion === undefined)) return null; // rollups hold os as "type version"
  if (f.except !== undefined || UNCOUNTED.some((key) => f[key] !== undefined)) return null;
  const one = (dim: Dimension, field: keyof ExecutionFilter) => ({
    dim,
    value: f[field] === undefined ? undefined : String(f[field]),
    fields: [field],
  });
  const list: { dim: Dimension; value: string | undefined; fields: (keyof ExecutionFilter)[] }[] = [
    ...DIMENSION_FILTERS.map(({ dim, key }) => one(dim, key)),
    {
      dim: "os",
      value: f.osType === undefined ? undefined : `${f.osType} ${f.osVersion}`,
      fields: ["osType", "osVersion"],
    },
  ];
  return list.filter(
    (d): d is { dim: Dimension; value: string; fields: (keyof ExecutionFilter)[] } => d.value !== undefined,
  );
}

/**
 * What the cells are read for; "failures" needs the failure keys only (each failing app's codes,
 * categories and signatures), "every" every dimension (the community's consolidated dashboard).
 */
export type Use =
  | { kind: "summary" }
  | { kind: "breakdown"; by: Dimension }
  | { kind: "timeseries" }
  | { kind: "errors" }
  | { kind: "drivers" }
  | { kind: "failures" }
  | { kind: "every" };

export type Plan =
  /** `slices`: summed cell by cell; `nsapp`: the app filter (an app's slice has no nsapp dimension). */
  | {
      source: "rollup";
      slices: string[];
      nsapp: string | null;
      only: { dim: Dimension; value: string } | null;
      outcome: Outcome | null;
    }
  | { source: "scan" };

/**
 * Rollups hold every dimension per app slice, so they answer any aggregate filtered by app and
 * outcome; one more dimension filter works where it selects counts only. Anything else (free
 * text, two dimension filters, ...) is answered by scanning the records of the window; one
 * dimension filter, by the rollups without it less what it leaves out when that is fewer
 * (complementOf, stats.ts).
 */
export function plan(f: ExecutionFilter, use: Use): Plan {
  const dims = dimensionFilters(f);
  if (f.q !== undefined || dims === null || dims.length > 1) return { source: "scan" };
  // Slices hold repo sources as classes (known sources, "external", ""); another value is a scan.
  if (f.repoSource !== undefined && repoClass(f.repoSource) !== f.repoSource) return { source: "scan" };
  const app = f.nsapp === undefined ? ALL_APPS : appSlice(f.nsapp);
  // A platform class that none is (neither pve, incus nor "") names a slice nothing counts in: no cells, as no record matches.
  const slices = (f.kind === undefined ? KINDS : [f.kind]).map((kind) =>
    sliceKey(kind, f.repoSource ?? null, app, f.platformClass ?? null),
  );
  const only = dims[0] === undefined ? null : { dim: dims[0].dim, value: dims[0].value };
  const countsOnly = use.kind === "timeseries" || (use.kind === "breakdown" && use.by === only?.dim);
  if (only !== null && !countsOnly) return { source: "scan" };
  return { source: "rollup", slices, nsapp: f.nsapp ?? null, only, outcome: f.outcome ?? null };
}

/**
 * A filter whose one dimension filter keeps it from rollups, split in two: `base`, the filter
 * without it (which rollups answer), and `rest`, the executions of `base` that filter leaves out,
 * of every outcome (rollup cells hold every outcome; the plan keeps the filtered one, and retry
 * counts are of every outcome, as from rollups). Counts add up, so the filter's cells are base's
 * rollup cells minus `rest` folded (stats.ts reads whichever of the filter and `rest` holds fewer
 * executions). Null when there is no such split.
 */
export function complementOf(
  f: ExecutionFilter,
  use: Use,
): { base: ExecutionFilter; only: { dim: Dimension; value: string }; rest: ExecutionFilter } | null {
  if (f.q !== undefined) return null;
  const dims = dimensionFilters(f);
  if (dims === null || dims.length !== 1) return null;
  const { dim, value, fields } = dims[0]!;
  const base: ExecutionFilter = { ...f };
  const except: ExecutionFilter = {};
  for (const field of fields) {
    (except as Record<string, unknown>)[field] = f[field];
    delete base[field];
  }
  if (plan(base, use).source !== "rollup") return null;
  const { outcome: _everyOutcome, ...rest } = base;
  return { base, only: { dim, value }, rest: { ...rest, except } };
}

const zero = zeroCounts;
const add = (a: Counts, b: Counts): Counts => {
  for (let i = 0; i < a.length; i++) a[i] = a[i]! + b[i]!;
  return a;
};

/** Keeps only the filtered outcome's count. */
function only(counts: Counts, outcome: Outcome | null): Counts {
  if (outcome === null) return counts;
  const kept = zero();
  kept[OUTCOME_INDEX[outcome]] = counts[OUTCOME_INDEX[outcome]]!;
  return kept;
}

/**
 * A value's counts in a map keyed by client strings: own properties only, so "__proto__",
 * "constructor" or "toString" find their own counts or none, never Object.prototype's members,
 * whatever the map's prototype (domain/rollup.ts gives them none).
 */
const own = <T>(map: Record<string, T> | undefined, key: string): T | undefined =>
  map !== undefined && Object.hasOwn(map, key) ? map[key] : undefined;

/** Installs a cell counts: any dimension sums to the total, as every record has one value in each. */
function cellTotal(d: RollupData, dimFilter: { dim: Dimension; value: string } | null): Counts {
  return addTotal(zero(), d, dimFilter);
}

/** `sum` plus the installs cell `d` counts (cellTotal). */
function addTotal(sum: Counts, d: RollupData, dimFilter: { dim: Dimension; value: string } | null): Counts {
  if (dimFilter) {
    const counts = own(d.dims[dimFilter.dim], dimFilter.value);
    return counts === undefined ? sum : add(sum, counts);
  }
  // for-in, not Object.values: an array per cell was ~13 % of an hourly series' CPU.
  const types = d.dims.type;
  for (const value in types) add(sum, types[value]!);
  return sum;
}

/** Executions the cells count (every outcome), and those of them with a dimension's value. */
export function keptOf(
  cells: readonly Cell[],
  dimFilter: { dim: Dimension; value: string },
): { kept: number; total: number } {
  let kept = 0;
  let total = 0;
  for (const { data } of cells) {
    for (const n of cellTotal(data, dimFilter)) kept += n;
    for (const n of cellTotal(data, null)) total += n;
  }
  return { kept, total };
}

interface OutcomeCounts {
  total: number;
  success: number;
  failed: number;
  /** Ended before the application's script ran: the host would not provide a working container. */
  blocked: number;
  aborted: number;
  in_progress: number;
  unknown: number;
  /** success / (success + failed); null when neither occurred. Blocked and aborted runs are neither, as on the community's page. */
  success_rate: number | null;
}

function outcomeCounts(c: Counts): OutcomeCounts {
  const [success, failed, aborted, in_progress, unknown, blocked] = c;
  return {
    total: success + failed + blocked + aborted + in_progress + unknown,
    success,
    failed,
    blocked,
    aborted,
    in_progress,
    unknown,
    success_rate: success + failed === 0 ? null : round(success / (success + failed)),
  };
}

const round = (x: number): number => Math.round(x * 10_000) / 10_000;

/**
 * `head` with the counts after it, field by field (in the answer's order): spreading the counts
 * into a new object cost ~6 % of a top-apps request and ~5 % of an hourly series.
 */
function withCounts<H extends object>(head: H, c: OutcomeCounts): H & OutcomeCounts {
  const o = head as H & OutcomeCounts;
  o.total = c.total;
  o.success = c.success;
  o.failed = c.failed;
  o.blocked = c.blocked;
  o.aborted = c.aborted;
  o.in_progress = c.in_progress;
  o.unknown = c.unknown;
  o.success_rate = c.success_rate;
  return o;
}

interface DurationStats {
  /** Installs the percentiles are computed over. */
  n: number;
  median_s: number | null;
  p90_s: number | null;
}

function percentile(bins: [number, number][], n: number, q: number): number | null {
  if (n === 0) return null;
  const rank = q * n;
  let seen = 0;
  for (const [bin, count] of bins) {
    seen += count;
    if (seen >= rank) return Math.round(binMiddleSeconds(bin));
  }
  return null;
}

/** Runs of `outcome` per duration bin over `cells`, times `sign`, added to a copy of `onto`. */
export function durationBins(
  cells: readonly Cell[],
  outcome: Outcome,
  onto: ReadonlyMap<number, number> | null = null,
  sign: 1 | -1 = 1,
): Map<number, number> {
  // Added up in an array by bin, not in a Map (a lookup and a store less per bin). Keys are
  // walked, not every bin looked up: most cells (an hour's, an app's) hold a few.
  const sums = new Array<number | undefined>(DURATION_BINS);
  if (onto) for (const [bin, n] of onto) sums[bin] = n;
  for (const { data } of cells) {
    const bins = data.dur[outcome];
    if (bins === undefined) continue;
    for (const key in bins) {
      const bin = Number(key);
      sums[bin] = (sums[bin] ?? 0) + sign * bins[key]!;
    }
  }
  const merged = new Map<number, number>();
  for (let bin = 0; bin < DURATION_BINS; bin++) if (sums[bin] !== undefined) merged.set(bin, sums[bin]!);
  return merged;
}

/** How many runs, and their median and 90th percentile, from runs per duration bin. */
export function binStats(merged: ReadonlyMap<number, number>): DurationStats {
  const bins = [...merged].sort((a, b) => a[0] - b[0]);
  const n = bins.reduce((s, [, c]) => s + c, 0);
  return { n, median_s: percentile(bins, n, 0.5), p90_s: percentile(bins, n, 0.9) };
}

/** Durations of the filtered outcome, or of successful installs when no outcome is filtered. */
const durationStats = (cells: readonly Cell[], outcome: Outcome | null): DurationStats =>
  binStats(durationBins(cells, outcome ?? "success"));

export interface Summary extends OutcomeCounts {
  duration: DurationStats;
  /** Null when a dimension filter applies (the attempt counts cannot be narrowed by it). */
  retries: RetryStats | null;
}

export function summarize(cells: readonly Cell[], p: Extract<Plan, { source: "rollup" }>): Summary {
  const total = zero();
  for (const { data } of cells) add(total, cellTotal(data, p.only));
  return {
    ...outcomeCounts(only(total, p.outcome)),
    duration: durationStats(cells, p.outcome),
    retries: p.only === null ? retryStats(cells) : null,
  };
}

interface RetryStats {
  /** Installs: their first executions. */
  installs: number;
  executions: number;
  executions_per_install: number | null;
  /** Share of installs run again at least once (a second execution of the random_id). */
  retry_rate: number | null;
  /** Executions after the first (retries), and those that succeeded: failed installs a retry rescued. */
  retries: number;
  rescued: number;
}

/** From the attempt dimension ("1", "2", "3", "4+"): counted per execution by when it ran. */
function retryStats(cells: readonly Cell[]): RetryStats {
  const byAttempt = new Map<string, Counts>();
  for (const { data } of cells)
    for (const [attempt, counts] of Object.entries(data.dims.attempt ?? {}))
      add(byAttempt.get(attempt) ?? (byAttempt.set(attempt, zero()), byAttempt.get(attempt)!), counts);
  const sum = (c: Counts | undefined) => (c ? c.reduce((a, b) => a + b, 0) : 0);
  const installs = sum(byAttempt.get("1"));
  let executions = 0;
  let rescued = 0;
  for (const [attempt, counts] of byAttempt) {
    executions += sum(counts);
    if (attempt !== "1") rescued += counts[OUTCOME_INDEX.success]!;
  }
  const ratio = (a: number, b: number) => (b === 0 ? null : Math.round((a / b) * 10_000) / 10_000);
  return {
    installs,
    executions,
    executions_per_install: ratio(executions, installs),
    retry_rate: ratio(sum(byAttempt.get("2")), installs),
    retries: executions - installs,
    rescued,
  };
}

export interface Group extends OutcomeCounts {
  value: string | null;
  failure_rate: number | null;
}

export interface BreakdownOptions {
  by: Dimension;
  sort: "volume" | "failure_rate";
  /** Groups with fewer finished (success + failed) installs are left out of a failure-rate ranking. */
  minRuns: number;
  limit: number;
}

/** Runs per value of `o.by` in the cells (only the filter's value when it is of that dimension). */
function valueSums(cells: readonly Cell[], p: Extract<Plan, { source: "rollup" }>, by: Dimension): Map<string, Counts> {
  const sums = new Map<string, Counts>();
  const addTo = (value: string, counts: Counts) => {
    if (p.only && p.only.dim === by && value !== p.only.value) return;
    const sum = sums.get(value);
    if (sum) add(sum, counts);
    else sums.set(value, add(zero(), counts));
  };
  for (const { data } of cells) {
    // An app slice holds no nsapp dimension: it is the app.
    if (by === "nsapp" && p.nsapp !== null) addTo(p.nsapp, cellTotal(data, null));
    else {
      // Keys walked in place: Object.entries made an array per value of every cell (a quarter of the CPU by app).
      const byValue = data.dims[by];
      for (const value in byValue) addTo(value, byValue[value]!);
    }
  }
  return sums;
}

/** A value's group as the breakdown lists it; null when it has no runs or the ranking leaves it out. */
function groupOf(value: string, counts: Counts, p: Extract<Plan, { source: "rollup" }>, o: BreakdownOptions) {
  const c = outcomeCounts(only(counts, p.outcome));
  if (c.total === 0) return null;
  const g = withCounts({ value: value === "" ? null : value }, c) as Group;
  g.failure_rate = c.success_rate === null ? null : round(1 - c.success_rate);
  if (o.sort === "failure_rate" && (g.success + g.failed < o.minRuns || g.failure_rate === null)) return null;
  return g;
}

/** By value: no value as if it were "null", and before an app named so (a total order, so merged rankings agree). */
const byValue = (a: Group, b: Group) =>
  String(a.value).localeCompare(String(b.value)) || Number(b.value === null) - Number(a.value === null);

/** The order of a breakdown's groups: by failure rate (then failures), or by runs; then by value. */
const groupOrder = (o: BreakdownOptions) =>
  o.sort === "failure_rate"
    ? (a: Group, b: Group) => b.failure_rate! - a.failure_rate! || b.failed - a.failed || byValue(a, b)
    : (a: Group, b: Group) => b.total - a.total || byValue(a, b);

/** Groups of `sums`, ranked, each with its value's key. */
function rankedGroups(sums: Map<string, Counts>, p: Extract<Plan, { source: "rollup" }>, o: BreakdownOptions) {
  const out: { key: string; group: Group }[] = [];
  for (const [key, counts] of sums) {
    const group = groupOf(key, counts, p, o);
    if (group !== null) out.push({ key, group });
  }
  const order = groupOrder(o);
  return out.sort((a, b) => order(a.group, b.group));
}

/**
 * A settled cell's value sums and ranked groups, by what else shapes them. Kept with the cell:
 * summing and ranking a year's apps again for each request was ~40 % of top apps' CPU; the open
 * cells' few values are counted on top. The groups are frozen: answers share them.
 */
const rankedOfSettled = new WeakMap<
  RollupData,
  Map<string, { sums: Map<string, Counts>; ranked: { key: string; group: Group }[] }>
>();

function settledRanking(base: Cell, p: Extract<Plan, { source: "rollup" }>, o: BreakdownOptions) {
  const shape = `${o.by}|${o.sort}|${o.minRuns}|${p.outcome}|${p.nsapp}|${p.only?.dim}|${p.only?.value}`;
  let byShape = rankedOfSettled.get(base.data);
  if (byShape === undefined) rankedOfSettled.set(base.data, (byShape = new Map()));
  let kept = byShape.get(shape);
  if (kept === undefined) {
    const sums = valueSums([base], p, o.by);
    const groups = rankedGroups(sums, p, o);
    for (const g of groups) Object.freeze(g.group);
    byShape.set(shape, (kept = { sums, ranked: groups }));
  }
  return kept;
}

export function breakdown(
  cells: readonly Cell[],
  p: Extract<Plan, { source: "rollup" }>,
  o: BreakdownOptions,
): { groups: Group[]; total_groups: number } {
  const base = cells.find((c) => isSettled(c.data));
  if (base === undefined) {
    const groups = rankedGroups(valueSums(cells, p, o.by), p, o);
    return { groups: groups.slice(0, o.limit).map((g) => g.group), total_groups: groups.length };
  }
  const settled = settledRanking(base, p, o);
  const more = valueSums(
    cells.filter((c) => c !== base),
    p,
    o.by,
  );
  // The values the open cells counted in, ranked again with their settled sums; the others as ranked.
  const changed: { key: string; group: Group }[] = [];
  for (const [key, counts] of more) {
    const before = settled.sums.get(key);
    const group = groupOf(key, before === undefined ? counts : add([...before] as Counts, counts), p, o);
    if (group !== null) changed.push({ key, group });
  }
  const order = groupOrder(o);
  changed.sort((a, b) => order(a.group, b.group));
  let unchanged = 0;
  const groups: Group[] = [];
  let j = 0;
  for (const s of settled.ranked) {
    if (more.has(s.key)) continue;
    unchanged++;
    if (groups.length >= o.limit) continue;
    while (j < changed.length && groups.length < o.limit && order(changed[j]!.group, s.group) < 0)
      groups.push(changed[j++]!.group);
    if (groups.length < o.limit) groups.push(s.group);
  }
  while (j < changed.length && groups.length < o.limit) groups.push(changed[j++]!.group);
  return { groups, total_groups: unchanged + changed.length };
}

export const INTERVALS = ["hour", "day", "week"] as const;
export type Interval = (typeof INTERVALS)[number];
// 1970-01-01 was a Thursday; weeks start on Monday (ISO 8601).
const MONDAY = 4 * DAY;
export function intervalStart(t: number, interval: Interval): number {
  if (interval === "hour") return t - (t % HOUR);
  if (interval === "day") return t - (t % DAY);
  return t - ((((t - MONDAY) % WEEK) + WEEK) % WEEK);
}
const STEP: Record<Interval, number> = { hour: HOUR, day: DAY, week: WEEK };

export interface Point extends OutcomeCounts {
  t: number;
}

/** Points a timeseries of `w` has: its length is checked before the zero-filled points are made. */
export const pointCount = (w: Window, interval: Interval): number =>
  Math.max(0, Math.ceil((w.to - intervalStart(w.from, interval)) / STEP[interval]));

/** One point per interval from the window's start to its end, zero-filled. */
export function timeseries(
  cells: readonly Cell[],
  p: Extract<Plan, { source: "rollup" }>,
  w: Window,
  interval: Interval,
): Point[] {
  // Sums by point index: an hourly month reads ~10,000 cells, and a map entry and an array per
  // cell were a third of its CPU.
  const first = intervalStart(w.from, interval);
  const step = STEP[interval];
  const sums: Counts[] = Array.from({ length: pointCount(w, interval) }, zero);
  for (const { bucket, data } of cells) {
    const sum = sums[(intervalStart(bucket, interval) - first) / step];
    if (sum !== undefined) addTotal(sum, data, p.only);
  }
  return sums.map((sum, i) => withCounts({ t: first + i * step }, outcomeCounts(only(sum, p.outcome))));
}

/**
 * Finished runs (success + failed) over cells: in all, and per value of each of `dims`. Every
 * run has one value in each dimension (maybe ""), so the type dimension's sum is the total.
 */
export function finishedByValue(
  cells: readonly Cell[],
  dims: readonly Dimension[],
): { total: RunCounts; values: Map<Dimension, Map<string, RunCounts>> } {
  const S = OUTCOME_INDEX.success;
  const F = OUTCOME_INDEX.failed;
  const total: RunCounts = { failed: 0, runs: 0 };
  const values = new Map<Dimension, Map<string, RunCounts>>(dims.map((d) => [d, new Map()]));
  for (const { data } of cells) {
    const types = data.dims.type ?? {};
    for (const value in types) {
      const c = types[value]!;
      total.failed += c[F]!;
      total.runs += c[S]! + c[F]!;
    }
    for (const dim of dims) {
      const sums = values.get(dim)!;
      const byValue = data.dims[dim] ?? {};
      // for-in over a map without a prototype: every key is the cell's own value.
      for (const value in byValue) {
        const c = byValue[value]!;
        const runs = c[S]! + c[F]!;
        if (runs === 0) continue;
        const sum = sums.get(value);
        if (sum) {
          sum.failed += c[F]!;
          sum.runs += runs;
        } else sums.set(value, { failed: c[F]!, runs });
      }
    }
  }
  return { total, values };
}

/**
 * Each value's counts in each of `dims`, summed over the cells (an app slice's own nsapp as
 * `nsapp`); with `onto`, added to those sums, which are left as they are (copied where a cell adds).
 */
export function dimensionSums(
  cells: readonly Cell[],
  p: Extract<Plan, { source: "rollup" }>,
  dims: readonly Dimension[],
  onto: ReadonlyMap<Dimension, ReadonlyMap<string, Counts>> | null = null,
  sign: 1 | -1 = 1,
): Map<Dimension, Map<string, Counts>> {
  const out = new Map<Dimension, Map<string, Counts>>(dims.map((d) => [d, new Map(onto?.get(d))]));
  const into = (
    sums: Map<string, Counts>,
    shared: ReadonlyMap<string, Counts> | undefined,
    value: string,
    counts: Counts,
  ) => {
    const s = sums.get(value);
    if (s === undefined) {
      sums.set(value, sign === 1 ? ([...counts] as Counts) : (counts.map((n) => -n) as Counts));
      return;
    }
    const sum = s === shared?.get(value) ? ([...s] as Counts) : s;
    let left = false;
    for (let i = 0; i < sum.length; i++) left = (sum[i] = sum[i]! + sign * counts[i]!) !== 0 || left;
    // A value a window no longer counts (taken out) is gone, as if never added.
    if (!left) sums.delete(value);
    else if (sum !== s) sums.set(value, sum);
  };
  for (const { data } of cells) {
    for (const dim of dims) {
      const sums = out.get(dim)!;
      const shared = onto?.get(dim);
      if (dim === "nsapp" && p.nsapp !== null) {
        into(sums, shared, p.nsapp, cellTotal(data, null));
        continue;
      }
      // for-in over the cell's own map (no prototype, domain/rollup.ts): no entry arrays made.
      const values = data.dims[dim];
      if (values !== undefined) for (const value in values) into(sums, shared, value, values[value]!);
    }
  }
  return out;
}

/**
 * Cells of apps' own slices summed into one cell as a cell of every app would count them (its
 * nsapp dimension: each app's total), every count times `sign`: -1 takes those apps' runs out of
 * a sum of cells of every app. One cell, so the sums over it cost one cell's keys, not each app's.
 */
export function appsCell(apps: readonly { app: string; cells: readonly Cell[] }[], sign: 1 | -1, bucket: number): Cell {
  const out: RollupData = { dims: {}, dur: {}, err: valueMap() };
  const addTo = (into: Record<string, Counts>, value: string, c: Counts) => {
    const t = into[value];
    if (t === undefined) into[value] = c.map((n) => n * sign) as Counts;
    else for (let k = 0; k < t.length; k++) t[k] = t[k]! + c[k]! * sign;
  };
  const byApp = (out.dims.nsapp = valueMap<Counts>());
  for (const { app, cells } of apps) {
    for (const { data } of cells) {
      addTo(byApp, app, cellTotal(data, null));
      for (const dim in data.dims) {
        const values = data.dims[dim as Dimension]!;
        const into = (out.dims[dim as Dimension] ??= valueMap<Counts>());
        for (const value in values) addTo(into, value, values[value]!);
      }
      for (const outcome in data.dur) {
        const bins = data.dur[outcome as Outcome]!;
        const into = (out.dur[outcome as Outcome] ??= valueMap<number>());
        for (const bin in bins) into[bin] = (into[bin] ?? 0) + bins[bin]! * sign;
      }
      for (const id in data.err) out.err[id] = (out.err[id] ?? 0) + data.err[id]! * sign;
    }
  }
  return { bucket, data: out };
}

/** Executions the cells count (every outcome) per value of a dimension. */
export function totalsBy(cells: readonly Cell[], dim: Dimension): Map<string, number> {
  const out = new Map<string, number>();
  for (const { data } of cells) {
    const values = data.dims[dim];
    if (values === undefined) continue;
    for (const value in values) {
      const c = values[value]!;
      out.set(value, (out.get(value) ?? 0) + c[0] + c[1] + c[2] + c[3] + c[4] + c[5]);
    }
  }
  return out;
}

/** Failed installs per error signature id (those with any), most frequent first. */
export const errorCounts = (cells: readonly Cell[]): [string, number][] =>
  errorTop(cells, Number.POSITIVE_INFINITY).top;

/** Ids are hex: code-point order is their order, and far cheaper than localeCompare. */
const byCount = (a: [string, number], b: [string, number]): number =>
  b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/** A settled cell's signatures with failures, most first, and their sum: made once per cell (no one changes it). */
const ranked = new WeakMap<RollupData, { entries: [string, number][]; total: number }>();
function rankedOf(data: RollupData): { entries: [string, number][]; total: number } {
  let r = ranked.get(data);
  if (r === undefined) {
    const entries: [string, number][] = [];
    let total = 0;
    for (const sig in data.err) {
      const n = data.err[sig]!;
      if (n <= 0) continue;
      entries.push([sig, n]);
      total += n;
    }
    ranked.set(data, (r = { entries: entries.sort(byCount), total }));
  }
  return r;
}

/**
 * The `limit` most frequent error signatures of the cells (most first), how many signatures have
 * failed installs and how many those are, and any id's count. A window's cells are mostly one
 * settled sum (stats.ts settledSummed) and a few open hours: the sum's signatures are ranked once
 * (a year of today's traffic holds ~55k, 30 days ~10k: summing them into a map on every request
 * was most of its CPU), and the others' few are counted on top of it.
 */
export function errorTop(
  cells: readonly Cell[],
  limit: number,
): { top: [string, number][]; distinct: number; total: number; count: (id: string) => number } {
  const base = cells.find((c) => isSettled(c.data))?.data;
  const { entries, total: baseTotal } = base === undefined ? { entries: [], total: 0 } : rankedOf(base);
  const counted = (id: string): number => (base !== undefined && Object.hasOwn(base.err, id) ? base.err[id]! : 0);
  const more = new Map<string, number>();
  // for-in lists own keys here (Object.prototype has no enumerable members), so every id is the cell's own.
  for (const { data } of cells) {
    if (data === base) continue;
    for (const sig in data.err) more.set(sig, (more.get(sig) ?? 0) + data.err[sig]!);
  }
  let distinct = entries.length;
  let total = baseTotal;
  const changed: [string, number][] = [];
  for (const [sig, n] of more) {
    const before = counted(sig);
    const after = before + n;
    distinct += (after > 0 ? 1 : 0) - (before > 0 ? 1 : 0);
    total += Math.max(0, after) - Math.max(0, before);
    if (after > 0) changed.push([sig, after]);
  }
  changed.sort(byCount);
  // The ranked ids the others did not change, in order, merged with those they did.
  const top: [string, number][] = [];
  let i = 0;
  let j = 0;
  while (top.length < limit) {
    while (i < entries.length && more.has(entries[i]![0])) i++;
    const a = entries[i];
    const b = changed[j];
    if (a === undefined && b === undefined) break;
    if (b === undefined || (a !== undefined && byCount(a, b) < 0)) {
      top.push(a!);
      i++;
    } else {
      top.push(b);
      j++;
    }
  }
  return { top, distinct, total, count: (id) => counted(id) + (more.get(id) ?? 0) };
}

/** The plan that reads cells folded from already-filtered records. */
export const SCANNED: Extract<Plan, { source: "rollup" }> = {
  source: "rollup",
  slices: [],
  nsapp: null,
  only: null,
  outcome: null,
};

/** Folds records into cells (one per `bucketOf` value), as rollups would hold them; `sign` -1 takes them away. */
export async function foldRecords(
  chunks: AsyncIterable<readonly RollupRecord[]>,
  bucketOf: (r: RollupRecord) => number,
  sign: 1 | -1 = 1,
): Promise<Cell[]> {
  const cells = new Map<number, RollupData>();
  for await (const records of chunks) {
    for (const r of records) {
      const bucket = bucketOf(r);
      let data = cells.get(bucket);
      if (!data) cells.set(bucket, (data = emptyData()));
      addRecord(data, r, r.outcome, sign, true, failureSignatureId(r.outcome, r.error));
    }
  }
  return [...cells].map(([bucket, data]) => ({ bucket, data }));
}
