// The public stats page: one request (/public/stats.json, no token), then everything is local:
// period tabs, a search box and sortable columns. App names are client-sent text, so the page
// builds DOM only through h() (text nodes, never HTML).
import type { PublicStats } from "../../read/native/public-stats-routes.ts";
import { h, replace } from "../dashboard/dom.ts";
import { count, instantUtc, percent } from "../dashboard/format.ts";

type Window = PublicStats["windows"][number];
type Row = Window["apps"][number];
type SortKey = "app" | "installs" | "success" | "failed" | "failure_rate";

const $ = <T extends Element>(selector: string): T => document.querySelector<T>(selector)!;

const state: { data: PublicStats | null; days: number; sort: SortKey; ascending: boolean; find: string } = {
  data: null,
  days: Number(/^#(\d+)d$/.exec(location.hash)?.[1] ?? 30),
  sort: "installs",
  ascending: false,
  find: "",
};

function compare(a: Row, b: Row): number {
  const k = state.sort;
  const x = a[k];
  const y = b[k];
  // No rate (nothing finished) sorts below every rate, whichever the direction.
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
  const d = typeof x === "string" ? x.localeCompare(String(y)) : x - Number(y);
  return (state.ascending ? d : -d) || b.installs - a.installs;
}

function rateCell(rate: number | null): HTMLTableCellElement {
  const bar = h("i", { "aria-hidden": "true" });
  bar.style.width = `${Math.round((rate ?? 0) * 100)}px`;
  return h(
    "td",
    { class: "num rate" },
    h("span", {}, bar, h("b", { class: rate !== null && rate > 0 ? "failed" : "" }, percent(rate))),
  );
}

function render(): void {
  const data = state.data;
  if (!data) return;
  const w = data.windows.find((x) => x.days === state.days) ?? data.windows[0]!;
  state.days = w.days;
  replace(
    $("#windows"),
    ...data.windows.map((x) =>
      h(
        "button",
        { type: "button", "aria-pressed": String(x.days === w.days), onclick: () => select(x.days) },
        `${x.days} days`,
      ),
    ),
  );
  for (const b of document.querySelectorAll<HTMLButtonElement>("th button")) {
    if (b.dataset.sort === state.sort) b.setAttribute("aria-sort", state.ascending ? "ascending" : "descending");
    else b.removeAttribute("aria-sort");
  }
  replace(
    $("#about"),
    `Runs of installer scripts reported to this server in the last ${w.days} days, per app (every run counts, a retry too). Apps with fewer than ${count(data.min_installs)} installs in the period are shown together as "other apps". Updated ${instantUtc(data.generated_at)}.`,
  );
  replace(
    $("#totals"),
    `${count(w.total.installs)} installs, ${percent(w.total.failure_rate)} failed, ${count(w.apps.length)} apps listed.`,
  );
  const needle = state.find.trim().toLowerCase();
  const rows = w.apps.filter((r) => needle === "" || r.app.toLowerCase().includes(needle)).sort(compare);
  const body = rows.map((r, i) =>
    h(
      "tr",
      {},
      h("td", { class: "num" }, i + 1),
      h("td", {}, r.app),
      h("td", { class: "num" }, count(r.installs)),
      h("td", { class: "num" }, count(r.success)),
      h("td", { class: "num" }, count(r.failed)),
      rateCell(r.failure_rate),
    ),
  );
  const other =
    w.other.installs > 0 && needle === ""
      ? h(
          "tr",
          { class: "other" },
          h("td", {}),
          h("td", {}, `other apps (${count(w.other.apps)})`),
          h("td", { class: "num" }, count(w.other.installs)),
          h("td", { class: "num" }, count(w.other.success)),
          h("td", { class: "num" }, count(w.other.failed)),
          rateCell(w.other.failure_rate),
        )
      : null;
  replace($("#apps tbody"), ...body, other);
  replace(
    $("#status"),
    rows.length === 0
      ? needle === ""
        ? "No app has reached the floor in this period yet."
        : `No app listed matches "${state.find.trim()}".`
      : "",
  );
  document.body.dataset.state = "ready";
}

function select(days: number): void {
  state.days = days;
  history.replaceState(null, "", `#${days}d`);
  render();
}

for (const b of document.querySelectorAll<HTMLButtonElement>("th button")) {
  b.addEventListener("click", () => {
    const key = b.dataset.sort as SortKey;
    state.ascending = state.sort === key ? !state.ascending : key === "app";
    state.sort = key;
    render();
  });
}
$<HTMLInputElement>("#find").addEventListener("input", (e) => {
  state.find = (e.target as HTMLInputElement).value;
  render();
});

async function load(): Promise<void> {
  try {
    const res = await fetch("/public/stats.json");
    if (!res.ok) throw new Error(`the server answered ${res.status}`);
    state.data = (await res.json()) as PublicStats;
    render();
  } catch (e) {
    replace($("#status"), `The statistics could not be loaded: ${e instanceof Error ? e.message : String(e)}.`);
    document.body.dataset.state = "error";
  }
}
void load();
