// The filters of the read side (ExecutionFilter) as Drizzle conditions, for either engine's
// executions table: the columns are the same by name, and so is the meaning of every filter.
import { and, eq, gte, isNull, lt, lte, not, notInArray, or, sql, type Column, type SQL } from "drizzle-orm";
import type { Execution } from "../../domain/execution.ts";
import { FILTER_FIELDS, matchesLabel } from "../../domain/fields.ts";
import type { ExecutionFilter, PageQuery, PageSort } from "../contract/executions.ts";

/** An executions table's columns, by the domain's names. */
export type ExecutionColumns = { [K in keyof Execution]: Column };

/** A LIKE pattern's special characters taken literally (with ESCAPE '\'). */
const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Exact match; "" matches executions without the value (stored as null). */
function matches(column: Column, value: string | undefined): SQL | undefined {
  if (value === undefined) return undefined;
  return value === "" ? or(isNull(column), eq(column, "")) : eq(column, value);
}

/**
 * `like(column, pattern)`: the engine's case-insensitive match of a pattern with ESCAPE '\'
 * (SQLite's LIKE is, for ASCII; PostgreSQL's ILIKE).
 */
export type Like = (column: Column, pattern: string) => SQL;

const PLATFORMS = ["pve", "incus"];
/** domain/rollup.ts platformClass as a condition: the platform sent, else read from the host version. */
function platformClassIs(e: ExecutionColumns, value: string | undefined, like: Like): SQL | undefined {
  if (value === undefined) return undefined;
  const sent = PLATFORMS.includes(value) ? eq(e.platform, value) : undefined;
  const notSent = or(isNull(e.platform), notInArray(e.platform, PLATFORMS));
  const noVersion = or(isNull(e.pveVersion), eq(e.pveVersion, ""));
  const incus = like(e.pveVersion, "incus%");
  if (value === "incus") return or(sent, and(notSent, incus));
  if (value === "pve") return or(sent, and(notSent, not(noVersion!), not(incus)));
  return value === "" ? and(notSent, noVersion) : sql`1 = 0`;
}

/** Each filter field's condition: a label's "" also selects executions without one (matches), the rest match exactly. */
const FIELD_CONDITIONS = FILTER_FIELDS.map((f) => ({ key: f.key, label: matchesLabel(f) }));

export function filterWhere(e: ExecutionColumns, f: ExecutionFilter, like: Like): SQL | undefined {
  const c: (SQL | undefined)[] = [];
  for (const { key, label } of FIELD_CONDITIONS) {
    const value = f[key];
    if (value !== undefined) c.push(label ? matches(e[key], String(value)) : eq(e[key], value));
  }
  c.push(
    platformClassIs(e, f.platformClass, like),
    f.from === undefined ? undefined : gte(e.createdAt, f.from),
    f.to === undefined ? undefined : lt(e.createdAt, f.to),
    f.until === undefined ? undefined : lte(e.createdAt, f.until),
  );
  if (f.except !== undefined) {
    // NULL (a comparison with an absent value) is "not matched": the execution stays.
    // A filter of nothing matches every execution: none stays.
    const matched = filterWhere(e, f.except, like);
    c.push(matched === undefined ? sql`1 = 0` : sql`NOT COALESCE(${matched}, FALSE)`);
  }
  if (f.q !== undefined && f.q !== "") {
    const pattern = `%${escapeLike(f.q)}%`;
    c.push(or(like(e.nsapp, pattern), like(e.error, pattern)));
  }
  return and(...c);
}

/** The community service's `status` column is the collapsed outcome. */
export const pageSortColumn = (e: ExecutionColumns, sort: PageSort): Column =>
  ({
    created: e.createdAt,
    nsapp: e.nsapp,
    status: e.outcome,
    os_type: e.osType,
    type: e.type,
    method: e.method,
    exit_code: e.exitCode,
  })[sort];

/** A numbered page's filters: the read filters, any of several repo sources, an app name containing a text. */
export function pageWhere(
  e: ExecutionColumns,
  filter: ExecutionFilter,
  { repoSources, appContains }: PageQuery,
  like: Like,
): SQL | undefined {
  // None of no sources: Drizzle's or() of nothing would be no condition at all.
  const anyRepo =
    repoSources === undefined
      ? undefined
      : repoSources.length === 0
        ? sql`1 = 0`
        : or(...repoSources.map((r) => matches(e.repoSource, r)));
  const app = appContains ? like(e.nsapp, `%${escapeLike(appContains)}%`) : undefined;
  return and(filterWhere(e, filter, like), anyRepo, app);
}
