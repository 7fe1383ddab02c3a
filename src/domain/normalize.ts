// Field rules and normalization for the two report kinds: turns a parsed body into a
// typed report, or names the field that breaks the rules.
import { INSTALL_TYPES, MAX_RANDOM_ID_LENGTH, type StartReport, type StatusUpdate } from "./install.ts";
import type { JsonObject } from "./json.ts";
import { deriveOutcome } from "./outcome.ts";
import { maskIpAddresses } from "./mask-ips.ts";

export interface NormalizeOptions {
  maxFieldLength: number;
  maxErrorLength: number;
  maskIps: boolean;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

class FieldError extends Error {
  constructor(readonly field: string, message: string) {
    super(message);
  }
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// ANSI colour/cursor sequences that scripts print into their error output.
const ANSI = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)|[ -/]+[0-~]|[0-~])|\u009b[0-?]*[ -/]*[@-~]/g;

function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  // Do not split a surrogate pair.
  const end = /[\ud800-\udbff]/.test(text.charAt(max - 1)) ? max - 1 : max;
  return text.slice(0, end);
}

function asText(body: JsonObject, key: string): string | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new FieldError(key, `${key} must be a string, got ${Array.isArray(v) ? "an array" : "an object"}`);
}

/** Short label fields: single line, trimmed, capped; empty becomes null. */
function label(body: JsonObject, key: string, max: number): string | null {
  const raw = asText(body, key);
  if (raw === null) return null;
  const text = cut(raw.replace(ANSI, "").replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim(), max).trim();
  return text === "" ? null : text;
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
  text = cut(text, opts.maxErrorLength).trim();
  return text === "" ? null : text;
}

// Unit multipliers relative to each field's own unit (disk in GiB, RAM in MiB).
const UNIT_POWER: Record<string, number> = { "": 0, k: 1, m: 2, g: 3, t: 4 };
type Unit = "none" | "GiB" | "MiB";
const BASE_POWER: Record<Exclude<Unit, "none">, number> = { GiB: 3, MiB: 2 };

function numeric(body: JsonObject, key: string, unit: Unit, integer: boolean): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  let n: number;
  if (typeof v === "number") {
    n = v;
  } else if (typeof v === "string") {
    const text = v.trim().replace(/^["']|["']$/g, "").trim();
    if (text === "") return null;
    const m = /^(\d+(?:\.\d+)?|\.\d+)\s*([kmgt]?)(i?b)?$/i.exec(text);
    const suffix = (m?.[2] ?? "").toLowerCase();
    if (!m || (unit === "none" && (suffix !== "" || m[3] !== undefined))) {
      throw new FieldError(key, `${key} must be a number${unit === "none" ? "" : ` (optionally with a unit such as ${unit === "GiB" ? "32G" : "2048M"})`}, got ${JSON.stringify(cut(v, 40))}`);
    }
    n = Number(m[1]);
    if (unit !== "none" && suffix !== "") n *= 1024 ** ((UNIT_POWER[suffix] ?? 0) - BASE_POWER[unit]);
  } else {
    throw new FieldError(key, `${key} must be a number, got ${typeof v === "boolean" ? "a boolean" : Array.isArray(v) ? "an array" : "an object"}`);
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

function randomId(body: JsonObject): string {
  const raw = asText(body, "random_id");
  const id = raw?.trim() ?? "";
  if (id === "") throw new FieldError("random_id", "random_id is required and must not be empty");
  if (id.length > MAX_RANDOM_ID_LENGTH) throw new FieldError("random_id", `random_id is longer than ${MAX_RANDOM_ID_LENGTH} characters`);
  if (CONTROL.test(id)) throw new FieldError("random_id", "random_id must not contain control characters");
  return id;
}

function status(body: JsonObject, max: number, fallback: string | null): string {
  const s = label(body, "status", max)?.toLowerCase() ?? fallback;
  if (s === null) throw new FieldError("status", "status is required");
  return s;
}

function checked<T>(build: () => T): Checked<T> {
  try {
    return { ok: true, value: build() };
  } catch (e) {
    if (e instanceof FieldError) return { ok: false, field: e.field, message: e.message };
    throw e;
  }
}

export function normalizeStart(body: JsonObject, opts: NormalizeOptions): Checked<StartReport> {
  return checked(() => {
    const max = opts.maxFieldLength;
    const id = randomId(body);
    const type = label(body, "type", max)?.toLowerCase();
    if (type === undefined) throw new FieldError("type", `type is required (one of ${INSTALL_TYPES.join(", ")})`);
    if (!(INSTALL_TYPES as readonly string[]).includes(type)) {
      throw new FieldError("type", `type must be one of ${INSTALL_TYPES.join(", ")}, got ${JSON.stringify(type)}`);
    }
    // Start reports say "installing"; an absent status means the same.
    const st = status(body, max, "installing");
    const hostVersion = body.pve_version !== undefined && body.pve_version !== null ? "pve_version" : "host_version";
    return {
      randomId: id,
      type,
      ctType: numeric(body, "ct_type", "none", true),
      diskSize: numeric(body, "disk_size", "GiB", false),
      coreCount: numeric(body, "core_count", "none", true),
      ramSize: numeric(body, "ram_size", "MiB", true),
      osType: label(body, "os_type", max)?.toLowerCase() ?? null,
      osVersion: label(body, "os_version", max),
      disableip6: label(body, "disableip6", max)?.toLowerCase() ?? null,
      nsapp: label(body, "nsapp", max),
      method: label(body, "method", max),
      pveVersion: label(body, hostVersion, max),
      status: st,
      outcome: deriveOutcome(st, null),
      error: null,
    };
  });
}

export function normalizeUpdate(body: JsonObject, opts: NormalizeOptions): Checked<StatusUpdate> {
  return checked(() => {
    const id = randomId(body);
    const st = status(body, opts.maxFieldLength, null);
    const error = errorText(body, "error", opts);
    return { randomId: id, status: st, outcome: deriveOutcome(st, error), error };
  });
}
