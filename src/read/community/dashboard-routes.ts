// The read API of the community's current service (community-scripts/telemetry-service):
// /api/dashboard, /api/repo-slugs and /api/exit-codes, with its parameters and response shapes,
// so tools made for it work against installstats. Answered from rollups (docs/decisions/2026-11-24-telemetry-service-api.md).
import { Elysia, t, type Static } from "elysia";
import { EXIT_CODE_EXPLANATIONS } from "../../domain/exit-codes.ts";
import { HOUR } from "../../domain/time.ts";
import type { ExecutionFilter, StoreReads } from "../../store/contract/executions.ts";
import type { Window } from "../aggregate.ts";
import { docParam, openQuery } from "../query.ts";
import { createStats } from "../stats.ts";
import { typesAsOf } from "../app-types.ts";
import {
  CommunityRecord,
  PLATFORM_PARAM,
  REPO_PARAM,
  SLUG_PARAM,
  dashboardDays,
  goDays,
  label,
  newestOf,
  platformOf,
  repoFilters,
  type Summed,
  toCommunityRecord,
  topOf,
  windowOf,
} from "./community.ts";

/** /api/repo-slugs: 1 to 365. */
const slugDays = (n: number) => Math.min(365, Math.max(1, n));

const Count = (name: string) => t.Object({ [name]: t.String(), count: t.Integer() });
const DashboardJson = t.Object({
  total_installs: t.Integer(),
  total_all_time: t.Integer(),
  sample_size: t.Integer(),
  success_count: t.Integer(),
  failed_count: t.Integer(),
  aborted_count: t.Integer(),
  installing_count: t.Integer(),
  success_rate: t.Number({ description: "percent: success / (success + failed) * 100" }),
  top_apps: t.Array(Count("app")),
  os_distribution: t.Array(Count("os")),
  method_stats: t.Array(Count("method")),
  pve_versions: t.Array(Count("version")),
  type_stats: t.Array(Count("type")),
  error_analysis: t.Array(
    t.Object({ pattern: t.String(), count: t.Integer(), unique_apps: t.Integer(), apps: t.String() }),
  ),
  failed_apps: t.Array(
    t.Object({
      app: t.String(),
      type: t.String(),
      total_count: t.Integer(),
      failed_count: t.Integer(),
      failure_rate: t.Number(),
    }),
  ),
  daily_stats: t.Array(t.Object({ date: t.String(), success: t.Integer(), failed: t.Integer() })),
  gpu_stats: t.Array(t.Object({ vendor: t.String(), passthrough: t.String(), count: t.Integer() })),
  error_categories: t.Array(Count("category")),
  top_tools: t.Array(Count("tool")),
  top_addons: t.Array(Count("addon")),
  avg_install_duration: t.Number({
    description: "seconds: the median of the measured durations (rollups keep no sum)",
  }),
  total_tools: t.Integer(),
  total_addons: t.Integer(),
  repo_slugs: t.Array(Count("slug")),
  platform_stats: t.Array(Count("platform"), { description: "runs by platform (pve, incus), most first" }),
  recent_records: t.Array(CommunityRecord),
});

/** The original's minimum of runs for an app in the failure ranking, by window. */
const minInstalls = (days: number) => (days <= 1 ? 5 : days <= 7 ? 15 : days <= 30 ? 40 : 100);

type DashboardDeps = { store: StoreReads; clock: () => number };
const tags = ["telemetry-service compatible"];

const ExitCodesRoute = {
  response: t.Record(t.String(), t.String()),
  detail: { tags, summary: "Exit codes and what they mean (the service's reference list)" },
};

const RepoSlugsQuery = t.Object({ days: docParam("days back from today (1-365, default 30)"), repo: REPO_PARAM });
const RepoSlugsRoute = {
  query: openQuery(RepoSlugsQuery),
  response: t.Object({ repo_slugs: t.Array(Count("slug")) }),
  detail: { tags, summary: "Repositories (owner/repo) that sent reports, most first" },
};

/** Repositories (owner/repo) that sent reports, most first. */
async function repoSlugs({ store, clock }: DashboardDeps, query: Static<typeof RepoSlugsQuery>) {
  const w = windowOf(goDays(query.days, 30, slugDays), clock());
  const top = topOf(createStats(store));
  return {
    repo_slugs: (await top(repoFilters(query.repo), w, "repo_slug", 50)).map((g) => ({
      slug: g.value,
      count: g.total,
    })),
  };
}

const DashboardQuery = t.Object({
  days: docParam("days back from today (default 1: today; 0 or more than 365: 365)"),
  repo: REPO_PARAM,
  slug: SLUG_PARAM,
  platform: PLATFORM_PARAM,
});
const DashboardRoute = {
  query: openQuery(DashboardQuery),
  response: { 200: DashboardJson },
  detail: { tags, summary: "The community service's dashboard data, from rollups" },
};

type Stats = ReturnType<typeof createStats>;

/** The window's 15 most frequent failure patterns over every repo filter, with the apps they hit. */
async function errorPatterns(stats: Stats, filters: readonly ExecutionFilter[], w: Window) {
  const errors = await Promise.all(filters.map((f) => stats.errors(f, w, 15)));
  const patterns = new Map<string, { pattern: string; count: number; apps: Set<string> }>();
  for (const e of errors.flatMap((x) => x.signatures)) {
    const p = patterns.get(e.id) ?? { pattern: e.signature ?? e.id, count: 0, apps: new Set<string>() };
    p.count += e.count;
    for (const a of e.apps) p.apps.add(a);
    patterns.set(e.id, p);
  }
  return [...patterns.values()]
    .sort((a, b) => b.count - a.count)
    .slice(0, 15)
    .map((p) => ({ pattern: p.pattern, count: p.count, unique_apps: p.apps.size, apps: [...p.apps].join(", ") }));
}

/** Successes and failures per day over every repo filter. */
async function dailyStats(stats: Stats, filters: readonly ExecutionFilter[], w: Window) {
  const series = await Promise.all(filters.map((f) => stats.timeseries(f, w, "day")));
  return series[0]!.points.map((p, i) => ({
    date: new Date(p.t).toISOString().slice(0, 10),
    success: series.reduce((n, s) => n + s.points[i]!.success, 0),
    failed: series.reduce((n, s) => n + s.points[i]!.failed, 0),
  }));
}

/** The apps that fail most often among those with enough runs (the original's minimum by window), with their type. */
async function failedApps(store: StoreReads, ranking: readonly Summed[], days: number, now: number) {
  const min = minInstalls(days);
  const apps = ranking
    .filter((g) => g.total >= min && g.failed > 0)
    .map((g) => ({
      app: g.value,
      total_count: g.total,
      failed_count: g.failed,
      failure_rate: (g.failed / g.total) * 100,
    }))
    .sort((a, b) => b.failure_rate - a.failure_rate || b.failed_count - a.failed_count)
    .slice(0, 16);
  // The original ranks app and type pairs; an app keeps its type.
  const appTypes = await typesAsOf(
    store,
    apps.map((a) => a.app),
    now,
  );
  return apps.map((a) => ({ ...a, type: appTypes.get(a.app) ?? "" }));
}

/** The os dimension is "type version": the original groups by type alone (15 most first). */
function osDistribution(os: readonly Summed[]) {
  const osTypes = new Map<string, number>();
  for (const g of os) {
    const type = g.value.split(" ")[0]!;
    osTypes.set(type, (osTypes.get(type) ?? 0) + g.total);
  }
  return [...osTypes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([name, count]) => ({ os: name, count }));
}

/** The median of the measured durations, weighted by how many each repo filter measured (rollups keep no sum). */
function medianDuration(summaries: readonly { duration: { median_s: number | null; n: number } }[]) {
  const medians = summaries.map((s) => s.duration).filter((d) => d.median_s !== null && d.n > 0);
  return medians.length === 0
    ? 0
    : medians.reduce((n, d) => n + d.median_s! * d.n, 0) / medians.reduce((n, d) => n + d.n, 0);
}

/** The community service's dashboard data, from rollups. */
async function dashboard({ store, clock }: DashboardDeps, query: Static<typeof DashboardQuery>) {
  const days = goDays(query.days, 1, dashboardDays);
  const now = clock();
  const w = windowOf(days, now);
  const slug = label("slug", query.slug);
  const filters = repoFilters(query.repo, platformOf(query.platform)).map((f) => (slug ? { ...f, repoSlug: slug } : f));
  // One request's aggregates share what a scan folds (a slug rollups cannot select with another dimension).
  const stats = createStats(store, new Map());
  const top = topOf(stats);
  const span = await store.recordSpan();
  const all: Window = { from: span ? span.first - (span.first % HOUR) : 0, to: w.to };
  const [summaries, allTime] = await Promise.all([
    Promise.all(filters.map((f) => stats.summary(f, w))),
    // The all-time total ignores the platform.
    Promise.all(repoFilters(query.repo).map((f) => stats.summary(slug ? { ...f, repoSlug: slug } : f, all))),
  ]);
  const sum = (k: "total" | "success" | "failed" | "aborted" | "in_progress") =>
    summaries.reduce((n, s) => n + s[k], 0);
  const [success, failed] = [sum("success"), sum("failed")];
  // Every app once: the top 20 and the failure ranking are both cut from it.
  const [ranking, os, methods, pve, types, categories, gpus, tools, addons, slugs, platforms] = await Promise.all([
    top(filters, w, "nsapp", 1_000_000),
    top(filters, w, "os", 1_000_000),
    top(filters, w, "method", 10),
    top(filters, w, "pve_version", 15),
    top(filters, w, "type", 10),
    top(filters, w, "error_category", 1_000_000),
    top(filters, w, "gpu_vendor", 1_000_000),
    top(filters, w, "nsapp", 15, { kind: "tool" }),
    top(filters, w, "nsapp", 15, { kind: "addon" }),
    top(filters, w, "repo_slug", 20),
    top(filters, w, "platform_class", 10),
  ]);
  const [patterns, daily, failing] = await Promise.all([
    errorPatterns(stats, filters, w),
    dailyStats(stats, filters, w),
    failedApps(store, ranking, days, now),
  ]);
  // The 20 newest of the window, over every repo filter (none when the counts say there are
  // none: a filter's list would walk the window for nothing).
  const recent = sum("total") === 0 ? [] : await newestOf(store, filters, w, 20);
  const counts = <K extends string>(groups: readonly Summed[], key: K) =>
    groups.map((g) => ({ [key]: g.value, count: g.total }) as Record<K, string> & { count: number });
  return {
    total_installs: sum("total"),
    total_all_time: allTime.reduce((n, s) => n + s.total, 0),
    sample_size: sum("total"),
    success_count: success,
    failed_count: failed,
    aborted_count: sum("aborted"),
    installing_count: sum("in_progress"),
    success_rate: success + failed === 0 ? 0 : (success / (success + failed)) * 100,
    top_apps: counts(ranking.slice(0, 20), "app"),
    os_distribution: osDistribution(os),
    method_stats: counts(methods, "method"),
    pve_versions: counts(pve, "version"),
    type_stats: counts(types, "type"),
    error_analysis: patterns,
    failed_apps: failing,
    daily_stats: daily,
    gpu_stats: gpus.map((g) => ({ vendor: g.value, passthrough: "", count: g.total })),
    error_categories: counts(categories, "category"),
    top_tools: counts(tools, "tool"),
    top_addons: counts(addons, "addon"),
    avg_install_duration: Math.round(medianDuration(summaries)),
    total_tools: tools.reduce((n, g) => n + g.total, 0),
    total_addons: addons.reduce((n, g) => n + g.total, 0),
    repo_slugs: counts(slugs, "slug"),
    platform_stats: counts(platforms, "platform"),
    recent_records: recent.map(toCommunityRecord),
  };
}

/** The exit codes and what they mean (the service's reference list). */
const exitCodes = () => Object.fromEntries([...EXIT_CODE_EXPLANATIONS].map(([code, text]) => [String(code), text]));

export function communityDashboardRoutes(deps: DashboardDeps) {
  return new Elysia({ name: "telemetry-compat" })
    .get("/api/exit-codes", exitCodes, ExitCodesRoute)
    .get("/api/repo-slugs", ({ query }) => repoSlugs(deps, query), RepoSlugsRoute)
    .get("/api/dashboard", ({ query }) => dashboard(deps, query), DashboardRoute);
}
