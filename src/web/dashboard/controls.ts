// The controls above every view: navigation, time window, filters and the active-filter chips.
// Each is a link or a form, so all of it works with the keyboard and each choice is a URL.
import { h, replace } from "./dom.ts";
import { FILTER_KEYS, PRESET_DAYS, rangeLabel, stateUrl, withChanges, type DashState, type FilterKey, type Filters, type View } from "./state.ts";
import { OUTCOME_LABEL } from "./widgets.ts";
import { OUTCOMES } from "../../domain/outcome.ts";

const NAV: [View, string][] = [["overview", "Overview"], ["failures", "Failures"], ["installs", "Install log"], ["app", "Apps"]];

/** Redraws navigation and controls for `state`; `go` moves to another state. */
export function renderControls(el: { nav: HTMLElement; controls: HTMLElement }, state: DashState, go: (next: DashState) => void): void {
  const { nav, controls } = el;
  replace(
    nav,
    ...NAV.map(([view, text]) =>
      h("a", { href: stateUrl(withChanges(state, { view, signature: null })), "data-nav": true, "aria-current": state.view === view ? "page" : undefined }, text),
    ),
  );
  replace(controls, rangeControl(state, go), filterForm(state, go), activeFilters(state));
}

function rangeControl(state: DashState, go: (next: DashState) => void): HTMLElement {
  const current = state.range;
  const custom = !("days" in current) || !(PRESET_DAYS as readonly number[]).includes(current.days);
  const presets = PRESET_DAYS.map((days) =>
    h("a", { class: "seg", href: stateUrl(withChanges(state, { range: { days } })), "data-nav": true, "aria-current": "days" in current && current.days === days ? "true" : undefined }, days === 1 ? "24h" : `${days}d`),
  );
  const today = new Date().toISOString().slice(0, 10);
  const from = h("input", { type: "date", id: "range-from", name: "from", max: today, required: true, value: "from" in current ? current.from : "" });
  const to = h("input", { type: "date", id: "range-to", name: "to", max: today, required: true, value: "to" in current ? current.to : today });
  const form = h(
    "form",
    {
      class: "custom-range",
      onsubmit: ((e: Event) => {
        e.preventDefault();
        if (from.value && to.value && from.value <= to.value) go(withChanges(state, { range: { from: from.value, to: to.value } }));
      }) as EventListener,
    },
    h("label", { for: "range-from" }, "From"),
    from,
    h("label", { for: "range-to" }, "to"),
    to,
    h("button", { type: "submit" }, "Apply"),
  );
  return h(
    "div",
    { class: "range", role: "group", "aria-label": "time window" },
    h("div", { class: "segments" }, ...presets),
    h("details", { class: "custom", open: custom }, h("summary", { "aria-current": custom ? "true" : undefined }, custom ? rangeLabel(current) : "Custom"), form),
  );
}

const FILTER_LABELS: Record<FilterKey, string> = {
  q: "Search",
  nsapp: "App",
  outcome: "Outcome",
  status: "Status",
  type: "Type",
  os_type: "OS",
  os_version: "OS version",
  pve_version: "Host version",
  method: "Method",
};
const TYPES = ["lxc", "vm", "turnkey", "pve", "addon", "tool"];

function filterForm(state: DashState, go: (next: DashState) => void): HTMLElement {
  const f = state.filters;
  const fields = FILTER_KEYS.map((key) => {
    const id = `filter-${key}`;
    const input =
      key === "outcome" || key === "type"
        ? h(
            "select",
            { id, name: key },
            h("option", { value: "" }, "any"),
            ...(key === "outcome" ? OUTCOMES.map((o) => [o, OUTCOME_LABEL[o]] as const) : TYPES.map((t) => [t, t] as const)).map(([value, text]) => h("option", { value, selected: f[key] === value }, text)),
          )
        : h("input", { id, name: key, type: key === "q" ? "search" : "text", value: f[key] ?? "", placeholder: key === "q" ? "app or error text" : "", autocomplete: "off", spellcheck: "false", maxlength: 200 });
    return h("div", { class: `field field-${key}` }, h("label", { for: id }, FILTER_LABELS[key]), input);
  });
  const form = h(
    "form",
    {
      class: "filters",
      id: "filters",
      onsubmit: ((e: Event) => {
        e.preventDefault();
        const data = new FormData(form);
        const next: Filters = {};
        for (const key of FILTER_KEYS) {
          const v = String(data.get(key) ?? "").trim();
          if (v) next[key] = v;
        }
        go(withChanges(state, { filters: next }));
      }) as EventListener,
    },
    ...fields,
    h("div", { class: "field buttons" }, h("button", { type: "submit", class: "primary" }, "Apply filters")),
  );
  const count = Object.keys(f).length;
  return h("details", { class: "filter-panel", open: state.view === "installs" || undefined }, h("summary", {}, count ? `Filters (${count})` : "Filters"), form);
}

function activeFilters(state: DashState): HTMLElement | null {
  const keys = FILTER_KEYS.filter((k) => state.filters[k]);
  if (keys.length === 0) return null;
  return h(
    "ul",
    { class: "chips", "aria-label": "active filters" },
    ...keys.map((key) => {
      const rest = { ...state.filters };
      delete rest[key];
      const value = key === "outcome" ? OUTCOME_LABEL[state.filters[key] as keyof typeof OUTCOME_LABEL] ?? state.filters[key]! : state.filters[key]!;
      return h("li", {}, h("a", { class: "chip removable", href: stateUrl(withChanges(state, { filters: rest })), "data-nav": true, "aria-label": `remove filter ${FILTER_LABELS[key]}` }, `${FILTER_LABELS[key]}: `, h("b", {}, value), " ✕"));
    }),
    keys.length > 1 ? h("li", {}, h("a", { class: "chip", href: stateUrl(withChanges(state, { filters: {} })), "data-nav": true }, "Clear all")) : null,
  );
}
