// Answers aggregate questions: plans rollups-or-scan, reads cells, aggregates them.
import type { ExecutionFilter, StoreReads } from "../store/contract.ts";
import {
  SCANNED, breakdown, decompose, errorCounts, finishedByValue, foldRecords, intervalStart, plan, summarize, timeseries,
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

export function createStats(store: StoreReads) {
  /** Cells for a window: from rollups when the plan allows, else by folding the window's records. */
  async function read(f: ExecutionFilter, w: Window, use: Use, parts: RollupPart[], spans: Span[] | Promise<Span[]>, scanBucket: (createdAt: number) => number): Promise<Read> {
    const p = plan(f, use);
    if (p.source === "rollup") {
      const reads = (await spans).flatMap((s) => p.slices.map((slice) => store.readRollups({ grain: s.grain, slice, from: s.from, to: s.to, parts })));
      const perSpan = await Promise.all(reads);
      return { source: "rollup", plan: p, cells: perSpan.flat() };
    }
    const chunks = store.executionChunks({ ...f, from: w.from, to: w.to });
    return { source: "scan", plan: SCANNED, cells: await foldRecords(chunks, (r) => scanBucket(r.createdAt)) };
  }

  const whole = () => 0;

  const spansOf = async (w: Window, months = true) => decompose(w, { months, foldedUntil: await store.foldedUntil() });

  /** Failed installs per signature id in the window, most frequent first, and their sum. */
  async function signatureCounts(f: ExecutionFilter, w: Window) {
    const r = await read(f, w, { kind: "errors" }, ["errors"], spansOf(w), whole);
    const counts = r.plan.outcome === null || r.plan.outcome === "failed" ? errorCounts(r.cells) : [];
    return { source: r.source, counts, totalFailed: counts.reduce((s, [, n]) => s + n, 0) };
  }

  return {
    async summary(f: ExecutionFilter, w: Window) {
      const r = await read(f, w, { kind: "summary" }, ["data"], spansOf(w), whole);
      return { source: r.source, ...summarize(r.cells, r.plan) };
    },

    async breakdown(f: ExecutionFilter, w: Window, o: BreakdownOptions) {
      // By app over every app: the per-app counts are all it needs (an app's own slice has none).
      const parts: RollupPart[] = o.by === "nsapp" && f.nsapp === undefined ? ["apps"] : ["data"];
      const r = await read(f, w, { kind: "breakdown", by: o.by }, parts, spansOf(w), whole);
      return { source: r.source, ...breakdown(r.cells, r.plan, o) };
    },

    async timeseries(f: ExecutionFilter, w: Window, interval: Interval) {
      // Hourly points need hour cells throughout; coarser ones use day cells in the middle.
      const spans = interval === "hour" ? [{ grain: GRAINS.hour, ...w }] : spansOf(w, false);
      const r = await read(f, w, { kind: "timeseries" }, ["data"], spans, (t) => intervalStart(t, interval));
      return { source: r.source, points: timeseries(r.cells, r.plan, w, interval) };
    },

    /** Failed installs with signature `id` in the window, and with any signature. */
    async signatureCount(f: ExecutionFilter, w: Window, id: string) {
      const { counts, totalFailed } = await signatureCounts(f, w);
      return { count: counts.find(([sig]) => sig === id)?.[1] ?? 0, totalFailed };
    },

    /** Dimension values over-represented among the window's failures (domain/drivers.ts). */
    async drivers(f: ExecutionFilter, w: Window, minRuns: number) {
      const r = await read(f, w, { kind: "drivers" }, ["data"], spansOf(w), whole);
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

