// What the read routes of the community's current service (community-scripts/telemetry-service)
// share: its parameters (read as its Go handlers read them), its time windows, its record, and
// breakdowns summed over its repo filters. The routes: dashboard-routes.ts (/api/dashboard,
// /api/repo-slugs, /api/exit-codes), analysis-routes.ts, new-dashboard-routes.ts and
// script-detail-routes.ts (docs/decisions/2026-11-24-telemetry-service-api.md).
import { t, type Static } from "elysia";
import type { Execution } from "../../domain/execution.ts";
import { DAY, HOUR } from "../../domain/time.ts";
import type { ExecutionFilter, StoreReads } from "../../store/contract/executions.ts";
import { platformClass, type Dimension } from "../../domain/rollup.ts";
import type { Group, Window } from "../aggregate.ts";
import { MAX_LABEL, QueryError, docParam } from "../query.ts";
import { createStats } from "../stats.ts";

/**
 * The original reads whole numbers as Go's fmt.Sscanf("%d") does (leading digits, else the
 * default) and clamps them instead of refusing; kept, as its clients rely on it.
 */
export function goDays(text: string | undefined, fallback: number, clamp: (n: number) => number): number {
  if (text === undefined) return fallback;
  const m = /^\s*([+-]?\d{1,25})/.exec(text);
  if (!m) return fallback;
  // Past a 64-bit int Sscanf fails and the default stands.
  const n = BigInt(m[1]!);
  return n > 9223372036854775807n || n < -9223372036854775808n ? fallback : clamp(Number(n));
}
/** /api/dashboard and /api/records: negative -> 1, 0 or past 365 -> 365. */
export const dashboardDays = (n: number) => (n < 0 ? 1 : n === 0 || n > 365 ? 365 : n);

/** From midnight UTC of the first of the last `days` days to the end of this hour (the original's chSinceTime). */
export function windowOf(days: number, now: number): Window {
  const today = now - (now % DAY);
  return { from: today - (days - 1) * DAY, to: now - (now % HOUR) + HOUR };
}

export function label(field: string, text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const v = text.trim();
  if (v.length > MAX_LABEL) throw new QueryError(field, `${field} must be at most ${MAX_LABEL} characters`);
  return v === "" ? undefined : v;
}

/**
 * `repo`: absent or "all" is every repo (the newest service; it used to mean ProxmoxVE);
 * ProxmoxVE also takes reports without a repo_source (clients before repo_source existed were the
 * production scripts); any other value exactly. Each filter is read on its own and the answers
 * summed. `platform` (pve or incus; anything else is every platform) narrows every one.
 */
export function repoFilters(repo: string | undefined, platform?: string): ExecutionFilter[] {
  const r = label("repo", repo) ?? "all";
  const on: ExecutionFilter = platform === "pve" || platform === "incus" ? { platformClass: platform } : {};
  if (r === "all") return [on];
  if (r === "ProxmoxVE")
    return [
      { ...on, repoSource: "ProxmoxVE" },
      { ...on, repoSource: "" },
    ];
  return [{ ...on, repoSource: r }];
}

/** `platform`: pve or incus; anything else (or none) is every platform. */
export const platformOf = (text: string | undefined): string => {
  const p = (text ?? "").trim().toLowerCase();
  return p === "pve" || p === "incus" ? p : "";
};

export interface Summed {
  value: string;
  total: number;
  success: number;
  failed: number;
  aborted: number;
  in_progress: number;
}

export const REPO_PARAM = docParam(
  'repo_source: ProxmoxVE (with reports that name none), ProxmoxVED, external; absent or "all": every repository',
);
export const PLATFORM_PARAM = docParam(
  "pve or incus (as sent, else read from the host version); anything else: every platform",
);
export const SLUG_PARAM = docParam("one repository, owner/repo");

/** Groups of several reads summed by value, largest first. */
function summed(lists: readonly Group[][]): Summed[] {
  const by = new Map<string, Summed>();
  for (const groups of lists) {
    for (const g of groups) {
      const key = g.value ?? "";
      const e = by.get(key) ?? { value: key, total: 0, success: 0, failed: 0, aborted: 0, in_progress: 0 };
      e.total += g.total;
      e.success += g.success;
      e.failed += g.failed;
      e.aborted += g.aborted;
      e.in_progress += g.in_progress;
      by.set(key, e);
    }
  }
  return [...by.values()].sort((a, b) => b.total - a.total || a.value.localeCompare(b.value));
}

type Stats = ReturnType<typeof createStats>;

/** Every group of a breakdown, largest first (what topOf sums). */
export const ALL_GROUPS = { sort: "volume", minRuns: 0, limit: 1_000_000 } as const;

/** Breakdowns of several repo filters summed by value, largest first; "" values left out, as the original does. */
export const nonEmpty = (lists: readonly Group[][], limit = Number.MAX_SAFE_INTEGER): Summed[] =>
  summed(lists)
    .filter((g) => g.value !== "")
    .slice(0, limit);

/** A breakdown over every repo filter, summed; "" values left out, as the original does. */
export function topOf(stats: Stats) {
  return async (
    filters: readonly ExecutionFilter[],
    w: Window,
    by: Dimension,
    limit: number,
    extra: ExecutionFilter = {},
  ): Promise<Summed[]> => {
    const lists = await Promise.all(
      filters.map(async (f) => (await stats.breakdown({ ...f, ...extra }, w, { by, ...ALL_GROUPS })).groups),
    );
    return nonEmpty(lists, limit);
  };
}

const IN_PROGRESS = new Set(["installing", "validation", "configuring"]);
/** The original's status: the outcome, or for a run still going the step it last reported. */
export const collapsedStatus = (e: Pick<Execution, "outcome" | "status">): string =>
  e.outcome !== "in_progress" ? e.outcome : IN_PROGRESS.has(e.status) ? e.status : "installing";

/** What the original's `status` parameter selects. */
export function statusFilter(status: string): ExecutionFilter {
  if (
    status === "success" ||
    status === "failed" ||
    status === "blocked" ||
    status === "aborted" ||
    status === "unknown"
  )
    return { outcome: status };
  if (IN_PROGRESS.has(status)) return { outcome: "in_progress", status };
  return { status };
}

/**
 * The `limit` newest executions of the window over every filter. The rollups say how many each
 * day holds, so the listing reads from the newest day with any to the day that gives `limit` (or
 * lists nothing): a filter no index serves (a platform, a repo) reads every row it passes, and
 * without that a filter matching few executions scanned the whole window (60 ms over 30 days at
 * 1M, ten times that at 10M; `/api/script-detail` with a platform filter up to 1.6 s).
 */
export async function newestOf(
  store: StoreReads,
  filters: readonly ExecutionFilter[],
  w: Window,
  limit: number,
  extra: ExecutionFilter = {},
): Promise<Execution[]> {
  const stats = createStats(store);
  const lists = await Promise.all(
    filters.map(async (f) => {
      const filter = { ...f, ...extra, from: w.from, to: w.to };
      const { source, points } = await stats.timeseries(filter, w, "day");
      let from = w.from;
      let to = w.to;
      if (source === "rollup") {
        let found = 0;
        const days = points.filter((p) => p.total > 0).reverse();
        if (days.length === 0) return [];
        to = Math.min(w.to, days[0]!.t + DAY);
        from = days[days.length - 1]!.t;
        for (const p of days) {
          found += p.total;
          if (found >= limit) {
            from = p.t;
            break;
          }
        }
      }
      return (await store.listExecutions({ ...filter, from: Math.max(w.from, from), to }, { limit })).rows;
    }),
  );
  return lists
    .flat()
    .sort((a, b) => b.createdAt - a.createdAt)
    .slice(0, limit);
}

/** A time as ClickHouse's toString prints it: "2026-11-25 10:00:00.000" (UTC). */
export const chTime = (t: number): string => new Date(t).toISOString().replace("T", " ").replace("Z", "");

/** A record as the original lists it: Go's omitempty leaves zero values out; `created` as ClickHouse prints it. */
export const CommunityRecord = t.Object({
  random_id: t.String(),
  execution_id: t.Optional(t.String()),
  type: t.String(),
  nsapp: t.String(),
  status: t.String(),
  ct_type: t.Optional(t.Integer()),
  disk_size: t.Optional(t.Number()),
  core_count: t.Optional(t.Integer()),
  ram_size: t.Optional(t.Integer()),
  os_type: t.Optional(t.String()),
  os_version: t.Optional(t.String()),
  pve_version: t.Optional(t.String()),
  method: t.Optional(t.String()),
  error: t.Optional(t.String()),
  exit_code: t.Optional(t.Integer()),
  gpu_vendor: t.Optional(t.String()),
  gpu_model: t.Optional(t.String()),
  gpu_passthrough: t.Optional(t.String()),
  cpu_vendor: t.Optional(t.String()),
  cpu_model: t.Optional(t.String()),
  ram_speed: t.Optional(t.String()),
  install_duration: t.Optional(t.Integer()),
  error_category: t.Optional(t.String()),
  repo_source: t.Optional(t.String()),
  repo_slug: t.Optional(t.String()),
  has_arm: t.Optional(t.Boolean()),
  platform: t.Optional(t.String({ description: "pve or incus: as sent, else read from the host version" })),
  pipeline: t.Optional(
    t.String({ description: 'JSON: the steps of the run, [{"s": status, "t": time}, ...]; the first is its start' }),
  ),
  payload_version: t.Optional(
    t.Integer({ description: "2 and up; left out for clients that sent none (v1, /upload)" }),
  ),
  arch: t.Optional(t.String()),
  failed_command: t.Optional(t.String()),
  failed_line: t.Optional(t.Integer()),
  kernel_version: t.Optional(t.String()),
  app_version: t.Optional(t.String()),
  created: t.String({ description: "when the run last reported: its end, for a run that ended" }),
});
type CommunityRecord = Static<typeof CommunityRecord>;

/** The steps a run went through, as the original's installation log shows them. */
function pipelineOf(e: Execution): string | undefined {
  const steps: { s: string; t: string }[] = [];
  const step = (s: string, at: number | null) => at !== null && steps.push({ s, t: chTime(at) });
  step("installing", e.installingAt);
  step("validation", e.validationAt);
  step("configuring", e.configuringAt);
  if (e.outcome !== "in_progress") step(collapsedStatus(e), e.finishedAt);
  return steps.length === 0 ? undefined : JSON.stringify(steps);
}

/**
 * One record per execution, as the newest service collapses a run's events: zero and empty values
 * left out (Go's omitempty), `created` when the run last reported (its end, once it ended; its
 * start is the pipeline's first step).
 */
export function toCommunityRecord(e: Execution): CommunityRecord {
  const optional = {
    execution_id: e.executionId,
    ct_type: e.ctType,
    disk_size: e.diskSize,
    core_count: e.coreCount,
    ram_size: e.ramSize,
    os_type: e.osType,
    os_version: e.osVersion,
    pve_version: e.pveVersion,
    method: e.method,
    error: e.error,
    exit_code: e.exitCode,
    gpu_vendor: e.gpuVendor,
    gpu_model: e.gpuModel,
    gpu_passthrough: e.gpuPassthrough ?? e.hostGpu,
    cpu_vendor: e.cpuVendor,
    cpu_model: e.cpuModel,
    ram_speed: e.ramSpeed,
    install_duration: e.installDuration,
    error_category: e.errorCategory,
    repo_source: e.repoSource,
    repo_slug: e.repoSlug,
    has_arm: e.hasArm,
    platform: platformClass(e),
    pipeline: pipelineOf(e),
    // v1 clients sent no payload_version (stored as 1): left out, as there.
    payload_version: e.payloadVersion !== null && e.payloadVersion >= 2 ? e.payloadVersion : null,
    arch: e.arch,
    failed_command: e.failedCommand,
    failed_line: e.failedLine,
    kernel_version: e.kernelVersion,
    app_version: e.appVersion,
  };
  const kept = Object.fromEntries(
    Object.entries(optional).filter(([, v]) => v !== undefined && v !== null && v !== "" && v !== 0 && v !== false),
  );
  return {
    random_id: e.randomId,
    type: e.type,
    nsapp: e.nsapp ?? "",
    status: collapsedStatus(e),
    ...kept,
    created: chTime(e.finishedAt ?? e.updatedAt),
  };
}
