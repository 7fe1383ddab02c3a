// Query parameters shared by the read API: filters, time window, pagination.
import { t, type Static } from "elysia";
import type { ExecutionFilter, ListCursor } from "../store/contract.ts";
import type { Window } from "./aggregate.ts";
import { OutcomeSchema } from "../http/schemas.ts";
import { DAY, HOUR, ceilHour, floorHour } from "../domain/time.ts";

const label = (description: string) => t.Optional(t.String({ minLength: 1, maxLength: 128, description }));

export const FilterQuery = t.Object({
  nsapp: label("application name"),
  status: label("status as stored (lowercase), e.g. done, failed, installing"),
  outcome: t.Optional(OutcomeSchema),
  type: label("lxc, vm, turnkey, pve, addon, tool"),
  os_type: label("e.g. debian"),
  os_version: label("e.g. 12"),
  pve_version: label('host version, e.g. 8.2.2 or "not found"'),
  method: label("installation method"),
  kind: t.Optional(
    t.Union([t.Literal("install"), t.Literal("tool"), t.Literal("addon"), t.Literal("all")], {
      description: "install (default): installations; tool: host tools (type pve); addon; all: every kind",
    }),
  ),
  random_id: label("one install's executions"),
  exit_code: t.Optional(t.Numeric({ minimum: 0, maximum: 255, multipleOf: 1, description: "exit code of the execution, 0-255" })),
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
  from: t.Optional(t.String({ description: "window start, ISO 8601 date or date-time (UTC unless a zone is given)" })),
  to: t.Optional(t.String({ description: "window end, exclusive; a date alone means through the end of that day" })),
  days: t.Optional(t.Numeric({ minimum: 1, maximum: 3660, description: "the last N days up to now (instead of from/to)" })),
  q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "free text, matched in app name and error text" })),
});
export type FilterQuery = Static<typeof FilterQuery>;

export class QueryError extends Error {
  constructor(readonly field: string, message: string) {
    super(message);
  }
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const HAS_ZONE = /(?:Z|[+-]\d{2}:?\d{2})$/i;

function parseInstant(field: string, text: string): { t: number; dateOnly: boolean } {
  const trimmed = text.trim();
  const dateOnly = DATE_ONLY.test(trimmed);
  const iso = dateOnly ? `${trimmed}T00:00:00Z` : HAS_ZONE.test(trimmed) ? trimmed : `${trimmed}Z`;
  const t = Date.parse(iso);
  if (!/^\d{4}-\d{2}-\d{2}/.test(trimmed) || Number.isNaN(t)) throw new QueryError(field, `${field} must be an ISO 8601 date or date-time, got ${JSON.stringify(text)}`);
  return { t, dateOnly };
}


/**
 * The window a query asks for, aligned to whole hours (rollups are hourly at the finest).
 * `defaultDays` applies when neither days nor from/to is given; null means all time.
 */
export function resolveWindow(q: FilterQuery, now: number, defaultDays: number | null): Window | null {
  if (q.days !== undefined && (q.from !== undefined || q.to !== undefined)) throw new QueryError("days", "give either days or from/to, not both");
  // Without `to`, the window ends with the current hour, so what arrived just now is in it.
  const to = q.to === undefined ? floorHour(now) + HOUR : (({ t, dateOnly }) => ceilHour(dateOnly ? t + DAY : t))(parseInstant("to", q.to));
  if (q.days !== undefined) return { from: to - q.days * DAY, to };
  if (q.from === undefined) {
    if (q.to === undefined && defaultDays === null) return null;
    return { from: defaultDays === null ? 0 : to - defaultDays * DAY, to };
  }
  const from = floorHour(parseInstant("from", q.from).t);
  if (from >= to) throw new QueryError("from", "from must be before to");
  return { from, to };
}

export function toFilter(q: FilterQuery, w: Window | null): ExecutionFilter {
  const f: ExecutionFilter = {
    nsapp: q.nsapp,
    status: q.status?.toLowerCase(),
    outcome: q.outcome,
    type: q.type?.toLowerCase(),
    osType: q.os_type?.toLowerCase(),
    osVersion: q.os_version,
    pveVersion: q.pve_version,
    method: q.method,
    kind: q.kind === "all" ? undefined : (q.kind ?? "install"),
    randomId: q.random_id,
    exitCode: q.exit_code,
    errorCategory: q.error_category?.toLowerCase(),
    platform: q.platform?.toLowerCase(),
    arch: q.arch?.toLowerCase(),
    cpuVendor: q.cpu_vendor,
    gpuVendor: q.gpu_vendor,
    gpuPassthrough: q.gpu_passthrough?.toLowerCase(),
    repoSource: q.repo_source,
    repoSlug: q.repo_slug,
    appVersion: q.app_version,
    kernelVersion: q.kernel_version,
    q: q.q,
    from: w?.from,
    to: w?.to,
  };
  // Absent keys, not undefined values: the planner looks at which filters are set.
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as ExecutionFilter;
}

export const encodeCursor = (c: ListCursor): string => Buffer.from(`${c.createdAt}.${c.seq}`).toString("base64url");

export function decodeCursor(text: string): ListCursor {
  const m = /^(\d+)\.(\d+)$/.exec(Buffer.from(text, "base64url").toString());
  if (!m) throw new QueryError("cursor", "cursor is not one this server issued");
  return { createdAt: Number(m[1]), seq: Number(m[2]) };
}

/** Every hour from the first install's to past both now and the newest install: all time, for rollups. */
export const allTime = (span: { first: number; last: number }, now: number): Window => ({ from: floorHour(span.first), to: floorHour(Math.max(now, span.last)) + HOUR });

export const windowJson = (w: Window) => ({ from: new Date(w.from).toISOString(), to: new Date(w.to).toISOString() });
