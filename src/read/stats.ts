// Answers aggregate questions: plans rollups-or-scan, reads cells, aggregates them.
import type { ExecutionFilter, StoreReads } from "../store/contract.ts";
import {
  SCANNED, breakdown, decompose, errorCounts, foldRecords, intervalStart, plan, summarize, timeseries,
  type BreakdownOptions, type Cell, type Interval, type Plan, type Span, type Use, type Window,
} from "./aggregate.ts";
import { GRAINS, type Dimension, type RollupPart } from "../domain/rollup.ts";

type Source = "rollup" | "scan";

interface Read {
  source: Source;
  plan: Extract<Plan, { source: "rollup" }>;
  cells: Cell[];
}

/** The dimensions an aggregate reads of a cell (aggregate.ts): the store may leave the rest out. */
function dimsOf(use: Use, p: Extract<Plan, { source: "rollup" }>): Dimension[] {
  // A cell's total is its type dimension's sum, or the filtered dimension's value.
  const total: Dimension[] = p.only ? [p.only.dim] : ["type"];
  switch (use.kind) {
    case "summary":
      return p.only ? total : [...total, "attempt"];
    case "breakdown":
      // By app within an app's slice, each cell counts whole: its total.
      return [...total, use.by];
    case "timeseries":
      return total;
    case "errors":
      return [];
  }
}

export function createStats(store: StoreReads) {
  /** Cells for a window: from rollups when the plan allows, else by folding the window's records. */
  async function read(f: ExecutionFilter, w: Window, use: Use, parts: RollupPart[], spans: Span[] | Promise<Span[]>, scanBucket: (createdAt: number) => number, more: Dimension[] = []): Promise<Read> {
    const p = plan(f, use);
    if (p.source === "rollup") {
      const dims = [...dimsOf(use, p), ...more];
      const reads = (await spans).flatMap((s) => p.slices.map((slice) => store.readRollups({ grain: s.grain, slice, from: s.from, to: s.to, parts, dims })));
      const perSpan = await Promise.all(reads);
      return { source: "rollup", plan: p, cells: perSpan.flat() };
    }
    const chunks = store.executionChunks({ ...f, from: w.from, to: w.to });
    return { source: "scan", plan: SCANNED, cells: await foldRecords(chunks, (r) => scanBucket(r.createdAt)) };
  }

  const whole = () => 0;
  const spansOf = async (w: Window, months = true) => decompose(w, { months, foldedUntil: await store.foldedUntil() });

  /** The `limit` most frequent failure signatures of cells read, with what is known of each. */
  async function signaturesOf(r: Read, limit: number) {
    const counts = r.plan.outcome === null || r.plan.outcome === "failed" ? errorCounts(r.cells) : [];
    const totalFailed = counts.reduce((s, [, n]) => s + n, 0);
    const top = counts.slice(0, limit);
    const known = new Map((await store.signatures(top.map(([id]) => id))).map((s) => [s.id, s]));
    return {
      source: r.source,
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
        };
      }),
    };
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

    /** Failed installs by error signature, with what is known of each signature. */
    async errors(f: ExecutionFilter, w: Window, limit: number) {
      const r = await read(f, w, { kind: "errors" }, ["errors"], spansOf(w), whole);
      return signaturesOf(r, limit);
    },

    /**
     * Breakdowns by several dimensions and the error signatures of one filter and window, from one
     * read of its cells where rollups can answer (an app page's failures: a read each cost three
     * times as many queries).
     */
    async cuts(f: ExecutionFilter, w: Window, bys: readonly Dimension[], o: Omit<BreakdownOptions, "by">, signatures: number) {
      const use: Use = { kind: "breakdown", by: bys[0]! };
      const p = plan(f, use);
      if (p.source !== "rollup" || p.only !== null) {
        // A dimension filter selects counts of its own dimension only: each question on its own.
        const [groups, errors] = await Promise.all([Promise.all(bys.map((by) => this.breakdown(f, w, { ...o, by }))), this.errors(f, w, signatures)]);
        return { breakdowns: groups.map((g) => ({ groups: g.groups, total_groups: g.total_groups })), errors };
      }
      const r = await read(f, w, use, ["data", "errors"], spansOf(w), whole, [...bys]);
      return { breakdowns: bys.map((by) => breakdown(r.cells, r.plan, { ...o, by })), errors: await signaturesOf(r, signatures) };
    },
  };
}

