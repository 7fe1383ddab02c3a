// The community service's per-script drill-down (community-scripts/telemetry-service, its newer
// Script Analysis page): GET /api/script-detail?app=, with the parameters, clamps and error answer
// of its Go handler (service.go). The handler's comment names what it answers (a daily series, exit
// codes, OS and platform, recent installs); its response struct is in no published version of the
// code, so the body is given in /api/new's vocabulary and shapes (docs/decisions/2026-11-27-newest-community-api.md).
import { Elysia, t } from "elysia";
import { ErrorBody, errorBody } from "../../http/errors.ts";
import type { StoreReads } from "../../store/contract/executions.ts";
import { docParam, openQuery } from "../query.ts";
import { createStats } from "../stats.ts";
import { goDays, label, windowOf } from "./community.ts";
import {
  DailyPoint,
  RecentRun,
  categoriesOf,
  dailyOf,
  exitCodes,
  filtersOf,
  groupBreakdowns,
  minRunsFor,
  outcomesOf,
  platformParam,
  readSums,
  recentOf,
  recentRun,
  repoParam,
} from "./new-dashboard-routes.ts";

const GroupStat = t.Object({
  label: t.String(),
  runs: t.Integer(),
  success: t.Integer(),
  failed: t.Integer(),
  blocked: t.Integer(),
  aborted: t.Integer(),
  unfinished: t.Integer(),
});
const ScriptDetail = t.Object({
  app: t.String(),
  days: t.Integer(),
  repo: t.String(),
  platform: t.String(),
  runs: t.Integer(),
  success: t.Integer(),
  failed: t.Integer(),
  blocked: t.Integer(),
  aborted: t.Integer(),
  unfinished: t.Integer(),
  median_duration: t.Integer({ description: "seconds, successful runs" }),
  min_runs: t.Integer(),
  daily: t.Nullable(t.Array(DailyPoint)),
  exit_codes: t.Nullable(t.Array(t.Object({ code: t.Integer(), desc: t.String(), count: t.Integer() }))),
  categories: t.Array(t.Object({ label: t.String(), count: t.Integer() })),
  by_os: t.Array(GroupStat),
  by_platform: t.Array(GroupStat),
  by_host_version: t.Array(GroupStat),
  by_type: t.Array(GroupStat),
  recent: t.Nullable(t.Array(RecentRun, { description: "the 50 newest runs of the script" })),
});

const RECENT = 50;

export function scriptDetailRoutes(deps: { store: StoreReads; clock: () => number }) {
  return new Elysia({ name: "script-detail" }).get(
    "/api/script-detail",
    async ({ query, status }) => {
      const app = label("app", query.app);
      if (app === undefined) return status(400, errorBody("invalid_field", "missing app parameter", "app"));
      // days default 30, clamped to 1-365; repo absent or "all": every repository; no slug, no type.
      const days = goDays(query.days, 30, (n) => Math.min(365, Math.max(1, n)));
      const repo = repoParam(query.repo);
      const platform = platformParam(query.platform);
      const filters = filtersOf({ repo, slug: "", platform, ctype: "" }).map((f) => ({ ...f, nsapp: app }));
      const w = windowOf(days, deps.clock());
      const stats = createStats(deps.store, new Map());
      const [{ sums, headline, medianSuccessS, failures }, daily, recent] = await Promise.all([
        readSums(stats, filters, w),
        dailyOf(stats, filters, w),
        recentOf(deps.store, filters, w, RECENT),
      ]);
      const groups = groupBreakdowns(sums, minRunsFor(days));
      return {
        app,
        days,
        repo,
        platform,
        ...outcomesOf(headline),
        median_duration: Math.round(medianSuccessS),
        min_runs: minRunsFor(days),
        daily: daily.length === 0 ? null : daily,
        exit_codes: ((codes) => (codes.length === 0 ? null : codes))(
          exitCodes(failures).map(({ code, desc, count }) => ({ code, desc, count })),
        ),
        categories: categoriesOf(sums),
        by_os: groups.by_os,
        by_platform: groups.by_platform,
        by_host_version: groups.by_host_version,
        by_type: groups.by_type,
        recent: recent.length === 0 ? null : recent.map(recentRun),
      };
    },
    {
      query: openQuery(
        t.Object({
          app: docParam("the script (nsapp), exactly; required"),
          days: docParam("days back from today, 1-365 (default 30)"),
          repo: docParam('repo_source, or absent / "all": every repository'),
          platform: docParam("pve or incus; anything else: every platform"),
        }),
      ),
      response: { 200: ScriptDetail, 400: ErrorBody },
      detail: {
        tags: ["telemetry-service compatible"],
        summary:
          "One script's drill-down: outcomes, daily series, exit codes, OS, platform, host versions, newest runs",
      },
    },
  );
}
