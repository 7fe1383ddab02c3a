// Query parameters shared by the read API: filters, time window, pagination.
//
// Every read parameter is checked here, in code, before any work: a bad one is a QueryError,
// answered 400 invalid_field naming the parameter and what it accepts (src/http/error-mapping.ts). The schemas
// document the parameters (OpenAPI) but constrain nothing: Elysia's checks of t.Numeric bounds did
// not run in the compiled binary (`limit=-1` listed every record there), and their messages did
// not name the allowed values ("Expected union value"). Numbers are strict decimal integers:
// no sign, fraction, exponent or `Infinity`, so `-1`, `1.5`, `1e9` and `1e309` are refused.
import type { TObject, TOptional, TString } from "@sinclair/typebox";
import { t, type Static } from "elysia";
import type { ExecutionFilter, ListCursor } from "../store/contract/executions.ts";
import type { Window } from "./aggregate.ts";
import { FIELD, FILTER_FIELDS, type FilterField } from "../domain/fields.ts";
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
  if (s.length > MAX_LABEL)
    throw new QueryError(field, `${field} must be at most ${MAX_LABEL} characters ("" selects those without one)`);
  return s;
}

/** A whole number in [min, max], written as plain decimal digits. */
export function intParam(field: string, v: Raw, min: number, max: number): number | undefined {
  const value = single(field, v);
  if (value === undefined) return undefined;
  const n = typeof value === "number" ? value : /^\d{1,16}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new QueryError(
      field,
      `${field} must be a whole number from ${min} to ${max}, got ${JSON.stringify(String(value).slice(0, 40))}`,
    );
  }
  return n;
}

/** One of a list of words. */
export function oneOf<const T extends string>(field: string, v: Raw, values: readonly T[]): T | undefined {
  const value = single(field, v);
  if (value === undefined) return undefined;
  if (!(values as readonly string[]).includes(String(value))) {
    throw new QueryError(
      field,
      `${field} must be one of ${values.join(", ")}, got ${JSON.stringify(String(value).slice(0, 40))}`,
    );
  }
  return value as T;
}

/**
 * A query schema that lets parameters it does not name through to the route, which reads only
 * those it names: the compatibility paths take and ignore them as the originals do, and
 * strictQuery refuses them with the names it takes. (Elysia's own check would refuse them as
 * "Unexpected property" now that answers and queries are not normalized: app.ts.)
 */
export const openQuery = <const S extends TObject>(schema: S): S => ({ ...schema, additionalProperties: true });

/**
 * Route options for a query schema that also refuse parameters it does not name, so
 * `?stauts=failed` does not read every install. The compatibility paths keep the originals'
 * leniency (openQuery alone).
 */
export function strictQuery<const S extends TObject>(schema: S) {
  const known = new Set(Object.keys(schema.properties));
  return {
    query: openQuery(schema),
    beforeHandle({ request }: { request: Request }) {
      for (const name of new URL(request.url).searchParams.keys()) {
        if (!known.has(name))
          throw new QueryError(
            name.slice(0, 40),
            `unknown parameter ${JSON.stringify(name.slice(0, 40))}; this path takes ${[...known].join(", ")}`,
          );
      }
    },
  };
}

/** Documentation of an optional parameter; checked by the functions above, not by the schema. */
export const docParam = (description: string, values?: readonly string[]) =>
  t.Optional(t.String(values ? { description, enum: [...values] } : { description }));
const param = docParam;
const label = (description: string) =>
  param(`${description}; at most ${MAX_LABEL} characters; "" selects those without one`);

/** The kind filter's values: a kind, or every kind ("all"); install when absent. */
const KIND_VALUES = FIELD.kind.filter.values;
/** Widest `days`: ten years. */
const MAX_DAYS = 3660;
/** Dates a window may start and end at: 1970-01-01 up to the end of 2999. */
const FIRST_INSTANT = 0;
const LAST_INSTANT = Date.UTC(3000, 0, 1);
const DATE_RANGE = "1970-01-01 to 2999-12-31";

/** The documentation of a field's filter (domain/fields.ts `filter`). */
function fieldParam(f: FilterField): TOptional<TString> {
  if ("values" in f.filter) return param(f.filter.doc, f.filter.values);
  if (f.kind === "enum") return param(f.filter.doc, f.values);
  if (f.kind === "integer") return param(`${f.filter.doc}, a whole number from ${f.bounds[0]} to ${f.bounds[1]}`);
  return label(f.filter.doc);
}
type FieldParams = { [R in FilterField as R["name"]]: TOptional<TString> };
const FIELD_PARAMS = Object.fromEntries(FILTER_FIELDS.map((f) => [f.name, fieldParam(f)])) as FieldParams;

export const FilterQuery = t.Object({
  ...FIELD_PARAMS,
  from: param(`window start, ISO 8601 date or date-time (UTC unless a zone is given), ${DATE_RANGE}`),
  to: param(`window end, exclusive; a date alone means through the end of that day; ${DATE_RANGE}`),
  days: param(`the last N days up to now (instead of from/to), a whole number from 1 to ${MAX_DAYS}`),
  q: param(`free text, matched in app name and error text; 1-${MAX_TEXT_QUERY} characters`),
});
type NumberParam = "days" | Extract<FilterField, { kind: "integer" }>["name"];
/** The filter parameters as the query string gives them (the CLI passes numbers as numbers). */
export type FilterQuery = Omit<Static<typeof FilterQuery>, NumberParam> & { [N in NumberParam]?: string | number };

/** YYYY-MM-DD, then optionally Thh:mm[:ss[.fff]] and a zone (Z or ±hh[:]mm); T may be a space. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

function parseInstant(field: string, v: Raw): { t: number; dateOnly: boolean } | undefined {
  const text = textParam(field, v, 64);
  if (text === undefined) return undefined;
  const m = DATE_TIME.exec(text.trim());
  const bad = () =>
    new QueryError(
      field,
      `${field} must be an ISO 8601 date or date-time from ${DATE_RANGE}, got ${JSON.stringify(text.slice(0, 40))}`,
    );
  if (!m) throw bad();
  const [, y, mo, d, h, mi, s = "00", frac = "", zone] = m;
  // A real calendar day and clock time: Date.UTC would roll 2026-02-30 over into March.
  const check = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (
    check.getUTCFullYear() !== Number(y) ||
    check.getUTCMonth() !== Number(mo) - 1 ||
    check.getUTCDate() !== Number(d)
  )
    throw bad();
  if (Number(h ?? 0) > 23 || Number(mi ?? 0) > 59 || Number(s) > 59) throw bad();
  const dateOnly = h === undefined;
  const offset =
    zone === undefined || zone.toUpperCase() === "Z"
      ? "Z"
      : zone.includes(":")
        ? zone
        : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const t = Date.parse(
    dateOnly ? `${y}-${mo}-${d}T00:00:00Z` : `${y}-${mo}-${d}T${h}:${mi}:${s}${frac.slice(0, 4)}${offset}`,
  );
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
  if (days !== undefined && (fromAt !== undefined || toAt !== undefined))
    throw new QueryError("days", "give either days or from/to, not both");
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

/** How a field's filter value is read from its parameter: checked, and lowercased where the field is stored so. */
function parserOf(f: FilterField): (v: Raw) => string | number | undefined {
  const name = f.name;
  if (f.kind === "enum") return (v) => oneOf(name, v, "values" in f.filter ? f.filter.values : f.values);
  if (f.kind === "integer") return (v) => intParam(name, v, f.bounds[0], f.bounds[1]);
  if (f.kind === "id") return (v) => textParam(name, v);
  if ("lower" in f.filter) return (v) => labelParam(name, v)?.toLowerCase();
  return (v) => labelParam(name, v);
}
const PARSERS = FILTER_FIELDS.map((f) => ({ name: f.name, key: f.key, parse: parserOf(f) }));

/** The filters of a query, each checked; throws QueryError naming the first bad one (kind first). */
export function toFilter(q: FilterQuery, w: Window | null): ExecutionFilter {
  const kind = oneOf("kind", q.kind, KIND_VALUES);
  const f: Record<string, unknown> = {};
  for (const { name, key, parse } of PARSERS) {
    // Installs unless asked for: tools and addons stay out of install rates; "all" is every kind.
    const v = name === "kind" ? (kind === "all" ? undefined : (kind ?? "install")) : parse(q[name]);
    // Absent keys, not undefined values: the planner looks at which filters are set.
    if (v !== undefined) f[key] = v;
  }
  const text = textParam("q", q.q, MAX_TEXT_QUERY);
  if (text !== undefined) f.q = text;
  if (w !== null) Object.assign(f, { from: w.from, to: w.to });
  return f as ExecutionFilter;
}

/** Window and filters together, window first (as the checks ran before). */
export function readQuery(
  q: FilterQuery,
  now: number,
  defaultDays: number | null,
): { window: Window | null; filter: ExecutionFilter } {
  const window = resolveWindow(q, now, defaultDays);
  return { window, filter: toFilter(q, window) };
}

export const encodeCursor = (c: ListCursor): string => Buffer.from(`${c.createdAt}.${c.seq}`).toString("base64url");

export function decodeCursor(v: Raw): ListCursor | undefined {
  const text = textParam("cursor", v, 64);
  if (text === undefined) return undefined;
  const m = /^[A-Za-z0-9_-]+$/.test(text)
    ? /^(\d{1,16})\.(\d{1,16})$/.exec(Buffer.from(text, "base64url").toString())
    : null;
  const cursor = m ? { createdAt: Number(m[1]), seq: Number(m[2]) } : null;
  if (!cursor || !Number.isSafeInteger(cursor.createdAt) || !Number.isSafeInteger(cursor.seq)) {
    throw new QueryError("cursor", "cursor must be a next_cursor this server returned");
  }
  return cursor;
}

/** Every hour from the first install's to past both now and the newest install: all time, for rollups. */
export const allTime = (span: { first: number; last: number }, now: number): Window => ({
  from: floorHour(span.first),
  to: floorHour(Math.max(now, span.last)) + HOUR,
});

export const windowJson = (w: Window) => ({ from: new Date(w.from).toISOString(), to: new Date(w.to).toISOString() });
