// The dashboard shell: the router that renders the view the URL names (views fetch everything,
// then swap in at once), theme and live refresh. The controls above the view are in controls.ts.
import { ApiError, saveToken } from "./api.ts";
import { h, replace } from "./dom.ts";
import { renderControls } from "./controls.ts";
import { parseState, stateUrl, withChanges, type DashState, type View } from "./state.ts";
import type { ViewContext, ViewRender } from "./view.ts";
import { appView } from "./views/app.ts";
import { failures } from "./views/failures.ts";
import { installs } from "./views/installs.ts";
import { overview } from "./views/overview.ts";
import { loadingState } from "./widgets.ts";

const RENDERERS: Record<View, ViewRender> = { overview, failures, installs, app: appView };
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
    navigate: (change) => go(withChanges(state, change)),
    onDispose: (fn) => pending.push(fn),
  };
}

function go(next: DashState): void {
  history.pushState(null, "", stateUrl(next));
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
    renderControls({ nav, controls }, state, go);
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
    // An install just opened from the list: bring its details into view (not on live refreshes).
    if (kind === "navigate") document.getElementById("install-detail")?.scrollIntoView({ block: "start" });
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
