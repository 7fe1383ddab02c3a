// Field rules and normalization for every report: /upload's start report and status update and
// /telemetry's payload (v1 and v2) become one typed Report, or the field that breaks the rules is named.
import { byExitCode, categoryFor } from "./error-category.ts";
import { INSTALL_TYPES, MAX_RANDOM_ID_LENGTH, type Descriptive, type Ending, type Report } from "./execution.ts";
import { parseExitCode } from "./exit-codes.ts";
import { FIELD, WIRE_KEYS, fieldsOf, wireName, type FieldOf } from "./fields.ts";
import type { JsonObject } from "./json.ts";
import { deriveOutcome, type Outcome } from "./outcome.ts";
import { maskIpAddresses } from "./mask-ips.ts";

export interface NormalizeOptions {
  maxFieldLength: number;
  maxErrorLength: number;
  maskIps: boolean;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// ANSI colour/cursor sequences that scripts print into their error output.
const ANSI =
  /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)|[ -/]+[0-~]|[0-~])|\u009b[0-?]*[ -/]*[@-~]/g;

function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  // Do not split a surrogate pair.
  const end = /[\ud800-\udbff]/.test(text.charAt(max - 1)) ? max - 1 : max;
  return text.slice(0, end);
}

function asText(body: JsonObject, key: string): string | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  // Lone surrogates cannot be stored (SQLite keeps UTF-8): each would become U+FFFD in the record
  // but not in rollup keys. Made U+FFFD here, so every copy agrees; ids refuse them (see id).
  if (typeof v === "string") return v.isWellFormed() ? v : v.toWellFormed();
  if (typeof v === "number" && Number.isInteger(v) && !Number.isSafeInteger(v)) {
    // JSON numbers are doubles: 12345678901234567890 arrives as ...000, and two such ids would collide.
    throw new FieldError(key, `${key} must be a string; a whole number past 2^53 cannot be kept exactly`);
  }
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new FieldError(key, `${key} must be a string, got ${Array.isArray(v) ? "an array" : "an object"}`);
}

/** Short label fields: single line, trimmed, capped. `""` stays `""`: sent empty is not absent. */
function label(body: JsonObject, key: string, max: number): string | null {
  const raw = asText(body, key);
  if (raw === null) return null;
  // Most labels hold no control character (an ANSI sequence starts with one): no replacing then.
  const clean = CONTROL.test(raw) ? raw.replace(ANSI, "").replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ") : raw;
  return cut(clean.trim(), max).trim();
}

/** A label that names a value of a small vocabulary: lowercased, empty is absent. */
function word(body: JsonObject, key: string, max: number): string | null {
  const text = label(body, key, max)?.toLowerCase();
  return text === undefined || text === "" ? null : text;
}

/** Error texts keep line breaks and tabs but lose colour codes and other control characters. */
function errorText(body: JsonObject, key: string, opts: NormalizeOptions): string | null {
  const raw = asText(body, key);
  if (raw === null) return null;
  let text = raw
    .replace(ANSI, "")
    .replace(/\r\n?/g, "\n")
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "")
    .trim();
  // Cut first (with room for an address at the edge), so masking never works on more than it keeps.
  text = cut(text, opts.maxErrorLength + 64);
  if (opts.maskIps) text = maskIpAddresses(text);
  return cut(text, opts.maxErrorLength).trim();
}

// Unit multipliers relative to each field's own unit (disk in GiB, RAM in MiB).
const UNIT_POWER: Record<string, number> = { "": 0, k: 1, m: 2, g: 3, t: 4 };
type Unit = "none" | "GiB" | "MiB";
const BASE_POWER: Record<Exclude<Unit, "none">, number> = { GiB: 3, MiB: 2 };

/**
 * A number checked against its field's bounds (domain/fields.ts), as the community's telemetry
 * service checks them (its validate()): values outside are refused (422), never clamped.
 */
function ranged(body: JsonObject, key: string, unit: Unit, integer: boolean, min: number, max: number): number | null {
  const n = numeric(body, key, unit, integer);
  if (n !== null && (n < min || n > max)) {
    throw new FieldError(key, `${key} must be between ${min} and ${max}${unit === "none" ? "" : ` ${unit}`}, got ${n}`);
  }
  return n;
}

function numeric(body: JsonObject, key: string, unit: Unit, integer: boolean): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  let n: number;
  if (typeof v === "number") {
    n = v;
  } else if (typeof v === "string") {
    const text = v
      .trim()
      .replace(/^["']|["']$/g, "")
      .trim();
    if (text === "") return null;
    const m = /^(\d+(?:\.\d+)?|\.\d+)\s*([kmgt]?)(i?b)?$/i.exec(text);
    const suffix = (m?.[2] ?? "").toLowerCase();
    if (!m || (unit === "none" && (suffix !== "" || m[3] !== undefined))) {
      throw new FieldError(
        key,
        `${key} must be a number${unit === "none" ? "" : ` (optionally with a unit such as ${unit === "GiB" ? "32G" : "2048M"})`}, got ${JSON.stringify(cut(v, 40))}`,
      );
    }
    n = Number(m[1]);
    if (unit !== "none" && suffix !== "") n *= 1024 ** ((UNIT_POWER[suffix] ?? 0) - BASE_POWER[unit]);
  } else {
    throw new FieldError(
      key,
      `${key} must be a number, got ${typeof v === "boolean" ? "a boolean" : Array.isArray(v) ? "an array" : "an object"}`,
    );
  }
  if (!Number.isFinite(n) || n < 0) throw new FieldError(key, `${key} must be a non-negative number`);
  if (n === 0) n = 0; // -0 is stored as 0
  if (integer) {
    // Units can make whole values fractional (1.5G of RAM is 1536 MiB, 100M of RAM is not whole): round those.
    const whole = unit === "none" ? n : Math.round(n);
    if (!Number.isSafeInteger(whole)) throw new FieldError(key, `${key} must be a whole number`);
    return whole;
  }
  return n;
}

function id(body: JsonObject, key: string): string {
  const raw = asText(body, key);
  const value = raw?.trim() ?? "";
  if (value === "") throw new FieldError(key, `${key} is required and must not be empty`);
  if (value.length > MAX_RANDOM_ID_LENGTH)
    throw new FieldError(key, `${key} is longer than ${MAX_RANDOM_ID_LENGTH} characters`);
  if (CONTROL.test(value)) throw new FieldError(key, `${key} must not contain control characters`);
  // Ids that differ must stay different: lone surrogates and undecodable bytes would all be
  // stored as U+FFFD (asText made them so) and collide, so an id holding one is refused.
  if (value.includes("\ufffd"))
    throw new FieldError(
      key,
      `${key} must be valid Unicode text (no lone surrogates, no bytes that are not UTF-8, no U+FFFD)`,
    );
  return value;
}

function status(body: JsonObject, max: number, fallback: string | null): string {
  const s = word(body, "status", max) ?? fallback;
  if (s === null) throw new FieldError("status", "status is required");
  return s;
}

function installType(body: JsonObject, key: string, max: number): string {
  const type = word(body, key, max);
  if (type === null) throw new FieldError(key, `${key} is required (one of ${INSTALL_TYPES.join(", ")})`);
  if (!(INSTALL_TYPES as readonly string[]).includes(type)) {
    throw new FieldError(key, `${key} must be one of ${INSTALL_TYPES.join(", ")}, got ${JSON.stringify(type)}`);
  }
  return type;
}

/** A whole number in [min, max], or null when absent or empty. */
function integer(body: JsonObject, key: string, min: number, max: number): number | null {
  const n = numeric(body, key, "none", true);
  if (n !== null && (n < min || n > max))
    throw new FieldError(key, `${key} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function boolean(body: JsonObject, key: string): boolean | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v === "boolean") return v;
  const text = String(v).trim().toLowerCase();
  if (text === "") return null;
  if (["true", "1", "yes"].includes(text)) return true;
  if (["false", "0", "no"].includes(text)) return false;
  throw new FieldError(key, `${key} must be true or false, got ${JSON.stringify(cut(String(v), 40))}`);
}

function checked<T>(build: () => T): Checked<T> {
  try {
    return { ok: true, value: build() };
  } catch (e) {
    if (e instanceof FieldError) return { ok: false, field: e.field, message: e.message };
    throw e;
  }
}

function extra(body: JsonObject): string | null {
  // Runs for every report: the keys are looked at without copying the body's entries.
  // No prototype: a key "__proto__" is kept as a key, as Object.fromEntries would.
  let unknown: JsonObject | null = null;
  for (const key in body) if (!WIRE_KEYS.has(key)) (unknown ??= Object.create(null) as JsonObject)[key] = body[key];
  return unknown === null ? null : JSON.stringify(unknown);
}

/** How one descriptive field is read (its row in domain/fields.ts, looked at once, here). */
interface Reader {
  key: keyof Descriptive;
  /** The body key; a field with an alias reads the alias when this one is absent or null. */
  from: string;
  alias: string | null;
  kind: FieldOf<"fields">["kind"];
  unit: Unit;
  whole: boolean;
  min: number;
  max: number;
  /** A field only some payload versions send (under a body key others share): its key's index in SHARED, else -1. */
  shared: number;
  v2: boolean;
}
const ROWS = fieldsOf("fields");
/**
 * Body keys that rows of different payload versions share (domain/fields.ts `wire`; such rows are
 * words, test/unit/fields-table-drives-normalization-and-rollups.test.ts): each read once, before the other fields.
 */
const SHARED = [...new Set(ROWS.flatMap((f) => ("versions" in f ? [wireName(f)] : [])))];
const READERS: readonly Reader[] = ROWS.map((f) => ({
  key: f.key,
  from: "wire" in f ? f.wire : f.name,
  alias: "alias" in f ? f.alias : null,
  kind: f.kind,
  unit: "unit" in f ? f.unit : "none",
  whole: f.kind === "integer" || "whole" in f,
  min: "bounds" in f ? f.bounds[0] : 0,
  max: "bounds" in f ? f.bounds[1] : 0,
  shared: "versions" in f ? SHARED.indexOf(wireName(f)) : -1,
  v2: "versions" in f && f.versions === "v2+",
}));
/** The shared keys' values of the report being read (normalization is synchronous: one report at a time). */
const SHARED_VALUES: (string | null)[] = [];

/** The values of the report being read, by row (normalization is synchronous: one report at a time). */
const VALUES: Descriptive[keyof Descriptive][] = READERS.map(() => null);

/**
 * The descriptive object of VALUES: one object literal over the rows' keys, built at module load
 * (`(v) => ({ "type": v[0], "ctType": v[1], ... })`), so every report's fields are one object of
 * one shape, made at once. Written key by key into a template, a report cost 2-5% more CPU (a
 * store by a key that changes every time is a lookup). The literal holds only the table's keys.
 */
const assemble = new Function(
  `return (v) => ({ ${ROWS.map((f, i) => `${JSON.stringify(f.key)}: v[${i}]`).join(", ")} });`,
)() as (values: typeof VALUES) => Descriptive;

/**
 * The descriptive fields, read in the table's order (the first field in error is the one named);
 * `payloadVersion` says which version's rows a shared key fills (null: /upload). A loop over the
 * rows rather than one function of a call per field: that one cost the optimizing JIT ~15 MB more
 * peak memory to compile (scripts/bench-fields.ts).
 */
function descriptive(body: JsonObject, max: number, payloadVersion: number | null): Descriptive {
  for (let i = 0; i < SHARED.length; i++) SHARED_VALUES[i] = word(body, SHARED[i]!, max);
  for (let i = 0; i < READERS.length; i++) {
    const r = READERS[i]!;
    let v: Descriptive[keyof Descriptive];
    if (r.shared >= 0)
      v =
        payloadVersion !== null && (r.v2 ? payloadVersion >= 2 : payloadVersion < 2) ? SHARED_VALUES[r.shared]! : null;
    else {
      switch (r.kind) {
        case "label":
          v = label(
            body,
            r.alias !== null && (body[r.from] === undefined || body[r.from] === null) ? r.alias : r.from,
            max,
          );
          break;
        case "word":
          v = word(body, r.from, max);
          break;
        case "label-lower":
          v = label(body, r.from, max)?.toLowerCase() ?? null;
          break;
        case "integer":
        case "size":
          v = ranged(body, r.from, r.unit, r.whole, r.min, r.max);
          break;
        case "install-type":
          v = installType(body, r.from, max);
          break;
        case "bool":
          v = boolean(body, r.from);
          break;
        case "json":
          v = extra(body);
          break;
      }
    }
    VALUES[i] = v;
  }
  return assemble(VALUES);
}

/** How the run ended as far as this report says; exit code and category only with a final outcome; a failure reclassified by its exit code (a user's abort, blocked by the host). */
function ending(
  st: string,
  error: string | null,
  sent: {
    exitCode: number | null;
    category: string | null;
    failedCommand: string | null;
    failedLine: number | null;
    installDuration: number | null;
  },
): Ending {
  const outcome: Outcome = deriveOutcome(st, error);
  const final = outcome !== "in_progress";
  const exitCode = !final ? null : (sent.exitCode ?? (outcome === "success" ? null : parseExitCode(error)));
  return byExitCode({
    status: st,
    outcome,
    error,
    exitCode,
    errorCategory: categoryFor({ clientCategory: sent.category, exitCode, error, outcome }),
    failedCommand: final ? sent.failedCommand : null,
    failedLine: final ? sent.failedLine : null,
    installDuration: sent.installDuration,
  });
}

// Bounds of the numbers read by hand (the ending's and the payload version), from their rows.
const PAYLOAD_VERSION = FIELD.payload_version.bounds;
const EXIT_CODE = FIELD.exit_code.bounds;
const FAILED_LINE = FIELD.failed_line.bounds;
const INSTALL_DURATION = FIELD.install_duration.bounds;

const NOTHING_SENT = { exitCode: null, category: null, failedCommand: null, failedLine: null, installDuration: null };

/** POST /upload: "installation started". */
export function normalizeStart(body: JsonObject, opts: NormalizeOptions): Checked<Report> {
  return checked(() => {
    const randomId = id(body, "random_id");
    const fields = descriptive(body, opts.maxFieldLength, null);
    // Start reports say "installing"; an absent status means the same.
    const st = status(body, opts.maxFieldLength, "installing");
    return { executionId: randomId, randomId, payloadVersion: null, fields, ...ending(st, null, NOTHING_SENT) };
  });
}

/** POST /upload/updatestatus: how it ended, nothing else. */
export function normalizeUpdate(body: JsonObject, opts: NormalizeOptions): Checked<Report> {
  return checked(() => {
    const randomId = id(body, "random_id");
    const st = status(body, opts.maxFieldLength, null);
    return {
      executionId: randomId,
      randomId,
      payloadVersion: null,
      fields: null,
      ...ending(st, errorText(body, "error", opts), NOTHING_SENT),
    };
  });
}

/** POST /telemetry, payload v1 (no payload_version) and v2: every report carries every field. */
export function normalizeTelemetry(body: JsonObject, opts: NormalizeOptions): Checked<Report> {
  return checked(() => {
    const max = opts.maxFieldLength;
    const payloadVersion = integer(body, "payload_version", PAYLOAD_VERSION[0], PAYLOAD_VERSION[1]) ?? 1;
    const randomId = id(body, "random_id");
    // The client sends execution_id = random_id on a first run; older v1 revisions send none.
    const executionId =
      body.execution_id === undefined || body.execution_id === null || body.execution_id === ""
        ? randomId
        : id(body, "execution_id");
    const fields = descriptive(body, max, payloadVersion);
    const st = status(body, max, null);
    const failedLine = integer(body, "failed_line", FAILED_LINE[0], FAILED_LINE[1]);
    const failedCommand = label(body, "failed_command", opts.maxErrorLength);
    return {
      executionId,
      randomId,
      payloadVersion,
      fields,
      ...ending(st, errorText(body, "error", opts), {
        exitCode: integer(body, "exit_code", EXIT_CODE[0], EXIT_CODE[1]),
        category: label(body, "error_category", max),
        // The client sends 0 and "" when there is no failing command.
        failedCommand: failedCommand === "" ? null : failedCommand,
        failedLine: failedLine === 0 ? null : failedLine,
        installDuration: integer(body, "install_duration", INSTALL_DURATION[0], INSTALL_DURATION[1]),
      }),
    };
  });
}
