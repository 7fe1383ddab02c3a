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

/** Marks the first time `status` was seen; a final status marks finishedAt. */
function seen(row: Execution, status: string, outcome: Outcome, at: number): Execution {
  if (isFinal(outcome)) return row.finishedAt === null ? { ...row, finishedAt: at } : row;
  const key = TIMELINE[status as keyof typeof TIMELINE];
  return key === undefined || row[key] !== null ? row : { ...row, [key]: at };
}

/** Incoming values win where they are present: every /telemetry report carries the whole payload. */
function merge(stored: Descriptive, incoming: Descriptive | null): Descriptive {
  if (incoming === null) return stored;
  const out = { ...stored } as Record<keyof Descriptive, unknown>;
  for (const key of Object.keys(incoming) as (keyof Descriptive)[]) if (incoming[key] !== null) out[key] = incoming[key];
  return out as unknown as Descriptive;
}

/** The report's ending replaces the stored one (a final report says how it ended). */
function finish(row: Execution, report: Report, at: number, knownStart: boolean): Execution {
  const { status, outcome, error, exitCode, errorCategory, failedCommand, failedLine, installDuration } = report;
  const ended: Execution = {
    ...row,
    ...merge(row, report.fields),
    status,
    outcome,
    error,
    exitCode,
    errorCategory,
    failedCommand,
    failedLine,
    installDuration: installDuration ?? row.installDuration,
    updatedAt: at,
    // A final status that came before its start report has no known duration.
    durationMs: knownStart ? Math.max(0, at - row.createdAt) : null,
  };
  return seen(ended, status, outcome, at);
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
  const started = seen(row, report.status, report.outcome, c.at);
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
      const conflict = report.status !== c.held.report.status ? `execution ${report.executionId} already ended ${c.held.report.status}; ${report.status} not applied` : null;
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
    if (!isTelemetry(report)) return report.fields === null ? { kind: "already-final", outcome: stored } : { kind: "duplicate", row: null, conflict: null };
    const conflict = final && report.status !== current.status ? `execution ${current.executionId} already ended ${current.status}; ${report.status} not applied` : null;
    return { kind: "duplicate", row: null, conflict };
  }
  if (final) return { kind: "update", row: { ...finish(current, report, c.at, true), repaired } };
  // A progress report: /upload's repeated start changes nothing, as it always did.
  if (!isTelemetry(report) && report.fields !== null) return { kind: "duplicate", row: null, conflict: null };
  const timeline = seen({ ...current, ...merge(current, report.fields) }, report.status, report.outcome, c.at);
  if (rank(report.status) > rank(current.status) || (report.fields === null && report.status !== current.status)) {
    return { kind: "update", row: { ...timeline, status: report.status, updatedAt: c.at, repaired } };
  }
  const changed = Object.keys(timeline).some((k) => timeline[k as keyof Execution] !== current[k as keyof Execution]);
  return { kind: "duplicate", row: changed ? { ...timeline, repaired } : null, conflict: null };
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
