// The community service's analysis pages, as its API serves them (community-scripts/telemetry-service):
// /api/records (the installation log: numbered pages), /api/scripts (script analysis) and
// /api/errors (error analysis), with its parameters and response shapes. Aggregates come from
// rollups; per-app details of /api/scripts from each app's own rollup slice
// (docs/decisions/2026-11-25-analysis-pages.md), of /api/errors from the window's failure keys
// (docs/decisions/2026-11-27-windows-carried-forward.md).
import { Elysia, t, type Static } from "elysia";
import { categoryOfExitCode } from "../../domain/error-category.ts";
import { explainExitCode } from "../../domain/exit-codes.ts";
import { PAGE_SORTS, type ExecutionFilter, type PageSort, type StoreReads } from "../../store/contract/executions.ts";
import { MAX_VALUE_LENGTH, isSettled } from "../../domain/rollup.ts";
import type { Window } from "../aggregate.ts";
import { addTo, failuresByApp, firstSignature, type AppFailures } from "../failures.ts";
import { allTime, docParam, openQuery } from "../query.ts";
import { createStats } from "../stats.ts";
import { typesAsOf } from "../app-types.ts";
import {
  ALL_GROUPS,
  PLATFORM_PARAM,
  REPO_PARAM,
  SLUG_PARAM,
  CommunityRecord,
  chTime,
  collapsedStatus,
  dashboardDays,
  goDays,
  label,
  newestOf,
  nonEmpty,
  platformOf,
  repoFilters,
  statusFilter,
  toCommunityRecord,
  topOf,
  windowOf,
  type Summed,
} from "./community.ts";

/** The original's repo rule as one listing's filter: ProxmoxVE takes reports naming no repo; absent or "all" every repo. */
function repoSourcesOf(repo: string | undefined): readonly string[] | undefined {
  const r = label("repo", repo) ?? "all";
  return r === "all" ? undefined : r === "ProxmoxVE" ? ["ProxmoxVE", ""] : [r];
}

/** `sort`: a column, "-column" for descending; anything else is the original's default, newest first. */
function sortOf(text: string | undefined): { sort: PageSort; descending: boolean } {
  const descending = text?.startsWith("-") ?? false;
  const column = descending ? text!.slice(1) : text;
  return (PAGE_SORTS as readonly string[]).includes(column ?? "")
    ? { sort: column as PageSort, descending }
    : { sort: "created", descending: true };
}

const percent = (part: number, whole: number): number => (whole === 0 ? 0 : (part / whole) * 100);

/** The value of `by` with the most runs of an outcome, or null; "" and `skip` left out. */
function leading(groups: readonly Summed[], count: (g: Summed) => number, skip: readonly string[] = []): string | null {
  let best: Summed | null = null;
  for (const g of groups)
    if (count(g) > 0 && !skip.includes(g.value) && (best === null || count(g) > count(best))) best = g;
  return best?.value ?? null;
}

const ScriptStat = t.Object({
  app: t.String(),
  type: t.String(),
  total: t.Integer(),
  success: t.Integer(),
  failed: t.Integer(),
  aborted: t.Integer(),
  installing: t.Integer(),
  success_rate: t.Number({ description: "percent: success / (success + failed + aborted) * 100" }),
  days_old: t.Integer({
    description:
      "0: the original takes it from a list of known scripts it loads from GitHub; installstats does not call out",
  }),
  installs_per_day: t.Number({ description: "0, as days_old" }),
});
const RecentScript = t.Object({
  app: t.String(),
  type: t.String(),
  status: t.String(),
  exit_code: t.Integer(),
  os_type: t.String(),
  os_version: t.String(),
  pve_version: t.String(),
  created: t.String(),
  method: t.String(),
});
const ErrorRecord = t.Object({
  nsapp: t.String(),
  type: t.String(),
  status: t.String(),
  exit_code: t.Integer(),
  error: t.String(),
  error_category: t.String(),
  os_type: t.String(),
  os_version: t.String(),
  created: t.String(),
});
const ErrorsJson = t.Object({
  total_errors: t.Integer({ description: "failed runs (aborts are their own outcome)" }),
  total_installs: t.Integer(),
  overall_fail_rate: t.Number({ description: "percent: total_errors / total_installs * 100" }),
  exit_code_stats: t.Array(
    t.Object({
      exit_code: t.Integer(),
      count: t.Integer(),
      description: t.String(),
      category: t.String(),
      percentage: t.Number(),
    }),
  ),
  category_stats: t.Array(
    t.Object({
      category: t.String(),
      count: t.Integer(),
      percentage: t.Number(),
      top_apps: t.String({ description: "up to 5 apps, most failures in the category first" }),
    }),
  ),
  app_errors: t.Array(
    t.Object({
      app: t.String(),
      type: t.String(),
      total_count: t.Integer(),
      failed_count: t.Integer(),
      aborted_count: t.Integer(),
      failure_rate: t.Number(),
      top_exit_code: t.Integer(),
      top_error: t.String({ description: "the app's most frequent error signature" }),
      top_category: t.String(),
    }),
  ),
  recent_errors: t.Array(ErrorRecord),
  stuck_installing: t.Integer({ description: "runs started today that have not finished" }),
  error_timeline: t.Array(t.Object({ date: t.String(), failed: t.Integer(), aborted: t.Integer() })),
});

/** Apps the error analysis details (the original's LIMIT 50), and apps named per category. */
const APP_ERRORS = 50;
const CATEGORY_APPS = 5;
/** Exit codes listed (the original's LIMIT 30) and recent failures (LIMIT 100). */
const EXIT_CODES = 30;
const RECENT_ERRORS = 100;
const RECENT_SCRIPTS = 20;

type AnalysisDeps = { store: StoreReads; clock: () => number };
const tags = ["telemetry-service compatible"];

/** Per request: its aggregates share what a scan folds (a filter rollups cannot select with another dimension). */
function perRequest(store: StoreReads) {
  const stats = createStats(store, new Map());
  return { stats, top: topOf(stats) };
}

const RecordsQuery = t.Object({
  page: docParam("page number from 1 (default 1)"),
  limit: docParam("records per page, 1-100 (default 50)"),
  days: docParam("days back from today (default 1: today; 0 or more than 365: 365)"),
  status: docParam(
    "success, failed, blocked, aborted, unknown, or the step of a run still going: installing, validation, configuring",
  ),
  app: docParam("part of the app name (case-insensitive)"),
  search: docParam("as app, when app is not given"),
  os: docParam("os_type, exactly"),
  type: docParam("lxc, vm, pve, addon, ..."),
  sort: docParam(`one of ${PAGE_SORTS.join(", ")}; "-" before it for descending (default -created)`),
  repo: REPO_PARAM,
  slug: SLUG_PARAM,
  platform: PLATFORM_PARAM,
});
const RecordsRoute = {
  query: openQuery(RecordsQuery),
  response: {
    200: t.Object({
      records: t.Array(CommunityRecord),
      page: t.Integer(),
      limit: t.Integer(),
      total: t.Integer(),
      total_pages: t.Integer(),
    }),
  },
  detail: { tags, summary: "The installation log: one numbered page of runs and how many match" },
};

/** One numbered page of the installation log and how many runs match. */
async function records({ store, clock }: AnalysisDeps, query: Static<typeof RecordsQuery>) {
  // The original: page from 1; limit 1-100 (default 50); days default 1, 0 or past 365 -> 365.
  const page = goDays(query.page, 1, (n) => Math.max(1, n));
  const limit = goDays(query.limit, 50, (n) => Math.min(100, Math.max(1, n)));
  const w = windowOf(goDays(query.days, 1, dashboardDays), clock());
  const status = label("status", query.status);
  const os = label("os", query.os);
  const type = label("type", query.type);
  const slug = label("slug", query.slug);
  const platform = platformOf(query.platform);
  const filter: ExecutionFilter = {
    from: w.from,
    to: w.to,
    ...(status ? statusFilter(status) : {}),
    ...(os ? { osType: os } : {}),
    ...(type ? { type } : {}),
    ...(slug ? { repoSlug: slug } : {}),
    ...(platform ? { platformClass: platform } : {}),
  };
  const app = label("app", query.app) ?? label("search", query.search);
  const repoSources = repoSourcesOf(query.repo);
  // Pages far past the end are empty, as there; the read budget bounds how far a scan goes.
  const offset = Math.min((page - 1) * limit, Number.MAX_SAFE_INTEGER);
  const { rows, total } = await store.pageExecutions(filter, {
    offset,
    limit,
    ...sortOf(query.sort),
    ...(repoSources ? { repoSources } : {}),
    ...(app ? { appContains: app } : {}),
  });
  return { records: rows.map(toCommunityRecord), page, limit, total, total_pages: Math.ceil(total / limit) };
}

const ScriptsQuery = t.Object({
  days: docParam("days back from today (default 30; 0: all time; more than 365: 365)"),
  repo: REPO_PARAM,
  platform: PLATFORM_PARAM,
});
const ScriptsRoute = {
  query: openQuery(ScriptsQuery),
  response: {
    200: t.Object({
      total_scripts: t.Integer(),
      total_installs: t.Integer(),
      top_scripts: t.Array(ScriptStat),
      recent_scripts: t.Array(RecentScript),
    }),
  },
  detail: { tags, summary: "Script analysis: every script's runs by outcome, from rollups" },
};

/** Script analysis: every script's runs by outcome, and the newest runs. */
async function scripts({ store, clock }: AnalysisDeps, query: Static<typeof ScriptsQuery>) {
  // days default 30; 0 is all time; negative -> 1; past 365 -> 365.
  const days = goDays(query.days, 30, (n) => (n < 0 ? 1 : n > 365 ? 365 : n));
  const now = clock();
  const span = days === 0 ? await store.recordSpan() : null;
  const w: Window = days !== 0 ? windowOf(days, now) : span ? allTime(span, now) : { from: now, to: now };
  const filters = repoFilters(query.repo, platformOf(query.platform));
  const { top } = perRequest(store);
  const apps = await top(filters, w, "nsapp", 1_000_000);
  const types = await typesAsOf(
    store,
    apps.map((a) => a.value),
    now,
  );
  const recent = await newestOf(store, filters, w, RECENT_SCRIPTS);
  return {
    total_scripts: apps.length,
    total_installs: apps.reduce((n, a) => n + a.total, 0),
    top_scripts: apps.map((a) => ({
      app: a.value,
      type: types.get(a.value) ?? "",
      total: a.total,
      success: a.success,
      failed: a.failed,
      aborted: a.aborted,
      installing: a.in_progress,
      success_rate: percent(a.success, a.success + a.failed + a.aborted),
      days_old: 0,
      installs_per_day: 0,
    })),
    recent_scripts: recent.map((e) => ({
      app: e.nsapp ?? "",
      type: e.type,
      status: collapsedStatus(e),
      exit_code: e.exitCode ?? 0,
      os_type: e.osType ?? "",
      os_version: e.osVersion ?? "",
      pve_version: e.pveVersion ?? "",
      created: chTime(e.createdAt),
      method: e.method ?? "",
    })),
  };
}

const ErrorsQuery = t.Object({
  days: docParam("days back from today, 1-365 (default 7)"),
  repo: REPO_PARAM,
  slug: SLUG_PARAM,
  platform: PLATFORM_PARAM,
});
const ErrorsRoute = {
  query: openQuery(ErrorsQuery),
  response: { 200: ErrorsJson },
  detail: { tags, summary: "Error analysis: exit codes, categories and the apps that fail most, from rollups" },
};

const FAILED: ExecutionFilter = { outcome: "failed" };

type Stats = ReturnType<typeof createStats>;

/** Each failing app's exit codes, categories and first signature: its failures read from its own slice, per repo filter. */
function appDetailFromSlices(stats: Stats, filters: readonly ExecutionFilter[], w: Window, app: string) {
  return Promise.all(
    filters.map((f) => stats.cuts({ ...f, ...FAILED, nsapp: app }, w, ["exit_code", "error_category"], ALL_GROUPS, 1)),
  ).then(async (cuts) => ({
    exitCodes: nonEmpty(cuts.map((c) => c.breakdowns[0]!.groups)),
    categories: nonEmpty(cuts.map((c) => c.breakdowns[1]!.groups)),
    signature: cuts.flatMap((c) => c.errors.signatures).sort((x, y) => y.count - x.count)[0]?.signature ?? "",
  }));
}

/** Failed runs by value, as nonEmpty sums a breakdown of failed runs: most first, then by value. */
const asSummed = (counts: ReadonlyMap<string, number>): Summed[] =>
  [...counts]
    .filter(([value, n]) => value !== "" && n !== 0)
    .map(([value, n]) => ({ value, total: n, success: 0, failed: n, aborted: 0, in_progress: 0 }))
    .sort((a, b) => b.total - a.total || a.value.localeCompare(b.value));

/**
 * Each failing app's exit codes, categories and first signature, read from the failure keys of the
 * window's cells of every app (code, category, signature and app in one key: domain/rollup.ts):
 * one read per repo filter, not one per app and filter (50 apps were ~100 reads and two thirds of
 * the request's CPU). A failure key keeps MAX_VALUE_LENGTH characters of the app's name: an app
 * with a longer name is read from its own slice.
 */
async function appDetails(
  store: StoreReads,
  stats: Stats,
  filters: readonly ExecutionFilter[],
  w: Window,
  failing: readonly Summed[],
) {
  const apps = new Set(failing.map((a) => a.value).filter((app) => app.length <= MAX_VALUE_LENGTH));
  const byApp = new Map<
    string,
    { codes: Map<string, number>; categories: Map<string, number>; firsts: [string, number][] }
  >();
  for (const app of apps) byApp.set(app, { codes: new Map(), categories: new Map(), firsts: [] });
  const asked = [...byApp.keys()];
  for (const { cells } of await Promise.all(filters.map((f) => stats.failureKeys(f, w)))) {
    // The settled sum's tallies (kept with it) and the open cells' on top.
    let settled: ReadonlyMap<string, AppFailures> | undefined;
    const open: ReadonlyMap<string, AppFailures>[] = [];
    for (const { data } of cells) {
      if (data.dims.failure === undefined) continue;
      const tally = failuresByApp(data, data.dims.failure, asked);
      if (settled === undefined && isSettled(data)) settled = tally;
      else open.push(tally);
    }
    for (const [app, a] of byApp) {
      const base = settled?.get(app);
      const more = new Map<string, number>();
      for (const t of [base, ...open.map((o) => o.get(app))]) {
        if (t === undefined) continue;
        for (const [code, n] of t.codes) addTo(a.codes, code, n);
        for (const [category, n] of t.categories) addTo(a.categories, category, n);
        if (t !== base) for (const [id, n] of t.signatures) addTo(more, id, n);
      }
      // This filter's first signature of the app (most failures, then by id), as its cells' error counts rank them.
      const first = firstSignature(base, more);
      if (first !== null) a.firsts.push(first);
    }
  }
  // Across filters the first of most failures (the first filter's on a tie).
  const firstOf = (app: string): string | undefined =>
    byApp
      .get(app)
      ?.firsts.reduce<[string, number] | undefined>((a, b) => (a === undefined || b[1] > a[1] ? b : a), undefined)?.[0];
  const ids = [...apps].map(firstOf).filter((id): id is string => id !== undefined);
  const texts = new Map((await store.signatures(ids)).map((s) => [s.id, s.signature]));
  return Promise.all(
    failing.map(async ({ value: app }) => {
      const a = byApp.get(app);
      if (a === undefined) return appDetailFromSlices(stats, filters, w, app);
      const id = firstOf(app);
      return {
        exitCodes: asSummed(a.codes),
        categories: asSummed(a.categories),
        signature: (id === undefined ? undefined : texts.get(id)) ?? "",
      };
    }),
  );
}

type AppDetail = Awaited<ReturnType<typeof appDetails>>[number];

/** Categories as the original lists them: user aborts left out, the apps with most failures in each named. */
function categoryStats(
  categories: readonly Summed[],
  failing: readonly Summed[],
  details: readonly AppDetail[],
  totalErrors: number,
) {
  const categoryApps = new Map<string, { app: string; count: number }[]>();
  failing.forEach((a, i) => {
    for (const c of details[i]!.categories)
      categoryApps.set(c.value, [...(categoryApps.get(c.value) ?? []), { app: a.value, count: c.failed }]);
  });
  return categories
    .filter((c) => c.value !== "user_aborted")
    .map((c) => ({
      category: c.value,
      count: c.failed,
      percentage: percent(c.failed, totalErrors),
      top_apps: (categoryApps.get(c.value) ?? [])
        .sort((a, b) => b.count - a.count || a.app.localeCompare(b.app))
        .slice(0, CATEGORY_APPS)
        .map((a) => a.app)
        .join(", "),
    }));
}

/** The exit codes of failures, most first, explained (0 left out). */
const exitCodeStats = (codes: readonly Summed[], totalErrors: number) =>
  codes
    .filter((c) => c.value !== "0")
    .slice(0, EXIT_CODES)
    .map((c) => {
      const code = Number(c.value);
      return {
        exit_code: code,
        count: c.failed,
        description: explainExitCode(code),
        category: categoryOfExitCode(code),
        percentage: percent(c.failed, totalErrors),
      };
    });

/** Error analysis: exit codes, categories and the apps that fail most, from rollups. */
async function errors({ store, clock }: AnalysisDeps, query: Static<typeof ErrorsQuery>) {
  const now = clock();
  const w = windowOf(
    goDays(query.days, 7, (n) => Math.min(365, Math.max(1, n))),
    now,
  );
  const slug = label("slug", query.slug);
  const filters = repoFilters(query.repo, platformOf(query.platform)).map((f) => (slug ? { ...f, repoSlug: slug } : f));
  const { stats, top } = perRequest(store);
  const [summaries, today, codes, categories, apps, series, recent] = await Promise.all([
    Promise.all(filters.map((f) => stats.summary(f, w))),
    Promise.all(filters.map((f) => stats.summary(f, windowOf(1, now)))),
    top(filters, w, "exit_code", 1_000_000, FAILED),
    top(filters, w, "error_category", 1_000_000, FAILED),
    top(filters, w, "nsapp", 1_000_000),
    Promise.all(filters.map((f) => stats.timeseries(f, w, "day"))),
    newestOf(store, filters, w, RECENT_ERRORS, FAILED),
  ]);
  const totalInstalls = summaries.reduce((n, s) => n + s.total, 0);
  const totalErrors = summaries.reduce((n, s) => n + s.failed, 0);
  // The apps with most failures, each from its own slice: type, exit codes, categories, signature.
  const failing = apps
    .filter((a) => a.failed + a.aborted > 0)
    .sort((a, b) => b.failed - a.failed || b.aborted - a.aborted || a.value.localeCompare(b.value))
    .slice(0, APP_ERRORS);
  const details = await appDetails(store, stats, filters, w, failing);
  const types = await typesAsOf(
    store,
    failing.map((a) => a.value),
    now,
  );
  return {
    total_errors: totalErrors,
    total_installs: totalInstalls,
    overall_fail_rate: percent(totalErrors, totalInstalls),
    exit_code_stats: exitCodeStats(codes, totalErrors),
    category_stats: categoryStats(categories, failing, details, totalErrors),
    app_errors: failing.map((a, i) => {
      const d = details[i]!;
      const finished = a.total - a.in_progress;
      return {
        app: a.value,
        type: types.get(a.value) ?? "",
        total_count: finished,
        failed_count: a.failed,
        aborted_count: a.aborted,
        failure_rate: percent(a.failed, finished),
        top_exit_code: Number(leading(d.exitCodes, (g) => g.failed, ["0"]) ?? 0),
        top_error: d.signature,
        top_category: leading(d.categories, (g) => g.failed, ["uncategorized", "user_aborted"]) ?? "",
      };
    }),
    recent_errors: recent.map((e) => ({
      nsapp: e.nsapp ?? "",
      type: e.type,
      status: collapsedStatus(e),
      exit_code: e.exitCode ?? 0,
      error: e.error ?? "",
      error_category: e.errorCategory ?? "",
      os_type: e.osType ?? "",
      os_version: e.osVersion ?? "",
      created: chTime(e.createdAt),
    })),
    stuck_installing: today.reduce((n, s) => n + s.in_progress, 0),
    error_timeline: series[0]!.points.map((p, i) => ({
      date: new Date(p.t).toISOString().slice(0, 10),
      failed: series.reduce((n, s) => n + s.points[i]!.failed, 0),
      aborted: series.reduce((n, s) => n + s.points[i]!.aborted, 0),
    })),
  };
}

export function communityAnalysisRoutes(deps: AnalysisDeps) {
  return new Elysia({ name: "telemetry-analysis" })
    .get("/api/records", ({ query }) => records(deps, query), RecordsRoute)
    .get("/api/scripts", ({ query }) => scripts(deps, query), ScriptsRoute)
    .get("/api/errors", ({ query }) => errors(deps, query), ErrorsRoute);
}
