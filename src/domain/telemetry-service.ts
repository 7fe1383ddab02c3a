// The data of the community's telemetry service (community-scripts/telemetry-service, Go and
// ClickHouse since 2026-04), read into this service's model. Pure.
//
// Its table `telemetry_db.telemetry` keeps one row per event, not per run: the start, each
// progress ping, the final status (the first one per execution_id since it deduplicates; several
// in older rows), and an `unknown` row its stuck-install cleanup adds. Every column has a default
// ('' and 0) that a row holds where the client sent nothing, and columns were added over time
// (repo_slug, has_arm, then platform, payload_version, arch, failed_command, failed_line,
// kernel_version, app_version), so older rows hold their defaults there. A row becomes the
// /telemetry report its client sent (defaults read as "not sent"), and an execution's rows, in the
// order they were written, go through this service's own lifecycle (lifecycle.ts), as if it had
// received them. Its read API (GET /api/records) lists one record per execution instead, with the
// steps it went through (`pipeline`); such a record becomes one execution directly.
import type { Execution, Report } from "./execution.ts";
import type { JsonObject } from "./json.ts";
import { decide, executionFromHeld, type HeldReport } from "./lifecycle.ts";
import { normalizeTelemetry, type NormalizeOptions } from "./normalize.ts";
import { deriveOutcome, isFinal } from "./outcome.ts";
import { parseZonedTime } from "./time.ts";

/** How the service's times are read: ClickHouse prints DateTime64 in the server's zone, without an offset. */
export interface ReadOptions {
  normalize: NormalizeOptions;
  /** The time zone of times printed without an offset (an IANA name; "UTC" by default). */
  zone: string;
  /** Listed records state payload_version where a client sent 2 and up (installstats, the newest service): no guessing it. */
  versioned?: boolean;
}

/** Columns a row's report never carries: the row's own random id and the time it was written. */
const ROW_ONLY = new Set(["id", "created", "pipeline"]);

/** Whole-number columns (UInt8 to UInt32, Int16); every other column is a String. */
const NUMBERS = new Set([
  "core_count",
  "ct_type",
  "disk_size",
  "ram_size",
  "exit_code",
  "install_duration",
  "has_arm",
  "payload_version",
  "failed_line",
]);

/**
 * Columns where the service writes "unknown" for an empty or missing value (its validate()): that
 * "unknown" says nothing was sent, so it is read as absent.
 */
const UNKNOWN_IF_EMPTY = new Set(["cpu_vendor", "gpu_vendor", "gpu_passthrough"]);

/** The text the service's stuck-install cleanup writes into the `unknown` row it adds (its MarkRecordAsUnknown). */
const TIMED_OUT = /^Installation timed out - no completion status received after \d+h$/;

const text = (v: unknown): string | undefined =>
  v === undefined || v === null ? undefined : typeof v === "string" ? v : String(v);

/** A whole number as the column holds it (a JSON number, a quoted 64-bit integer, a CSV field); the raw value when it is none, for the field rules to name. */
function whole(v: unknown): number | string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number") return v;
  const t = String(v).trim();
  if (t === "") return undefined;
  return /^-?\d{1,15}$/.test(t) ? Number(t) : t;
}

/**
 * The /telemetry body a row (or a listed record) stands for: columns at their default are left
 * out, as their client did not send them. Zero is a value only where it can be one: ct_type 0
 * (a privileged container) next to the container's sizes, exit_code 0 on a success, has_arm false
 * from a client that sends it (payload v2).
 */
function bodyOf(row: JsonObject): JsonObject {
  const body: JsonObject = Object.create(null) as JsonObject;
  const n = (key: string) => whole(row[key]);
  const status = text(row.status)?.trim().toLowerCase();
  const version = n("payload_version");
  for (const [key, value] of Object.entries(row)) {
    if (ROW_ONLY.has(key) || NUMBERS.has(key)) continue;
    const t = text(value);
    if (t === undefined || t === "" || (UNKNOWN_IF_EMPTY.has(key) && t.trim().toLowerCase() === "unknown")) continue;
    body[key] = t;
  }
  const positive = (key: string) => {
    const v = n(key);
    if (v !== undefined && v !== 0) body[key] = v;
  };
  for (const key of ["disk_size", "core_count", "ram_size", "install_duration", "failed_line", "payload_version"])
    positive(key);
  const sized = ["disk_size", "core_count", "ram_size"].some((k) => body[k] !== undefined);
  const ct = n("ct_type");
  if (ct !== undefined && (ct !== 0 || sized)) body.ct_type = ct;
  const exit = n("exit_code");
  if (exit !== undefined && (exit !== 0 || status === "success")) body.exit_code = exit;
  const arm = n("has_arm");
  if (arm === 1) body.has_arm = true;
  else if (arm === 0 && typeof version === "number" && version >= 2) body.has_arm = false;
  else if (arm !== undefined && arm !== 0) body.has_arm = arm; // neither 0 nor 1: the field rules name it
  return body;
}

/** Why a row or record is not taken: the field at fault and what is wrong. */
export interface Refusal {
  field: string | null;
  message: string;
}

/** What one row of the table is, as far as it is read before the rows are put in order. */
export type RowKey =
  | { ok: true; executionKey: string; randomId: string; at: number }
  | ({ ok: false; randomId: string | null } & Refusal);

/** The execution a row belongs to (its execution_id, or its random_id for rows written before execution ids) and when it was written. */
export function rowKey(row: JsonObject, zone: string): RowKey {
  const randomId = text(row.random_id)?.trim() ?? "";
  if (randomId === "")
    return { ok: false, randomId: null, field: "random_id", message: "random_id is required and must not be empty" };
  const created = text(row.created);
  const at = created === undefined ? null : serviceTime(created, zone);
  if (at === null)
    return {
      ok: false,
      randomId,
      field: "created",
      message: `created must be a date and time such as 2026-05-01 12:00:00.123, got ${JSON.stringify(created ?? null)}`,
    };
  const executionId = text(row.execution_id)?.trim() ?? "";
  return { ok: true, executionKey: executionId === "" ? randomId : executionId, randomId, at };
}

/**
 * A time as the service's data holds it: ClickHouse's "YYYY-MM-DD hh:mm:ss[.fff]" (in `zone`),
 * ISO 8601 with a zone (date_time_output_format=iso), or Unix seconds (unix_timestamp).
 */
export function serviceTime(value: string, zone: string): number | null {
  const t = value.trim();
  if (/^\d{9,11}(?:\.\d{1,9})?$/.test(t)) return Math.round(Number(t) * 1000);
  return parseZonedTime(t, zone);
}

/** One row as an event of its execution: a report as its client sent it, or the cleanup's timeout. */
type RowEvent =
  | { kind: "report"; report: Report }
  | { kind: "timed-out"; report: Report }
  | ({ kind: "refused" } & Refusal);

function rowEvent(row: JsonObject, normalize: NormalizeOptions): RowEvent {
  const checked = normalizeTelemetry(bodyOf(row), normalize);
  if (!checked.ok) return { kind: "refused", field: checked.field, message: checked.message };
  const report = checked.value;
  const cleanup =
    report.status === "unknown" &&
    text(row.error_category) === "timeout" &&
    TIMED_OUT.test(text(row.error)?.trim() ?? "");
  return { kind: cleanup ? "timed-out" : "report", report };
}

/** What became of one row: applied to its execution, absorbed (a repeat, or nothing new), or refused. */
export type RowResult =
  | { kind: "applied" }
  | { kind: "absorbed" }
  | ({ kind: "refused"; reason: "invalid_field" | "already_final" } & Refusal);

/**
 * The rows of one execution, oldest first, folded into the execution they describe by the
 * lifecycle's rules: the first start report creates it, pings move its timeline on, the first
 * final status ends it (a later, different one is refused as ingestion refuses it), a final
 * status without its start becomes the execution it describes on its own (as a held report
 * applied alone), and the cleanup's `unknown` row times a run out as this service's stuck-install
 * job does (outcome unknown, its status kept; a final status after it still applies).
 */
export class ExecutionFold {
  private current: Execution | undefined;
  private held: HeldReport | null = null;

  constructor(private readonly normalize: NormalizeOptions) {}

  add(row: JsonObject, at: number): RowResult {
    const event = rowEvent(row, this.normalize);
    if (event.kind === "refused")
      return { kind: "refused", reason: "invalid_field", field: event.field, message: event.message };
    const current = this.current;
    if (event.kind === "timed-out" && current !== undefined) {
      if (current.outcome !== "in_progress") return { kind: "absorbed" };
      this.current = { ...current, outcome: "unknown", updatedAt: at };
      return { kind: "applied" };
    }
    const decision = decide(current, event.report, { at, attempt: 1, held: this.held, repaired: false });
    switch (decision.kind) {
      case "insert":
        this.held = null;
        this.current = decision.row;
        return { kind: "applied" };
      case "update":
        this.current = decision.row;
        return { kind: "applied" };
      case "hold":
        this.held = { report: event.report, at, repaired: false };
        return { kind: "applied" };
      case "duplicate":
        if (decision.conflict !== null)
          return { kind: "refused", reason: "already_final", field: "status", message: decision.conflict };
        if (decision.row === null) return { kind: "absorbed" };
        this.current = decision.row;
        return { kind: "applied" };
      case "already-final": // /upload only; every row here is a /telemetry report
        return {
          kind: "refused",
          reason: "already_final",
          field: "status",
          message: `execution ${event.report.executionId} already ended ${decision.outcome}`,
        };
    }
  }

  /** The execution, or null when no row of it was taken. Its attempt number is 1: the caller numbers an install's executions. */
  result(): Execution | null {
    return this.current ?? (this.held === null ? null : executionFromHeld(this.held, 1));
  }
}

const PROGRESS = new Set(["installing", "validation", "configuring"]);

/**
 * One record of GET /api/records (the community service's, or another installstats') as the
 * execution it lists. Its `pipeline` says when each step was first seen ([{"s": status, "t":
 * time}]); `created` is the time of the row the record was collapsed to (the community's: its
 * final event; ours: the first report), so the execution starts at the earliest of it and the
 * progress steps. A run
 * timed out shows as `unknown`: with the cleanup's text (the community's) or without a final
 * step (ours); it is kept as such (outcome unknown, its last step as status).
 */
export function recordExecution(
  record: JsonObject,
  opts: ReadOptions,
): { ok: true; execution: Execution } | ({ ok: false; randomId: string | null } & Refusal) {
  const randomId = text(record.random_id)?.trim() || null;
  const refuse = (field: string | null, message: string) => ({ ok: false as const, randomId, field, message });
  const created = text(record.created);
  const createdTime = created === undefined ? null : serviceTime(created, opts.zone);
  if (createdTime === null)
    return refuse(
      "created",
      `created must be a date and time such as 2026-05-01 12:00:00.123, got ${JSON.stringify(created ?? null)}`,
    );
  const steps: { status: string; at: number }[] = [];
  if (record.pipeline !== undefined && record.pipeline !== null && record.pipeline !== "") {
    let parsed: unknown;
    try {
      parsed = typeof record.pipeline === "string" ? JSON.parse(record.pipeline) : record.pipeline;
    } catch {
      return refuse("pipeline", "pipeline must be a JSON array of steps");
    }
    if (!Array.isArray(parsed)) return refuse("pipeline", "pipeline must be a JSON array of steps");
    for (const step of parsed as unknown[]) {
      const s = step as { s?: unknown; t?: unknown } | null;
      const at = typeof s?.t === "string" ? serviceTime(s.t, opts.zone) : null;
      if (typeof s?.s !== "string" || at === null)
        return refuse(
          "pipeline",
          `pipeline steps must be {"s": status, "t": time}, got ${JSON.stringify(step)?.slice(0, 80)}`,
        );
      steps.push({ status: s.s.trim().toLowerCase(), at });
    }
  }
  const body = bodyOf(record);
  // Older listings do not say which payload version sent a record; yes/no for gpu_passthrough is v2's meaning (v1 sent the host's GPU kind).
  if (!opts.versioned && body.payload_version === undefined && /^(yes|no)$/i.test(text(body.gpu_passthrough) ?? ""))
    body.payload_version = 2;
  const status = text(record.status)?.trim().toLowerCase() ?? "";
  const finalStep = steps.find((s) => !PROGRESS.has(s.status) && deriveOutcome(s.status, null) !== "in_progress");
  const lastProgress = steps.filter((s) => PROGRESS.has(s.status)).at(-1);
  const timedOut =
    status === "unknown" && (TIMED_OUT.test(text(record.error)?.trim() ?? "") || finalStep === undefined);
  if (timedOut) {
    body.status = lastProgress?.status ?? "installing";
    for (const key of ["error", "error_category", "exit_code", "failed_command", "failed_line"]) delete body[key];
  }
  const checked = normalizeTelemetry(body, opts.normalize);
  if (!checked.ok) return refuse(checked.field, checked.message);
  const report = checked.value;
  const first = (s: string) => steps.find((x) => x.status === s)?.at ?? null;
  const times = [createdTime, ...steps.map((s) => s.at)];
  // It began at its first progress step, unless listed earlier (a final report that came before its start, at ours).
  const createdAt = Math.min(createdTime, ...steps.filter((s) => PROGRESS.has(s.status)).map((s) => s.at));
  const final = isFinal(report.outcome);
  const finishedAt = final ? (finalStep?.at ?? createdTime) : null;
  // A duration needs a start seen before the end (ours lists a final status that came first after its start).
  const started = steps.some((s) => PROGRESS.has(s.status) && finishedAt !== null && s.at <= finishedAt);
  // As a report that stands on its own (a held report applied alone), with the times the steps tell.
  const execution: Execution = {
    ...executionFromHeld({ report, at: createdAt, repaired: false }, 1),
    outcome: timedOut ? "unknown" : report.outcome,
    updatedAt: Math.max(...times),
    durationMs: final && started && finishedAt !== null ? finishedAt - createdAt : null,
    installingAt: first("installing"),
    validationAt: first("validation"),
    configuringAt: first("configuring"),
    finishedAt,
  };
  return { ok: true, execution };
}
