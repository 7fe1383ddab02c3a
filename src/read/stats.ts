// Answers aggregate questions: plans rollups-or-scan, reads cells, aggregates them.
import type { ExecutionFilter, StoreReads } from "../store/contract.ts";
import {
  SCANNED, breakdown, complementOf, decompose, errorCounts, finishedByValue, foldRecords, intervalStart, keptOf, plan, summarize, timeseries,
  type BreakdownOptions, type Cell, type Interval, type Plan, type Span, type Use, type Window,
} from "./aggregate.ts";
import { GRAINS, type RollupPart } from "../domain/rollup.ts";
import { driverDimensions, rankDrivers } from "../domain/drivers.ts";

type Source = "rollup" | "scan";

interface Read {
  source: Source;
  plan: Extract<Plan, { source: "rollup" }>;
  cells: Cell[];
}

/**
 * `scans`: where one request keeps the records it folded, so its many aggregates over the same
 * filter and window scan once (a page of breakdowns with a filter rollups cannot select); omit
 * it for a long-lived instance (records change between requests).
 */
export function createStats(store: StoreReads, scans?: Map<string, Promise<Cell[]>>) {
  /**
   * Cells for a window: from rollups when the plan allows; else, for one dimension filter, from
   * rollups without it, less the executions it leaves out folded (when those are fewer than the
   * ones it keeps, as the rollups count them; none at all: rollups alone; none kept: no cells);
   * else by folding the window's records.
   */
  async function read(f: ExecutionFilter, w: Window, use: Use, parts: RollupPart[], spans: Span[] | Promise<Span[]>, scanBucket: (createdAt: number) => number, bucketing: string): Promise<Read> {
    const rollupCells = async (p: Extract<Plan, { source: "rollup" }>, wanted: RollupPart[]) =>
      (await Promise.all((await spans).flatMap((s) => p.slices.map((slice) => store.readRollups({ grain: s.grain, slice, from: s.from, to: s.to, parts: wanted }))))).flat();
    const folded = (filter: ExecutionFilter, sign: 1 | -1) => {
      const key = `${bucketing} ${w.from} ${w.to} ${sign} ${JSON.stringify(filter)}`;
      let cells = scans?.get(key);
      if (cells === undefined) {
        cells = foldRecords(store.executionChunks({ ...filter, from: w.from, to: w.to }), (r) => scanBucket(r.createdAt), sign);
        scans?.set(key, cells);
      }
      return cells;
    };
    const p = plan(f, use);
    if (p.source === "rollup") return { source: "rollup", plan: p, cells: await rollupCells(p, parts) };
    const split = complementOf(f, use);
    if (split !== null) {
      const basePlan = plan(split.base, use) as Extract<Plan, { source: "rollup" }>;
      // The counts that pick the smaller side are in the data part.
      const cells = await rollupCells(basePlan, parts.includes("data") ? parts : [...parts, "data"]);
      const { kept, total } = keptOf(cells, split.only);
      if (kept === total) return { source: "rollup", plan: basePlan, cells };
      if (kept === 0) return { source: "rollup", plan: SCANNED, cells: [] };
      if (total - kept < kept) return { source: "scan", plan: basePlan, cells: [...cells, ...(await folded(split.rest, -1))] };
    }
    return { source: "scan", plan: SCANNED, cells: await folded(f, 1) };
  }

  // Scans fold by day, so one request's summary, breakdowns and daily series share a scan.
  const byDay = (t: number) => intervalStart(t, "day");
  const spansOf = async (w: Window, months = true) => decompose(w, { months, foldedUntil: await store.foldedUntil() });

  /** Failed installs per signature id in the window, most frequent first, and their sum. */
  async function signatureCounts(f: ExecutionFilter, w: Window) {
    const r = await read(f, w, { kind: "errors" }, ["errors"], spansOf(w), byDay, "day");
    const counts = r.plan.outcome === null || r.plan.outcome === "failed" ? errorCounts(r.cells) : [];
    return { source: r.source, counts, totalFailed: counts.reduce((s, [, n]) => s + n, 0) };
  }

  return {
    /**
     * The cells of a window as they are, for answers that need every dimension at once: rollup
     * cells (months inside, as `summary` reads them) when the filter allows, else the window's
     * records folded into one cell per day.
     */
    async cells(f: ExecutionFilter, w: Window): Promise<Read> {
      return read(f, w, { kind: "every" }, ["data", "apps"], spansOf(w), byDay, "day");
    },

    async summary(f: ExecutionFilter, w: Window) {
      const r = await read(f, w, { kind: "summary" }, ["data"], spansOf(w), byDay, "day");
      return { source: r.source, ...summarize(r.cells, r.plan) };
    },

    async breakdown(f: ExecutionFilter, w: Window, o: BreakdownOptions) {
      // By app over every app: the per-app counts are all it needs (an app's own slice has none).
      const parts: RollupPart[] = o.by === "nsapp" && f.nsapp === undefined ? ["apps"] : ["data"];
      const r = await read(f, w, { kind: "breakdown", by: o.by }, parts, spansOf(w), byDay, "day");
      return { source: r.source, ...breakdown(r.cells, r.plan, o) };
    },

    async timeseries(f: ExecutionFilter, w: Window, interval: Interval) {
      // Hourly points need hour cells throughout; coarser ones use day cells in the middle.
      const spans = interval === "hour" ? [{ grain: GRAINS.hour, ...w }] : spansOf(w, false);
      const r = await read(f, w, { kind: "timeseries" }, ["data"], spans, (t) => intervalStart(t, interval), interval);
      return { source: r.source, points: timeseries(r.cells, r.plan, w, interval) };
    },

    /** Failed installs with signature `id` in the window, and with any signature. */
    async signatureCount(f: ExecutionFilter, w: Window, id: string) {
      const { counts, totalFailed } = await signatureCounts(f, w);
      return { count: counts.find(([sig]) => sig === id)?.[1] ?? 0, totalFailed };
    },

    /** Dimension values over-represented among the window's failures (domain/drivers.ts). */
    async drivers(f: ExecutionFilter, w: Window, minRuns: number) {
      const r = await read(f, w, { kind: "drivers" }, ["data"], spansOf(w), byDay, "day");
      const { total, values } = finishedByValue(r.cells, driverDimensions(f.nsapp !== undefined));
      return { source: r.source, ...rankDrivers(total, values, minRuns) };
    },

    /** Failed installs by error signature, with what is known of each signature and its issue, if linked. */
    async errors(f: ExecutionFilter, w: Window, limit: number) {
      const { source, counts, totalFailed } = await signatureCounts(f, w);
      const top = counts.slice(0, limit);
      const ids = top.map(([id]) => id);
      const [signatures, links] = await Promise.all([store.signatures(ids), store.issueLinks(ids)]);
      const known = new Map(signatures.map((s) => [s.id, s]));
      const issues = new Map(links.map((l) => [l.signature, l]));
      return {
        source,
        total_failed: totalFailed,
        total_signatures: counts.length,
        signatures: top.map(([id, count]) => {
          const s = known.get(id);
          return {
            id,
            signature: s?.signature ?? null,
            count,
            share: totalFailed === 0 ? 0 : Math.round((count / totalFailed) * 10_000) / 10_000,
            apps: s?.apps ?? [],
            first_seen: s ? new Date(s.firstSeen).toISOString() : null,
            last_seen: s ? new Date(s.lastSeen).toISOString() : null,
            example: s?.example ?? null,
            issue: issues.has(id) ? { tracker: issues.get(id)!.tracker, repo: issues.get(id)!.repo, number: issues.get(id)!.number, url: issues.get(id)!.url } : null,
          };
        }),
      };
    },
  };
}

