// The message of an alert: the same facts for every channel (title, plain text, a link to the
// dashboard view that shows it, and the numbers), each channel shaping it its own way (channels.ts).
import { DAY, HOUR } from "../domain/time.ts";
import type { Window } from "../read/aggregate.ts";
import type { Observation, Values } from "./evaluate.ts";
import type { Rule } from "./rules.ts";

export interface AlertMessage {
  status: "firing" | "resolved" | "test";
  rule: string;
  rule_type: Rule["type"] | "test";
  /** What the alert is about: app, signature, exit_code ({} for the rule as a whole). */
  labels: Record<string, string>;
  title: string;
  /** Plain text, several lines: what, the numbers, the window, the link. */
  text: string;
  /** The dashboard view that shows it. */
  link: string;
  /** When it began firing (null for a test). */
  since: string | null;
  at: string;
  window: { from: string; to: string } | null;
  values: Values;
}

const pct = (r: number | null | undefined): string =>
  r === null || r === undefined ? "–" : `${(r * 100).toFixed(1)}%`;
const iso = (t: number): string => new Date(t).toISOString();
/** "2026-06-01 12:20 UTC" */
const utc = (t: number): string => `${iso(t).slice(0, 10)} ${iso(t).slice(11, 16)} UTC`;
const count = (n: number): string => n.toLocaleString("en-US");

/** "6h", "30d", "1d 6h", "45m" */
function span(ms: number): string {
  if (ms % DAY === 0) return `${ms / DAY}d`;
  if (ms >= DAY) return `${Math.floor(ms / DAY)}d ${Math.round((ms % DAY) / HOUR)}h`;
  if (ms % HOUR === 0) return `${ms / HOUR}h`;
  if (ms >= HOUR) return `${Math.floor(ms / HOUR)}h ${Math.round((ms % HOUR) / 60_000)}m`;
  return `${Math.max(1, Math.round(ms / 60_000))}m`;
}

/** The dashboard view that shows what a rule looks at, as a path and query. */
function viewOf(rule: Rule, labels: Record<string, string>, window: Window | null): string {
  const p = new URLSearchParams();
  const days = window ? Math.max(1, Math.ceil((window.to - window.from) / DAY)) : 1;
  if (rule.type === "failure_rate" || rule.type === "new_error") {
    if (rule.kind !== "install") p.set("kind", rule.kind);
    if (rule.repoSource !== null) p.set("repo_source", rule.repoSource);
  }
  switch (rule.type) {
    case "failure_rate":
      p.set("days", String(days));
      if (labels.app) {
        p.set("nsapp", labels.app);
        return `/app?${p}`;
      }
      return `/failures?${p}`;
    case "new_error":
      if (labels.app) p.set("nsapp", labels.app);
      p.set("outcome", "failed");
      if (labels.exit_code) p.set("exit_code", labels.exit_code);
      p.set("days", String(days));
      if (labels.signature) p.set("signature", labels.signature);
      return `/installs?${p}`;
    case "no_reports":
      return "/installs?kind=all&days=3660";
    case "rejected":
      if (rule.reasons.length === 1) p.set("reason", rule.reasons[0]!);
      return `/admin${p.size > 0 ? `?${p}` : ""}`;
  }
}

/** What the alert is about, in words: "jellyfin", "all apps". */
const scopeWords = (labels: Record<string, string>): string => labels.app ?? "all apps";

function describe(rule: Rule, o: Observation, status: "firing" | "resolved"): { headline: string; lines: string[] } {
  const v = o.values;
  const windowLine = (ms: number): string =>
    `Window: last ${span(ms)}${o.window ? ` (${utc(o.window.from)} to ${utc(o.window.to)}; from the start of its first hour)` : ""}`;
  switch (rule.type) {
    case "failure_rate": {
      const headline = `${scopeWords(o.labels)} failure rate ${pct(v.rate)} (${count(v.failed ?? 0)} of ${count(v.runs ?? 0)} runs, last ${span(rule.windowMs)})`;
      const lines = [
        `Failure rate: ${pct(v.rate)}: ${count(v.failed ?? 0)} failed of ${count(v.runs ?? 0)} finished runs (success + failed; at least ${count(rule.minRuns)} needed)`,
        windowLine(rule.windowMs),
      ];
      if (rule.above !== null) lines.push(`Threshold: above ${pct(rule.above)}`);
      if (v.baseline) {
        lines.push(
          `Baseline: ${pct(v.baseline.rate)} over the previous ${v.baseline.windows} windows (${count(v.baseline.runs)} runs); fires at ${v.baseline.factor}x and at least ${pct(v.baseline.minIncrease)} above it`,
        );
      }
      return { headline, lines };
    }
    case "new_error": {
      const what =
        o.labels.exit_code !== undefined ? `exit code ${o.labels.exit_code}` : `"${v.signature ?? o.labels.signature}"`;
      if (status === "resolved") {
        const why =
          v.noLongerNew === "established"
            ? `seen before the last ${span(rule.windowMs)} too now`
            : `not seen in the last ${span(rule.windowMs)}`;
        return {
          headline: `${what} in ${scopeWords(o.labels)} is no longer new (${why})`,
          lines: [`Error: ${what}`, `No longer new: ${why} (lookback ${span(rule.lookbackMs)})`],
        };
      }
      const lines = [
        `New error: ${what}: ${count(v.count ?? 0)} failed runs in the last ${span(rule.windowMs)}, none in the ${span(rule.lookbackMs)} before`,
        windowLine(rule.windowMs),
      ];
      if (v.example) lines.push(`Example: ${v.example.split("\n")[0]!.slice(0, 300)}`);
      return {
        headline: `new error in ${scopeWords(o.labels)}: ${what} (${count(v.count ?? 0)} failures in ${span(rule.windowMs)}, not seen in the ${span(rule.lookbackMs)} before)`,
        lines,
      };
    }
    case "no_reports": {
      const last = v.lastReportAt ? utc(v.lastReportAt) : "never";
      if (status === "resolved")
        return {
          headline: `reports arrive again (last at ${last})`,
          lines: [`Last report: ${last}`, `Threshold: no reports for ${span(rule.forMs)}`],
        };
      return {
        headline: `no reports for ${span(v.silentMs ?? 0)} (last at ${last})`,
        lines: [
          `No reports: the last arrived ${span(v.silentMs ?? 0)} ago, at ${last}; the scripts may not reach this server (a broken pipe)`,
          `Threshold: no reports for ${span(rule.forMs)}`,
        ],
      };
    }
    case "rejected": {
      const reasons =
        Object.entries(v.byReason ?? {})
          .map(([r, n]) => `${r} ${count(n)}`)
          .join(", ") || "none";
      const per = v.rate === null || v.rate === undefined ? "no runs started" : `${v.rate.toFixed(2)} per run started`;
      return {
        headline: `${count(v.rejected ?? 0)} rejected reports in ${span(rule.windowMs)} (${per})`,
        lines: [
          `Rejected reports: ${count(v.rejected ?? 0)} (${reasons}) against ${count(v.started ?? 0)} runs started: ${per}`,
          windowLine(rule.windowMs),
          `Threshold: above ${rule.above} per run started, and at least ${count(rule.minCount)} entries`,
        ],
      };
    }
  }
}

/** The message of `o` for a firing (or a firing sent late: `since` before now) or a resolve. */
export function messageOf(
  rule: Rule,
  o: Observation,
  status: "firing" | "resolved",
  at: number,
  since: number,
  baseUrl: string,
): AlertMessage {
  const { headline, lines } = describe(rule, o, status);
  const link = `${baseUrl}${viewOf(rule, o.labels, o.window)}`;
  const title = `${status === "firing" ? "FIRING" : "RESOLVED"} ${rule.id}: ${headline}`;
  const text = [
    `Rule: ${rule.id} (${rule.type})${o.labels.app ? `, app ${o.labels.app}` : ""}`,
    ...lines,
    status === "firing" && since < at
      ? `Firing since: ${utc(since)} (held back until now)`
      : `${status === "firing" ? "Firing" : "Resolved"} at: ${utc(at)}`,
    `Dashboard: ${link}`,
  ].join("\n");
  return {
    status,
    rule: rule.id,
    rule_type: rule.type,
    labels: o.labels,
    title,
    text,
    link,
    since: iso(since),
    at: iso(at),
    window: o.window ? { from: iso(o.window.from), to: iso(o.window.to) } : null,
    values: o.values,
  };
}

/** A test message, sent on demand to one channel. */
export function testMessage(channel: string, at: number, baseUrl: string): AlertMessage {
  const link = `${baseUrl}/alerts`;
  return {
    status: "test",
    rule: "test",
    rule_type: "test",
    labels: {},
    title: `TEST installstats: channel ${channel} works`,
    text: `A test message from installstats to channel ${channel}, sent at ${utc(at)}.\nAlerts: ${link}`,
    link,
    since: null,
    at: iso(at),
    window: null,
    values: {},
  };
}
