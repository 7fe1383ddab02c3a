// One app: volume, success rate, durations, OS and host versions, errors over time.
import { api } from "../api.ts";
import { h } from "../dom.ts";
import { count, dateTime, duration, percent } from "../format.ts";
import { apiParams, rangeLabel, type DashState } from "../state.ts";
import type { ViewContext, ViewRender } from "../view.ts";
import { cards, emptyState, panel } from "../widgets.ts";
import {
  breakdownBars,
  failureBars,
  failureTrend,
  fetchBreakdown,
  fetchTimeseries,
  notSucceeded,
  outcomeChart,
} from "./common.ts";
import { explainExitCode } from "../../../domain/exit-codes.ts";
import { driversPanel, fetchDrivers } from "../drivers.ts";
import { issueCell } from "./failures.ts";

export const appView: ViewRender = async (s, ctx) => {
  const nsapp = s.filters.nsapp;
  if (!nsapp) return { title: "Apps", node: await appPicker(s, ctx) };
  const [sum, ts, os, pve, method, errors, codes, drivers] = await Promise.all([
    api.summary(apiParams(s), ctx.signal),
    fetchTimeseries(s, ctx),
    fetchBreakdown(s, ctx, "os", { limit: 8 }),
    fetchBreakdown(s, ctx, "pve_version", { limit: 8 }),
    fetchBreakdown(s, ctx, "method", { limit: 8 }),
    api.errors(apiParams(s, { limit: 10 }), ctx.signal),
    fetchBreakdown(s, ctx, "exit_code", { limit: 10 }),
    fetchDrivers(s, ctx),
  ]);
  const installsOf = (outcome?: "failed") =>
    ctx.href({ view: "installs", filters: { ...s.filters, ...(outcome ? { outcome } : {}) } });
  const node = h(
    "div",
    { class: "view" },
    h(
      "div",
      { class: "app-head" },
      h("h2", { id: "app-name" }, nsapp),
      h("a", { href: installsOf(), "data-nav": true }, "All installs of this app →"),
    ),
    cards([
      { metric: "total", title: "Installs", value: count(sum.total), sub: rangeLabel(s.range), href: installsOf() },
      { metric: "success_rate", title: "Success rate", value: percent(sum.success_rate), tone: "success" },
      { metric: "failed", title: "Failed", value: count(sum.failed), tone: "failed", href: installsOf("failed") },
      { metric: "median_duration", title: "Median duration", value: duration(sum.duration.median_s) },
      {
        metric: "p90_duration",
        title: "p90 duration",
        value: duration(sum.duration.p90_s),
        sub: `${count(sum.duration.n)} timed`,
      },
    ]),
    h(
      "div",
      { class: "grid" },
      driversPanel(drivers, nsapp, s, ctx),
      panel(
        "Installs over time",
        outcomeChart(ts, ctx, `Installs of ${nsapp} per ${ts.interval} by outcome`, s.filters),
        { wide: true },
      ),
      panel("Failure rate over time", failureTrend(ts, ctx, `Failure rate of ${nsapp} per ${ts.interval}`, s.filters), {
        wide: true,
      }),
      panel("OS versions", breakdownBars(os, s, ctx)),
      panel("Host versions", breakdownBars(pve, s, ctx)),
      panel("Methods", breakdownBars(method, s, ctx)),
      panel(
        "Exit codes",
        failureBars(codes, s, ctx, notSucceeded(sum), {
          skip: (v) => v === null || v === "0",
          text: (v) => `${v}: ${explainExitCode(Number(v))}`,
          empty: "No run of this app ended with an exit code other than 0 in this window.",
        }),
      ),
      panel(
        "Top errors",
        errors.signatures.length === 0
          ? emptyState("No failures with an error text in this window.")
          : h(
              "ol",
              { class: "errors" },
              ...errors.signatures.map((e) =>
                h(
                  "li",
                  {},
                  h(
                    "a",
                    {
                      href: ctx.href({ view: "installs", filters: s.filters, signature: e.id }),
                      "data-nav": true,
                      class: "mono",
                    },
                    e.signature ?? e.id,
                  ),
                  h(
                    "span",
                    { class: "muted" },
                    ` ${count(e.count)} × · last ${e.last_seen ? dateTime(e.last_seen) : "–"} · `,
                  ),
                  issueCell(e, ctx),
                ),
              ),
            ),
      ),
    ),
  );
  return { title: nsapp, node };
};

/** Without an app: the window's apps by volume, each leading to its page. */
async function appPicker(s: DashState, ctx: ViewContext): Promise<HTMLElement> {
  const apps = await fetchBreakdown(s, ctx, "nsapp", { limit: 100 });
  return h("div", { class: "view" }, panel("Apps", breakdownBars(apps, s, ctx, true), { wide: true }));
}
