// What each rule finds now, from rollups (read/stats.ts) and the rejected-reports log: one
// observation per subject (the rule as a whole, an app, an app's new error), each firing, not
// firing, or without enough data to say (then its state stays as it is).
import type { ExecutionFilter, StoreReads } from "../store/contract/executions.ts";
import type { RejectedReads } from "../store/contract/rejected.ts";
import type { Window } from "../read/aggregate.ts";
import type { createStats } from "../read/stats.ts";
import { floorHour } from "../domain/time.ts";
import type { Rule } from "./rules.ts";

type Stats = ReturnType<typeof createStats>;

/** The numbers behind an observation: what messages, the API and the dashboard show. */
export interface Values {
  /** Failure rates: failed / (success + failed) in the window. */
  rate?: number | null;
  failed?: number;
  /** Finished runs (success + failed) in the window. */
  runs?: number;
  threshold?: number | null;
  baseline?: { rate: number | null; runs: number; windows: number; factor: number; minIncrease: number } | null;
  /** New errors: failures with it in the window. */
  count?: number;
  signature?: string | null;
  example?: string | null;
  exitCode?: number;
  lookbackMs?: number;
  /** Why a new error stopped being new: seen before the window too now, or not seen in it any more. */
  noLongerNew?: "established" | "gone";
  /** No reports: the newest report, and how long ago. */
  lastReportAt?: number | null;
  silentMs?: number;
  forMs?: number;
  /** Rejected reports: log entries in the window, per reason; installs started in it. */
  rejected?: number;
  byReason?: Record<string, number>;
  started?: number;
  minCount?: number;
}

export interface Observation {
  subject: string;
  /** app, signature, exit_code: what the subject names. */
  labels: Record<string, string>;
  /** null: too little data to say (fewer finished runs than min_runs, no report ever). */
  firing: boolean | null;
  values: Values;
  window: Window | null;
}

export interface RuleResult {
  observations: Observation[];
  /** A few words for the rule as a whole (the API's `summary`). */
  summary: string;
}

export interface EvaluateDeps {
  stats: Stats;
  store: Pick<StoreReads, "recordSpan"> & Pick<RejectedReads, "rejectedCounts">;
}

/**
 * A window of `ms` ending now, from the start of its first hour (rules read hourly rollups): never
 * shorter than asked. It ends just after now: what arrived in this very millisecond is in it.
 */
const windowOf = (now: number, ms: number): Window => ({ from: floorHour(now - ms), to: now + 1 });

const filterOf = (rule: { kind: string; repoSource: string | null }, nsapp?: string): ExecutionFilter => ({
  ...(rule.kind === "all" ? {} : { kind: rule.kind as ExecutionFilter["kind"] }),
  ...(rule.repoSource === null ? {} : { repoSource: rule.repoSource }),
  ...(nsapp === undefined ? {} : { nsapp }),
});

const rateOf = (failed: number, success: number): number | null =>
  failed + success === 0 ? null : failed / (failed + success);
const pct = (r: number | null) => (r === null ? "–" : `${(r * 100).toFixed(1)}%`);

/** Subjects: "" for the rule as a whole, else "key=value" pairs joined by "|". */
const subjectOf = (labels: Record<string, string>): string =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join("|");

const EVERY_GROUP = 1_000_000;

async function failureRate(
  rule: Extract<Rule, { type: "failure_rate" }>,
  deps: EvaluateDeps,
  now: number,
): Promise<RuleResult> {
  const w = windowOf(now, rule.windowMs);
  const base = rule.baseline ? { from: w.from - rule.baseline.windows * rule.windowMs, to: w.from } : null;
  const judge = (
    failed: number,
    success: number,
    baseFailed: number,
    baseSuccess: number,
    labels: Record<string, string>,
  ): Observation => {
    const runs = failed + success;
    const rate = rateOf(failed, success);
    const baseRuns = baseFailed + baseSuccess;
    const baseRate = rateOf(baseFailed, baseSuccess);
    const baseline = rule.baseline ? { rate: baseRate, runs: baseRuns, ...rule.baseline } : null;
    let firing: boolean | null = runs < rule.minRuns || rate === null ? null : true;
    if (firing && rule.above !== null && !(rate! > rule.above)) firing = false;
    if (firing !== null && rule.baseline) {
      if (baseRuns < rule.minRuns || baseRate === null) firing = firing === false ? false : null;
      else if (!(rate! >= baseRate * rule.baseline.factor && rate! - baseRate >= rule.baseline.minIncrease))
        firing = false;
    }
    return {
      subject: subjectOf(labels),
      labels,
      firing,
      values: { rate, failed, runs, threshold: rule.above, baseline },
      window: w,
    };
  };
  const f = filterOf(rule);
  if ("each" in rule.scope) {
    const by = { by: "nsapp" as const, sort: "volume" as const, minRuns: 0, limit: EVERY_GROUP };
    const [now_, before] = await Promise.all([
      deps.stats.breakdown(f, w, by),
      base ? deps.stats.breakdown(f, base, by) : null,
    ]);
    const baseOf = new Map((before?.groups ?? []).map((g) => [g.value, g]));
    const observations = now_.groups
      .filter((g) => g.value !== null)
      .map((g) =>
        judge(g.failed, g.success, baseOf.get(g.value)?.failed ?? 0, baseOf.get(g.value)?.success ?? 0, {
          app: g.value!,
        }),
      );
    const firing = observations.filter((o) => o.firing);
    return {
      observations,
      summary:
        firing.length === 0
          ? `no app firing (${observations.filter((o) => o.firing === false).length} with enough runs)`
          : `${firing.length} firing: ${firing
              .map((o) => `${o.labels.app} ${pct(o.values.rate ?? null)}`)
              .slice(0, 5)
              .join(", ")}`,
    };
  }
  const one = "app" in rule.scope ? filterOf(rule, rule.scope.app) : f;
  const [s, b] = await Promise.all([deps.stats.summary(one, w), base ? deps.stats.summary(one, base) : null]);
  const o = judge(
    s.failed,
    s.success,
    b?.failed ?? 0,
    b?.success ?? 0,
    "app" in rule.scope ? { app: rule.scope.app } : {},
  );
  const words =
    o.firing === null
      ? `too few runs (${o.values.runs} of ${rule.minRuns})`
      : `${pct(o.values.rate ?? null)} of ${o.values.runs} runs`;
  return { observations: [o], summary: words };
}

async function newError(
  rule: Extract<Rule, { type: "new_error" }>,
  deps: EvaluateDeps,
  now: number,
  firingSubjects: readonly string[],
): Promise<RuleResult> {
  const w = windowOf(now, rule.windowMs);
  const lookback = { from: w.from - rule.lookbackMs, to: w.from };
  const apps: (string | undefined)[] =
    "app" in rule.scope
      ? [rule.scope.app]
      : "all" in rule.scope
        ? [undefined]
        : (
            await deps.stats.breakdown({ ...filterOf(rule), outcome: "failed" }, w, {
              by: "nsapp",
              sort: "volume",
              minRuns: 0,
              limit: EVERY_GROUP,
            })
          ).groups
            .filter((g) => g.value !== null && g.failed > 0)
            .map((g) => g.value!);

  /** Failures per error (signature id or exit code) of one app in a window, with what is known of each. */
  const counts = async (
    nsapp: string | undefined,
    win: Window,
  ): Promise<Map<string, { count: number; signature: string | null; example: string | null }>> => {
    const f = filterOf(rule, nsapp);
    if (rule.on === "signature") {
      const e = await deps.stats.errors(f, win, EVERY_GROUP);
      return new Map(e.signatures.map((s) => [s.id, { count: s.count, signature: s.signature, example: s.example }]));
    }
    const b = await deps.stats.breakdown({ ...f, outcome: "failed" }, win, {
      by: "exit_code",
      sort: "volume",
      minRuns: 0,
      limit: EVERY_GROUP,
    });
    return new Map(
      b.groups
        .filter((g) => g.value !== null && g.failed > 0)
        .map((g) => [g.value!, { count: g.failed, signature: null, example: null }]),
    );
  };
  const key = rule.on === "signature" ? "signature" : "exit_code";
  const observations: Observation[] = [];
  const seenNow = new Map<string, "established" | "new">();
  for (const nsapp of apps) {
    const [recent, before] = await Promise.all([counts(nsapp, w), counts(nsapp, lookback)]);
    for (const [id, c] of recent) {
      const labels: Record<string, string> = { ...(nsapp === undefined ? {} : { app: nsapp }), [key]: id };
      const subject = subjectOf(labels);
      if (before.has(id)) {
        seenNow.set(subject, "established");
        continue;
      }
      if (c.count < rule.minFailures) continue;
      seenNow.set(subject, "new");
      observations.push({
        subject,
        labels,
        firing: true,
        window: w,
        values: {
          count: c.count,
          signature: c.signature,
          example: c.example,
          lookbackMs: rule.lookbackMs,
          ...(key === "exit_code" ? { exitCode: Number(id) } : {}),
        },
      });
    }
  }
  // Alerts firing before and not new now: resolved, saying why.
  for (const subject of firingSubjects) {
    if (seenNow.get(subject) === "new") continue;
    const labels = Object.fromEntries(subject.split("|").map((p) => p.split("=") as [string, string]));
    observations.push({
      subject,
      labels,
      firing: false,
      window: w,
      values: {
        lookbackMs: rule.lookbackMs,
        noLongerNew: seenNow.get(subject) === "established" ? "established" : "gone",
        ...(labels.exit_code ? { exitCode: Number(labels.exit_code) } : {}),
      },
    });
  }
  const firing = observations.filter((o) => o.firing).length;
  return {
    observations,
    summary:
      firing === 0
        ? `nothing new in ${apps.length} ${apps.length === 1 ? "scope" : "apps with failures"}`
        : `${firing} new`,
  };
}

async function noReports(
  rule: Extract<Rule, { type: "no_reports" }>,
  deps: EvaluateDeps,
  now: number,
): Promise<RuleResult> {
  const span = await deps.store.recordSpan();
  if (span === null)
    return {
      observations: [
        { subject: "", labels: {}, firing: null, window: null, values: { lastReportAt: null, forMs: rule.forMs } },
      ],
      summary: "no report ever received",
    };
  const silentMs = Math.max(0, now - span.last);
  const firing = silentMs >= rule.forMs;
  return {
    observations: [
      {
        subject: "",
        labels: {},
        firing,
        window: null,
        values: { lastReportAt: span.last, silentMs, forMs: rule.forMs },
      },
    ],
    summary: `last report ${Math.round(silentMs / 60_000)} min ago`,
  };
}

async function rejected(
  rule: Extract<Rule, { type: "rejected" }>,
  deps: EvaluateDeps,
  now: number,
): Promise<RuleResult> {
  const w = windowOf(now, rule.windowMs);
  const [byReason, started] = await Promise.all([deps.store.rejectedCounts(w.from, w.to), deps.stats.summary({}, w)]);
  const counted: Record<string, number> = {};
  for (const reason of rule.reasons) if (byReason[reason]) counted[reason] = byReason[reason];
  const n = Object.values(counted).reduce((a, b) => a + b, 0);
  const rate = started.total === 0 ? (n === 0 ? 0 : null) : n / started.total;
  const firing = n >= rule.minCount && (rate === null || rate > rule.above);
  return {
    observations: [
      {
        subject: "",
        labels: {},
        firing,
        window: w,
        values: {
          rejected: n,
          byReason: counted,
          started: started.total,
          rate,
          threshold: rule.above,
          minCount: rule.minCount,
        },
      },
    ],
    summary: `${n} in the window, ${started.total} runs started`,
  };
}

/** Evaluates one rule now; `firingSubjects`: its subjects firing before (a new error that is no longer new resolves). */
export function evaluateRule(
  rule: Rule,
  deps: EvaluateDeps,
  now: number,
  firingSubjects: readonly string[],
): Promise<RuleResult> {
  switch (rule.type) {
    case "failure_rate":
      return failureRate(rule, deps, now);
    case "new_error":
      return newError(rule, deps, now, firingSubjects);
    case "no_reports":
      return noReports(rule, deps, now);
    case "rejected":
      return rejected(rule, deps, now);
  }
}
