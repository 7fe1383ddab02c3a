// The dashboard shell: the router that renders the view the URL names (views fetch everything,
// then swap in at once), theme and live refresh. The controls above the view are in controls.ts.
// Every time on the page is UTC in 24-hour time, as the API's.
import { api, ApiError, saveToken } from "./api.ts";
import { h, replace } from "./dom.ts";
import { renderControls } from "./controls.ts";
import { clockUtc } from "./format.ts";
import { onboarding } from "./onboarding.ts";
import { parseState, stateUrl, withChanges, type DashState, type View } from "./state.ts";
import type { ViewContext, ViewRender } from "./view.ts";
import { adminView } from "./views/admin.ts";
import { alertsView } from "./views/alerts.ts";
import { appView } from "./views/app.ts";
import { failures } from "./views/failures.ts";
import { installs } from "./views/installs.ts";
import { issueView } from "./views/issue.ts";
import { overview } from "./views/overview.ts";
import { loadingState } from "./widgets.ts";

const RENDERERS: Record<View, ViewRender> = {
  overview,
  failures,
  installs,
  app: appView,
  admin: adminView,
  alerts: alertsView,
  issue: issueView,
};
/** Views of admin forms: no onboarding above them, no live refresh under the user's hands. */
const FORMS: readonly View[] = ["admin", "alerts", "issue"];
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
    reload: () => void render("refresh"),
    onDispose: (fn) => pending.push(fn),
  };
}

function go(next: DashState): void {
  moveTo(stateUrl(next));
}

/** Only the open install changed: the list stays where it is and the details open or close in place. */
const onlyDetailChanged = (a: DashState, b: DashState): boolean =>
  a.view === "installs" &&
  b.view === "installs" &&
  a.id !== b.id &&
  stateUrl({ ...a, id: null }) === stateUrl({ ...b, id: null });

/** The state of `url` (pushed to history unless it came from it): a new view, or the same list with other details open. */
function moveTo(url: string, push = true): void {
  if (push) history.pushState(null, "", url);
  const before = state;
  state = parseState(new URL(location.href));
  if (onlyDetailChanged(before, state)) void render("detail", anchorOf(state.id ?? before.id));
  else void render("navigate");
}

/** Where the row of install `id` is on screen, so it can stay there when the details open or close under it. */
interface Anchor {
  id: string;
  top: number;
}
function anchorOf(id: string | null): Anchor | null {
  const row = id === null ? null : main.querySelector(`tr[data-id="${CSS.escape(id)}"]`);
  return row && id !== null ? { id, top: row.getBoundingClientRect().top } : null;
}

/**
 * navigate: the view or its question changed (show loading); refresh: same question, new data;
 * detail: the install log's open install changed (no loading state; the row stays in place).
 */
async function render(kind: "navigate" | "refresh" | "detail", anchor: Anchor | null = null): Promise<void> {
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
    const [{ title, node }, empty] = await Promise.all([
      RENDERERS[state.view](state, context(controller.signal, pending)),
      FORMS.includes(state.view) ? false : noReportsYet(controller.signal),
    ]);
    if (gen !== generation) return pending.forEach((fn) => fn());
    disposeView();
    disposers = pending;
    // A server that never received a report says how to send it some, above whatever view.
    if (empty && node instanceof HTMLElement) node.prepend(onboarding(location.origin));
    const scrollY = window.scrollY;
    replace(main, node);
    if (kind === "refresh") window.scrollTo({ top: scrollY });
    if (kind === "detail") settleDetail(anchor);
    document.title = `${title} · installstats`;
    updated.textContent = `Updated ${clockUtc(new Date())}`;
  } catch (e) {
    if (gen !== generation || controller.signal.aborted) return;
    disposeView();
    replace(main, failure(e));
  }
  document.body.dataset.state = "ready";
  // For scripts/bench-dashboard.ts: when this view became usable, since navigation start.
  performance.mark("installstats:ready", { detail: state.view });
}

/**
 * After the open install changed: the row that was clicked stays where it was on screen, and the
 * keyboard continues in the details (or, when they closed, on the row's link).
 */
function settleDetail(anchor: Anchor | null): void {
  if (anchor) {
    const row = main.querySelector(`tr[data-id="${CSS.escape(anchor.id)}"]`);
    if (row) window.scrollBy({ top: row.getBoundingClientRect().top - anchor.top });
  }
  const detail = document.getElementById("install-detail");
  if (state.id && detail) {
    detail.focus({ preventScroll: true });
    const row = detail.closest("tr")?.previousElementSibling;
    if (!row) {
      // Details opened above the list (an install not on this page) are brought into view.
      detail.scrollIntoView({ block: "nearest" });
      return;
    }
    // Details running past the bottom of the window scroll up into it, as far as the row's own
    // top: the row moves up with its details under it, in one motion the eye can follow.
    const below = detail.getBoundingClientRect().bottom + 12 - window.innerHeight;
    const rowTop = row.getBoundingClientRect().top - 8;
    const by = Math.min(below, rowTop);
    if (by > 0)
      window.scrollBy({
        top: by,
        behavior: matchMedia("(prefers-reduced-motion: reduce)").matches ? "instant" : "smooth",
      });
    return;
  }
  const link = anchor ? main.querySelector<HTMLElement>(`tr[data-id="${CSS.escape(anchor.id)}"] a.row-link`) : null;
  link?.focus({ preventScroll: true });
}

/** Whether this server has never received a report; once it has, it is not asked again. */
let hasReports = false;
async function noReportsYet(signal: AbortSignal): Promise<boolean> {
  if (hasReports) return false;
  try {
    // The newest execution of any kind in ten years: one indexed row at most.
    const page = await api.installs(new URLSearchParams({ kind: "all", days: "3660", limit: "1" }), signal);
    hasReports = page.installs.length > 0;
    return !hasReports;
  } catch {
    // No answer (a read token not given yet, a fault): the view says so itself.
    return false;
  }
}

function disposeView(): void {
  for (const fn of disposers) fn();
  disposers = [];
}

function failure(e: unknown): HTMLElement {
  if (e instanceof ApiError && e.status === 401) return tokenForm();
  const message = e instanceof Error ? e.message : String(e);
  return h(
    "div",
    { class: "view" },
    h(
      "div",
      { class: "error-box", role: "alert" },
      h("strong", {}, "Could not load this view. "),
      message,
      " ",
      h("button", { type: "button", onclick: () => void render("navigate") }, "Retry"),
    ),
  );
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

let theme: Theme = (THEMES as readonly string[]).includes(localStorage.getItem("installstats.theme") ?? "")
  ? (localStorage.getItem("installstats.theme") as Theme)
  : "auto";
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
  // A hidden tab, an open install being read and the views of forms are left alone.
  if (
    !paused &&
    document.visibilityState === "visible" &&
    document.body.dataset.state === "ready" &&
    state.id === null &&
    !FORMS.includes(state.view)
  )
    void render("refresh");
}, REFRESH_MS);

// ---- navigation -----------------------------------------------------------------------------------

document.addEventListener("click", (e) => {
  const a = (e.target as Element | null)?.closest?.("a[data-nav]");
  if (
    !(a instanceof HTMLAnchorElement) ||
    e.defaultPrevented ||
    e.button !== 0 ||
    e.metaKey ||
    e.ctrlKey ||
    e.shiftKey ||
    e.altKey
  )
    return;
  e.preventDefault();
  moveTo(a.href);
});
addEventListener("popstate", () => moveTo(location.href, false));

void render("navigate");
