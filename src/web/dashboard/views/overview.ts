// Overview: headline numbers, installs over time by outcome, top apps and distributions.
import { api } from "../api.ts";
import { h } from "../dom.ts";
import { count, duration, percent } from "../format.ts";
import { apiParams, rangeLabel } from "../state.ts";
import type { ViewRender } from "../view.ts";
import { cards, panel } from "../widgets.ts";
import { breakdownBars, fetchBreakdown, fetchTimeseries, outcomeChart } from "./common.ts";

export const overview: ViewRender = async (s, ctx) => {
  const [sum, ts, apps, os, pve, type, method] = await Promise.all([
    api.summary(apiParams(s), ctx.signal),
    fetchTimeseries(s, ctx),
    fetchBreakdown(s, ctx, "nsapp"),
    fetchBreakdown(s, ctx, "os", { limit: 8 }),
    fetchBreakdown(s, ctx, "pve_version", { limit: 8 }),
    fetchBreakdown(s, ctx, "type", { limit: 8 }),
    fetchBreakdown(s, ctx, "method", { limit: 8 }),
  ]);
  const list = (outcome?: "failed" | "aborted" | "in_progress") => ctx.href({ view: "installs", filters: { ...s.filters, ...(outcome ? { outcome } : {}) } });
  const node = h(
    "div",
    { class: "view" },
    cards([
      { metric: "total", title: "Installs", value: count(sum.total), sub: rangeLabel(s.range), href: list() },
      { metric: "success_rate", title: "Success rate", value: percent(sum.success_rate), sub: `${count(sum.success)} succeeded`, tone: "success" },
      { metric: "failed", title: "Failed", value: count(sum.failed), tone: "failed", href: list("failed") },
      { metric: "aborted", title: "Aborted", value: count(sum.aborted), tone: "aborted", href: list("aborted") },
      { metric: "in_progress", title: "In progress", value: count(sum.in_progress), tone: "in_progress", href: list("in_progress") },
      { metric: "median_duration", title: "Median duration", value: duration(sum.duration.median_s), sub: `p90 ${duration(sum.duration.p90_s)}` },
    ]),
    h(
      "div",
      { class: "grid" },
      panel("Installs over time", outcomeChart(ts, ctx, `Installs per ${ts.interval} by outcome, ${rangeLabel(s.range)}`, s.filters), { wide: true }),
      panel("Top apps", breakdownBars(apps, s, ctx, true), { action: h("a", { href: ctx.href({ view: "failures" }), "data-nav": true }, "Failures →") }),
      panel("Operating systems", breakdownBars(os, s, ctx)),
      panel("Host versions", breakdownBars(pve, s, ctx)),
      panel("Types", breakdownBars(type, s, ctx)),
      panel("Methods", breakdownBars(method, s, ctx)),
    ),
  );
  return { title: "Overview", node };
};
