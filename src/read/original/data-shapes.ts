// Shapes of the original public read API (community-scripts/ProxmoxVE, api/main.go: a Go +
// MongoDB service), rebuilt from our rows so existing dashboards and scripts keep working.
// Pure functions only; the routes and the queries are in data-routes.ts.
import { t, type Static } from "elysia";
import type { Execution } from "../../domain/execution.ts";
import { deriveOutcome } from "../../domain/outcome.ts";
import { DAY } from "../../domain/time.ts";

/**
 * One install as the original serialised its Go `DataModel`: the same fields in the same order,
 * and never null (Go zero values: absent numbers are 0, absent strings ""). The original's
 * dashboard calls `.toString()` on every value, so a null would break it.
 */
export const OriginalRecord = t.Object(
  {
    id: t.String({
      description:
        "24 hex digits, shaped like the original's MongoDB ObjectID: creation time first, so it sorts by time; derived from random_id and created_at, stable",
    }),
    ct_type: t.Integer(),
    disk_size: t.Number(),
    core_count: t.Integer(),
    ram_size: t.Integer(),
    os_type: t.String(),
    os_version: t.String(),
    disableip6: t.String(),
    nsapp: t.String(),
    method: t.String(),
    created_at: t.String({
      description: "RFC 3339 in UTC as Go writes it: fraction without trailing zeros (2026-06-01T12:00:00.5Z)",
    }),
    pve_version: t.String(),
    status: t.String(),
    random_id: t.String(),
    type: t.String(),
    error: t.String(),
    hn: t.String({
      description:
        "the first revision's fields (its clients sent them; the website's first data page shows them): as sent, else \"\"",
    }),
    ssh: t.String(),
    verbose: t.String(),
    tags: t.String(),
  },
  { title: "CompatRecord" },
);
export type OriginalRecord = Static<typeof OriginalRecord>;

export const OriginalSummary = t.Object(
  {
    total_entries: t.Integer(),
    status_count: t.Record(t.String(), t.Integer(), { description: "status -> installs, all time" }),
    nsapp_count: t.Record(t.String(), t.Integer(), {
      description: 'nsapp -> installs, all time; "" for installs without one',
    }),
  },
  { title: "CompatSummary" },
);
export type OriginalSummary = Static<typeof OriginalSummary>;

const OriginalErrorCount = t.Object({ error: t.String(), count: t.Integer() });
export const OriginalErrors = t.Object(
  { error_counts: t.Array(OriginalErrorCount, { description: "most frequent first" }) },
  { title: "CompatErrors" },
);
export type OriginalErrors = Static<typeof OriginalErrors>;

/** Go's time.Time JSON form (RFC3339Nano) of a UTC instant: trailing zeros of the fraction dropped. */
export function goTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const fraction = iso.slice(20, 23).replace(/0+$/, "");
  return `${iso.slice(0, 19)}${fraction === "" ? "" : `.${fraction}`}Z`;
}

/**
 * An ObjectID-shaped id (24 hex digits): 4 bytes of creation seconds (as an ObjectID starts),
 * 2 bytes of milliseconds, 6 bytes of a hash of random_id. Sorting by id sorts by creation time,
 * as the original dashboard's default sort ("id", descending) expects.
 */
export function originalId(randomId: string, createdAt: number): string {
  const seconds = Math.floor(createdAt / 1000) >>> 0;
  const millis = ((createdAt % 1000) + 1000) % 1000;
  const hash = Bun.hash.wyhash(randomId) & 0xffff_ffff_ffffn;
  return (
    seconds.toString(16).padStart(8, "0") + millis.toString(16).padStart(4, "0") + hash.toString(16).padStart(12, "0")
  );
}

/** The fields of a stored install the original's record is made of. */
export type OriginalSource = Pick<
  Execution,
  | "randomId"
  | "type"
  | "ctType"
  | "diskSize"
  | "coreCount"
  | "ramSize"
  | "osType"
  | "osVersion"
  | "disableip6"
  | "nsapp"
  | "method"
  | "pveVersion"
  | "status"
  | "outcome"
  | "error"
  | "createdAt"
  | "extra"
>;

/**
 * A run's status in the original API's words. It stored what its clients sent: installing, then
 * done or failed. Today's success is done; a failure, a run blocked by its host (the client sent
 * it as failed) and an abort (the old client sent a Ctrl-C as failed "INTERRUPTED") are failed; a run still going, or given up on while going, is
 * installing (the original never gave up on one); a status it never had otherwise stays as sent.
 */
export function originalStatus(r: Pick<Execution, "status" | "outcome">): string {
  if (r.outcome === "success") return "done";
  if (r.outcome === "failed" || r.outcome === "blocked" || r.outcome === "aborted") return "failed";
  if (r.outcome === "in_progress" || deriveOutcome(r.status, null) === "in_progress") return "installing";
  return r.status;
}

/** Which stored outcomes a status in the original's words can come from (originalStatus backwards). */
export function outcomesOfOriginal(status: string): readonly Execution["outcome"][] {
  if (status === "done") return ["success"];
  if (status === "failed") return ["failed", "blocked", "aborted"];
  if (status === "installing") return ["in_progress", "unknown"];
  return ["unknown"];
}

/** The first revision's fields, from what a client sent beyond today's fields. */
function firstRevision(extra: string | null): { hn: string; ssh: string; verbose: string; tags: string } {
  const sent = extra === null ? {} : (JSON.parse(extra) as Record<string, unknown>);
  const text = (key: string) =>
    typeof sent[key] === "string"
      ? (sent[key] as string)
      : sent[key] === undefined || sent[key] === null
        ? ""
        : JSON.stringify(sent[key]);
  return { hn: text("hn"), ssh: text("ssh"), verbose: text("verbose"), tags: text("tags") };
}

export function toOriginalRecord(row: OriginalSource): OriginalRecord {
  return {
    id: originalId(row.randomId, row.createdAt),
    ct_type: row.ctType ?? 0,
    disk_size: row.diskSize ?? 0,
    core_count: row.coreCount ?? 0,
    ram_size: row.ramSize ?? 0,
    os_type: row.osType ?? "",
    os_version: row.osVersion ?? "",
    disableip6: row.disableip6 ?? "",
    nsapp: row.nsapp ?? "",
    method: row.method ?? "",
    created_at: goTime(row.createdAt),
    pve_version: row.pveVersion ?? "",
    status: originalStatus(row),
    random_id: row.randomId,
    type: row.type,
    error: row.error ?? "",
    ...firstRevision(row.extra),
  };
}

/** status_count in the original's words, from counts per stored status and outcome. */
export function originalStatusCounts(
  groups: Iterable<{
    value: string | null;
    success: number;
    failed: number;
    blocked: number;
    aborted: number;
    in_progress: number;
    unknown: number;
  }>,
): Record<string, number> {
  const words: { value: string; total: number }[] = [];
  for (const g of groups) {
    const status = g.value ?? "";
    words.push(
      { value: "done", total: g.success },
      { value: "failed", total: g.failed + g.blocked + g.aborted },
      { value: "installing", total: g.in_progress },
    );
    words.push({ value: originalStatus({ status, outcome: "unknown" }), total: g.unknown });
  }
  return countsObject(words);
}

const INT64_MAX = 9_223_372_036_854_775_807;

/** Go's strconv.Atoi with its error ignored, as the original reads page and limit: 0 unless the text is a (signed) decimal integer. */
export function goAtoi(text: string | undefined): number {
  if (text === undefined || !/^[+-]?[0-9]+$/.test(text)) return 0;
  return Math.max(-INT64_MAX, Math.min(INT64_MAX, Number(text)));
}

/** /data/paginated: page below 1 (or not a number) is 1, limit below 1 is 10; no upper bound. */
export function pageWindow(page: string | undefined, limit: string | undefined): { offset: number; limit: number } {
  const p = Math.max(goAtoi(page), 1);
  const l = goAtoi(limit) < 1 ? 10 : goAtoi(limit);
  return { offset: (p - 1) * l, limit: l };
}

/** Start of a calendar day given exactly as YYYY-MM-DD (UTC), or null: the one form the original accepts. */
export function parseDay(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day ? d.getTime() : null;
}

export type DateRange =
  | { ok: true; from: number; to: number }
  | { ok: false; field: "start_date" | "end_date"; message: string };

/**
 * /data/date: both days required, start_date checked first (as the original). The range covers
 * start_date 00:00 to the end of end_date, `to` exclusive (the original stops at 23:59:59.000 and
 * misses the last second's milliseconds).
 */
export function dateRange(start: string | undefined, end: string | undefined): DateRange {
  if (!start || !end)
    return {
      ok: false,
      field: start ? "end_date" : "start_date",
      message: "Both start_date and end_date are required (YYYY-MM-DD)",
    };
  const from = parseDay(start);
  if (from === null)
    return {
      ok: false,
      field: "start_date",
      message: `start_date must be a date YYYY-MM-DD, got ${JSON.stringify(start.slice(0, 40))}`,
    };
  const last = parseDay(end);
  if (last === null)
    return {
      ok: false,
      field: "end_date",
      message: `end_date must be a date YYYY-MM-DD, got ${JSON.stringify(end.slice(0, 40))}`,
    };
  return { ok: true, from, to: last + DAY };
}

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Counts per value as a JSON object with sorted keys (Go writes map keys sorted); a null value is "". */
export function countsObject(groups: Iterable<{ value: string | null; total: number }>): Record<string, number> {
  const sums = new Map<string, number>();
  for (const { value, total } of groups) if (total > 0) sums.set(value ?? "", (sums.get(value ?? "") ?? 0) + total);
  return Object.fromEntries([...sums].sort(([a], [b]) => byCodeUnit(a, b)));
}

/** /data/errors entries: most frequent first, then by text (the original's order is Go map order: random). */
export function errorCountsBody(rows: Iterable<{ error: string | null; count: number }>): OriginalErrors {
  const sums = new Map<string, number>();
  for (const { error, count } of rows) if (error) sums.set(error, (sums.get(error) ?? 0) + count);
  const list = [...sums].sort((a, b) => b[1] - a[1] || byCodeUnit(a[0], b[0]));
  return { error_counts: list.map(([error, count]) => ({ error, count })) };
}

/** One piece of a streamed JSON array: the opening bracket or a separator, then the records. */
export function arrayPiece(records: readonly OriginalSource[], first: boolean): string {
  let out = first ? "[" : ",";
  for (let i = 0; i < records.length; i++) out += (i === 0 ? "" : ",") + JSON.stringify(toOriginalRecord(records[i]!));
  return out;
}

/** The end of a streamed JSON array; Go's json.Encoder ends its output with a newline. */
export const arrayEnd = (empty: boolean): string => (empty ? "[]\n" : "]\n");
