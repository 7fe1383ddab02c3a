// The community service's consolidated dashboard (community-scripts/telemetry-service, its page
// /new): GET /api/new, one answer for the whole page, with the parameters, clamps and response
// shape its Go code gives it (newdash.go, service.go), answered from rollups. Every number counts
// runs (executions), as there; "unfinished" is a run still going or ended unknown. What can only
// be counted differently here is in docs/api.md#the-community-services-newest-read-api.
import { Elysia, t, type Static } from "elysia";
import type { Execution } from "../../domain/execution.ts";
import { explainExitCode } from "../../domain/exit-codes.ts";
import { platformClass, zeroCounts, type Counts, type Dimension } from "../../domain/rollup.ts";
import { DAY, HOUR, MINUTE } from "../../domain/time.ts";
import type { ExecutionFilter, StoreReads } from "../../store/contract/executions.ts";
import { binStats, dimensionSums, durationBins, type Cell, type Window } from "../aggregate.ts";
import { failuresIn } from "../failures.ts";
import { reuseByKey } from "../reuse.ts";
import { byWindow, settledAndOpen } from "../settled.ts";
import { csvCell } from "../export.ts";
import { allTime, docParam, openQuery } from "../query.ts";
import { createStats } from "../stats.ts";
import { collapsedStatus, goDays, label, newestOf, windowOf } from "./community.ts";

// ------------------------------------------------------------------ parameters

/** The page's filters, read as the community's handler reads them. */
export interface NewParams {
  days: number;
  /** repo_source; "" is every repo ("all" or absent). */
  repo: string;
  slug: string;
  platform: "" | "pve" | "incus";
  ctype: "" | "lxc" | "vm" | "addon" | "pve";
}

const PLATFORMS = ["pve", "incus"] as const;
const CTYPES = ["lxc", "vm", "addon", "pve"] as const;
const pick = <T extends string>(text: string | undefined, allowed: readonly T[]): T | "" => {
  const v = (text ?? "").trim().toLowerCase();
  return (allowed as readonly string[]).includes(v) ? (v as T) : "";
};

/** `repo`: absent or "all" is every repo (the newest service: no longer ProxmoxVE by default). */
export const repoParam = (text: string | undefined): string => {
  const r = label("repo", text) ?? "";
  return r === "all" ? "" : r;
};
export const platformParam = (text: string | undefined): NewParams["platform"] => pick(text, PLATFORMS);

function newParams(q: { days?: string; repo?: string; slug?: string; platform?: string; ctype?: string }): NewParams {
  return {
    // Sscanf: leading digits, else the default 7; then clamped to 1-365.
    days: goDays(q.days, 7, (n) => Math.min(365, Math.max(1, n))),
    repo: repoParam(q.repo),
    slug: label("slug", q.slug) ?? "",
    platform: platformParam(q.platform),
    ctype: pick(q.ctype, CTYPES),
  };
}

/**
 * The filters a page's selection reads: repo ProxmoxVE also takes reports naming no repo (the
 * clients before repo_source), read apart and summed; a script type is a kind (addon, host tool)
 * or an install type (lxc, vm).
 */
export function filtersOf(p: Pick<NewParams, "repo" | "slug" | "platform" | "ctype">): ExecutionFilter[] {
  const base: ExecutionFilter = {
    ...(p.slug ? { repoSlug: p.slug } : {}),
    ...(p.platform ? { platformClass: p.platform } : {}),
    ...(p.ctype === "addon"
      ? { kind: "addon" as const }
      : p.ctype === "pve"
        ? { kind: "tool" as const, type: "pve" }
        : p.ctype
          ? { kind: "install" as const, type: p.ctype }
          : {}),
  };
  if (p.repo === "") return [base];
  return (p.repo === "ProxmoxVE" ? ["ProxmoxVE", ""] : [p.repo]).map((repoSource) => ({ ...base, repoSource }));
}

/** The floor below which a rate is shown but not graded (the community's minRunsFor). */
export const minRunsFor = (days: number): number => (days <= 1 ? 5 : days <= 7 ? 10 : days <= 30 ? 20 : 40);

// ------------------------------------------------------------------ shapes

const GroupStat = t.Object({
  label: t.String(),
  runs: t.Integer(),
  success: t.Integer(),
  failed: t.Integer(),
  blocked: t.Integer(),
  aborted: t.Integer(),
  unfinished: t.Integer(),
});
const Count = t.Object({ label: t.String(), count: t.Integer() });
const ExitCode = t.Object({ code: t.Integer(), desc: t.String(), count: t.Integer(), apps: t.Integer() });
const Signature = t.Object({
  category: t.String(),
  exit_code: t.Integer(),
  message: t.String({ description: "the failure's error signature (its text with numbers, paths and ids replaced)" }),
  count: t.Integer(),
  apps: t.Integer(),
});
export const RecentRun = t.Object({
  run: t.String(),
  app: t.String(),
  type: t.String(),
  status: t.String(),
  exit_code: t.Integer(),
  category: t.String(),
  platform: t.String(),
  os: t.String(),
  host_version: t.String(),
  repo: t.String({ description: "the repository slug, owner/repo" }),
  method: t.String(),
  cores: t.Integer(),
  ram: t.Integer(),
  disk: t.Integer(),
  privileged: t.Boolean(),
  duration: t.Integer(),
  last_seen: t.String({ description: "YYYY-MM-DD HH:MM, UTC" }),
  error: t.String(),
  failed_command: t.String(),
  failed_line: t.Integer(),
  arch: t.String(),
  kernel_version: t.String(),
  app_version: t.String(),
  cpu_vendor: t.String(),
  cpu_model: t.String(),
  gpu_vendor: t.String(),
  gpu_model: t.String(),
  gpu_passthrough: t.String(),
  ram_speed: t.String(),
  payload_version: t.Integer(),
});
export type RecentRun = Static<typeof RecentRun>;
export const DailyPoint = t.Object({
  day: t.String(),
  runs: t.Integer(),
  success: t.Integer(),
  failed: t.Integer(),
  blocked: t.Integer(),
  aborted: t.Integer(),
  unfinished: t.Integer(),
});
type DailyPoint = Static<typeof DailyPoint>;
type GroupStat = Static<typeof GroupStat>;
type Count = Static<typeof Count>;
type ExitCode = Static<typeof ExitCode>;
type Signature = Static<typeof Signature>;

/** Go encodes a slice never appended to as null: the sections filled row by row. */
const orNull = <T>(items: T[]): T[] | null => (items.length === 0 ? null : items);

const NewDash = t.Object({
  days: t.Integer(),
  platform: t.String(),
  repo: t.String(),
  repo_slug: t.String(),
  type: t.String(),
  runs: t.Integer(),
  success: t.Integer(),
  failed: t.Integer({ description: "the install ran and failed" }),
  blocked: t.Integer({ description: "the host never let the install start (exit codes raised before the script ran)" }),
  aborted: t.Integer(),
  unfinished: t.Integer({ description: "still going, or ended unknown" }),
  all_time: t.Integer({ description: "every run ever, whatever the filters" }),
  median_duration: t.Integer({ description: "seconds, successful runs (from start report to final report)" }),
  min_runs: t.Integer(),
  live_in_flight: t.Integer({
    description: "runs not ended that reported in the last 20 minutes, whatever the filters",
  }),
  live_last_hour: t.Integer(),
  live_last_24h: t.Integer(),
  live_now: t.Nullable(
    t.Array(RecentRun, { description: "up to 40 runs in flight that reported in the last 2 hours" }),
  ),
  warnings: t.Nullable(t.Array(t.String())),
  daily: t.Nullable(t.Array(DailyPoint)),
  top_apps: t.Array(GroupStat),
  worst_apps: t.Array(GroupStat),
  by_platform: t.Array(GroupStat),
  by_type: t.Array(GroupStat),
  by_repo: t.Array(GroupStat),
  by_os: t.Array(GroupStat),
  by_host_version: t.Array(GroupStat),
  by_repo_slug: t.Array(GroupStat),
  categories: t.Array(Count),
  exit_codes: t.Nullable(t.Array(ExitCode)),
  signatures: t.Nullable(t.Array(Signature)),
  by_privilege: t.Array(Count),
  by_cores: t.Array(Count),
  by_ram: t.Array(Count),
  by_disk: t.Array(Count),
  by_cpu: t.Array(Count),
  by_gpu: t.Array(Count),
  by_gpu_passthrough: t.Array(Count),
  by_arm: t.Array(Count),
  by_method: t.Array(Count),
  by_client: t.Array(Count),
  recent: t.Nullable(t.Array(RecentRun, { description: "the install log: the 300 newest runs" })),
});

// ------------------------------------------------------------------ aggregation (pure)

/** The dimensions the page's breakdowns read. */
const NEW_DIMENSIONS: readonly Dimension[] = [
  "nsapp",
  "platform_class",
  "type",
  "repo_source",
  "repo_slug",
  "os",
  "pve_version",
  "error_category",
  "ct_type",
  "core_count",
  "ram_size",
  "disk_size",
  "cpu_vendor",
  "gpu_vendor",
  "gpu_passthrough",
  "host_gpu",
  "arch_class",
  "client",
  "method",
];
export type Sums = Map<Dimension, Map<string, Counts>>;

const zero = zeroCounts;
const addTo = (a: Counts, b: Counts): void => {
  for (let i = 0; i < a.length; i++) a[i] = a[i]! + b[i]!;
};
const total = (c: Counts): number => c[0] + c[1] + c[2] + c[3] + c[4] + c[5];
/** Runs by the community's five endings: unfinished is still going or ended unknown. */
export const outcomesOf = (c: Counts) => {
  const [success, failed, aborted, inProgress, unknown, blocked] = c;
  return { runs: total(c), success, failed, blocked, aborted, unfinished: inProgress + unknown };
};
/** Runs that did not install for a reason worth working through: failed, or blocked by the host (the Go's error panels). */
const failures = (c: Counts): number => c[1] + c[5];
const stat = (label: string, c: Counts): GroupStat => ({ label, ...outcomesOf(c) });
const byLabel = (a: { label: string }, b: { label: string }): number =>
  a.label < b.label ? -1 : a.label > b.label ? 1 : 0;

/** A dimension's values relabelled (null: left out) and merged; "" becomes "unknown" after grouping, as the Go scanner does. */
function relabel(
  sums: Sums,
  dims: readonly Dimension[],
  labelOf: (value: string, dim: Dimension) => string | null,
): Map<string, Counts> {
  const out = new Map<string, Counts>();
  for (const dim of dims) {
    for (const [value, counts] of sums.get(dim) ?? []) {
      const l = labelOf(value, dim);
      if (l === null) continue;
      const key = l === "" ? "unknown" : l;
      addTo(out.get(key) ?? (out.set(key, zero()), out.get(key)!), counts);
    }
  }
  return out;
}

function groupStats(
  merged: Map<string, Counts>,
  limit: number,
  order: (a: GroupStat, b: GroupStat) => number = (a, b) => b.runs - a.runs,
): GroupStat[] {
  return [...merged]
    .map(([l, c]) => stat(l, c))
    .filter((g) => g.runs > 0)
    .sort((a, b) => order(a, b) || byLabel(a, b))
    .slice(0, limit);
}

function counts(merged: Map<string, Counts>, limit: number, count: (c: Counts) => number = total): Count[] {
  return [...merged]
    .map(([l, c]) => ({ label: l, count: count(c) }))
    .filter((c) => c.count > 0)
    .sort((a, b) => b.count - a.count || byLabel(a, b))
    .slice(0, limit);
}

const same = (v: string): string => v;
const nonEmpty = (v: string): string | null => (v === "" ? null : v);
const positive = (v: string): number | null => (Number(v) > 0 ? Number(v) : null);

/** The breakdowns that carry their own denominators. */
export function groupBreakdowns(sums: Sums, minRuns: number) {
  const apps = relabel(sums, ["nsapp"], nonEmpty);
  // Worst by failure rate over finished runs (aborts are the user's), the floor applied in the order.
  const rate = (g: GroupStat) => (g.success + g.failed >= minRuns ? g.failed / (g.success + g.failed) : -1);
  return {
    top_apps: groupStats(apps, 25),
    worst_apps: groupStats(apps, 25, (a, b) => rate(b) - rate(a) || b.failed - a.failed),
    by_platform: groupStats(relabel(sums, ["platform_class"], same), 6),
    by_type: groupStats(relabel(sums, ["type"], same), 10),
    by_repo: groupStats(relabel(sums, ["repo_source"], same), 10),
    by_os: groupStats(relabel(sums, ["os"], same), 15),
    by_host_version: groupStats(relabel(sums, ["pve_version"], nonEmpty), 15),
    by_repo_slug: groupStats(relabel(sums, ["repo_slug"], nonEmpty), 15),
  };
}

/** Failures (failed or blocked) by category; a user's "no" is not a defect. */
export const categoriesOf = (sums: Sums): Count[] =>
  counts(
    relabel(sums, ["error_category"], (v) => (v === "" || v === "user_aborted" ? null : v)),
    15,
    failures,
  );

/** What the runs were given: plain counts. */
function countBreakdowns(sums: Sums) {
  return {
    by_privilege: counts(
      relabel(sums, ["ct_type"], (v) => (v === "1" ? "unprivileged" : "privileged")),
      3,
    ),
    by_cores: counts(
      relabel(sums, ["core_count"], (v) => (positive(v) === null ? null : v)),
      12,
    ),
    by_ram: counts(
      relabel(sums, ["ram_size"], (v) => (positive(v) === null ? null : `${Math.floor(Number(v) / 1024)} GB`)),
      12,
    ),
    by_disk: counts(
      relabel(sums, ["disk_size"], (v) => (Math.trunc(Number(v)) > 0 ? `${Math.trunc(Number(v))} GB` : null)),
      12,
    ),
    by_cpu: counts(relabel(sums, ["cpu_vendor"], nonEmpty), 8),
    by_gpu: counts(relabel(sums, ["gpu_vendor"], nonEmpty), 8),
    // Two questions in one column there: v2's yes/no, and v1's verdict on the host's GPU.
    by_gpu_passthrough: counts(
      relabel(sums, ["gpu_passthrough", "host_gpu"], (v, dim) =>
        v === "" ? null : dim === "gpu_passthrough" && (v === "yes" || v === "no") ? v : "host capability (pre-v2)",
      ),
      6,
    ),
    by_arm: counts(
      relabel(sums, ["arch_class"], (v) => (v === "" ? "x86_64 (inferred)" : v)),
      6,
    ),
    by_method: counts(relabel(sums, ["method"], nonEmpty), 8),
    // /upload and v1 sent no payload_version.
    by_client: counts(
      relabel(sums, ["client"], (v) => (v === "" || Number(v) <= 1 ? "pre-versioning" : `payload v${v}`)),
      6,
    ),
  };
}

/**
 * Failures by exit code, and by category, exit code and signature, each with its failures per app.
 * Counts are signed: a type's cells may take other apps' runs out (aggregate.ts appsCell, sign -1),
 * and a window an hour later takes out the cells it lost; an app is behind a failure while its
 * count is not 0, and an entry at 0 is gone.
 */
export interface Failures {
  byCode: Map<number, { count: number; apps: Map<string, number> }>;
  bySignature: Map<string, SignatureGroup>;
  /**
   * Kept groups these lie over, not copied (a window's open hours over its settled cells': a year
   * holds ~55,000 groups, copying them was 7 % of /api/new): a group in bySignature is the one
   * that counts, and at count 0 it is gone.
   */
  under: ReadonlyMap<string, SignatureGroup> | null;
}
export interface SignatureGroup {
  category: string;
  exit_code: number;
  id: string;
  count: number;
  /** The group's app while it has one (most have: a year holds ~50,000 groups; its count is the group's), then each app's count. */
  app: string;
  apps: Map<string, number> | null;
}

const emptyFailures = (): Failures => ({ byCode: new Map(), bySignature: new Map(), under: null });
/** A copy whose entries are `f`'s own (addFailures copies an entry before it changes it). */
const copyOf = (f: Failures): Failures => ({
  byCode: new Map(f.byCode),
  bySignature: new Map(f.bySignature),
  under: null,
});

/**
 * Failures of the settled cells of a window (see byWindow): a year's holds ~55,000 groups, ~6 MB.
 * A window an hour or a day later is the one before with the cells it lost taken out and those it
 * gained added: adding up a year's failure keys again cost ~30 ms at 1M.
 */
const keptFailures = byWindow<Failures>(4);

/** The failure dimension of every cell (its keys are many: no summed copy is made first). */
function failuresOf(cells: readonly Cell[]): Failures {
  const { settled, open } = settledAndOpen(cells);
  const base = keptFailures(
    settled,
    "",
    () => addFailures(emptyFailures(), settled, null, 1),
    (before, lost, gained) => addFailures(addFailures(copyOf(before), gained, before, 1), lost, before, -1),
  );
  if (open.length === 0) return base;
  return addFailures({ byCode: new Map(base.byCode), bySignature: new Map(), under: base.bySignature }, open, base, 1);
}

/** `n` more for `app` (negative: fewer), the app gone at 0. */
const tally = (apps: Map<string, number>, app: string, n: number): void => {
  const now = (apps.get(app) ?? 0) + n;
  if (now === 0) apps.delete(app);
  else apps.set(app, now);
};

/**
 * Adds the failure keys of `cells`, times `sign`, into `out`; entries `out` shares with `kept` are
 * copied before they change.
 */
function addFailures(out: Failures, cells: readonly Cell[], kept: Failures | null, sign: 1 | -1): Failures {
  for (const { data } of cells) {
    const keys = data.dims.failure;
    if (keys === undefined) continue;
    const f = failuresIn(data, keys);
    for (let i = 0; i < f.group.length; i++) {
      const failed = f.failed[i]! * sign;
      const app = f.app[i]!;
      const exitCode = f.code[i]!;
      if (exitCode !== 0) {
        let e = out.byCode.get(exitCode);
        if (e === undefined) out.byCode.set(exitCode, (e = { count: 0, apps: new Map() }));
        else if (kept?.byCode.get(exitCode) === e)
          out.byCode.set(exitCode, (e = { count: e.count, apps: new Map(e.apps) }));
        e.count += failed;
        tally(e.apps, app, failed);
        if (e.count === 0 && e.apps.size === 0) out.byCode.delete(exitCode);
      }
      if (!f.signed[i]) continue;
      const group = f.group[i]!;
      let g = out.bySignature.get(group);
      const below = g === undefined ? out.under?.get(group) : undefined;
      if (below !== undefined) {
        g = { ...below, apps: below.apps === null ? null : new Map(below.apps) };
        out.bySignature.set(group, g);
      } else if (g === undefined) {
        g = { category: f.category[i]!, exit_code: exitCode, id: f.signature[i]!, count: 0, app, apps: null };
        out.bySignature.set(group, g);
      } else if (kept?.bySignature.get(group) === g) {
        g = { ...g, apps: g.apps === null ? null : new Map(g.apps) };
        out.bySignature.set(group, g);
      }
      // Its one app so far counts while its failures are not 0 (over kept groups a group at 0 stays).
      if (g.apps === null && app !== g.app) g.apps = new Map(g.count === 0 ? [] : [[g.app, g.count]]);
      if (g.apps !== null) tally(g.apps, app, failed);
      g.count += failed;
      if (g.count === 0 && (g.apps === null || g.apps.size === 0) && out.under === null) out.bySignature.delete(group);
    }
  }
  return out;
}

/** Failures by exit code (not 0) with the apps behind each, most first. */
export function exitCodes(f: Failures, limit = 20): ExitCode[] {
  return [...f.byCode]
    .map(([code, e]) => ({ code, desc: explainExitCode(code), count: e.count, apps: e.apps.size }))
    .sort((a, b) => b.count - a.count || a.code - b.code)
    .slice(0, limit);
}

const text = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
/** Most first; ties by the whole group (id, code, category): a map's order depends on which cells were kept. */
const order = (a: SignatureGroup, b: SignatureGroup): number =>
  b.count - a.count || text(a.id, b.id) || a.exit_code - b.exit_code || text(a.category, b.category);

/**
 * The first `limit` groups in order, selected, not sorted out of every group (a year holds tens of
 * thousands of them); kept in order, the last the least. Groups at count 0 are gone.
 */
function topOf(groups: Iterable<[string, SignatureGroup]>, limit: number): [string, SignatureGroup][] {
  const top: [string, SignatureGroup][] = [];
  for (const entry of groups) {
    const e = entry[1];
    if (e.count === 0 || (top.length === limit && (limit === 0 || order(e, top[limit - 1]![1]) >= 0))) continue;
    let i = top.length;
    while (i > 0 && order(e, top[i - 1]![1]) < 0) i--;
    top.splice(i, 0, entry);
    if (top.length > limit) top.pop();
  }
  return top;
}

/**
 * How many groups of a kept map (Failures.under) the open hours may change while its top still
 * holds the answer: a group not changed that is among the first `limit` of all is among the first
 * `limit + OVER` of the kept ones (at most OVER changed groups can have been before it there).
 */
const OVER = 256;
const keptTops = new WeakMap<ReadonlyMap<string, SignatureGroup>, { limit: number; top: [string, SignatureGroup][] }>();

/** Failures with an error text by category, exit code and signature (its id), with their apps. */
export function signatureGroups(
  f: Failures,
  limit = 30,
): { category: string; exit_code: number; id: string; count: number; apps: number }[] {
  const changed = f.bySignature;
  let top: [string, SignatureGroup][];
  if (f.under === null) top = topOf(changed, limit);
  else if (changed.size > OVER) top = topOf([...[...f.under].filter(([g]) => !changed.has(g)), ...changed], limit);
  else {
    let kept = keptTops.get(f.under);
    if (kept?.limit !== limit) keptTops.set(f.under, (kept = { limit, top: topOf(f.under, limit + OVER) }));
    top = topOf([...kept.top.filter(([g]) => !changed.has(g)), ...changed], limit);
  }
  return top.map(([, e]) => ({
    category: e.category,
    exit_code: e.exit_code,
    id: e.id,
    count: e.count,
    apps: e.apps?.size ?? 1,
  }));
}

const pad = (n: number): string => String(n).padStart(2, "0");
/** ClickHouse's formatDateTime(t, '%Y-%m-%d %H:%i'), in UTC. */
const minuteTime = (t: number): string => {
  const d = new Date(t);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
};

/** One line of the install log, every field present (Go writes zero values). */
export function recentRun(e: Execution): RecentRun {
  return {
    run: e.executionId,
    app: e.nsapp ?? "",
    type: e.type,
    status: collapsedStatus(e),
    exit_code: e.exitCode ?? 0,
    category: e.errorCategory ?? "",
    platform: platformClass(e),
    os: e.osType ? `${e.osType} ${e.osVersion ?? ""}` : "unknown",
    host_version: e.pveVersion ?? "",
    repo: e.repoSlug ?? "",
    method: e.method ?? "",
    cores: e.coreCount ?? 0,
    ram: e.ramSize ?? 0,
    disk: Math.trunc(e.diskSize ?? 0),
    privileged: e.ctType !== 1,
    duration: e.installDuration ?? 0,
    last_seen: minuteTime(e.updatedAt),
    error: (e.error ?? "").slice(0, 400),
    failed_command: (e.failedCommand ?? "").slice(0, 400),
    failed_line: e.failedLine ?? 0,
    arch: e.arch || (e.hasArm ? "arm64" : ""),
    kernel_version: e.kernelVersion ?? "",
    app_version: e.appVersion ?? "",
    cpu_vendor: e.cpuVendor ?? "",
    cpu_model: e.cpuModel ?? "",
    gpu_vendor: e.gpuVendor ?? "",
    gpu_model: e.gpuModel ?? "",
    gpu_passthrough: e.gpuPassthrough ?? e.hostGpu ?? "",
    ram_speed: e.ramSpeed ?? "",
    // v1 sent no payload_version (stored as 1): 0 there, as for /upload.
    payload_version: e.payloadVersion !== null && e.payloadVersion >= 2 ? e.payloadVersion : 0,
  };
}

const NO_RUN: RecentRun = {
  run: "",
  app: "",
  type: "",
  status: "",
  exit_code: 0,
  category: "",
  platform: "",
  os: "",
  host_version: "",
  repo: "",
  method: "",
  cores: 0,
  ram: 0,
  disk: 0,
  privileged: false,
  duration: 0,
  last_seen: "",
  error: "",
  failed_command: "",
  failed_line: 0,
  arch: "",
  kernel_version: "",
  app_version: "",
  cpu_vendor: "",
  cpu_model: "",
  gpu_vendor: "",
  gpu_model: "",
  gpu_passthrough: "",
  ram_speed: "",
  payload_version: 0,
};

/** A run in flight as the live panel lists it (the other fields at their zero values); duration: seconds since it last reported. */
function liveRun(e: Execution, now: number): RecentRun {
  const r = recentRun(e);
  return {
    ...NO_RUN,
    app: r.app,
    type: r.type,
    status: r.status,
    platform: r.platform,
    os: r.os,
    repo: r.repo,
    last_seen: r.last_seen,
    duration: Math.max(0, Math.floor((now - e.updatedAt) / 1000)),
  };
}

// ------------------------------------------------------------------ reading

const RECENT = 300;
const LIVE_ROWS = 40;

/** `a` and `b` added up, neither changed. */
function sumOf(a: Sums, b: Sums): Sums {
  return new Map(
    [...a].map(([dim, values]) => {
      const out = new Map(values);
      for (const [value, c] of b.get(dim) ?? []) {
        const s = out.get(value);
        if (s === undefined) out.set(value, c);
        else {
          const sum: Counts = [...s];
          addTo(sum, c);
          out.set(value, sum);
        }
      }
      return [dim, out];
    }),
  );
}

/** Sums of the settled cells of a window (see byWindow): a few thousand values. */
const keptSums = byWindow<Sums>(16);

/** Successful runs per duration bin of the settled cells of a window (see byWindow). */
const keptBins = byWindow<Map<number, number>>(16);

/** Cells of every filter, summed dimension by dimension, with the headline, the median and the failures. */
export async function readSums(stats: ReturnType<typeof createStats>, filters: readonly ExecutionFilter[], w: Window) {
  const reads = (await Promise.all(filters.map((f) => stats.cells(f, w)))).map((r) => ({
    ...r,
    ...settledAndOpen(r.cells),
  }));
  const bins = reads.map(({ settled, open }) => {
    const base = keptBins(
      settled,
      "",
      () => durationBins(settled, "success"),
      (before, lost, gained) => durationBins(lost, "success", durationBins(gained, "success", before), -1),
    );
    return open.length === 0 ? base : durationBins(open, "success", base);
  });
  const [first, ...more] = reads.map(({ plan, settled, open }) => {
    const base = keptSums(
      settled,
      plan.nsapp ?? "",
      () => dimensionSums(settled, plan, NEW_DIMENSIONS),
      (before, lost, gained) =>
        dimensionSums(lost, plan, NEW_DIMENSIONS, dimensionSums(gained, plan, NEW_DIMENSIONS, before), -1),
    );
    return open.length === 0 ? base : dimensionSums(open, plan, NEW_DIMENSIONS, base);
  });
  // Several repo filters (ProxmoxVE and the reports naming none): added up, none changed (kept).
  const sums = more.reduce(sumOf, first!);
  const headline = zero();
  for (const c of sums.get("type")!.values()) addTo(headline, c);
  const cells = reads.flatMap((r) => r.cells);
  // Several repo filters: added into a copy (the first may be kept).
  const median = binStats(
    bins.reduce((a, b) => {
      const out = new Map(a);
      for (const [bin, n] of b) out.set(bin, (out.get(bin) ?? 0) + n);
      return out;
    }),
  ).median_s;
  return { sums, headline, medianSuccessS: median ?? 0, failures: failuresOf(cells) };
}

/** Runs per day of the window (days with runs only, as a GROUP BY answers), summed over the filters. */
export async function dailyOf(
  stats: ReturnType<typeof createStats>,
  filters: readonly ExecutionFilter[],
  w: Window,
): Promise<DailyPoint[]> {
  const series = await Promise.all(filters.map((f) => stats.timeseries(f, w, "day")));
  const byDay = new Map<number, Counts>();
  for (const s of series)
    for (const p of s.points)
      addTo(byDay.get(p.t) ?? (byDay.set(p.t, zero()), byDay.get(p.t)!), [
        p.success,
        p.failed,
        p.aborted,
        p.in_progress,
        p.unknown,
        p.blocked,
      ]);
  return [...byDay]
    .sort((a, b) => a[0] - b[0])
    .map(([t, c]) => ({ day: new Date(t).toISOString().slice(0, 10), ...outcomesOf(c) }))
    .filter((p) => p.runs > 0);
}

/** The newest runs of the window over every filter (newestOf), the most recently heard from first. */
export async function recentOf(
  store: StoreReads,
  filters: readonly ExecutionFilter[],
  w: Window,
  limit = RECENT,
): Promise<Execution[]> {
  return (await newestOf(store, filters, w, limit)).sort(
    (a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt,
  );
}

/** What is going on now, whatever the filters: runs heard from lately, and those in flight. */
async function liveOf(store: StoreReads, now: number) {
  const [[lastHour = 0, lastDay = 0], [inFlight = 0], going] = await Promise.all([
    store.countUpdatedSince({}, [now - HOUR, now - DAY]),
    store.countUpdatedSince({ outcome: "in_progress" }, [now - 20 * MINUTE]),
    store.listUpdatedSince({ outcome: "in_progress" }, now - 2 * HOUR, LIVE_ROWS),
  ]);
  const live = going.map((e) => liveRun(e, now));
  return { live_in_flight: inFlight, live_last_hour: lastHour, live_last_24h: lastDay, live_now: orNull(live) };
}

// ------------------------------------------------------------------ the install log as CSV

/** The page's "Export CSV": these columns, in this order. */
const LOG_COLUMNS = [
  "last_seen",
  "status",
  "exit_code",
  "category",
  "app",
  "type",
  "platform",
  "os",
  "host_version",
  "arch",
  "repo",
  "method",
  "cores",
  "ram",
  "disk",
  "privileged",
  "duration",
  "failed_command",
  "failed_line",
  "kernel_version",
  "app_version",
  "payload_version",
  "error",
] as const satisfies readonly (keyof RecentRun)[];

/** The log's own filters (the page's search box and selects), applied to its rows as the page applies them. */
interface LogFilters {
  q?: string;
  status?: string;
  type?: string;
  os?: string;
  category?: string;
}

function logRows(rows: readonly RecentRun[], f: LogFilters): RecentRun[] {
  const q = (f.q ?? "").trim().toLowerCase();
  return rows.filter(
    (r) =>
      (!f.status || r.status === f.status) &&
      (!f.type || r.type === f.type) &&
      (!f.os || r.os === f.os) &&
      (!f.category || r.category === f.category) &&
      (!q ||
        [r.app, r.os, r.error, r.failed_command, r.category, r.platform, r.type, r.repo, r.host_version].some((v) =>
          v.toLowerCase().includes(q),
        )),
  );
}

/** One CSV document of log rows: a header, then a row each; text guarded against formulas and quoted as export.ts does. */
function logCsv(rows: readonly RecentRun[]): string {
  const cell = (v: string | number | boolean): string => (typeof v === "string" ? csvCell(v) : String(v));
  return (
    [LOG_COLUMNS.join(","), ...rows.map((r) => LOG_COLUMNS.map((c) => cell(r[c])).join(","))].join("\r\n") + "\r\n"
  );
}

// ------------------------------------------------------------------ the route

type NewDeps = { store: StoreReads; clock: () => number };
const tags = ["telemetry-service compatible"];

/** The sections of /api/new over the window for one selection (`key`: its parameters and window as JSON). */
async function windowedSections(store: StoreReads, key: string) {
  const { p, w } = JSON.parse(key) as { p: NewParams; w: Window };
  const filters = filtersOf(p);
  // One request's aggregates share what a scan folds (a filter rollups cannot select).
  const stats = createStats(store, new Map());
  const span = await store.recordSpan();
  const [{ sums, headline, medianSuccessS, failures }, daily, recent, everything] = await Promise.all([
    readSums(stats, filters, w),
    dailyOf(stats, filters, w),
    recentOf(store, filters, w),
    span ? stats.summary({}, allTime(span, w.to)) : null,
  ]);
  const minRuns = minRunsFor(p.days);
  const sigs = signatureGroups(failures);
  const known = new Map((await store.signatures(sigs.map((s) => s.id))).map((s) => [s.id, s.signature]));
  return {
    head: {
      ...outcomesOf(headline),
      all_time: everything?.total ?? 0,
      median_duration: Math.round(medianSuccessS),
      min_runs: minRuns,
    },
    daily: orNull(daily),
    groups: groupBreakdowns(sums, minRuns),
    categories: categoriesOf(sums),
    exit_codes: orNull(exitCodes(failures)),
    signatures: orNull(
      sigs.map(
        (s): Signature => ({
          category: s.category,
          exit_code: s.exit_code,
          message: known.get(s.id) ?? s.id,
          count: s.count,
          apps: s.apps,
        }),
      ),
    ),
    counts: countBreakdowns(sums),
    recent: orNull(recent.map(recentRun)),
  };
}

type Sections = (key: string) => ReturnType<typeof windowedSections>;

const NewQuery = t.Object({
  days: docParam("days back from today, 1-365 (default 7; not a number: 7)"),
  platform: docParam("pve or incus; anything else: every platform"),
  repo: docParam(
    'repo_source: ProxmoxVE (with reports that name none), ProxmoxVED, external, or absent / "all": every repository',
  ),
  slug: docParam("one repository, owner/repo"),
  ctype: docParam("lxc, vm, addon or pve (host tools); anything else: every type"),
});
const NewRoute = {
  query: openQuery(NewQuery),
  response: { 200: NewDash },
  detail: {
    tags,
    summary: "The community's consolidated dashboard (/new): the whole page in one answer, from rollups",
  },
};

/** The whole /new page in one answer: the window's sections (reused, `windowed`) and the live panels. */
async function newDashboard(
  { store, clock }: NewDeps,
  windowed: Sections,
  query: Static<typeof NewQuery>,
  set: { headers: Record<string, string | number> },
) {
  const p = newParams(query);
  const now = clock();
  const [page, live] = await Promise.all([
    windowed(JSON.stringify({ p, w: windowOf(p.days, now) })),
    liveOf(store, now),
  ]);
  // The browser asks again each time (the live panels).
  set.headers["cache-control"] = "no-store";
  // The Go struct's field order.
  return {
    days: p.days,
    platform: p.platform,
    repo: p.repo,
    repo_slug: p.slug,
    type: p.ctype,
    ...page.head,
    ...live,
    warnings: null,
    daily: page.daily,
    ...page.groups,
    categories: page.categories,
    exit_codes: page.exit_codes,
    signatures: page.signatures,
    ...page.counts,
    recent: page.recent,
  };
}

const LogQuery = t.Object({
  days: docParam("as /api/new"),
  platform: docParam("as /api/new"),
  repo: docParam("as /api/new"),
  slug: docParam("as /api/new"),
  ctype: docParam("as /api/new"),
  q: docParam(
    "the log's search: part of the app, OS, error, failing command, category, platform, type, repository or host version (any case)",
  ),
  status: docParam("the log's status select: exactly"),
  type: docParam("the log's type select: exactly"),
  os: docParam("the log's OS select: exactly"),
  category: docParam("the log's category select: exactly"),
});
const LogRoute = {
  query: openQuery(LogQuery),
  detail: {
    tags,
    summary: "The install log of /api/new as the page exports it: CSV of its 300 newest runs, the page's columns",
    description:
      "Filename telemetry-log-<days>d.csv. Text cells that start with =, +, -, @, tab or CR get a leading ' (spreadsheet formulas), as every CSV of installstats.",
  },
};

/** The install log as the page exports it: CSV of its newest runs. */
async function logExport({ store, clock }: NewDeps, query: Static<typeof LogQuery>) {
  const p = newParams(query);
  const filters = filtersOf(p);
  const rows = logRows((await recentOf(store, filters, windowOf(p.days, clock()))).map(recentRun), {
    q: query.q,
    status: query.status,
    type: query.type,
    os: query.os,
    category: query.category,
  });
  return new Response(logCsv(rows), {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="telemetry-log-${p.days}d.csv"`,
      "cache-control": "no-store",
    },
  });
}

export function newDashboardRoutes(deps: NewDeps) {
  /**
   * The sections over the window, for one selection: reused while the data are unchanged, and
   * when computing them was expensive (a long window, a scan) for up to 10x what it took
   * (../reuse.ts reuseWhileExpensive). The live panels are never reused: they answer "now".
   */
  const windowed: Sections = reuseByKey(
    (key: string) => windowedSections(deps.store, key),
    () => deps.store.changeMarker(),
    deps.clock,
  );
  return new Elysia({ name: "new-dashboard" })
    .get("/api/new", ({ query, set }) => newDashboard(deps, windowed, query, set), NewRoute)
    .get("/api/new/log.csv", ({ query }) => logExport(deps, query), LogRoute);
}
