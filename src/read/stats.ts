// Answers aggregate questions: plans rollups-or-scan, reads cells, aggregates them.
import type { ExecutionFilter, StoreReads } from "../store/contract/executions.ts";
import {
  SCANNED,
  appsCell,
  breakdown,
  complementOf,
  decompose,
  errorTop,
  finishedByValue,
  foldRecords,
  intervalStart,
  keptOf,
  plan,
  summarize,
  timeseries,
  totalsBy,
  type BreakdownOptions,
  type Cell,
  type Interval,
  type Plan,
  type Span,
  type Use,
  type Window,
} from "./aggregate.ts";
import { GRAINS, emptyData, mergeInto, settle, type Dimension, type RollupPart } from "../domain/rollup.ts";
import { driverDimensions, rankDrivers } from "../domain/drivers.ts";
import { byWindow, settledAndOpen } from "./settled.ts";
import { keptTypes, learnTypes } from "./app-types.ts";

type Source = "rollup" | "scan";

interface Read {
  source: Source;
  plan: Extract<Plan, { source: "rollup" }>;
  cells: Cell[];
}

/**
 * The dimensions an aggregate reads of a cell of plan `p` (aggregate.ts): the store may leave the
 * rest out. Undefined: every dimension.
 */
function dimsOf(use: Use, p: Extract<Plan, { source: "rollup" }>): Dimension[] | undefined {
  // A cell's total is its type dimension's sum, or the filtered dimension's value.
  const total: Dimension[] = p.only ? [p.only.dim] : ["type"];
  switch (use.kind) {
    case "summary":
      return p.only ? total : [...total, "attempt"];
    case "breakdown":
      // By app within an app's slice, each cell counts whole: its total.
      return [...total, use.by];
    case "timeseries":
    case "drivers":
      // The drivers' dimensions come as `more` (they depend on the filter).
      return total;
    case "errors":
      return [];
    case "failures":
      return ["failure"];
    case "every":
      return undefined;
  }
}

/**
 * What the aggregates read from: the store, and `scans`, where one request keeps the records it
 * folded, so its many aggregates over the same filter and window scan once (a page of breakdowns
 * with a filter rollups cannot select); without it for a long-lived instance (records change
 * between requests).
 */
interface StatsSource {
  store: StoreReads;
  scans?: Map<string, Promise<Cell[]>>;
}

type RollupPlan = Extract<Plan, { source: "rollup" }>;

/** How a read buckets and what it needs of a cell. */
interface ReadShape {
  use: Use;
  parts: RollupPart[];
  spans: Span[] | Promise<Span[]>;
  /** The bucket a scanned record falls in, and the name of that bucketing (a scan's key). */
  scanBucket: (createdAt: number) => number;
  bucketing: string;
  /** Dimensions needed beside the use's own (the drivers'). */
  more?: readonly Dimension[];
}

/** The rollup cells of plan `p` over the read's spans, with the dimensions it needs (and `also`). */
async function rollupCellsOf(
  { store }: StatsSource,
  shape: ReadShape,
  p: RollupPlan,
  wanted: RollupPart[],
  also: readonly Dimension[] = [],
): Promise<Cell[]> {
  const needed = dimsOf(shape.use, p);
  const dims = needed === undefined ? undefined : [...new Set([...needed, ...(shape.more ?? []), ...also])];
  const spans = await shape.spans;
  return (
    await Promise.all(
      spans.flatMap((s) =>
        p.slices.map((slice) =>
          store.readRollups({
            grain: s.grain,
            slice,
            from: s.from,
            to: s.to,
            parts: wanted,
            ...(dims ? { dims } : {}),
          }),
        ),
      ),
    )
  ).flat();
}

/** The window's records of `filter` folded into cells (`sign` -1: to take out), once per request. */
function folded({ store, scans }: StatsSource, shape: ReadShape, w: Window, filter: ExecutionFilter, sign: 1 | -1) {
  const key = `${shape.bucketing} ${w.from} ${w.to} ${sign} ${JSON.stringify(filter)}`;
  let cells = scans?.get(key);
  if (cells === undefined) {
    cells = foldRecords(
      store.executionChunks({ ...filter, from: w.from, to: w.to }),
      (r) => shape.scanBucket(r.createdAt),
      sign,
    );
    scans?.set(key, cells);
  }
  return cells;
}

/** The type's apps summed over settled cells, a year's failure keys among them (~6 MB): a few kept. */
const keptAppsCells = byWindow<Cell[]>(4);
/** The app of each settled cell appsCells has met (a cell is one app's slice): what a later window lost is taken out as that app's. */
const appOf = new WeakMap<Cell["data"], string>();
/** Cells a kept sum may carry: the sum and what later windows took out and added, before it is summed afresh. */
const MOST_CHANGES = 7;

/** appsCell of `cells` (each its app's, by appOf), settled: nothing changes it after. */
function settledAppsCell(cells: readonly Cell[], sign: 1 | -1, bucket: number): Cell {
  const byApp = new Map<string, Cell[]>();
  for (const c of cells) {
    const app = appOf.get(c.data)!;
    const list = byApp.get(app);
    if (list === undefined) byApp.set(app, [c]);
    else list.push(c);
  }
  const c = appsCell(
    [...byApp].map(([app, list]) => ({ app, cells: list })),
    sign,
    bucket,
  );
  settle(c.data);
  return c;
}

/**
 * appsCell of the apps' settled cells, kept (settled.ts) and settled itself, and of their open
 * cells apart: one cell, or two when some are open. Summing a type's apps again for every request
 * was a third of /api/new?ctype= over a year; a window a day later adds what it gained and takes
 * out what it lost, in cells of their own, until they are MOST_CHANGES.
 */
function appsCells(apps: readonly { app: string; cells: readonly Cell[] }[], sign: 1 | -1, bucket: number): Cell[] {
  const split = apps.map(({ app, cells }) => ({ app, ...settledAndOpen(cells) }));
  for (const { app, settled } of split) for (const c of settled) appOf.set(c.data, app);
  const settled = split.flatMap((a) => a.settled);
  const kept = keptAppsCells(
    settled,
    String(sign),
    () => [settledAppsCell(settled, sign, bucket)],
    (before, lost, gained) =>
      before.length + 2 > MOST_CHANGES
        ? [settledAppsCell(settled, sign, bucket)]
        : [
            ...before,
            ...(gained.length > 0 ? [settledAppsCell(gained, sign, bucket)] : []),
            ...(lost.length > 0 ? [settledAppsCell(lost, sign === 1 ? -1 : 1, bucket)] : []),
          ],
  ).map((c) => (c.bucket === bucket ? c : { bucket, data: c.data }));
  if (split.every((a) => a.open.length === 0)) return kept;
  return [
    ...kept,
    appsCell(
      split.map(({ app, open }) => ({ app, cells: open })),
      sign,
      bucket,
    ),
  ];
}

/**
 * An install type is (nearly always) one app's whole: the cells of one type are the sum of its
 * apps' slices, or the cells of every app less the other types' apps, whichever side has fewer
 * runs. Which app has which type is read from each app's newest run, then checked against the
 * cells: every such app of one type only, and their runs all the type's (or all the others')
 * runs in the window. Null when that does not hold (an app of two types): the caller scans.
 */
async function typeByApps(
  src: StatsSource,
  shape: ReadShape,
  w: Window,
  split: { base: ExecutionFilter; basePlan: RollupPlan; type: string },
  cells: Cell[],
  { kept, total }: { kept: number; total: number },
): Promise<Read | null> {
  const { store } = src;
  const keep = kept <= total - kept;
  const apps = [...totalsBy(cells, "nsapp")].filter(([, n]) => n !== 0).map(([app]) => app);
  // Where to look for a type's runs: each app's type as learned before (app-types.ts), checked
  // against the cells below, so a stale one costs a re-read, never a wrong count.
  const known = keptTypes(store);
  const unknown = apps.filter((app) => !known.has(app));
  await learnTypes(store, unknown);
  // What was learned before may be stale (an app's newest run of another type): learned afresh once.
  for (let fresh = unknown.length === apps.length; ; fresh = true) {
    const side = apps.filter((app) => known.has(app) && (known.get(app)!.type === split.type) === keep);
    const reads = await Promise.all(
      side.map(async (app) => {
        const p = plan({ ...split.base, nsapp: app }, shape.use) as RollupPlan;
        return { app, cells: await rollupCellsOf(src, shape, p, shape.parts, ["type"]) };
      }),
    );
    let counted = 0;
    let pure = true;
    for (const r of reads) {
      let ofType = 0;
      let others = 0;
      for (const [value, n] of totalsBy(r.cells, "type")) value === split.type ? (ofType += n) : (others += n);
      pure &&= keep ? others === 0 : ofType === 0;
      counted += keep ? ofType : others;
    }
    if (pure && counted === (keep ? kept : total - kept)) {
      const summed = appsCells(reads, keep ? 1 : -1, w.from);
      return { source: "rollup", plan: split.basePlan, cells: keep ? summed : [...cells, ...summed] };
    }
    if (fresh) return null;
    await learnTypes(store, apps);
  }
}

/**
 * Cells for a window: from rollups when the plan allows; else, for one dimension filter, from
 * rollups without it, less the executions it leaves out folded (when those are fewer than the
 * ones it keeps, as the rollups count them; none at all: rollups alone; none kept: no cells);
 * else by folding the window's records.
 */
async function read(src: StatsSource, f: ExecutionFilter, w: Window, shape: ReadShape): Promise<Read> {
  const { use, parts } = shape;
  const p = plan(f, use);
  if (p.source === "rollup") return { source: "rollup", plan: p, cells: await rollupCellsOf(src, shape, p, parts) };
  const split = complementOf(f, use);
  if (split !== null) {
    const basePlan = plan(split.base, use) as RollupPlan;
    // The counts that pick the smaller side are in the data part: the filtered dimension's and the totals.
    const cells = await rollupCellsOf(src, shape, basePlan, parts.includes("data") ? parts : [...parts, "data"], [
      split.only.dim,
      "type",
    ]);
    const { kept, total } = keptOf(cells, split.only);
    if (kept === total) return { source: "rollup", plan: basePlan, cells };
    if (kept === 0) return { source: "rollup", plan: SCANNED, cells: [] };
    if (split.only.dim === "type" && basePlan.nsapp === null && parts.includes("apps")) {
      const byApps = await typeByApps(src, shape, w, { base: split.base, basePlan, type: split.only.value }, cells, {
        kept,
        total,
      });
      if (byApps !== null) return byApps;
    }
    if (total - kept < kept)
      return { source: "scan", plan: basePlan, cells: [...cells, ...(await folded(src, shape, w, split.rest, -1))] };
  }
  return { source: "scan", plan: SCANNED, cells: await folded(src, shape, w, f, 1) };
}

// Scans fold by day, so one request's summary, breakdowns and daily series share a scan.
const byDay = (t: number) => intervalStart(t, "day");
const spansOf = async ({ store }: StatsSource, w: Window, months = true) =>
  decompose(w, { months, foldedUntil: await store.foldedUntil() });
/** A read folding by day over the window's spans (months inside). */
const daily = (src: StatsSource, w: Window, use: Use, parts: RollupPart[], more?: readonly Dimension[]): ReadShape => ({
  use,
  parts,
  spans: spansOf(src, w),
  scanBucket: byDay,
  bucketing: "day",
  ...(more ? { more } : {}),
});

/** The `limit` most frequent failure signatures of cells read, how many there are, and any id's count. */
function countsOf(r: Read, limit: number) {
  const counted =
    r.plan.outcome === null || r.plan.outcome === "failed"
      ? errorTop(r.cells, limit)
      : { top: [], distinct: 0, total: 0, count: () => 0 };
  return { source: r.source, ...counted };
}

/** The `limit` most frequent failure signatures of cells read, with what is known of each; with `issues`, its issue if linked. */
async function signaturesOf({ store }: StatsSource, r: Read, limit: number, issues: boolean) {
  const { source, top, distinct, total: totalFailed } = countsOf(r, limit);
  const ids = top.map(([id]) => id);
  const [signatures, links] = await Promise.all([store.signatures(ids), issues ? store.issueLinks(ids) : []]);
  const known = new Map(signatures.map((s) => [s.id, s]));
  const linked = new Map(links.map((l) => [l.signature, l]));
  return {
    source,
    total_failed: totalFailed,
    total_signatures: distinct,
    signatures: top.map(([id, count]) => {
      const s = known.get(id);
      const l = linked.get(id);
      return {
        id,
        signature: s?.signature ?? null,
        count,
        share: totalFailed === 0 ? 0 : Math.round((count / totalFailed) * 10_000) / 10_000,
        apps: s?.apps ?? [],
        first_seen: s ? new Date(s.firstSeen).toISOString() : null,
        last_seen: s ? new Date(s.lastSeen).toISOString() : null,
        example: s?.example ?? null,
        issue: l ? { tracker: l.tracker, repo: l.repo, number: l.number, url: l.url } : null,
      };
    }),
  };
}

/**
 * Sums of the settled cells of reads whose answer does not depend on buckets, kept by the cells'
 * identities (settled.ts): a window read again (another question of it, the next poll) adds only
 * its open cells to the kept sum. A page asks for dozens (a breakdown's cells hold its dimension
 * only); a year's sum with its error signatures, or its failure keys, is ~6 MB, so of those a few
 * are kept.
 */
const keptSums = { counts: byWindow<Cell>(64), signatures: byWindow<Cell>(8), failures: byWindow<Cell>(8) };

/** `r` with its settled cells as one summed cell (counts, durations and signatures are additive), kept in `kept`. */
function settledSummed(r: Read, kept: (typeof keptSums)[keyof typeof keptSums]): Read {
  const { settled, open } = settledAndOpen(r.cells);
  if (settled.length <= 1) return r;
  const sum = kept(settled, "", () => {
    const data = emptyData();
    for (const c of settled) mergeInto(data, c.data);
    settle(data);
    return { bucket: settled[0]!.bucket, data };
  });
  return { ...r, cells: [sum, ...open] };
}

async function summaryOf(src: StatsSource, f: ExecutionFilter, w: Window) {
  const r = settledSummed(await read(src, f, w, daily(src, w, { kind: "summary" }, ["data"])), keptSums.counts);
  return { source: r.source, ...summarize(r.cells, r.plan) };
}

async function breakdownOf(src: StatsSource, f: ExecutionFilter, w: Window, o: BreakdownOptions) {
  // By app over every app: the per-app counts are all it needs (an app's own slice has none).
  const parts: RollupPart[] = o.by === "nsapp" && f.nsapp === undefined ? ["apps"] : ["data"];
  const r = settledSummed(
    await read(src, f, w, daily(src, w, { kind: "breakdown", by: o.by }, parts)),
    keptSums.counts,
  );
  return { source: r.source, ...breakdown(r.cells, r.plan, o) };
}

async function timeseriesOf(src: StatsSource, f: ExecutionFilter, w: Window, interval: Interval) {
  // Hourly points need hour cells throughout; coarser ones use day cells in the middle.
  const spans = interval === "hour" ? [{ grain: GRAINS.hour, ...w }] : spansOf(src, w, false);
  const r = await read(src, f, w, {
    use: { kind: "timeseries" },
    parts: ["data"],
    spans,
    scanBucket: (t) => intervalStart(t, interval),
    bucketing: interval,
  });
  return { source: r.source, points: timeseries(r.cells, r.plan, w, interval) };
}

async function driversOf(src: StatsSource, f: ExecutionFilter, w: Window, minRuns: number) {
  const dims = driverDimensions(f.nsapp !== undefined);
  const r = settledSummed(await read(src, f, w, daily(src, w, { kind: "drivers" }, ["data"], dims)), keptSums.counts);
  const { total, values } = finishedByValue(r.cells, dims);
  return { source: r.source, ...rankDrivers(total, values, minRuns) };
}

/** Failed installs per signature id in the window, most frequent first, and their sum. */
const readErrors = async (src: StatsSource, f: ExecutionFilter, w: Window) =>
  settledSummed(await read(src, f, w, daily(src, w, { kind: "errors" }, ["errors"])), keptSums.signatures);

/**
 * Breakdowns by several dimensions and the error signatures (without issues) of one filter and
 * window, from one read of its cells where rollups can answer (an app page's failures: a read
 * each cost three times as many queries).
 */
async function cutsOf(
  src: StatsSource,
  f: ExecutionFilter,
  w: Window,
  bys: readonly Dimension[],
  o: Omit<BreakdownOptions, "by">,
  signatures: number,
) {
  const use: Use = { kind: "breakdown", by: bys[0]! };
  const p = plan(f, use);
  if (p.source !== "rollup" || p.only !== null) {
    // A dimension filter selects counts of its own dimension only: each question on its own.
    const [groups, errors] = await Promise.all([
      Promise.all(bys.map((by) => breakdownOf(src, f, w, { ...o, by }))),
      readErrors(src, f, w).then((r) => signaturesOf(src, r, signatures, false)),
    ]);
    return { breakdowns: groups.map((g) => ({ groups: g.groups, total_groups: g.total_groups })), errors };
  }
  const r = settledSummed(await read(src, f, w, daily(src, w, use, ["data", "errors"], bys)), keptSums.signatures);
  return {
    breakdowns: bys.map((by) => breakdown(r.cells, r.plan, { ...o, by })),
    errors: await signaturesOf(src, r, signatures, false),
  };
}

/** `scans`: see StatsSource. */
export function createStats(store: StoreReads, scans?: Map<string, Promise<Cell[]>>) {
  const src: StatsSource = scans ? { store, scans } : { store };
  return {
    /**
     * The cells of a window as they are, for answers that need every dimension at once: rollup
     * cells (months inside, as `summary` reads them) when the filter allows (an install type: with
     * its apps' slices summed into one more cell, typeByApps), else the window's records folded
     * into one cell per day.
     */
    cells: (f: ExecutionFilter, w: Window): Promise<Read> =>
      read(src, f, w, daily(src, w, { kind: "every" }, ["data", "apps"])),
    /** The failure keys of a window's failed runs (domain/rollup.ts), its settled cells summed. */
    failureKeys: async (f: ExecutionFilter, w: Window): Promise<Read> =>
      settledSummed(await read(src, f, w, daily(src, w, { kind: "failures" }, ["data"])), keptSums.failures),
    summary: (f: ExecutionFilter, w: Window) => summaryOf(src, f, w),
    breakdown: (f: ExecutionFilter, w: Window, o: BreakdownOptions) => breakdownOf(src, f, w, o),
    timeseries: (f: ExecutionFilter, w: Window, interval: Interval) => timeseriesOf(src, f, w, interval),
    /** Failed installs with signature `id` in the window, and with any signature. */
    async signatureCount(f: ExecutionFilter, w: Window, id: string) {
      const { count, total } = countsOf(await readErrors(src, f, w), 0);
      return { count: Math.max(0, count(id)), totalFailed: total };
    },
    /** Dimension values over-represented among the window's failures (domain/drivers.ts). */
    drivers: (f: ExecutionFilter, w: Window, minRuns: number) => driversOf(src, f, w, minRuns),
    /** Failed installs by error signature, with what is known of each signature and its issue, if linked. */
    errors: async (f: ExecutionFilter, w: Window, limit: number) =>
      signaturesOf(src, await readErrors(src, f, w), limit, true),
    cuts: (
      f: ExecutionFilter,
      w: Window,
      bys: readonly Dimension[],
      o: Omit<BreakdownOptions, "by">,
      signatures: number,
    ) => cutsOf(src, f, w, bys, o, signatures),
  };
}

export type Stats = ReturnType<typeof createStats>;
