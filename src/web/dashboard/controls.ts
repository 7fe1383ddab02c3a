// The controls above every view: navigation, time window, filters and the active-filter chips.
// Each is a link or a form, so all of it works with the keyboard and each choice is a URL.
import { h, replace } from "./dom.ts";
import {
  FILTER_KEYS,
  KINDS,
  PRESET_DAYS,
  REPO_SOURCES,
  kindOf,
  rangeLabel,
  stateUrl,
  withChanges,
  type DashState,
  type FilterKey,
  type Filters,
  type View,
} from "./state.ts";
import { OUTCOME_LABEL } from "./widgets.ts";
import { OUTCOME_ORDER } from "../../domain/outcome.ts";
import { ERROR_CATEGORIES } from "../../domain/error-category.ts";

const NAV: [View, string][] = [
  ["overview", "Overview"],
  ["failures", "Failures"],
  ["installs", "Install log"],
  ["app", "Apps"],
  ["alerts", "Alerts"],
];

/** Redraws navigation and controls for `state`; `go` moves to another state. */
export function renderControls(
  el: { nav: HTMLElement; controls: HTMLElement },
  state: DashState,
  go: (next: DashState) => void,
): void {
  const { nav, controls } = el;
  replace(
    nav,
    ...NAV.map(([view, text]) =>
      h(
        "a",
        {
          href: stateUrl(withChanges(state, { view, signature: null })),
          "data-nav": true,
          "aria-current": state.view === view ? "page" : undefined,
        },
        text,
      ),
    ),
  );
  document.getElementById("admin-link")?.toggleAttribute("aria-current", state.view === "admin");
  // The admin view lists the rejected-reports log, the alerts view rules and their history: windows and filters do not apply to them.
  if (state.view === "admin" || state.view === "alerts") replace(controls);
  else replace(controls, rangeControl(state, go), scopeControl(state), filterForm(state, go), activeFilters(state));
}

/** The scope every view shares: which kind of run, from which repo. Choices are links. */
const KIND_LABELS: Record<(typeof KINDS)[number], string> = {
  install: "Installs",
  tool: "Tools",
  addon: "Addons",
  all: "All kinds",
};
const REPO_LABELS: Record<(typeof REPO_SOURCES)[number] | "", [string, string]> = {
  "": ["All repos", "every repository"],
  ProxmoxVE: ["Main", "ProxmoxVE, the main collection"],
  ProxmoxVED: ["Dev", "ProxmoxVED, the development repository"],
  external: ["Forks", "external: forks and other repositories"],
  none: ["None", "reports that name no repository (older clients)"],
};
/** Scope filters (kind, repo_source) are chosen in their own segments, not in the form. */
const SCOPE_KEYS: readonly FilterKey[] = ["kind", "repo_source"];

function scopeControl(state: DashState): HTMLElement {
  const kind = kindOf(state.filters);
  const repo = state.filters.repo_source ?? "";
  const withFilter = (key: "kind" | "repo_source", value: string) => {
    const filters = { ...state.filters, [key]: value };
    if (!value || (key === "kind" && value === "install")) delete filters[key];
    return stateUrl(withChanges(state, { filters }));
  };
  const kinds = KINDS.map((k) =>
    h(
      "a",
      {
        class: "seg",
        href: withFilter("kind", k),
        "data-nav": true,
        "data-kind": k,
        "aria-current": kind === k ? "true" : undefined,
      },
      KIND_LABELS[k],
    ),
  );
  const known = (["", ...REPO_SOURCES] as const).includes(repo as (typeof REPO_SOURCES)[number]);
  const repos: HTMLElement[] = (["", ...REPO_SOURCES] as const).map((r) =>
    h(
      "a",
      {
        class: "seg",
        href: withFilter("repo_source", r),
        "data-nav": true,
        "data-repo": r || "all",
        title: REPO_LABELS[r][1],
        "aria-current": repo === r ? "true" : undefined,
      },
      REPO_LABELS[r][0],
    ),
  );
  // A repo value typed into the URL that is none of the choices still shows as chosen.
  if (!known) repos.push(h("span", { class: "seg", "aria-current": "true" }, repo));
  return h(
    "div",
    { class: "scope" },
    h("div", { class: "segments", role: "group", "aria-label": "kind" }, ...kinds),
    h("div", { class: "segments", role: "group", "aria-label": "repository" }, ...repos),
  );
}

function rangeControl(state: DashState, go: (next: DashState) => void): HTMLElement {
  const current = state.range;
  const custom = !("days" in current) || !(PRESET_DAYS as readonly number[]).includes(current.days);
  const presets = PRESET_DAYS.map((days) =>
    h(
      "a",
      {
        class: "seg",
        href: stateUrl(withChanges(state, { range: { days } })),
        "data-nav": true,
        "aria-current": "days" in current && current.days === days ? "true" : undefined,
      },
      days === 1 ? "24h" : `${days}d`,
    ),
  );
  const today = new Date().toISOString().slice(0, 10);
  const from = h("input", {
    type: "date",
    id: "range-from",
    name: "from",
    max: today,
    required: true,
    value: "from" in current ? current.from : "",
  });
  const to = h("input", {
    type: "date",
    id: "range-to",
    name: "to",
    max: today,
    required: true,
    value: "to" in current ? current.to : today,
  });
  const form = h(
    "form",
    {
      class: "custom-range",
      onsubmit: ((e: Event) => {
        e.preventDefault();
        if (from.value && to.value && from.value <= to.value)
          go(withChanges(state, { range: { from: from.value, to: to.value } }));
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
    h(
      "details",
      { class: "custom", open: custom },
      h("summary", { "aria-current": custom ? "true" : undefined }, custom ? rangeLabel(current) : "Custom"),
      form,
    ),
  );
}

const FILTER_LABELS: Record<FilterKey, string> = {
  q: "Search",
  kind: "Kind",
  repo_source: "Repo",
  nsapp: "App",
  outcome: "Outcome",
  status: "Status",
  type: "Type",
  os_type: "OS",
  os_version: "OS version",
  pve_version: "Host version",
  method: "Method",
  exit_code: "Exit code",
  error_category: "Error category",
  platform: "Platform",
  arch: "Arch",
  cpu_vendor: "CPU vendor",
  gpu_vendor: "GPU vendor",
  gpu_passthrough: "GPU passthrough",
  repo_slug: "Repo slug",
};
const TYPES = ["lxc", "vm", "turnkey", "pve", "addon", "tool"];

/** Choices of the select fields; the other fields are free text. */
const CHOICES: Partial<Record<FilterKey, readonly (readonly [string, string])[]>> = {
  outcome: OUTCOME_ORDER.map((o) => [o, OUTCOME_LABEL[o]] as const),
  type: TYPES.map((t) => [t, t] as const),
  error_category: ERROR_CATEGORIES.map((c) => [c, c.replace("_", " ")] as const),
  gpu_passthrough: [
    ["yes", "yes"],
    ["no", "no"],
  ],
  platform: [
    ["pve", "pve"],
    ["incus", "incus"],
  ],
};
const PLACEHOLDERS: Partial<Record<FilterKey, string>> = {
  q: "app or error text",
  exit_code: "0-255",
  arch: "amd64",
  cpu_vendor: "intel",
  gpu_vendor: "nvidia",
  repo_slug: "owner/repo",
};

function filterForm(state: DashState, go: (next: DashState) => void): HTMLElement {
  const f = state.filters;
  const keys = FILTER_KEYS.filter((k) => !SCOPE_KEYS.includes(k));
  const fields = keys.map((key) => {
    const id = `filter-${key}`;
    const choices = CHOICES[key];
    const input = choices
      ? h(
          "select",
          { id, name: key },
          h("option", { value: "" }, "any"),
          ...choices.map(([value, text]) => h("option", { value, selected: f[key] === value }, text)),
          // A value from the URL that is not among the choices stays selected rather than lost.
          f[key] && !choices.some(([value]) => value === f[key])
            ? h("option", { value: f[key]!, selected: true }, f[key]!)
            : null,
        )
      : h("input", {
          id,
          name: key,
          type: key === "q" ? "search" : "text",
          value: f[key] ?? "",
          placeholder: PLACEHOLDERS[key] ?? "",
          autocomplete: "off",
          spellcheck: "false",
          maxlength: 200,
          inputmode: key === "exit_code" ? "numeric" : undefined,
          pattern: key === "exit_code" ? "\\d{1,3}" : undefined,
        });
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
        // The scope is kept: the form does not hold it.
        const next: Filters = {};
        for (const key of SCOPE_KEYS) if (f[key]) next[key] = f[key];
        for (const key of keys) {
          const v = String(data.get(key) ?? "").trim();
          if (v) next[key] = v;
        }
        go(withChanges(state, { filters: next }));
      }) as EventListener,
    },
    ...fields,
    h("div", { class: "field buttons" }, h("button", { type: "submit", class: "primary" }, "Apply filters")),
  );
  const count = keys.filter((k) => f[k]).length;
  return h(
    "details",
    { class: "filter-panel", open: state.view === "installs" || undefined },
    h("summary", {}, count ? `Filters (${count})` : "Filters"),
    form,
  );
}

function activeFilters(state: DashState): HTMLElement | null {
  const keys = FILTER_KEYS.filter((k) => state.filters[k] && !SCOPE_KEYS.includes(k));
  if (keys.length === 0) return null;
  return h(
    "ul",
    { class: "chips", "aria-label": "active filters" },
    ...keys.map((key) => {
      const rest = { ...state.filters };
      delete rest[key];
      const value =
        key === "outcome"
          ? (OUTCOME_LABEL[state.filters[key] as keyof typeof OUTCOME_LABEL] ?? state.filters[key]!)
          : state.filters[key]!;
      return h(
        "li",
        {},
        h(
          "a",
          {
            class: "chip removable",
            href: stateUrl(withChanges(state, { filters: rest })),
            "data-nav": true,
            "aria-label": `remove filter ${FILTER_LABELS[key]}`,
          },
          `${FILTER_LABELS[key]}: `,
          h("b", {}, value),
          " ✕",
        ),
      );
    }),
    keys.length > 1
      ? h(
          "li",
          {},
          h(
            "a",
            {
              class: "chip",
              href: stateUrl(withChanges(state, { filters: scopeOf(state.filters) })),
              "data-nav": true,
            },
            "Clear all",
          ),
        )
      : null,
  );
}

/** Only the scope filters of `f` ("Clear all" keeps the scope; its own segments change it). */
function scopeOf(f: Filters): Filters {
  const kept: Filters = {};
  for (const key of SCOPE_KEYS) if (f[key]) kept[key] = f[key];
  return kept;
}
