// Pieces two or more views share: the outcome chart, failure-rate trend, breakdown bars.
import { api, type BreakdownResponse, type TimeseriesResponse } from "../api.ts";
import { lines, stackedBars } from "../charts.ts";
import { h } from "../dom.ts";
import { count, isoDate, percent } from "../format.ts";
import { apiParams, groupFilters, intervalFor, type DashState, type Filters } from "../state.ts";
import type { ViewContext } from "../view.ts";
import { OUTCOME_LABEL, barList, emptyState, outcomeColorVar, panel, type BarRow } from "../widgets.ts";
import { OUTCOME_ORDER } from "../../../domain/outcome.ts";
import { DAY } from "../../../domain/time.ts";

export function fetchTimeseries(s: DashState, ctx: ViewContext): Promise<TimeseriesResponse> {
  return api.timeseries(apiParams(s, { interval: intervalFor(s.range) }), ctx.signal);
}

export function fetchBreakdown(
  s: DashState,
  ctx: ViewContext,
  by: string,
  extra: Record<string, string | number> = {},
): Promise<BreakdownResponse> {
  return api.breakdown(apiParams(s, { by, limit: 10, ...extra }), ctx.signal);
}

/** The days a point covers, as a custom range (clicking a bar lists its installs). */
function pointRange(ts: TimeseriesResponse, index: number): { from: string; to: string } {
  const start = Date.parse(ts.points[index]!.t);
  const days = ts.interval === "week" ? 7 : 1;
  return { from: isoDate(start), to: isoDate(start + (days - 1) * DAY) };
}

/** Installs per point, stacked by outcome; a click lists that period's installs. */
export function outcomeChart(ts: TimeseriesResponse, ctx: ViewContext, title: string, filters: Filters): HTMLElement {
  if (ts.points.every((p) => p.total === 0)) return emptyState("No installs in this window.");
  return stackedBars({
    times: ts.points.map((p) => Date.parse(p.t)),
    series: OUTCOME_ORDER.map((o) => ({
      label: OUTCOME_LABEL[o],
      colorVar: outcomeColorVar(o),
      values: ts.points.map((p) => p[o]),
    })),
    title,
    format: (v) => count(Math.round(v)),
    unit: "count",
    onPick: (i) => ctx.navigate({ view: "installs", range: pointRange(ts, i), filters }),
    onDispose: ctx.onDispose,
  });
}

/** failed / (success + failed) per point; gaps where nothing finished. */
export function failureTrend(ts: TimeseriesResponse, ctx: ViewContext, title: string, filters: Filters): HTMLElement {
  const rates = ts.points.map((p) => (p.success + p.failed === 0 ? null : p.failed / (p.success + p.failed)));
  if (rates.every((r) => r === null)) return emptyState("No finished installs in this window.");
  return lines(
    {
      times: ts.points.map((p) => Date.parse(p.t)),
      series: [{ label: "Failure rate", colorVar: "--failed", values: rates }],
      title,
      format: (v) => percent(v),
      unit: "percent",
      onPick: (i) =>
        ctx.navigate({ view: "installs", range: pointRange(ts, i), filters: { ...filters, outcome: "failed" } }),
      onDispose: ctx.onDispose,
    },
    [0, Math.min(1, Math.max(0.05, ...rates.map((r) => r ?? 0)) * 1.15)],
  );
}

type Group = BreakdownResponse["groups"][number];

/** Runs of a group that did not succeed and are over: failed, blocked, aborted, unknown. */
export const notSucceeded = (g: Pick<Group, "failed" | "blocked" | "aborted" | "unknown">): number =>
  g.failed + g.blocked + g.aborted + g.unknown;

/** Where a group of a breakdown leads: its installs, or with toApp its app's page; null when it cannot be selected. */
export function groupHref(
  by: string,
  value: string | null,
  s: DashState,
  ctx: ViewContext,
  toApp = false,
  extra: Filters = {},
): string | null {
  const selected = groupFilters(by, value);
  if (selected === null) return null;
  if (toApp && value !== null) return ctx.href({ view: "app", filters: { ...s.filters, nsapp: value } });
  return ctx.href({ view: "installs", filters: { ...s.filters, ...selected, ...extra } });
}

/** Breakdown groups as bars; a row lists its installs (or opens the app's page). */
export function breakdownBars(
  b: BreakdownResponse,
  s: DashState,
  ctx: ViewContext,
  toApp = false,
  text?: (value: string | null) => string | undefined,
): HTMLElement {
  const rows: BarRow[] = b.groups.map((g) => ({
    value: g.value,
    text: text?.(g.value),
    total: g.total,
    failed: g.failed,
    successRate: g.success_rate,
    href: groupHref(b.by, g.value, s, ctx, toApp),
  }));
  const more = b.total_groups - b.groups.length;
  return h("div", {}, barList(rows), more > 0 ? h("p", { class: "more" }, `and ${count(more)} more`) : null);
}

/**
 * A breakdown of runs that did not succeed (error categories, exit codes): each group's count of
 * failed, blocked, aborted and unknown runs and its share of `of` (all such runs in the window); groups
 * without any, and those `skip` names, are left out. A row lists those runs.
 */
export function failureBars(
  b: BreakdownResponse,
  s: DashState,
  ctx: ViewContext,
  of: number,
  o: { skip?: (value: string | null) => boolean; text?: (value: string | null) => string | undefined; empty: string },
): HTMLElement {
  const groups = b.groups.filter((g) => notSucceeded(g) > 0 && !o.skip?.(g.value));
  const rows: BarRow[] = groups.map((g) => {
    const n = notSucceeded(g);
    const outcome =
      g.failed === n
        ? { outcome: "failed" }
        : g.blocked === n
          ? { outcome: "blocked" }
          : g.aborted === n
            ? { outcome: "aborted" }
            : {};
    return {
      value: g.value,
      text: o.text?.(g.value),
      total: n,
      failed: g.failed,
      successRate: null,
      href: groupHref(b.by, g.value, s, ctx, false, s.filters.outcome ? {} : outcome),
      rate: { text: percent(of === 0 ? null : n / of), title: "share of the runs that did not succeed" },
    };
  });
  return barList(rows, o.empty);
}

/** A small panel inside a wide one: a heading and its content. */
export function subPanel(title: string, body: Node): HTMLElement {
  return h("section", { class: "sub-panel", "aria-label": title }, h("h3", {}, title), body);
}

/** Several small breakdowns side by side in one wide panel. */
export function panelGroup(title: string, parts: HTMLElement[]): HTMLElement {
  return panel(title, h("div", { class: "sub-grid" }, ...parts), { wide: true });
}
