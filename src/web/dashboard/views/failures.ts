// Failures: apps ranked by failure rate (with a minimum-runs floor), exit codes with what they
// mean, error categories, failing commands, error signatures, trend.
import { api, type BreakdownResponse, type ErrorsResponse } from "../api.ts";
import { h } from "../dom.ts";
import { count, dateTime, percent } from "../format.ts";
import { DEFAULT_MIN_RUNS, apiParams, rangeLabel, type DashState } from "../state.ts";
import type { ViewContext, ViewRender } from "../view.ts";
import { cards, emptyState, panel } from "../widgets.ts";
import {
  failureBars,
  failureTrend,
  fetchBreakdown,
  fetchTimeseries,
  groupHref,
  notSucceeded,
  panelGroup,
  subPanel,
} from "./common.ts";
import { explainExitCode } from "../../../domain/exit-codes.ts";
import { categoryOfExitCode } from "../../../domain/error-category.ts";
import { driversPanel, fetchDrivers } from "../drivers.ts";

/** Exit codes listed; the breakdown asks for a few more, as 0 and "none" take places in it. */
const EXIT_CODES = 20;
const COMMANDS = 15;

export const failures: ViewRender = async (s, ctx) => {
  const [sum, ts, ranked, errors, codes, categories, commands, drivers] = await Promise.all([
    api.summary(apiParams(s), ctx.signal),
    fetchTimeseries(s, ctx),
    fetchBreakdown(s, ctx, "nsapp", { sort: "failure_rate", min_runs: s.minRuns, limit: 25 }),
    api.errors(apiParams(s, { limit: 25 }), ctx.signal),
    fetchBreakdown(s, ctx, "exit_code", { limit: EXIT_CODES + 2 }),
    fetchBreakdown(s, ctx, "error_category", { limit: 20 }),
    fetchBreakdown(s, ctx, "failed_command", { limit: COMMANDS + 1 }),
    fetchDrivers(s, ctx),
  ]);
  const finished = sum.success + sum.failed;
  const unsuccessful = notSucceeded(sum);
  const node = h(
    "div",
    { class: "view" },
    cards([
      {
        metric: "failed",
        title: "Failed",
        value: count(sum.failed),
        sub: rangeLabel(s.range),
        tone: "failed",
        href: ctx.href({ view: "installs", filters: { ...s.filters, outcome: "failed" } }),
      },
      {
        metric: "blocked",
        title: "Blocked",
        value: count(sum.blocked),
        sub: "not the script's: the host refused",
        tone: "blocked",
        href: ctx.href({ view: "installs", filters: { ...s.filters, outcome: "blocked" } }),
      },
      {
        metric: "failure_rate",
        title: "Failure rate",
        value: percent(finished === 0 ? null : sum.failed / finished),
        sub: `of ${count(finished)} finished`,
      },
      {
        metric: "signatures",
        title: "Error signatures",
        value: count(errors.total_signatures),
        sub: `${count(errors.total_failed)} failures with an error text`,
      },
    ]),
    h(
      "div",
      { class: "grid" },
      panel(
        "Failure rate over time",
        failureTrend(ts, ctx, `Failure rate per ${ts.interval}, ${rangeLabel(s.range)}`, s.filters),
        { wide: true },
      ),
      driversPanel(drivers, s.filters.nsapp ?? null, s, ctx),
      panelGroup("Causes", [
        subPanel(
          "Error categories",
          failureBars(categories, s, ctx, unsuccessful, {
            text: (v) => v?.replace("_", " "),
            empty: "No failed, blocked or aborted runs in this window.",
          }),
        ),
        subPanel("Failing commands", commandTable(commands, s, ctx, unsuccessful)),
      ]),
      panel("Exit codes", exitCodeTable(codes, s, ctx, unsuccessful), { wide: true }),
      panel("Apps by failure rate", rankedApps(ranked, s, ctx), { wide: true, action: minRunsControl(s, ctx) }),
      panel("Error signatures", signatureTable(errors, s, ctx), { wide: true }),
    ),
  );
  return { title: "Failures", node };
};

function minRunsControl(s: DashState, ctx: ViewContext): HTMLElement {
  const input = h("input", {
    type: "number",
    min: 0,
    step: 1,
    value: s.minRuns,
    id: "min-runs",
    name: "min_runs",
    inputmode: "numeric",
  });
  return h(
    "form",
    {
      class: "inline-form",
      onsubmit: ((e: Event) => {
        e.preventDefault();
        const n = Number(input.value);
        ctx.navigate({ minRuns: Number.isInteger(n) && n >= 0 ? n : DEFAULT_MIN_RUNS });
      }) as EventListener,
    },
    h("label", { for: "min-runs" }, "Min. finished runs"),
    input,
    h("button", { type: "submit" }, "Apply"),
  );
}

function rankedApps(b: BreakdownResponse, s: DashState, ctx: ViewContext): HTMLElement {
  if (b.groups.length === 0)
    return emptyState(`No app has ${count(s.minRuns)} or more finished installs in this window.`);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "data" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "App"),
          h("th", { scope: "col", class: "num" }, "Finished"),
          h("th", { scope: "col", class: "num" }, "Failed"),
          h("th", { scope: "col" }, "Failure rate"),
        ),
      ),
      h(
        "tbody",
        {},
        ...b.groups.map((g) => {
          const rate = g.failure_rate ?? 0;
          const app = g.value ?? "";
          return h(
            "tr",
            {},
            h(
              "td",
              {},
              g.value === null
                ? "(none)"
                : h(
                    "a",
                    { href: ctx.href({ view: "app", filters: { ...s.filters, nsapp: app } }), "data-nav": true },
                    app,
                  ),
            ),
            h("td", { class: "num" }, count(g.success + g.failed)),
            h(
              "td",
              { class: "num" },
              g.value === null
                ? count(g.failed)
                : h(
                    "a",
                    {
                      href: ctx.href({ view: "installs", filters: { ...s.filters, nsapp: app, outcome: "failed" } }),
                      "data-nav": true,
                      "data-failed": g.failed,
                    },
                    count(g.failed),
                  ),
            ),
            h(
              "td",
              {},
              h(
                "span",
                { class: "rate" },
                h("meter", { min: 0, max: 1, value: rate, "aria-hidden": "true" }),
                percent(g.failure_rate),
              ),
            ),
          );
        }),
      ),
    ),
  );
}

/** Runs that did not succeed by exit code, each with what the code means and its category. */
function exitCodeTable(b: BreakdownResponse, s: DashState, ctx: ViewContext, of: number): HTMLElement {
  const groups = b.groups
    .filter((g) => g.value !== null && g.value !== "0" && notSucceeded(g) > 0)
    .slice(0, EXIT_CODES);
  // Runs that failed without a code: older clients' texts that state none.
  const none = b.groups.find((g) => g.value === null);
  const noCode = none ? notSucceeded(none) : 0;
  const note =
    noCode > 0
      ? h(
          "p",
          { class: "more", id: "no-exit-code" },
          `${count(noCode)} more did not succeed without an exit code (older clients whose error text states none).`,
        )
      : null;
  if (groups.length === 0)
    return h("div", {}, emptyState("No run ended with an exit code other than 0 in this window."), note);
  const col = (text: string, cls?: string) => h("th", { scope: "col", class: cls }, text);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "data exit-codes" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          col("Exit code", "num"),
          col("Meaning"),
          col("Category"),
          col("Failed", "num"),
          col("Blocked", "num"),
          col("Aborted", "num"),
          col("Share", "num"),
        ),
      ),
      h(
        "tbody",
        {},
        ...groups.map((g) => {
          const code = Number(g.value);
          const category = categoryOfExitCode(code);
          const href = groupHref("exit_code", g.value, s, ctx);
          return h(
            "tr",
            { "data-code": g.value },
            h(
              "td",
              { class: "num" },
              href
                ? h(
                    "a",
                    { href, "data-nav": true, class: "mono", "aria-label": `runs with exit code ${code}` },
                    g.value,
                  )
                : g.value,
            ),
            h("td", { class: "meaning" }, explainExitCode(code)),
            h(
              "td",
              {},
              category === "unknown"
                ? h("span", { class: "muted" }, "–")
                : h(
                    "a",
                    { class: "chip", href: groupHref("error_category", category, s, ctx)!, "data-nav": true },
                    category.replace("_", " "),
                  ),
            ),
            h("td", { class: "num", "data-count": g.failed }, count(g.failed)),
            h("td", { class: "num" }, count(g.blocked)),
            h("td", { class: "num" }, count(g.aborted)),
            h("td", { class: "num" }, percent(of === 0 ? null : notSucceeded(g) / of)),
          );
        }),
      ),
    ),
    note,
  );
}

/** The commands failures stopped at (clients since payload v2 send them), most frequent first. */
function commandTable(b: BreakdownResponse, s: DashState, ctx: ViewContext, of: number): HTMLElement {
  const groups = b.groups.filter((g) => g.value !== null && notSucceeded(g) > 0).slice(0, COMMANDS);
  if (groups.length === 0)
    return emptyState("No failing command reported in this window (clients send it since payload v2).");
  return h(
    "ol",
    { class: "commands" },
    ...groups.map((g) => {
      const n = notSucceeded(g);
      // No filter selects a command; its failures' error texts name it (the client's header).
      const href =
        g.value!.length <= 200
          ? ctx.href({
              view: "installs",
              filters: { ...s.filters, q: g.value!, outcome: s.filters.outcome ?? "failed" },
            })
          : null;
      const cmd = h("code", { class: "mono" }, g.value!);
      return h(
        "li",
        {},
        href ? h("a", { href, "data-nav": true, title: "failed runs whose error text names this command" }, cmd) : cmd,
        h("span", { class: "num", "data-count": n }, count(n)),
        h("span", { class: "muted num" }, percent(of === 0 ? null : n / of)),
      );
    }),
  );
}

/** The signature's issue in the tracker, or the way to open (or find) it: an admin action. */
export function issueCell(sig: ErrorsResponse["signatures"][number], ctx: ViewContext): HTMLElement {
  if (sig.issue)
    return h(
      "a",
      {
        href: sig.issue.url,
        class: "issue-link",
        rel: "noopener noreferrer",
        target: "_blank",
        title: `${sig.issue.tracker} ${sig.issue.repo}`,
      },
      `#${sig.issue.number}`,
    );
  return h(
    "a",
    {
      href: ctx.href({ view: "issue", signature: sig.id }),
      "data-nav": true,
      class: "open-issue",
      title: "preview the issue for this signature (admin)",
    },
    "Open issue…",
  );
}

function signatureTable(e: ErrorsResponse, s: DashState, ctx: ViewContext): HTMLElement {
  if (e.signatures.length === 0) return emptyState("No failures with an error text in this window.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "data signatures" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "Error signature"),
          h("th", { scope: "col", class: "num" }, "Count"),
          h("th", { scope: "col", class: "num" }, "Share"),
          h("th", { scope: "col" }, "Apps"),
          h("th", { scope: "col" }, "Last seen"),
          h("th", { scope: "col" }, "Issue"),
        ),
      ),
      h(
        "tbody",
        {},
        ...e.signatures.map((sig) => {
          const apps = sig.apps.slice(0, 4);
          return h(
            "tr",
            {},
            h(
              "td",
              { class: "sig" },
              h(
                "a",
                {
                  href: ctx.href({ view: "installs", filters: s.filters, signature: sig.id }),
                  "data-nav": true,
                  class: "mono",
                },
                sig.signature ?? sig.id,
              ),
              sig.example && sig.example !== sig.signature
                ? h("details", {}, h("summary", {}, "Example"), h("pre", { class: "error-text" }, sig.example))
                : null,
            ),
            h("td", { class: "num", "data-count": sig.count }, count(sig.count)),
            h("td", { class: "num" }, percent(sig.share)),
            h(
              "td",
              { class: "apps" },
              ...apps.map((a) =>
                h(
                  "a",
                  {
                    class: "chip",
                    href: ctx.href({ view: "app", filters: { ...s.filters, nsapp: a } }),
                    "data-nav": true,
                  },
                  a,
                ),
              ),
              sig.apps.length > apps.length
                ? h("span", { class: "muted" }, ` +${sig.apps.length - apps.length}`)
                : null,
            ),
            h("td", { class: "nowrap" }, sig.last_seen ? dateTime(sig.last_seen) : "–"),
            h("td", { class: "nowrap" }, issueCell(sig, ctx)),
          );
        }),
      ),
    ),
  );
}
