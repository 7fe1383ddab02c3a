// Why runs fail: the dimension values over-represented among failures (GET /api/stats/drivers),
// as one sentence about the strongest and a small table, on the app page and the Failures view.
import { api, type DriversResponse } from "./api.ts";
import { h } from "./dom.ts";
import { count, percent } from "./format.ts";
import { apiParams, groupFilters, type DashState, type FilterKey } from "./state.ts";
import type { ViewContext } from "./view.ts";
import { emptyState, panel } from "./widgets.ts";

/** Filters on the outcome leave nothing to compare: the drivers are asked without them. */
const OUTCOME_FILTERS: readonly FilterKey[] = ["outcome", "status", "exit_code", "error_category"];

export interface DriversRead {
  answer: DriversResponse;
  /** Filters of the view left out of the question (outcome filters). */
  dropped: FilterKey[];
}

export async function fetchDrivers(s: DashState, ctx: ViewContext): Promise<DriversRead> {
  const dropped = OUTCOME_FILTERS.filter((k) => s.filters[k] !== undefined);
  const filters = { ...s.filters };
  for (const k of dropped) delete filters[k];
  return { answer: await api.drivers(apiParams({ range: s.range, filters }, { limit: 8 }), ctx.signal), dropped };
}

type Driver = DriversResponse["drivers"][number];

/** A dimension value in words: "PVE 9.0.9", "kernel 6.14.8-2-pve", "4 cores". */
function valueWords(dimension: string, value: string): string {
  switch (dimension) {
    case "pve_version":
      return value.startsWith("incus") ? value.replace(/^incus-?/, "Incus ") : `PVE ${value}`;
    case "kernel_version":
      return `kernel ${value}`;
    case "os":
      return value;
    case "arch":
      return `${value} hosts`;
    case "cpu_vendor":
      return `${value} CPUs`;
    case "gpu_vendor":
      return `${value} GPUs`;
    case "gpu_passthrough":
      return `GPU passthrough ${value}`;
    case "host_gpu":
      return `hosts with ${value} GPUs`;
    case "core_count":
      return `${value} ${value === "1" ? "core" : "cores"}`;
    case "ram_size":
      return `${value} MB RAM`;
    case "type":
      return `type ${value}`;
    case "ct_type":
      return value === "0" ? "privileged containers" : value === "1" ? "unprivileged containers" : `ct_type ${value}`;
    case "method":
      return `method ${value}`;
    case "platform":
      return `platform ${value}`;
    case "repo_source":
      return `repo ${value}`;
    case "repo_slug":
      return `${value}`;
    case "attempt":
      return value === "1" ? "first attempts" : value === "4+" ? "fourth and later attempts" : `attempt ${value}`;
    case "app_version":
      return `version ${value}`;
    default:
      return `${dimension} ${value}`;
  }
}

/** "jellyfin failures: 80% on PVE 9.0.9, which carries 25% of its runs." */
function driverSentence(subject: string | null, d: Driver): string {
  const whose = subject === null ? "" : "its ";
  return `${subject === null ? "Failures" : `${subject} failures`}: ${percent(d.share_of_failed, 0)} on ${valueWords(d.dimension, d.value)}, which carries ${percent(d.share_of_runs, 0)} of ${whose}runs.`;
}

export function driversPanel(read: DriversRead, subject: string | null, s: DashState, ctx: ViewContext): HTMLElement {
  const d = read.answer;
  const note =
    read.dropped.length > 0
      ? h(
          "p",
          { class: "more" },
          `Asked without the filter on ${read.dropped.join(", ")}: drivers compare failed runs with all runs.`,
        )
      : null;
  const method = h(
    "p",
    { class: "more", id: "drivers-method" },
    `Compared ${count(d.compared)} values with at least ${count(d.min_runs)} finished runs each against the other ${count(d.runs)} finished runs (success + failed); listed when Fisher's exact test holds at 5% over all of them. Ranges are ${Math.round(d.confidence * 100)}% intervals, adjusted for that many comparisons. Values that travel together (a host version and its kernel) show up together.`,
  );
  let body: HTMLElement;
  if (d.runs === 0) body = emptyState("No finished runs in this window.");
  else if (d.drivers.length === 0)
    body = emptyState(`No value stands out among ${count(d.failed)} failures of ${count(d.runs)} finished runs.`);
  else {
    const rows = d.drivers.map((x) => {
      const selected = groupFilters(x.dimension, x.value);
      const href = selected
        ? ctx.href({ view: "installs", filters: { ...s.filters, ...selected, outcome: "failed" } })
        : null;
      const words = valueWords(x.dimension, x.value);
      return h(
        "tr",
        { "data-dimension": x.dimension, "data-value": x.value },
        h(
          "td",
          {},
          href ? h("a", { href, "data-nav": true, title: "its failed runs" }, words) : words,
          h("span", { class: "muted" }, ` ${x.dimension}`),
        ),
        h(
          "td",
          { class: "num", "data-failed": x.failed, "data-runs": x.runs },
          `${count(x.failed)} / ${count(x.runs)}`,
        ),
        h(
          "td",
          { class: "num", title: `interval ${percent(x.failure_rate_low)} to ${percent(x.failure_rate_high)}` },
          percent(x.failure_rate),
          h("span", { class: "muted" }, ` (${percent(x.failure_rate_low, 0)}–${percent(x.failure_rate_high, 0)})`),
        ),
        h("td", { class: "num" }, percent(x.elsewhere.failure_rate)),
        h("td", { class: "num" }, `${percent(x.share_of_failed, 0)} / ${percent(x.share_of_runs, 0)}`),
      );
    });
    body = h(
      "div",
      {},
      h("p", { class: "driver-sentence", id: "driver-sentence" }, driverSentence(subject, d.drivers[0]!)),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "data drivers" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "Value"),
              h("th", { scope: "col", class: "num" }, "Failed / runs"),
              h("th", { scope: "col", class: "num" }, "Failure rate"),
              h("th", { scope: "col", class: "num", title: "failure rate of every other run" }, "Elsewhere"),
              h(
                "th",
                { scope: "col", class: "num", title: "share of the failures / share of the runs" },
                "Of failures / of runs",
              ),
            ),
          ),
          h("tbody", {}, ...rows),
        ),
      ),
      d.total_drivers > d.drivers.length
        ? h("p", { class: "more" }, `and ${count(d.total_drivers - d.drivers.length)} more`)
        : null,
    );
  }
  return panel("Why runs fail", h("div", {}, body, note, method), { wide: true, id: "drivers" });
}
