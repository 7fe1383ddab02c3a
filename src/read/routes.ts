// Read API: install listing and records, aggregates over rollups.
import { Elysia, t, type Static } from "elysia";
import { ErrorBody, errorBody } from "../http/errors.ts";
import type { StoreReads } from "../store/contract.ts";
import { ExecutionRecord, InstallDetail, toRecord } from "./record.ts";
import { FilterQuery, MAX_LABEL, QueryError, decodeCursor, docParam, encodeCursor, intParam, oneOf, readQuery, resolveWindow, strictQuery, textParam, windowJson } from "./query.ts";
import { BREAKDOWN_DIMENSIONS } from "../domain/rollup.ts";
import { signaturePage } from "./signature-filter.ts";
import { createStats } from "./stats.ts";
import { INTERVALS, pointCount } from "./aggregate.ts";
import { DAY } from "../domain/time.ts";

/** Default window of the aggregate endpoints when none is given. */
const DEFAULT_STATS_DAYS = 30;
const MAX_HOURLY_DAYS = 31;
/** Most points a timeseries answers: a day each over ten years (3,661) fits, an hour each over 31 days (744) too. */
const MAX_POINTS = 4000;
/** Installs one signature-filtered page may read (see signaturePage). */
const SIGNATURE_SCAN = 20_000;
/** Page size of /api/installs, and most groups or signatures an aggregate lists. */
const MAX_PAGE = 500;
const MAX_GROUPS = 1000;
const ORDERS = ["newest", "oldest"] as const;
const SORTS = ["volume", "failure_rate"] as const;
const MAX_MIN_RUNS = 1_000_000_000;

/** An error signature id, as /api/stats/errors lists them. */
function signatureParam(v: string | undefined): string | undefined {
  if (v !== undefined && !/^[0-9a-f]{16}$/.test(v)) throw new QueryError("signature", "signature must be 16 lowercase hex digits, an id from /api/stats/errors");
  return v;
}

/** A required `by`. */
function dimensionParam(v: string | undefined) {
  const by = oneOf("by", v, BREAKDOWN_DIMENSIONS);
  if (by === undefined) throw new QueryError("by", `by is required: one of ${BREAKDOWN_DIMENSIONS.join(", ")}`);
  return by;
}

const WindowJson = t.Object({ from: t.String({ format: "date-time" }), to: t.String({ format: "date-time" }) });
const Source = t.Union([t.Literal("rollup"), t.Literal("scan")], {
  description: "rollup: answered from rollup tables; scan: this filter combination needed a scan of the window's records (slower)",
});
const Rate = t.Nullable(t.Number({ description: "success / (success + failed); null when neither occurred" }));
const OutcomeCountsSchema = {
  total: t.Integer(),
  success: t.Integer(),
  failed: t.Integer(),
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
const Summary = t.Object({ window: WindowJson, source: Source, ...OutcomeCountsSchema, duration: Duration, retries: Retries }, { title: "Summary" });
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
    points: t.Array(t.Object({ t: t.String({ format: "date-time" }), ...OutcomeCountsSchema })),
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
        signature: t.Nullable(t.String({ description: "the error text with numbers, paths, ids and addresses normalized" })),
        count: t.Integer(),
        share: t.Number(),
        apps: t.Array(t.String(), { description: "apps that have ever failed with this signature" }),
        first_seen: t.Nullable(t.String({ format: "date-time" })),
        last_seen: t.Nullable(t.String({ format: "date-time" })),
        example: t.Nullable(t.String()),
      }),
    ),
  },
  { title: "ErrorSignatures" },
);
const TopWindow = t.Object({
  window: WindowJson,
  total: t.Integer(),
  apps: t.Array(t.Object({ nsapp: t.Nullable(t.String()), count: t.Integer(), percent: t.Number() })),
});
const TopApps = t.Object({ "30d": TopWindow, "90d": TopWindow, "365d": TopWindow }, { title: "TopApps" });
const InstallPage = t.Object({ installs: t.Array(ExecutionRecord), next_cursor: t.Nullable(t.String()) }, { title: "InstallPage" });


// Response shapes, for typed clients (the dashboard).
export type SummaryResponse = Static<typeof Summary>;
export type BreakdownResponse = Static<typeof Breakdown>;
export type TimeseriesResponse = Static<typeof Timeseries>;
export type ErrorsResponse = Static<typeof Errors>;
export type InstallPageResponse = Static<typeof InstallPage>;

export function readRoutes(deps: { store: StoreReads; clock: () => number }) {
  const { store, clock } = deps;
  const stats = createStats(store);
  /** The window (default: the last 30 days) and filters of an aggregate, checked before any work. */
  const statsQuery = (q: FilterQuery) => {
    const { window, filter } = readQuery(q, clock(), DEFAULT_STATS_DAYS);
    return { w: window!, filter };
  };
  const tags = ["installs"];

  return new Elysia({ name: "read" })
    .get(
      "/api/installs",
      async ({ query }) => {
        const { filter } = readQuery(query, clock(), null);
        const limit = intParam("limit", query.limit, 1, MAX_PAGE) ?? 50;
        const order = oneOf("order", query.order, ORDERS) ?? "newest";
        const after = decodeCursor(query.cursor);
        const signature = signatureParam(query.signature);
        const page = await (
          signature === undefined
            ? store.listExecutions(filter, { limit, after, order })
            : signaturePage((a, n) => store.listExecutions({ ...filter, outcome: "failed" }, { limit: n, after: a, order }), signature, limit, after, SIGNATURE_SCAN));
        return { installs: page.rows.map(toRecord), next_cursor: page.next ? encodeCursor(page.next) : null };
      },
      {
        ...strictQuery(t.Composite([
          FilterQuery,
          t.Object({
            limit: docParam(`page size, a whole number from 1 to ${MAX_PAGE}; default 50`),
            cursor: docParam("next_cursor of the previous page"),
            order: docParam("default newest", ORDERS),
            signature: docParam(
              `only failed installs with this error signature (an id from /api/stats/errors, 16 hex digits); a page reads at most ${SIGNATURE_SCAN} installs, so it may hold fewer rows than limit while next_cursor goes on`,
            ),
          }),
        ])),
        response: { 200: InstallPage, 400: ErrorBody },
        detail: { tags, summary: "List installs, newest first", description: "All filters combine; no window means all time. Pages by keyset cursor, equally fast at any depth, newest or oldest first." },
      },
    )
    .get(
      "/api/installs/:random_id",
      async ({ params, status }) => {
        textParam("random_id", params.random_id, MAX_LABEL);
        const rows = await store.getExecutions(params.random_id);
        const latest = rows.at(-1);
        if (!latest) return status(404, errorBody("not_found", `no install with random_id ${params.random_id}`, "random_id"));
        const executions = rows.map(toRecord);
        return status(200, { ...executions.at(-1)!, executions });
      },
      {
        params: t.Object({ random_id: t.String({ description: `1-${MAX_LABEL} characters` }) }),
        response: { 200: InstallDetail, 400: ErrorBody, 404: ErrorBody },
        detail: { tags, summary: "One install by random_id: its latest execution, and all of them with their timelines" },
      },
    )
    .get(
      "/api/stats/summary",
      async ({ query }) => {
        const { w, filter } = statsQuery(query);
        return { window: windowJson(w), ...(await stats.summary(filter, w)) };
      },
      {
        ...strictQuery(FilterQuery),
        response: { 200: Summary, 400: ErrorBody },
        detail: { tags, summary: "Totals per outcome, success rate, durations", description: `Default window: the last ${DEFAULT_STATS_DAYS} days. Durations are of successful installs, or of the filtered outcome.` },
      },
    )
    .get(
      "/api/stats/breakdown",
      async ({ query }) => {
        const by = dimensionParam(query.by);
        const options = {
          by,
          sort: oneOf("sort", query.sort, SORTS) ?? "volume",
          minRuns: intParam("min_runs", query.min_runs, 0, MAX_MIN_RUNS) ?? 10,
          limit: intParam("limit", query.limit, 1, MAX_GROUPS) ?? 50,
        };
        const { w, filter } = statsQuery(query);
        return { window: windowJson(w), by, ...(await stats.breakdown(filter, w, options)) };
      },
      {
        ...strictQuery(t.Composite([
          FilterQuery,
          t.Object({
            by: t.String({ description: "the dimension to group by", enum: [...BREAKDOWN_DIMENSIONS] }),
            sort: docParam("default volume", SORTS),
            min_runs: docParam(`failure_rate ranking: groups with fewer finished (success + failed) installs are left out; a whole number from 0 to ${MAX_MIN_RUNS}, default 10`),
            limit: docParam(`groups listed, a whole number from 1 to ${MAX_GROUPS}; default 50`),
          }),
        ])),
        response: { 200: Breakdown, 400: ErrorBody },
        detail: { tags, summary: "Totals and outcomes per group", description: "os groups by os_type and os_version together." },
      },
    )
    .get(
      "/api/stats/timeseries",
      async ({ query }) => {
        const interval = oneOf("interval", query.interval, INTERVALS) ?? "day";
        const { w, filter } = statsQuery(query);
        // The points are zero-filled: their number is checked before any is made.
        if (interval === "hour" && w.to - w.from > MAX_HOURLY_DAYS * DAY) throw new QueryError("interval", `hourly points cover at most ${MAX_HOURLY_DAYS} days; use day or week`);
        const n = pointCount(w, interval);
        if (n > MAX_POINTS) throw new QueryError("interval", `a timeseries has at most ${MAX_POINTS} points; interval=${interval} over this window makes ${n}: use week or a shorter window`);
        const { source, points } = await stats.timeseries(filter, w, interval);
        return { window: windowJson(w), source, interval, points: points.map((p) => ({ ...p, t: new Date(p.t).toISOString() })) };
      },
      {
        ...strictQuery(t.Composite([FilterQuery, t.Object({ interval: docParam(`default day; weeks start on Monday (UTC); at most ${MAX_POINTS} points, hourly over at most ${MAX_HOURLY_DAYS} days`, INTERVALS) })])),
        response: { 200: Timeseries, 400: ErrorBody },
        detail: { tags, summary: "Installs over time per outcome, zero-filled" },
      },
    )
    .get(
      "/api/stats/errors",
      async ({ query }) => {
        const limit = intParam("limit", query.limit, 1, MAX_GROUPS) ?? 50;
        const { w, filter } = statsQuery(query);
        return { window: windowJson(w), ...(await stats.errors(filter, w, limit)) };
      },
      {
        ...strictQuery(t.Composite([FilterQuery, t.Object({ limit: docParam(`signatures listed, a whole number from 1 to ${MAX_GROUPS}; default 50`) })])),
        response: { 200: Errors, 400: ErrorBody },
        detail: { tags, summary: "Failed installs grouped by error signature", description: "Counts are within the window; apps, first_seen, last_seen and example are what is known of the signature across all time." },
      },
    )
    .get(
      "/api/stats/top-apps",
      async ({ query }) => {
        const limit = intParam("limit", query.limit, 1, MAX_GROUPS) ?? 20;
        const now = clock();
        const window = async (days: number) => {
          const w = resolveWindow({ days }, now, null)!;
          // Every group, once: the total is their sum, so the window is read once.
          const every = (await stats.breakdown({}, w, { by: "nsapp", sort: "volume", minRuns: 0, limit: Number.MAX_SAFE_INTEGER })).groups;
          const all = every.reduce((sum, g) => sum + g.total, 0);
          const groups = every.slice(0, limit);
          return {
            window: windowJson(w),
            total: all,
            apps: groups.map((g) => ({ nsapp: g.value, count: g.total, percent: all === 0 ? 0 : Math.round((g.total / all) * 10_000) / 100 })),
          };
        };
        const [d30, d90, d365] = await Promise.all([window(30), window(90), window(365)]);
        return { "30d": d30, "90d": d90, "365d": d365 };
      },
      {
        ...strictQuery(t.Object({ limit: docParam(`apps per window, a whole number from 1 to ${MAX_GROUPS}; default 20`) })),
        response: { 200: TopApps, 400: ErrorBody },
        detail: { tags, summary: "Most installed apps over 30, 90 and 365 days", description: "Counts are installs started in the window; percent of all installs in it." },
      },
    );
}
