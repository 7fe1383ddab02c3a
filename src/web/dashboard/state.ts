// What the dashboard shows, as a pure function of the URL: every view can be bookmarked and
// shared, and back/forward replay it. Query keys are the read API's own parameter names.

const VIEWS = ["overview", "failures", "installs", "app", "admin", "alerts", "issue"] as const;
export type View = (typeof VIEWS)[number];

export const VIEW_PATHS: Record<View, string> = {
  overview: "/",
  failures: "/failures",
  installs: "/installs",
  app: "/app",
  admin: "/admin",
  alerts: "/alerts",
  issue: "/issue",
};

/**
 * Filters of /api/installs and the stats endpoints that the dashboard exposes, in URL order.
 * kind and repo_source are the scope every view shares (see KINDS and REPO_SOURCES).
 */
export const FILTER_KEYS = [
  "kind",
  "repo_source",
  "nsapp",
  "outcome",
  "status",
  "type",
  "os_type",
  "os_version",
  "pve_version",
  "method",
  "exit_code",
  "error_category",
  "platform",
  "arch",
  "cpu_vendor",
  "gpu_vendor",
  "gpu_passthrough",
  "repo_slug",
  "q",
] as const;
export type FilterKey = (typeof FILTER_KEYS)[number];
export type Filters = Partial<Record<FilterKey, string>>;

/** What the views count: installs unless asked (the API's default, so left out of the URL). */
export const KINDS = ["install", "tool", "addon", "all"] as const;
type KindChoice = (typeof KINDS)[number];
const DEFAULT_KIND: KindChoice = "install";

/**
 * Repo filter: every repo (no parameter), the main collection, its dev repo, forks, or reports
 * that name none (older clients). "none" is the dashboard's word for the API's empty value.
 */
export const REPO_SOURCES = ["ProxmoxVE", "ProxmoxVED", "external", "none"] as const;
const NO_REPO = "none";

export const PRESET_DAYS = [1, 7, 30, 90, 365] as const;
const DEFAULT_DAYS = 30;
export const DEFAULT_MIN_RUNS = 10;

/** A preset (the last N days up to now) or custom dates (YYYY-MM-DD, `to` inclusive). */
export type Range = { days: number } | { from: string; to: string };

export interface DashState {
  view: View;
  range: Range;
  filters: Filters;
  /** Failures view: apps with fewer finished installs are left out of the failure ranking. */
  minRuns: number;
  /** Install log: only failed installs with this error signature id. Issue: the signature an issue is opened for. */
  signature: string | null;
  /** Install log: page position (the API's next_cursor) and order. */
  cursor: string | null;
  order: "newest" | "oldest";
  /** Install log: the install whose details are open. */
  id: string | null;
  /** Admin (rejected reports): only entries with this reason. Its pages use `cursor` (the API's `before`). */
  reason: string | null;
  /** Alerts: only this rule's history. Its pages use `cursor` (the API's `before`). */
  rule: string | null;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

function viewOf(pathname: string): View {
  const path = pathname.replace(/\/+$/, "") || "/";
  return VIEWS.find((v) => VIEW_PATHS[v] === path) ?? "overview";
}

function positiveInt(text: string | null, fallback: number, max: number): number {
  const n = text === null ? Number.NaN : Number(text);
  return Number.isInteger(n) && n >= 0 && n <= max ? n : fallback;
}

/** Reads a URL into a state; anything malformed falls back to its default instead of failing. */
export function parseState(url: URL): DashState {
  const p = url.searchParams;
  const from = p.get("from");
  const to = p.get("to");
  const days = positiveInt(p.get("days"), DEFAULT_DAYS, 3660);
  const range: Range =
    from !== null && to !== null && DATE.test(from) && DATE.test(to) && from <= to
      ? { from, to }
      : { days: days === 0 ? DEFAULT_DAYS : days };
  const filters: Filters = {};
  for (const key of FILTER_KEYS) {
    const value = p.get(key)?.trim();
    if (value) filters[key] = value.slice(0, 200);
  }
  // A kind the API does not know, or the default one, is no filter.
  if (
    filters.kind !== undefined &&
    (!(KINDS as readonly string[]).includes(filters.kind) || filters.kind === DEFAULT_KIND)
  )
    delete filters.kind;
  if (filters.exit_code !== undefined && !(/^\d{1,3}$/.test(filters.exit_code) && Number(filters.exit_code) <= 255))
    delete filters.exit_code;
  return {
    view: viewOf(url.pathname),
    range,
    filters,
    minRuns: positiveInt(p.get("min_runs"), DEFAULT_MIN_RUNS, 1_000_000),
    signature: p.get("signature") || null,
    cursor: p.get("cursor") || null,
    order: p.get("order") === "oldest" ? "oldest" : "newest",
    id: p.get("id") || null,
    reason: p.get("reason") || null,
    rule: p.get("rule") || null,
  };
}

/** The state as a path and query (defaults left out, so URLs stay short). */
export function stateUrl(s: DashState): string {
  const p = new URLSearchParams();
  if ("days" in s.range) {
    if (s.range.days !== DEFAULT_DAYS) p.set("days", String(s.range.days));
  } else {
    p.set("from", s.range.from);
    p.set("to", s.range.to);
  }
  for (const key of FILTER_KEYS) if (s.filters[key]) p.set(key, s.filters[key]!);
  if (s.view === "failures" && s.minRuns !== DEFAULT_MIN_RUNS) p.set("min_runs", String(s.minRuns));
  if (s.view === "installs") {
    if (s.signature) p.set("signature", s.signature);
    if (s.order !== "newest") p.set("order", s.order);
    if (s.cursor) p.set("cursor", s.cursor);
    if (s.id) p.set("id", s.id);
  }
  if (s.view === "issue" && s.signature) p.set("signature", s.signature);
  if (s.view === "admin") {
    if (s.reason) p.set("reason", s.reason);
    if (s.cursor) p.set("cursor", s.cursor);
  }
  if (s.view === "alerts") {
    if (s.rule) p.set("rule", s.rule);
    if (s.cursor) p.set("cursor", s.cursor);
  }
  const query = p.toString();
  return VIEW_PATHS[s.view] + (query ? `?${query}` : "");
}

/**
 * A state derived from `s`: a different view, range or filters start again at the first page with
 * no install open (a cursor or id only means something for the list it came from).
 */
export function withChanges(s: DashState, change: Partial<DashState>): DashState {
  const next = { ...s, ...change };
  const listChanged =
    change.view !== undefined ||
    change.range !== undefined ||
    change.filters !== undefined ||
    change.order !== undefined ||
    change.signature !== undefined ||
    change.reason !== undefined ||
    change.rule !== undefined;
  if (listChanged && change.cursor === undefined) next.cursor = null;
  if (listChanged && change.id === undefined) next.id = null;
  return next;
}

/** The window as read-API parameters. */
function rangeParams(r: Range): Record<string, string> {
  return "days" in r ? { days: String(r.days) } : { from: r.from, to: r.to };
}

/** Window and filters as read-API parameters. */
export function apiParams(
  s: Pick<DashState, "range" | "filters">,
  extra: Record<string, string | number> = {},
): URLSearchParams {
  const p = new URLSearchParams(rangeParams(s.range));
  for (const key of FILTER_KEYS)
    if (s.filters[key]) p.set(key, key === "repo_source" && s.filters[key] === NO_REPO ? "" : s.filters[key]!);
  for (const [k, v] of Object.entries(extra)) p.set(k, String(v));
  return p;
}

/** Length of the window in days (custom ranges include their last day). */
export function rangeDays(r: Range): number {
  if ("days" in r) return r.days;
  return Math.round((Date.parse(`${r.to}T00:00:00Z`) - Date.parse(`${r.from}T00:00:00Z`)) / 86_400_000) + 1;
}

/** Points fine enough to show a shape, few enough to read: hours up to 2 days, days up to 120. */
export function intervalFor(r: Range): "hour" | "day" | "week" {
  const days = rangeDays(r);
  return days <= 2 ? "hour" : days <= 120 ? "day" : "week";
}

/** The kind the views count. */
export const kindOf = (f: Filters): KindChoice => (f.kind as KindChoice | undefined) ?? DEFAULT_KIND;

/** What one counted thing is called under a kind: "Installs", "Tool runs", ... */
export function unitLabel(f: Filters): string {
  return { install: "Installs", tool: "Tool runs", addon: "Addon runs", all: "Runs" }[kindOf(f)];
}

export function rangeLabel(r: Range): string {
  if ("days" in r) return r.days === 1 ? "last 24 hours" : `last ${r.days} days`;
  return r.from === r.to ? r.from : `${r.from} to ${r.to}`;
}

/**
 * The filters that select one group of a breakdown (null when the group cannot be selected:
 * absent values, and dimensions the install filters do not cover).
 */
export function groupFilters(by: string, value: string | null): Filters | null {
  // Reports naming no repo are a choice of the repo filter; other absent values select nothing.
  if (by === "repo_source" && (value === null || value === "")) return { repo_source: NO_REPO };
  if (value === null || value === "") return null;
  switch (by) {
    case "nsapp":
    case "status":
    case "type":
    case "method":
    case "pve_version":
    case "exit_code":
    case "error_category":
    case "platform":
    case "arch":
    case "cpu_vendor":
    case "gpu_vendor":
    case "gpu_passthrough":
    case "repo_source":
    case "repo_slug":
      return { [by]: value };
    case "os": {
      // The os group is "<os_type> <os_version>" (either may be absent).
      const space = value.indexOf(" ");
      return space < 0 ? { os_type: value } : { os_type: value.slice(0, space), os_version: value.slice(space + 1) };
    }
    default:
      return null;
  }
}
