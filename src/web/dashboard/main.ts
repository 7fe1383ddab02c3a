// The dashboard shell: navigation, window and filter controls, theme, live refresh, and the
// router that renders the view the URL names. Views fetch everything, then swap in at once.
import { ApiError, saveToken } from "./api.ts";
import { h, replace } from "./dom.ts";
import {
  FILTER_KEYS, PRESET_DAYS, parseState, rangeLabel, stateUrl, withChanges,
  type DashState, type FilterKey, type Filters, type View,
} from "./state.ts";
import type { ViewContext, ViewRender } from "./view.ts";
import { appView } from "./views/app.ts";
import { failures } from "./views/failures.ts";
import { installs } from "./views/installs.ts";
import { overview } from "./views/overview.ts";
import { OUTCOMES, OUTCOME_LABEL, loadingState } from "./widgets.ts";

const RENDERERS: Record<View, ViewRender> = { overview, failures, installs, app: appView };
const NAV: [View, string][] = [["overview", "Overview"], ["failures", "Failures"], ["installs", "Install log"], ["app", "Apps"]];
const REFRESH_MS = 30_000;
const THEMES = ["auto", "light", "dark"] as const;
type Theme = (typeof THEMES)[number];

const controls = document.getElementById("controls")!;
const nav = document.getElementById("nav")!;
const main = document.getElementById("main")!;
const liveButton = document.getElementById("live") as HTMLButtonElement;
const themeButton = document.getElementById("theme") as HTMLButtonElement;
const updated = document.getElementById("updated")!;

let state = parseState(new URL(location.href));
let generation = 0;
let inFlight: AbortController | null = null;
let disposers: (() => void)[] = [];
let paused = localStorage.getItem("installstats.live") === "paused";

function context(signal: AbortSignal, pending: (() => void)[]): ViewContext {
  return {
    signal,
    href: (change) => stateUrl(withChanges(state, change)),
    navigate: (change, opts) => go(withChanges(state, change), opts),
    onDispose: (fn) => pending.push(fn),
  };
}

function go(next: DashState, opts: { replace?: boolean } = {}): void {
  const url = stateUrl(next);
  if (opts.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  state = parseState(new URL(location.href));
  void render("navigate");
}

/** navigate: the view or its question changed (show loading); refresh: same question, new data. */
async function render(kind: "navigate" | "refresh"): Promise<void> {
  const gen = ++generation;
  inFlight?.abort();
  const controller = (inFlight = new AbortController());
  document.body.dataset.state = "loading";
  if (kind === "navigate") {
    renderChrome();
    disposeView();
    replace(main, loadingState());
  }
  const pending: (() => void)[] = [];
  try {
    const { title, node } = await RENDERERS[state.view](state, context(controller.signal, pending));
    if (gen !== generation) return pending.forEach((fn) => fn());
    disposeView();
    disposers = pending;
    replace(main, node);
    document.title = `${title} · installstats`;
    updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    if (gen !== generation || controller.signal.aborted) return;
    disposeView();
    replace(main, failure(e));
  }
  document.body.dataset.state = "ready";
  // For scripts/bench-dashboard.ts: when this view became usable, since navigation start.
  performance.mark("installstats:ready", { detail: state.view });
}

function disposeView(): void {
  for (const fn of disposers) fn();
  disposers = [];
}

function failure(e: unknown): HTMLElement {
  if (e instanceof ApiError && e.status === 401) return tokenForm();
  const message = e instanceof Error ? e.message : String(e);
  return h("div", { class: "view" }, h("div", { class: "error-box", role: "alert" }, h("strong", {}, "Could not load this view. "), message, " ", h("button", { type: "button", onclick: () => void render("navigate") }, "Retry")));
}

/** A server with a read token: ask for it once, keep it in this browser. */
function tokenForm(): HTMLElement {
  const input = h("input", { type: "password", id: "token", autocomplete: "off", required: true });
  return h(
    "form",
    {
      class: "view token-form",
      onsubmit: ((e: Event) => {
        e.preventDefault();
        saveToken(input.value.trim() || null);
        void render("navigate");
      }) as EventListener,
    },
    h("p", {}, "This server needs a read token to show its data."),
    h("label", { for: "token" }, "Read token"),
    input,
    h("button", { type: "submit" }, "Save"),
  );
}

// ---- chrome: navigation, window, filters --------------------------------------------------------

function renderChrome(): void {
  replace(
    nav,
    ...NAV.map(([view, text]) =>
      h("a", { href: stateUrl(withChanges(state, { view, signature: null })), "data-nav": true, "aria-current": state.view === view ? "page" : undefined }, text),
    ),
  );
  replace(controls, rangeControl(), filterForm(), activeFilters());
}

function rangeControl(): HTMLElement {
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

function filterForm(): HTMLElement {
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

function activeFilters(): HTMLElement | null {
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

// ---- theme and live refresh ---------------------------------------------------------------------

const systemDark = matchMedia("(prefers-color-scheme: dark)");

function applyTheme(theme: Theme): void {
  document.documentElement.dataset.theme = theme === "auto" ? (systemDark.matches ? "dark" : "light") : theme;
  themeButton.textContent = `Theme: ${theme}`;
}

let theme: Theme = (THEMES as readonly string[]).includes(localStorage.getItem("installstats.theme") ?? "") ? (localStorage.getItem("installstats.theme") as Theme) : "auto";
applyTheme(theme);
themeButton.addEventListener("click", () => {
  theme = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length]!;
  localStorage.setItem("installstats.theme", theme);
  applyTheme(theme);
  void render("refresh"); // charts take their colours when drawn
});
// A system switch between light and dark, in "auto", recolours the page and redraws the charts.
systemDark.addEventListener("change", () => {
  if (theme !== "auto") return;
  applyTheme(theme);
  void render("refresh");
});

function showLive(): void {
  liveButton.setAttribute("aria-pressed", String(!paused));
  liveButton.textContent = paused ? "Live: paused" : "Live";
}
showLive();
liveButton.addEventListener("click", () => {
  paused = !paused;
  localStorage.setItem("installstats.live", paused ? "paused" : "on");
  showLive();
  if (!paused) void render("refresh");
});
setInterval(() => {
  // A hidden tab or an open detail being read is left alone.
  if (!paused && document.visibilityState === "visible" && document.body.dataset.state === "ready") void render("refresh");
}, REFRESH_MS);

// ---- navigation -----------------------------------------------------------------------------------

document.addEventListener("click", (e) => {
  const a = (e.target as Element | null)?.closest?.("a[data-nav]");
  if (!(a instanceof HTMLAnchorElement) || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  history.pushState(null, "", a.href);
  state = parseState(new URL(location.href));
  void render("navigate");
});
addEventListener("popstate", () => {
  state = parseState(new URL(location.href));
  void render("navigate");
});

void render("navigate");
