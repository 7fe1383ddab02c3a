// Overview: headline numbers, installs over time by outcome, top apps and distributions,
// retries, repositories, and the hosts' platform and hardware.
import { api, type BreakdownResponse } from "../api.ts";
import { h } from "../dom.ts";
import { count, duration, percent } from "../format.ts";
import { retryNumbers } from "../retries.ts";
import { apiParams, kindOf, rangeLabel, unitLabel, type DashState } from "../state.ts";
import type { ViewContext, ViewRender } from "../view.ts";
import { cards, panel } from "../widgets.ts";
import { breakdownBars, fetchBreakdown, fetchTimeseries, outcomeChart, panelGroup, subPanel } from "./common.ts";

/** Host and platform dimensions, shown side by side. */
const HARDWARE: [by: string, title: string][] = [
  ["platform", "Platforms"],
  ["arch", "Architectures"],
  ["cpu_vendor", "CPU vendors"],
  ["gpu_vendor", "GPU vendors"],
  ["gpu_passthrough", "GPU passthrough"],
  ["host_gpu", "Host GPU (v1 clients)"],
];

/** Repo sources as the repo filter names them. */
const REPO_TEXT: Record<string, string> = {
  ProxmoxVE: "main (ProxmoxVE)",
  ProxmoxVED: "dev (ProxmoxVED)",
  external: "forks (external)",
};

export const overview: ViewRender = async (s, ctx) => {
  // Tools and addons are one-shots: they have no retries to show.
  const retried = kindOf(s.filters) === "install" || kindOf(s.filters) === "all";
  const [sum, ts, apps, os, pve, type, method, repo, slug, attempts, ...hardware] = await Promise.all([
    api.summary(apiParams(s), ctx.signal),
    fetchTimeseries(s, ctx),
    fetchBreakdown(s, ctx, "nsapp"),
    fetchBreakdown(s, ctx, "os", { limit: 8 }),
    fetchBreakdown(s, ctx, "pve_version", { limit: 8 }),
    fetchBreakdown(s, ctx, "type", { limit: 8 }),
    fetchBreakdown(s, ctx, "method", { limit: 8 }),
    fetchBreakdown(s, ctx, "repo_source", { limit: 8 }),
    fetchBreakdown(s, ctx, "repo_slug", { limit: 8 }),
    retried ? fetchBreakdown(s, ctx, "attempt", { limit: 10 }) : null,
    ...HARDWARE.map(([by]) => fetchBreakdown(s, ctx, by, { limit: 6 })),
  ]);
  const unit = unitLabel(s.filters);
  const list = (outcome?: "failed" | "blocked" | "aborted" | "in_progress") =>
    ctx.href({ view: "installs", filters: { ...s.filters, ...(outcome ? { outcome } : {}) } });
  const node = h(
    "div",
    { class: "view" },
    cards([
      { metric: "total", title: unit, value: count(sum.total), sub: rangeLabel(s.range), href: list() },
      {
        metric: "success_rate",
        title: "Success rate",
        value: percent(sum.success_rate),
        sub: `${count(sum.success)} succeeded`,
        tone: "success",
      },
      { metric: "failed", title: "Failed", value: count(sum.failed), tone: "failed", href: list("failed") },
      {
        metric: "blocked",
        title: "Blocked",
        value: count(sum.blocked),
        sub: "the host never let the script run",
        tone: "blocked",
        href: list("blocked"),
      },
      { metric: "aborted", title: "Aborted", value: count(sum.aborted), tone: "aborted", href: list("aborted") },
      {
        metric: "in_progress",
        title: "In progress",
        value: count(sum.in_progress),
        tone: "in_progress",
        href: list("in_progress"),
      },
      {
        metric: "median_duration",
        title: "Median duration",
        value: duration(sum.duration.median_s),
        sub: `p90 ${duration(sum.duration.p90_s)}`,
      },
    ]),
    h(
      "div",
      { class: "grid" },
      panel(
        `${unit} over time`,
        outcomeChart(ts, ctx, `${unit} per ${ts.interval} by outcome, ${rangeLabel(s.range)}`, s.filters),
        { wide: true, id: "installs-over-time" },
      ),
      panel("Top apps", breakdownBars(apps, s, ctx, true), {
        action: h("a", { href: ctx.href({ view: "failures" }), "data-nav": true }, "Failures →"),
      }),
      attempts ? panel("Retries", retriesPanel(attempts, s, ctx)) : null,
      panel("Operating systems", breakdownBars(os, s, ctx)),
      panel("Host versions", breakdownBars(pve, s, ctx)),
      panel("Types", breakdownBars(type, s, ctx)),
      panel("Methods", breakdownBars(method, s, ctx)),
      panel(
        "Repositories",
        breakdownBars(repo, s, ctx, false, (v) => (v === null ? "none (old clients)" : REPO_TEXT[v])),
      ),
      panel("Repository slugs", breakdownBars(slug, s, ctx)),
      panelGroup(
        "Platform and hardware",
        HARDWARE.map(([, title], i) => subPanel(title, breakdownBars(hardware[i]!, s, ctx))),
      ),
    ),
  );
  return { title: "Overview", node };
};

/** Executions per install, retry rate, how many failed installs a retry rescued; runs by attempt. */
function retriesPanel(b: BreakdownResponse, s: DashState, ctx: ViewContext): HTMLElement {
  const r = retryNumbers(b.groups);
  return h(
    "div",
    { class: "retries" },
    cards(
      [
        {
          metric: "executions_per_install",
          title: "Executions per install",
          value: r.perInstall === null ? "–" : r.perInstall.toFixed(2),
          sub: `${count(r.executions)} executions`,
        },
        {
          metric: "retry_rate",
          title: "Retry rate",
          value: percent(r.retryRate),
          sub: `of ${count(r.installs)} installs`,
        },
        { metric: "retries", title: "Retries", value: count(r.retries), sub: "executions after the first" },
        {
          metric: "rescued",
          title: "Rescued by a retry",
          value: count(r.rescued),
          sub: r.rescueRate === null ? "no install retried" : `${percent(r.rescueRate, 0)} of retried installs`,
          tone: "success",
        },
      ],
      true,
    ),
    subPanel(
      "Runs by attempt",
      breakdownBars(b, s, ctx, false, (v) => (v === null ? undefined : `attempt ${v}`)),
    ),
  );
}
