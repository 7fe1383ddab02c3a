// What a report does to the execution it names: the one set of rules both protocols share
// (docs/protocol.md#current-clients-post-telemetry). Pure: the store passes in what it has stored and applies the decision.
//
// /upload: a start report for a stored id is a duplicate; a status update for a record with a
// final status is refused (409); one before its start report is held.
// /telemetry: the client retries on every non-2xx, so a repeated start or final report is a
// duplicate (200), never a conflict; progress pings move the timeline forward and never move a
// final status back; a final report before its start is held, except for tools and addons, whose
// only report is the final one.
import { UNDESCRIBED, kindOfType, type Descriptive, type Execution, type Report } from "./execution.ts";
import { isFinal, deriveOutcome, type Outcome } from "./outcome.ts";

export type Decision =
  /** A new execution. */
  | { kind: "insert"; row: Execution }
  /** The report changed the stored execution. */
  | { kind: "update"; row: Execution }
  /**
   * Nothing new happened to the execution. `row` is set when the report still filled a gap (a
   * start report's time after a progress ping, fields a minimal ping lacked); `conflict` when a
   * final report contradicts the stored final status (kept in the rejected log, not applied).
   */
  | { kind: "duplicate"; row: Execution | null; conflict: string | null }
  /** A final status before its start report: kept aside until the start report comes. */
  | { kind: "hold" }
  /** /upload only: a status update for a record that already has a final status (409). */
  | { kind: "already-final"; outcome: Outcome };

/** A report held until its execution's start report arrives, and when it was received. */
export interface HeldReport {
  report: Report;
  at: number;
  repaired: boolean;
}

export interface Circumstances {
  at: number;
  /** The attempt number a new execution gets: 1 + the install's executions stored so far. */
  attempt: number;
  held: HeldReport | null;
  /** This report's body needed repair. */
  repaired: boolean;
}

// Progress statuses in the order the client sends them; a ping never moves the timeline back.
const PROGRESS_RANK: Readonly<Record<string, number>> = { installing: 0, validation: 1, configuring: 2 };
const rank = (status: string): number => PROGRESS_RANK[status] ?? 0;

const TIMELINE = { installing: "installingAt", validation: "validationAt", configuring: "configuringAt" } as const;

/**
 * Marks, in `row` (a copy the caller just made), the first time `status` was seen; a final status
 * marks finishedAt. Rows are written in place: an execution is ~50 fields, and every report of a
 * lifecycle made several copies of it.
 */
function markSeen(row: Execution, status: string, outcome: Outcome, at: number): Execution {
  if (isFinal(outcome)) {
    if (row.finishedAt === null) row.finishedAt = at;
    return row;
  }
  const key = TIMELINE[status as keyof typeof TIMELINE];
  if (key !== undefined && row[key] === null) row[key] = at;
  return row;
}

/** Every descriptive field (the fields table's, through UNDESCRIBED). */
const DESCRIPTIVE_KEYS = Object.keys(UNDESCRIBED) as (keyof Descriptive)[];

/** A copy of `stored` where incoming values win where they are present: every /telemetry report carries the whole payload. */
function merged(stored: Execution, incoming: Descriptive | null): Execution {
  const out = { ...stored };
  if (incoming === null) return out;
  const target = out as Record<keyof Descriptive, unknown>;
  for (const key of DESCRIPTIVE_KEYS) if (incoming[key] !== null) target[key] = incoming[key];
  return out;
}

/** The report's ending replaces the stored one (a final report says how it ended), in a copy of `row`. */
function finish(row: Execution, report: Report, at: number, knownStart: boolean): Execution {
  const ended = merged(row, report.fields);
  ended.status = report.status;
  ended.outcome = report.outcome;
  ended.error = report.error;
  ended.exitCode = report.exitCode;
  ended.errorCategory = report.errorCategory;
  ended.failedCommand = report.failedCommand;
  ended.failedLine = report.failedLine;
  ended.installDuration = report.installDuration ?? row.installDuration;
  ended.updatedAt = at;
  // A final status that came before its start report has no known duration.
  ended.durationMs = knownStart ? Math.max(0, at - row.createdAt) : null;
  return markSeen(ended, report.status, report.outcome, at);
}

function create(report: Report, fields: Descriptive, c: Circumstances): Execution {
  const row: Execution = {
    ...fields,
    executionId: report.executionId,
    randomId: report.randomId,
    attempt: c.attempt,
    kind: kindOfType(fields.type),
    payloadVersion: report.payloadVersion,
    status: report.status,
    outcome: report.outcome,
    error: report.error,
    exitCode: report.exitCode,
    errorCategory: report.errorCategory,
    failedCommand: report.failedCommand,
    failedLine: report.failedLine,
    installDuration: report.installDuration,
    createdAt: c.at,
    updatedAt: c.at,
    durationMs: null,
    installingAt: null,
    validationAt: null,
    configuringAt: null,
    finishedAt: null,
    repaired: c.repaired || c.held?.repaired === true,
  };
  const started = markSeen(row, report.status, report.outcome, c.at);
  // The held final status wins over the start report's progress status.
  return c.held === null ? started : finish(started, c.held.report, c.held.at, false);
}

const isTelemetry = (report: Report): boolean => report.payloadVersion !== null;

export function decide(current: Execution | undefined, report: Report, c: Circumstances): Decision {
  const final = isFinal(report.outcome);
  if (current === undefined) {
    // A final status is held already: a second one is refused (/upload) or a duplicate (/telemetry keeps the first).
    if (c.held !== null && final) {
      if (!isTelemetry(report)) return { kind: "already-final", outcome: c.held.report.outcome };
      const conflict =
        report.status !== c.held.report.status
          ? `execution ${report.executionId} already ended ${c.held.report.status}; ${report.status} not applied`
          : null;
      return { kind: "duplicate", row: null, conflict };
    }
    if (report.fields === null) return { kind: "hold" };
    // Tools and addons send one report, final; an install's final report waits for its start.
    if (final && kindOfType(report.fields.type) === "install") return { kind: "hold" };
    return { kind: "insert", row: create(report, report.fields, c) };
  }
  // A record is open while its status is a progress status, even when it timed out (expired):
  // a late final status still applies then.
  const stored = deriveOutcome(current.status, null);
  const repaired = current.repaired || c.repaired;
  if (isFinal(stored)) {
    if (!isTelemetry(report))
      return report.fields === null
        ? { kind: "already-final", outcome: stored }
        : { kind: "duplicate", row: null, conflict: null };
    const conflict =
      final && report.status !== current.status
        ? `execution ${current.executionId} already ended ${current.status}; ${report.status} not applied`
        : null;
    return { kind: "duplicate", row: null, conflict };
  }
  if (final) {
    const row = finish(current, report, c.at, true);
    row.repaired = repaired;
    return { kind: "update", row };
  }
  // A progress report: /upload's repeated start changes nothing, as it always did.
  if (!isTelemetry(report) && report.fields !== null) return { kind: "duplicate", row: null, conflict: null };
  const timeline = markSeen(merged(current, report.fields), report.status, report.outcome, c.at);
  if (rank(report.status) > rank(current.status) || (report.fields === null && report.status !== current.status)) {
    timeline.status = report.status;
    timeline.updatedAt = c.at;
    timeline.repaired = repaired;
    return { kind: "update", row: timeline };
  }
  const changed = Object.keys(timeline).some((k) => timeline[k as keyof Execution] !== current[k as keyof Execution]);
  timeline.repaired = repaired;
  return { kind: "duplicate", row: changed ? timeline : null, conflict: null };
}

/**
 * The execution a held report describes on its own: created when it was received, ended as it
 * says, no start time and so no duration (as for a held report applied when its start comes). A
 * /telemetry final report carries every descriptive field; an /upload status update none (type "").
 */
export function executionFromHeld(held: HeldReport, attempt: number): Execution {
  const { report, at, repaired } = held;
  const fields = report.fields ?? UNDESCRIBED;
  return {
    ...fields,
    executionId: report.executionId,
    randomId: report.randomId,
    attempt,
    kind: kindOfType(fields.type),
    payloadVersion: report.payloadVersion,
    status: report.status,
    outcome: report.outcome,
    error: report.error,
    exitCode: report.exitCode,
    errorCategory: report.errorCategory,
    failedCommand: report.failedCommand,
    failedLine: report.failedLine,
    installDuration: report.installDuration,
    createdAt: at,
    updatedAt: at,
    durationMs: null,
    installingAt: null,
    validationAt: null,
    configuringAt: null,
    finishedAt: isFinal(report.outcome) ? at : null,
    repaired,
  };
}
