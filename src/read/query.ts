// Query parameters shared by the read API: filters, time window, pagination.
//
// Every read parameter is checked here, in code, before any work: a bad one is a QueryError,
// answered 400 invalid_field naming the parameter and what it accepts (src/http/error-mapping.ts). The schemas
// document the parameters (OpenAPI) but constrain nothing: Elysia's checks of t.Numeric bounds did
// not run in the compiled binary (`limit=-1` listed every record there), and their messages did
// not name the allowed values ("Expected union value"). Numbers are strict decimal integers:
// no sign, fraction, exponent or `Infinity`, so `-1`, `1.5`, `1e9` and `1e309` are refused.
import type { TObject } from "@sinclair/typebox";
import { t, type Static } from "elysia";
import type { ExecutionFilter, ListCursor } from "../store/contract/executions.ts";
import type { Window } from "./aggregate.ts";
import { OUTCOMES } from "../domain/outcome.ts";
import { DAY, HOUR, ceilHour, floorHour } from "../domain/time.ts";
import { QueryError } from "../http/errors.ts";

export { QueryError };

/** A parameter as the query string gives it: absent, text, or (given more than once) a list. */
type Raw = string | number | readonly unknown[] | undefined;

/** Longest value of a label filter; longer ones cannot match (stored labels are capped at 128). */
export const MAX_LABEL = 128;
const MAX_TEXT_QUERY = 200;

function single(field: string, v: Raw): string | number | undefined {
  if (Array.isArray(v)) throw new QueryError(field, `${field} must be given once`);
  return v as string | number | undefined;
}

/** A text parameter of 1 to `max` characters. */
export function textParam(field: string, v: Raw, max = MAX_LABEL): string | undefined {
  const value = single(field, v);
  if (value === undefined) return undefined;
  const s = String(value);
  if (s.length < 1 || s.length > max) throw new QueryError(field, `${field} must be 1 to ${max} characters`);
  return s;
}

/** A filter on a stored label: `""` selects the executions without one (`repo_source=` is "none"). */
function labelParam(field: string, v: Raw): string | undefined {
  const value = single(field, v);
  if (value === undefined) return undefined;
  const s = String(value);
  if (s.length > MAX_LABEL) throw new QueryError(field, `${field} must be at most ${MAX_LABEL} characters ("" selects those without one)`);
  return s;
}

/** A whole number in [min, max], written as plain decimal digits. */
export function intParam(field: string, v: Raw, min: number, max: number): number | undefined {
  const value = single(field, v);
  if (value === undefined) return undefined;
  const n = typeof value === "number" ? value : /^\d{1,16}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new QueryError(field, `${field} must be a whole number from ${min} to ${max}, got ${JSON.stringify(String(value).slice(0, 40))}`);
  }
  return n;
}

/** One of a list of words. */
export function oneOf<const T extends string>(field: string, v: Raw, values: readonly T[]): T | undefined {
  const value = single(field, v);
  if (value === undefined) return undefined;
  if (!(values as readonly string[]).includes(String(value))) {
    throw new QueryError(field, `${field} must be one of ${values.join(", ")}, got ${JSON.stringify(String(value).slice(0, 40))}`);
  }
  return value as T;
}

/**
 * Route options for a query schema that also refuse parameters it does not name: Elysia drops
 * them silently, so `?stauts=failed` would read every install. The compatibility paths keep the
 * originals' leniency and do not use this.
 */
export function strictQuery<const S extends TObject>(schema: S) {
  const known = new Set(Object.keys(schema.properties));
  return {
    query: schema,
    beforeHandle({ request }: { request: Request }) {
      for (const name of new URL(request.url).searchParams.keys()) {
        if (!known.has(name)) throw new QueryError(name.slice(0, 40), `unknown parameter ${JSON.stringify(name.slice(0, 40))}; this path takes ${[...known].join(", ")}`);
      }
    },
  };
}

/** Documentation of an optional parameter; checked by the functions above, not by the schema. */
export const docParam = (description: string, values?: readonly string[]) => t.Optional(t.String(values ? { description, enum: [...values] } : { description }));
const param = docParam;
const label = (description: string) => param(`${description}; at most ${MAX_LABEL} characters; "" selects those without one`);

const KIND_VALUES = ["install", "tool", "addon", "all"] as const;
/** Widest `days`: ten years. */
const MAX_DAYS = 3660;
/** Dates a window may start and end at: 1970-01-01 up to the end of 2999. */
const FIRST_INSTANT = 0;
const LAST_INSTANT = Date.UTC(3000, 0, 1);
const DATE_RANGE = "1970-01-01 to 2999-12-31";

export const FilterQuery = t.Object({
  nsapp: label("application name"),
  status: label("status as stored (lowercase), e.g. done, failed, installing"),
  outcome: param("derived from status: success (done), failed, aborted (user interrupt), in_progress, unknown", OUTCOMES),
  type: label("lxc, vm, turnkey, pve, addon, tool"),
  os_type: label("e.g. debian"),
  os_version: label("e.g. 12"),
  pve_version: label('host version, e.g. 8.2.2 or "not found"'),
  method: label("installation method"),
  kind: param("install (default): installations; tool: host tools (type pve); addon; all: every kind", KIND_VALUES),
  random_id: label("one install's executions"),
  exit_code: param("exit code of the execution, a whole number from 0 to 255"),
  error_category: label("network, config, timeout, storage, dependency, permission, proxmox, service, database, runtime, user_aborted, resource, signal, shell, unknown"),
  platform: label("pve or incus"),
  arch: label("e.g. amd64, arm64"),
  cpu_vendor: label("e.g. intel, amd"),
  gpu_vendor: label("e.g. intel, nvidia, amd"),
  gpu_passthrough: label("yes or no (payload v2)"),
  repo_source: label('ProxmoxVE (the main collection), ProxmoxVED (its dev repo), external (forks); "" for reports that say none (/upload)'),
  repo_slug: label("owner/repo of a fork"),
  app_version: label("version of the installed app"),
  kernel_version: label("host kernel version"),
  from: param(`window start, ISO 8601 date or date-time (UTC unless a zone is given), ${DATE_RANGE}`),
  to: param(`window end, exclusive; a date alone means through the end of that day; ${DATE_RANGE}`),
  days: param(`the last N days up to now (instead of from/to), a whole number from 1 to ${MAX_DAYS}`),
  q: param(`free text, matched in app name and error text; 1-${MAX_TEXT_QUERY} characters`),
});
/** The filter parameters as the query string gives them (the CLI passes days as a number). */
export type FilterQuery = Omit<Static<typeof FilterQuery>, "days" | "exit_code"> & { days?: string | number; exit_code?: string | number };

/** YYYY-MM-DD, then optionally Thh:mm[:ss[.fff]] and a zone (Z or ±hh[:]mm); T may be a space. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

function parseInstant(field: string, v: Raw): { t: number; dateOnly: boolean } | undefined {
  const text = textParam(field, v, 64);
  if (text === undefined) return undefined;
  const m = DATE_TIME.exec(text.trim());
  const bad = () => new QueryError(field, `${field} must be an ISO 8601 date or date-time from ${DATE_RANGE}, got ${JSON.stringify(text.slice(0, 40))}`);
  if (!m) throw bad();
  const [, y, mo, d, h, mi, s = "00", frac = "", zone] = m;
  // A real calendar day and clock time: Date.UTC would roll 2026-02-30 over into March.
  const check = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (check.getUTCFullYear() !== Number(y) || check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d)) throw bad();
  if (Number(h ?? 0) > 23 || Number(mi ?? 0) > 59 || Number(s) > 59) throw bad();
  const dateOnly = h === undefined;
  const offset = zone === undefined || zone.toUpperCase() === "Z" ? "Z" : zone.includes(":") ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const t = Date.parse(dateOnly ? `${y}-${mo}-${d}T00:00:00Z` : `${y}-${mo}-${d}T${h}:${mi}:${s}${frac.slice(0, 4)}${offset}`);
  if (Number.isNaN(t) || t < FIRST_INSTANT || t >= LAST_INSTANT) throw bad();
  return { t, dateOnly };
}

/**
 * The window a query asks for, aligned to whole hours (rollups are hourly at the finest).
 * `defaultDays` applies when neither days nor from/to is given; null means all time.
 */
export function resolveWindow(q: FilterQuery, now: number, defaultDays: number | null): Window | null {
  const days = intParam("days", q.days, 1, MAX_DAYS);
  const toAt = parseInstant("to", q.to);
  const fromAt = parseInstant("from", q.from);
  if (days !== undefined && (fromAt !== undefined || toAt !== undefined)) throw new QueryError("days", "give either days or from/to, not both");
  // Without `to`, the window ends with the current hour, so what arrived just now is in it.
  const to = toAt === undefined ? floorHour(now) + HOUR : ceilHour(toAt.dateOnly ? toAt.t + DAY : toAt.t);
  if (days !== undefined) return { from: to - days * DAY, to };
  if (fromAt === undefined) {
    if (toAt === undefined && defaultDays === null) return null;
    return { from: defaultDays === null ? FIRST_INSTANT : to - defaultDays * DAY, to };
  }
  const from = floorHour(fromAt.t);
  if (from >= to) throw new QueryError("from", "from must be before to");
  return { from, to };
}

/** The filters of a query, each checked; throws QueryError naming the first bad one. */
export function toFilter(q: FilterQuery, w: Window | null): ExecutionFilter {
  const kind = oneOf("kind", q.kind, KIND_VALUES);
  const f: ExecutionFilter = {
    nsapp: labelParam("nsapp", q.nsapp),
    status: labelParam("status", q.status)?.toLowerCase(),
    outcome: oneOf("outcome", q.outcome, OUTCOMES),
    type: labelParam("type", q.type)?.toLowerCase(),
    osType: labelParam("os_type", q.os_type)?.toLowerCase(),
    osVersion: labelParam("os_version", q.os_version),
    pveVersion: labelParam("pve_version", q.pve_version),
    method: labelParam("method", q.method),
    kind: kind === "all" ? undefined : (kind ?? "install"),
    randomId: textParam("random_id", q.random_id),
    exitCode: intParam("exit_code", q.exit_code, 0, 255),
    errorCategory: labelParam("error_category", q.error_category)?.toLowerCase(),
    platform: labelParam("platform", q.platform)?.toLowerCase(),
    arch: labelParam("arch", q.arch)?.toLowerCase(),
    cpuVendor: labelParam("cpu_vendor", q.cpu_vendor),
    gpuVendor: labelParam("gpu_vendor", q.gpu_vendor),
    gpuPassthrough: labelParam("gpu_passthrough", q.gpu_passthrough)?.toLowerCase(),
    repoSource: labelParam("repo_source", q.repo_source),
    repoSlug: labelParam("repo_slug", q.repo_slug),
    appVersion: labelParam("app_version", q.app_version),
    kernelVersion: labelParam("kernel_version", q.kernel_version),
    q: textParam("q", q.q, MAX_TEXT_QUERY),
    from: w?.from,
    to: w?.to,
  };
  // Absent keys, not undefined values: the planner looks at which filters are set.
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as ExecutionFilter;
}

/** Window and filters together, window first (as the checks ran before). */
export function readQuery(q: FilterQuery, now: number, defaultDays: number | null): { window: Window | null; filter: ExecutionFilter } {
  const window = resolveWindow(q, now, defaultDays);
  return { window, filter: toFilter(q, window) };
}

export const encodeCursor = (c: ListCursor): string => Buffer.from(`${c.createdAt}.${c.seq}`).toString("base64url");

export function decodeCursor(v: Raw): ListCursor | undefined {
  const text = textParam("cursor", v, 64);
  if (text === undefined) return undefined;
  const m = /^[A-Za-z0-9_-]+$/.test(text) ? /^(\d{1,16})\.(\d{1,16})$/.exec(Buffer.from(text, "base64url").toString()) : null;
  const cursor = m ? { createdAt: Number(m[1]), seq: Number(m[2]) } : null;
  if (!cursor || !Number.isSafeInteger(cursor.createdAt) || !Number.isSafeInteger(cursor.seq)) {
    throw new QueryError("cursor", "cursor must be a next_cursor this server returned");
  }
  return cursor;
}

/** Every hour from the first install's to past both now and the newest install: all time, for rollups. */
export const allTime = (span: { first: number; last: number }, now: number): Window => ({ from: floorHour(span.first), to: floorHour(Math.max(now, span.last)) + HOUR });

export const windowJson = (w: Window) => ({ from: new Date(w.from).toISOString(), to: new Date(w.to).toISOString() });
