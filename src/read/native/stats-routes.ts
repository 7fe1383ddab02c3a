// Read API: aggregates over rollups (/api/stats/*).
import { Elysia, t, type Static } from "elysia";
import { ErrorBody } from "../../http/errors.ts";
import type { StoreReads } from "../../store/contract/executions.ts";
import {
  FilterQuery,
  QueryError,
  docParam,
  intParam,
  oneOf,
  readQuery,
  resolveWindow,
  strictQuery,
  windowJson,
} from "../query.ts";
import { BREAKDOWN_DIMENSIONS } from "../../domain/rollup.ts";
import { createStats, type Stats } from "../stats.ts";
import { INTERVALS, pointCount } from "../aggregate.ts";
import { CONFIDENCE, driverDimensions, type Driver } from "../../domain/drivers.ts";
import { DAY, isoTimes } from "../../domain/time.ts";

/** Default window of the aggregate endpoints when none is given. */
const DEFAULT_STATS_DAYS = 30;
const MAX_HOURLY_DAYS = 31;
/** Most points a timeseries answers: a day each over ten years (3,661) fits, an hour each over 31 days (744) too. */
const MAX_POINTS = 4000;
/** Most groups or signatures an aggregate lists. */
const MAX_GROUPS = 1000;
const SORTS = ["volume", "failure_rate"] as const;
const MAX_MIN_RUNS = 1_000_000_000;
const MAX_DRIVERS = 100;
/** Filters that describe the outcome: with one, every run compared would be a failure (or none). */
const OUTCOME_FILTERS = ["outcome", "status", "exit_code", "error_category"] as const;

/** A required `by`. */
function dimensionParam(v: string | undefined) {
  const by = oneOf("by", v, BREAKDOWN_DIMENSIONS);
  if (by === undefined) throw new QueryError("by", `by is required: one of ${BREAKDOWN_DIMENSIONS.join(", ")}`);
  return by;
}

const WindowJson = t.Object({ from: t.String({ format: "date-time" }), to: t.String({ format: "date-time" }) });
const Source = t.Union([t.Literal("rollup"), t.Literal("scan")], {
  description:
    "rollup: answered from rollup tables; scan: this filter combination needed a scan of the window's records (slower)",
});
const Rate = t.Nullable(
  t.Number({
    description: "success / (success + failed); null when neither occurred (blocked and aborted runs are neither)",
  }),
);
const OutcomeCountsSchema = {
  total: t.Integer(),
  success: t.Integer(),
  failed: t.Integer(),
  blocked: t.Integer({ description: "ended before the script ran: the host would not provide a working container" }),
  aborted: t.Integer(),
  in_progress: t.Integer(),
  unknown: t.Integer(),
  success_rate: Rate,
};
const Duration = t.Object({
  n: t.Integer({ description: "installs with a known duration" }),
  median_s: t.Nullable(t.Number()),
  p90_s: t.Nullable(t.Number()),
});

const Retries = t.Nullable(
  t.Object(
    {
      installs: t.Integer({ description: "installs: their first executions" }),
      executions: t.Integer(),
      executions_per_install: t.Nullable(t.Number()),
      retry_rate: t.Nullable(t.Number({ description: "share of installs run again at least once" })),
      retries: t.Integer({ description: "executions after an install's first" }),
      rescued: t.Integer({ description: "retries that succeeded: failed installs a retry rescued" }),
    },
    { description: "null when a dimension filter (status, exit_code, ...) applies" },
  ),
);
const Summary = t.Object(
  { window: WindowJson, source: Source, ...OutcomeCountsSchema, duration: Duration, retries: Retries },
  { title: "Summary" },
);
const Breakdown = t.Object(
  {
    window: WindowJson,
    source: Source,
    by: t.String(),
    total_groups: t.Integer(),
    groups: t.Array(t.Object({ value: t.Nullable(t.String()), ...OutcomeCountsSchema, failure_rate: Rate })),
  },
  { title: "Breakdown" },
);
const Timeseries = t.Object(
  {
    window: WindowJson,
    source: Source,
    interval: t.String(),
    // The points' times without `format`: checking 744 of them in each answer as dates was ~12 % of an
    // hourly series' CPU; isoTimes writes them as Date#toISOString does (its unit test).
    points: t.Array(
      t.Object({
        t: t.String({ description: "the point's start, an ISO 8601 UTC time (2026-11-28T05:00:00.000Z)" }),
        ...OutcomeCountsSchema,
      }),
    ),
  },
  { title: "Timeseries" },
);
const Errors = t.Object(
  {
    window: WindowJson,
    source: Source,
    total_failed: t.Integer({ description: "failed installs with an error text in the window" }),
    total_signatures: t.Integer(),
    signatures: t.Array(
      t.Object({
        id: t.String(),
        signature: t.Nullable(
          t.String({ description: "the error text with numbers, paths, ids and addresses normalized" }),
        ),
        count: t.Integer(),
        share: t.Number(),
        apps: t.Array(t.String(), { description: "apps that have ever failed with this signature" }),
        first_seen: t.Nullable(t.String({ description: "an ISO 8601 UTC time (2026-11-28T05:00:00.000Z)" })),
        last_seen: t.Nullable(t.String({ description: "an ISO 8601 UTC time" })),
        example: t.Nullable(t.String()),
        issue: t.Nullable(
          t.Object(
            { tracker: t.String(), repo: t.String(), number: t.Integer(), url: t.String() },
            {
              description: "the tracker issue this signature is linked to (admin: POST /api/admin/issues/{signature})",
            },
          ),
        ),
      }),
    ),
  },
  { title: "ErrorSignatures" },
);
const Share = (description: string) => t.Number({ description });
const Drivers = t.Object(
  {
    window: WindowJson,
    source: Source,
    failed: t.Integer({ description: "failed runs in the window" }),
    runs: t.Integer({
      description:
        "finished runs in the window: success + failed (blocked, aborted, unknown and running ones are neither)",
    }),
    failure_rate: t.Nullable(t.Number({ description: "failed / runs; null when no run finished" })),
    min_runs: t.Integer({ description: "a value is compared only with at least this many runs" }),
    confidence: t.Number({
      description: "family confidence of the intervals, adjusted (Bonferroni) for every value compared",
    }),
    compared: t.Integer({ description: "values compared (enough runs with the value and without it)" }),
    z: t.Number({ description: "the normal quantile every interval was computed with" }),
    alpha: t.Number({ description: "a value is listed when its p_value is below this: (1 - confidence) / compared" }),
    total_drivers: t.Integer(),
    drivers: t.Array(
      t.Object({
        dimension: t.String({ description: `${driverDimensions(false).join(", ")}; app_version within one app` }),
        value: t.String(),
        failed: t.Integer(),
        runs: t.Integer(),
        failure_rate: Share("failed / runs of this value"),
        failure_rate_low: Share("Wilson score interval of failure_rate, lower bound"),
        failure_rate_high: Share("upper bound"),
        elsewhere: t.Object(
          { failed: t.Integer(), runs: t.Integer(), failure_rate: t.Number() },
          { description: "every other finished run of the window" },
        ),
        share_of_failed: Share("this value's share of the window's failed runs"),
        share_of_runs: Share("this value's share of the window's runs"),
        lift: Share("failure_rate / the window's failure rate (= share_of_failed / share_of_runs)"),
        difference: Share("failure_rate - elsewhere.failure_rate"),
        difference_low: Share("Newcombe interval of difference, lower bound; drivers are sorted by it"),
        difference_high: Share("upper bound"),
        p_value: t.Number({
          description: "Fisher's exact test, one-sided (its runs fail more than the rest); 3 significant digits",
        }),
      }),
    ),
  },
  { title: "FailureDrivers" },
);
const TopWindow = t.Object({
  window: WindowJson,
  total: t.Integer(),
  apps: t.Array(t.Object({ nsapp: t.Nullable(t.String()), count: t.Integer(), percent: t.Number() })),
});
const TopApps = t.Object({ "30d": TopWindow, "90d": TopWindow, "365d": TopWindow }, { title: "TopApps" });

// Response shapes, for typed clients (the dashboard).
export type SummaryResponse = Static<typeof Summary>;
export type BreakdownResponse = Static<typeof Breakdown>;
export type TimeseriesResponse = Static<typeof Timeseries>;
export type ErrorsResponse = Static<typeof Errors>;
export type DriversResponse = Static<typeof Drivers>;

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;

function driverJson(d: Driver) {
  return {
    dimension: d.dimension,
    value: d.value,
    failed: d.failed,
    runs: d.runs,
    failure_rate: round4(d.failureRate),
    failure_rate_low: round4(d.failureRateInterval[0]),
    failure_rate_high: round4(d.failureRateInterval[1]),
    elsewhere: { failed: d.elsewhere.failed, runs: d.elsewhere.runs, failure_rate: round4(d.elsewhere.failureRate) },
    share_of_failed: round4(d.shareOfFailed),
    share_of_runs: round4(d.shareOfRuns),
    lift: round4(d.lift),
    difference: round4(d.difference),
    difference_low: round4(d.differenceInterval[0]),
    difference_high: round4(d.differenceInterval[1]),
    p_value: Number(d.pValue.toPrecision(3)),
  };
}

/** What the handlers work with: the aggregates over one store, and the clock windows end at. */
interface StatsContext {
  stats: Stats;
  clock: () => number;
}

const tags = ["installs"];

/** The window (default: the last 30 days) and filters of an aggregate, checked before any work. */
function statsQuery(ctx: StatsContext, q: FilterQuery) {
  const { window, filter } = readQuery(q, ctx.clock(), DEFAULT_STATS_DAYS);
  return { w: window!, filter };
}

const SummaryRoute = {
  ...strictQuery(FilterQuery),
  response: { 200: Summary, 400: ErrorBody },
  detail: {
    tags,
    summary: "Totals per outcome, success rate, durations",
    description: `Default window: the last ${DEFAULT_STATS_DAYS} days. Durations are of successful installs, or of the filtered outcome.`,
  },
};

async function summary(ctx: StatsContext, query: FilterQuery) {
  const { w, filter } = statsQuery(ctx, query);
  return { window: windowJson(w), ...(await ctx.stats.summary(filter, w)) };
}

const BreakdownQuery = t.Composite([
  FilterQuery,
  t.Object({
    by: t.String({ description: "the dimension to group by", enum: [...BREAKDOWN_DIMENSIONS] }),
    sort: docParam("default volume", SORTS),
    min_runs: docParam(
      `failure_rate ranking: groups with fewer finished (success + failed) installs are left out; a whole number from 0 to ${MAX_MIN_RUNS}, default 10`,
    ),
    limit: docParam(`groups listed, a whole number from 1 to ${MAX_GROUPS}; default 50`),
  }),
]);
const BreakdownRoute = {
  ...strictQuery(BreakdownQuery),
  response: { 200: Breakdown, 400: ErrorBody },
  detail: {
    tags,
    summary: "Totals and outcomes per group",
    description: "os groups by os_type and os_version together.",
  },
};

async function breakdown(ctx: StatsContext, query: Static<typeof BreakdownQuery>) {
  const by = dimensionParam(query.by);
  const options = {
    by,
    sort: oneOf("sort", query.sort, SORTS) ?? "volume",
    minRuns: intParam("min_runs", query.min_runs, 0, MAX_MIN_RUNS) ?? 10,
    limit: intParam("limit", query.limit, 1, MAX_GROUPS) ?? 50,
  };
  const { w, filter } = statsQuery(ctx, query);
  return { window: windowJson(w), by, ...(await ctx.stats.breakdown(filter, w, options)) };
}

const TimeseriesQuery = t.Composite([
  FilterQuery,
  t.Object({
    interval: docParam(
      `default day; weeks start on Monday (UTC); at most ${MAX_POINTS} points, hourly over at most ${MAX_HOURLY_DAYS} days`,
      INTERVALS,
    ),
  }),
]);
const TimeseriesRoute = {
  ...strictQuery(TimeseriesQuery),
  response: { 200: Timeseries, 400: ErrorBody },
  detail: { tags, summary: "Installs over time per outcome, zero-filled" },
};

async function timeseries(ctx: StatsContext, query: Static<typeof TimeseriesQuery>) {
  const interval = oneOf("interval", query.interval, INTERVALS) ?? "day";
  const { w, filter } = statsQuery(ctx, query);
  // The points are zero-filled: their number is checked before any is made.
  if (interval === "hour" && w.to - w.from > MAX_HOURLY_DAYS * DAY)
    throw new QueryError("interval", `hourly points cover at most ${MAX_HOURLY_DAYS} days; use day or week`);
  const n = pointCount(w, interval);
  if (n > MAX_POINTS)
    throw new QueryError(
      "interval",
      `a timeseries has at most ${MAX_POINTS} points; interval=${interval} over this window makes ${n}: use week or a shorter window`,
    );
  const { source, points } = await ctx.stats.timeseries(filter, w, interval);
  const times = isoTimes(points.map((p) => p.t));
  return {
    window: windowJson(w),
    source,
    interval,
    points: points.map((p, i) => ({ ...p, t: times[i]! })),
  };
}

const ErrorsQuery = t.Composite([
  FilterQuery,
  t.Object({ limit: docParam(`signatures listed, a whole number from 1 to ${MAX_GROUPS}; default 50`) }),
]);
const ErrorsRoute = {
  ...strictQuery(ErrorsQuery),
  response: { 200: Errors, 400: ErrorBody },
  detail: {
    tags,
    summary: "Failed installs grouped by error signature",
    description:
      "Counts are within the window; apps, first_seen, last_seen and example are what is known of the signature across all time.",
  },
};

async function errors(ctx: StatsContext, query: Static<typeof ErrorsQuery>) {
  const limit = intParam("limit", query.limit, 1, MAX_GROUPS) ?? 50;
  const { w, filter } = statsQuery(ctx, query);
  return { window: windowJson(w), ...(await ctx.stats.errors(filter, w, limit)) };
}

const DriversQuery = t.Composite([
  FilterQuery,
  t.Object({
    min_runs: docParam(
      `a value is compared only when it has at least this many finished runs; a whole number from 1 to ${MAX_MIN_RUNS}, default 20`,
    ),
    limit: docParam(`drivers listed, a whole number from 1 to ${MAX_DRIVERS}; default 10`),
  }),
]);
const DriversRoute = {
  ...strictQuery(DriversQuery),
  response: { 200: Drivers, 400: ErrorBody },
  detail: {
    tags,
    summary: "Why runs fail: dimension values over-represented among failures",
    description:
      "Each value of the host, OS, kernel, hardware, method, repo and attempt dimensions (the app's version within one app) with at least min_runs finished runs is compared with every other finished run of the window. Listed: values whose runs fail more by Fisher's exact test, one-sided, below 0.05 divided by the number of values compared (Bonferroni); sorted by the lower bound of the difference of failure rates (Newcombe's score interval at the same adjusted confidence). Runs are success + failed. Filters on the outcome (outcome, status, exit_code, error_category) are refused.",
  },
};

async function drivers(ctx: StatsContext, query: Static<typeof DriversQuery>) {
  const minRuns = intParam("min_runs", query.min_runs, 1, MAX_MIN_RUNS) ?? 20;
  const limit = intParam("limit", query.limit, 1, MAX_DRIVERS) ?? 10;
  const { w, filter } = statsQuery(ctx, query);
  for (const field of OUTCOME_FILTERS) {
    if (query[field] !== undefined)
      throw new QueryError(
        field,
        `drivers compare the failed runs of the window with all its runs: a filter on the outcome (${field}) leaves nothing to compare; leave it out`,
      );
  }
  const d = await ctx.stats.drivers(filter, w, minRuns);
  return {
    window: windowJson(w),
    source: d.source,
    failed: d.failed,
    runs: d.runs,
    failure_rate: d.runs === 0 ? null : round4(d.failed / d.runs),
    min_runs: minRuns,
    confidence: CONFIDENCE,
    compared: d.compared,
    z: round4(d.z),
    alpha: Number(d.alpha.toPrecision(3)),
    total_drivers: d.drivers.length,
    drivers: d.drivers.slice(0, limit).map(driverJson),
  };
}

const TopAppsQuery = t.Object({
  limit: docParam(`apps per window, a whole number from 1 to ${MAX_GROUPS}; default 20`),
});
const TopAppsRoute = {
  ...strictQuery(TopAppsQuery),
  response: { 200: TopApps, 400: ErrorBody },
  detail: {
    tags,
    summary: "Most installed apps over 30, 90 and 365 days",
    description: "Counts are installs started in the window; percent of all installs in it.",
  },
};

/** The most installed apps of the last `days` days ending `now`, and their share of every install. */
async function topAppsOf(ctx: StatsContext, days: number, now: number, limit: number) {
  const w = resolveWindow({ days }, now, null)!;
  // Every group, once: the total is their sum, so the window is read once.
  const every = (
    await ctx.stats.breakdown({}, w, { by: "nsapp", sort: "volume", minRuns: 0, limit: Number.MAX_SAFE_INTEGER })
  ).groups;
  const all = every.reduce((sum, g) => sum + g.total, 0);
  const groups = every.slice(0, limit);
  return {
    window: windowJson(w),
    total: all,
    apps: groups.map((g) => ({
      nsapp: g.value,
      count: g.total,
      percent: all === 0 ? 0 : Math.round((g.total / all) * 10_000) / 100,
    })),
  };
}

async function topApps(ctx: StatsContext, query: Static<typeof TopAppsQuery>) {
  const limit = intParam("limit", query.limit, 1, MAX_GROUPS) ?? 20;
  const now = ctx.clock();
  const [d30, d90, d365] = await Promise.all([
    topAppsOf(ctx, 30, now, limit),
    topAppsOf(ctx, 90, now, limit),
    topAppsOf(ctx, 365, now, limit),
  ]);
  return { "30d": d30, "90d": d90, "365d": d365 };
}

export function statsRoutes(deps: { store: StoreReads; clock: () => number }) {
  const ctx: StatsContext = { stats: createStats(deps.store), clock: deps.clock };
  return new Elysia({ name: "read" })
    .get("/api/stats/summary", ({ query }) => summary(ctx, query), SummaryRoute)
    .get("/api/stats/breakdown", ({ query }) => breakdown(ctx, query), BreakdownRoute)
    .get("/api/stats/timeseries", ({ query }) => timeseries(ctx, query), TimeseriesRoute)
    .get("/api/stats/errors", ({ query }) => errors(ctx, query), ErrorsRoute)
    .get("/api/stats/drivers", ({ query }) => drivers(ctx, query), DriversRoute)
    .get("/api/stats/top-apps", ({ query }) => topApps(ctx, query), TopAppsRoute);
}
