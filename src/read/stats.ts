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
import { GRAINS, type Dimension, type RollupPart } from "../domain/rollup.ts";
import { driverDimensions, rankDrivers } from "../domain/drivers.ts";

type Source = "rollup" | "scan";

/**
 * Each app's install type as its newest run had it, per store: where to look for a type's runs
 * (stats.ts typeByApps checks what it finds against the cells, so a stale entry costs a re-read,
 * never a wrong count). Kept across requests: learning it is an index seek per app.
 */
const typesOfApps = new WeakMap<StoreReads, Map<string, string>>();

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
    case "every":
      return undefined;
  }
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
  async function read(
    f: ExecutionFilter,
    w: Window,
    use: Use,
    parts: RollupPart[],
    spans: Span[] | Promise<Span[]>,
    scanBucket: (createdAt: number) => number,
    bucketing: string,
    more: readonly Dimension[] = [],
  ): Promise<Read> {
    const rollupCells = async (
      p: Extract<Plan, { source: "rollup" }>,
      wanted: RollupPart[],
      also: readonly Dimension[] = [],
    ) => {
      const needed = dimsOf(use, p);
      const dims = needed === undefined ? undefined : [...new Set([...needed, ...more, ...also])];
      return (
        await Promise.all(
          (
            await spans
          ).flatMap((s) =>
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
    };
    const folded = (filter: ExecutionFilter, sign: 1 | -1) => {
      const key = `${bucketing} ${w.from} ${w.to} ${sign} ${JSON.stringify(filter)}`;
      let cells = scans?.get(key);
      if (cells === undefined) {
        cells = foldRecords(
          store.executionChunks({ ...filter, from: w.from, to: w.to }),
          (r) => scanBucket(r.createdAt),
          sign,
        );
        scans?.set(key, cells);
      }
      return cells;
    };
    /**
     * An install type is (nearly always) one app's whole: the cells of one type are the sum of its
     * apps' slices, or the cells of every app less the other types' apps, whichever side has fewer
     * runs. Which app has which type is read from each app's newest run, then checked against the
     * cells: every such app of one type only, and their runs all the type's (or all the others')
     * runs in the window. Null when that does not hold (an app of two types): the caller scans.
     */
    const typeByApps = async (
      base: ExecutionFilter,
      basePlan: Extract<Plan, { source: "rollup" }>,
      type: string,
      cells: Cell[],
      kept: number,
      total: number,
    ): Promise<Read | null> => {
      const keep = kept <= total - kept;
      const apps = [...totalsBy(cells, "nsapp")].filter(([, n]) => n !== 0).map(([app]) => app);
      const known = typesOfApps.get(store) ?? new Map<string, string>();
      typesOfApps.set(store, known);
      const learn = async (which: readonly string[]) => {
        for (const e of await store.newestOfApps(which)) if (e.nsapp !== null) known.set(e.nsapp, e.type);
      };
      const unknown = apps.filter((app) => !known.has(app));
      await learn(unknown);
      // What was learned before may be stale (an app's newest run of another type): learned afresh once.
      for (let fresh = unknown.length === apps.length; ; fresh = true) {
        const side = apps.filter((app) => known.has(app) && (known.get(app) === type) === keep);
        const reads = await Promise.all(
          side.map(async (app) => {
            const p = plan({ ...base, nsapp: app }, use) as Extract<Plan, { source: "rollup" }>;
            return { app, cells: await rollupCells(p, parts, ["type"]) };
          }),
        );
        let counted = 0;
        let pure = true;
        for (const r of reads) {
          let ofType = 0;
          let others = 0;
          for (const [value, n] of totalsBy(r.cells, "type")) value === type ? (ofType += n) : (others += n);
          pure &&= keep ? others === 0 : ofType === 0;
          counted += keep ? ofType : others;
        }
        if (pure && counted === (keep ? kept : total - kept)) {
          const summed = appsCell(reads, keep ? 1 : -1, w.from);
          return { source: "rollup", plan: basePlan, cells: keep ? [summed] : [...cells, summed] };
        }
        if (fresh) return null;
        await learn(apps);
      }
    };
    const p = plan(f, use);
    if (p.source === "rollup") return { source: "rollup", plan: p, cells: await rollupCells(p, parts) };
    const split = complementOf(f, use);
    if (split !== null) {
      const basePlan = plan(split.base, use) as Extract<Plan, { source: "rollup" }>;
      // The counts that pick the smaller side are in the data part: the filtered dimension's and the totals.
      const cells = await rollupCells(basePlan, parts.includes("data") ? parts : [...parts, "data"], [
        split.only.dim,
        "type",
      ]);
      const { kept, total } = keptOf(cells, split.only);
      if (kept === total) return { source: "rollup", plan: basePlan, cells };
      if (kept === 0) return { source: "rollup", plan: SCANNED, cells: [] };
      if (split.only.dim === "type" && basePlan.nsapp === null && parts.includes("apps")) {
        const byApps = await typeByApps(split.base, basePlan, split.only.value, cells, kept, total);
        if (byApps !== null) return byApps;
      }
      if (total - kept < kept)
        return { source: "scan", plan: basePlan, cells: [...cells, ...(await folded(split.rest, -1))] };
    }
    return { source: "scan", plan: SCANNED, cells: await folded(f, 1) };
  }

  // Scans fold by day, so one request's summary, breakdowns and daily series share a scan.
  const byDay = (t: number) => intervalStart(t, "day");
  const spansOf = async (w: Window, months = true) => decompose(w, { months, foldedUntil: await store.foldedUntil() });

  /** Failed installs per signature id in the window (the `limit` most frequent first), and their sum. */
  async function signatureCounts(f: ExecutionFilter, w: Window, limit: number) {
    return countsOf(await read(f, w, { kind: "errors" }, ["errors"], spansOf(w), byDay, "day"), limit);
  }
  function countsOf(r: Read, limit: number) {
    const counted =
      r.plan.outcome === null || r.plan.outcome === "failed"
        ? errorTop(r.cells, limit)
        : { top: [], distinct: 0, total: 0, sums: new Map<string, number>() };
    return { source: r.source, ...counted };
  }

  /** The `limit` most frequent failure signatures of cells read, with what is known of each; with `issues`, its issue if linked. */
  async function signaturesOf(r: Read, limit: number, issues: boolean) {
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

  return {
    /**
     * The cells of a window as they are, for answers that need every dimension at once: rollup
     * cells (months inside, as `summary` reads them) when the filter allows (an install type: with
     * its apps' slices summed into one more cell, typeByApps), else the window's records folded
     * into one cell per day.
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
      const { sums, total } = await signatureCounts(f, w, 0);
      return { count: Math.max(0, sums.get(id) ?? 0), totalFailed: total };
    },

    /** Dimension values over-represented among the window's failures (domain/drivers.ts). */
    async drivers(f: ExecutionFilter, w: Window, minRuns: number) {
      const dims = driverDimensions(f.nsapp !== undefined);
      const r = await read(f, w, { kind: "drivers" }, ["data"], spansOf(w), byDay, "day", dims);
      const { total, values } = finishedByValue(r.cells, dims);
      return { source: r.source, ...rankDrivers(total, values, minRuns) };
    },

    /** Failed installs by error signature, with what is known of each signature and its issue, if linked. */
    async errors(f: ExecutionFilter, w: Window, limit: number) {
      return signaturesOf(await read(f, w, { kind: "errors" }, ["errors"], spansOf(w), byDay, "day"), limit, true);
    },

    /**
     * Breakdowns by several dimensions and the error signatures (without issues) of one filter and
     * window, from one read of its cells where rollups can answer (an app page's failures: a read
     * each cost three times as many queries).
     */
    async cuts(
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
          Promise.all(bys.map((by) => this.breakdown(f, w, { ...o, by }))),
          read(f, w, { kind: "errors" }, ["errors"], spansOf(w), byDay, "day").then((r) =>
            signaturesOf(r, signatures, false),
          ),
        ]);
        return { breakdowns: groups.map((g) => ({ groups: g.groups, total_groups: g.total_groups })), errors };
      }
      const r = await read(f, w, use, ["data", "errors"], spansOf(w), byDay, "day", bys);
      return {
        breakdowns: bys.map((by) => breakdown(r.cells, r.plan, { ...o, by })),
        errors: await signaturesOf(r, signatures, false),
      };
    },
  };
}
