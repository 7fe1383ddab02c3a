// The read API as the dashboard calls it. Response types come from the server's schemas.
import type { ExecutionRecord, InstallDetail } from "../../read/record.ts";
import type { InstallPageResponse } from "../../read/native/installs-routes.ts";
import type {
  BreakdownResponse,
  DriversResponse,
  ErrorsResponse,
  SummaryResponse,
  TimeseriesResponse,
} from "../../read/native/stats-routes.ts";

export type {
  BreakdownResponse,
  DriversResponse,
  ErrorsResponse,
  InstallDetail,
  InstallPageResponse,
  ExecutionRecord,
  SummaryResponse,
  TimeseriesResponse,
};

const TOKEN_KEY = "installstats.readToken";
/**
 * The admin token is kept for this tab only (sessionStorage): it can delete data, so it is not
 * left in the browser after the tab is closed, unlike the read token.
 */
const ADMIN_TOKEN_KEY = "installstats.adminToken";

/** An answer other than 2xx, with the server's error body when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const readToken = (): string | null => localStorage.getItem(TOKEN_KEY);
export const saveToken = (token: string | null): void =>
  token ? localStorage.setItem(TOKEN_KEY, token) : localStorage.removeItem(TOKEN_KEY);
export const adminToken = (): string | null => sessionStorage.getItem(ADMIN_TOKEN_KEY);
export const saveAdminToken = (token: string | null): void =>
  token ? sessionStorage.setItem(ADMIN_TOKEN_KEY, token) : sessionStorage.removeItem(ADMIN_TOKEN_KEY);

async function getJson<T>(
  path: string,
  params?: URLSearchParams,
  signal?: AbortSignal,
  init: { method?: string; token?: string | null; body?: unknown } = {},
): Promise<T> {
  const token = init.token === undefined ? readToken() : init.token;
  const url = params && [...params.keys()].length > 0 ? `${path}?${params}` : path;
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url, {
    method: init.method ?? "GET",
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal,
  });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = (await res.json()) as { message?: unknown };
      if (typeof body.message === "string") message = body.message;
    } catch {
      // Not JSON: the status line says enough.
    }
    throw new ApiError(res.status, message);
  }
  return (await res.json()) as T;
}

export const api = {
  summary: (p: URLSearchParams, s?: AbortSignal) => getJson<SummaryResponse>("/api/stats/summary", p, s),
  breakdown: (p: URLSearchParams, s?: AbortSignal) => getJson<BreakdownResponse>("/api/stats/breakdown", p, s),
  timeseries: (p: URLSearchParams, s?: AbortSignal) => getJson<TimeseriesResponse>("/api/stats/timeseries", p, s),
  errors: (p: URLSearchParams, s?: AbortSignal) => getJson<ErrorsResponse>("/api/stats/errors", p, s),
  drivers: (p: URLSearchParams, s?: AbortSignal) => getJson<DriversResponse>("/api/stats/drivers", p, s),
  installs: (p: URLSearchParams, s?: AbortSignal) => getJson<InstallPageResponse>("/api/installs", p, s),
  install: (id: string, s?: AbortSignal) =>
    getJson<InstallDetail>(`/api/installs/${encodeURIComponent(id)}`, undefined, s),
};

/** One entry of the rejected-reports log as GET /api/admin/rejected lists it (src/maintenance/rejected-log.ts). */
export interface RejectedEntry {
  id: number;
  received_at: string;
  endpoint: string;
  reason: string;
  http_status: number;
  field: string | null;
  message: string;
  random_id: string | null;
  body: string | null;
  body_base64: string | null;
  body_size: number;
  body_sha256: string | null;
  body_truncated: boolean;
  replayed_at: string | null;
  replay_result: string | null;
}

/** What POST /api/admin/replay answers (src/maintenance/replay.ts ReplaySummary). */
export interface ReplaySummary {
  dry_run: boolean;
  tried: number;
  results: Record<string, number>;
  skipped: number;
}

/** The admin API, with the admin token of this tab (401 without it, 403 when the server has none). */
export const adminApi = {
  rejected: (p: URLSearchParams, s?: AbortSignal) =>
    getJson<{ entries: RejectedEntry[] }>("/api/admin/rejected", p, s, { token: adminToken() }),
  replay: (p: URLSearchParams) =>
    getJson<ReplaySummary>("/api/admin/replay", p, undefined, { method: "POST", token: adminToken() }),
};

/** A signature's link to a tracker issue (src/issues/issue-routes.ts LinkJson). */
export interface IssueLinkJson {
  signature: string;
  tracker: string;
  repo: string;
  number: number;
  url: string;
  title: string;
  how: string;
  linked_at: string;
}

/** GET /api/admin/issues/{signature} (src/issues/issue-routes.ts Preview). */
export interface IssuePreview {
  signature: string;
  tracker: { kind: string; repo: string; api_url: string; labels: string[] } | null;
  link: IssueLinkJson | null;
  existing: { number: number; url: string; title: string; state: string } | null;
  issue: { title: string; body: string; labels: string[] };
}

/** Issues from error signatures, with the admin token of this tab. */
export const issuesApi = {
  preview: (signature: string, p: URLSearchParams, s?: AbortSignal) =>
    getJson<IssuePreview>(`/api/admin/issues/${encodeURIComponent(signature)}`, p, s, { token: adminToken() }),
  send: (signature: string, p: URLSearchParams, edits: { title?: string; body?: string; labels?: string[] }) =>
    getJson<{ result: "created" | "found" | "linked"; link: IssueLinkJson; labels_left_out: string[] }>(
      `/api/admin/issues/${encodeURIComponent(signature)}`,
      p,
      undefined,
      { method: "POST", token: adminToken(), body: edits },
    ),
  forget: (signature: string) =>
    getJson<{ signature: string; forgotten: true }>(
      `/api/admin/issues/${encodeURIComponent(signature)}`,
      undefined,
      undefined,
      { method: "DELETE", token: adminToken() },
    ),
};

/** GET /api/alerts (src/alerts/alert-routes.ts AlertsJson). */
export interface AlertsListing {
  enabled: boolean;
  evaluate_every_s: number | null;
  channels: { name: string; type: string; target: string }[];
  rules: {
    id: string;
    type: string;
    description: string;
    send_to: string[];
    cooldown_s: number;
    status: "pending" | "ok" | "firing";
    silenced_until: string | null;
    evaluated_at: string | null;
    summary: string | null;
    firing: {
      subject: string;
      labels: Record<string, string>;
      since: string;
      notified: boolean;
      title: string | null;
    }[];
  }[];
}

/** One entry of GET /api/alerts/history (src/alerts/alert-routes.ts AlertEventJson). */
export interface AlertEvent {
  id: number;
  rule: string;
  subject: string;
  labels: Record<string, string>;
  status: "firing" | "resolved";
  at: string;
  title: string;
  text: string;
  link: string;
  notified_at: string | null;
  held_back: "cooldown" | "silenced" | "unsent" | null;
  deliveries: {
    channel: string;
    state: "pending" | "sent" | "failed";
    attempts: number;
    last_error: string | null;
    sent_at: string | null;
  }[];
}

/** Alerts: reading them needs what every read needs; a test send and silences need the admin token of this tab. */
export const alertsApi = {
  list: (s?: AbortSignal) => getJson<AlertsListing>("/api/alerts", undefined, s),
  history: (p: URLSearchParams, s?: AbortSignal) =>
    getJson<{ events: AlertEvent[]; next_before: number | null }>("/api/alerts/history", p, s),
  test: (channel: string) =>
    getJson<{ channel: string; ok: boolean; error: string | null; target: string }>(
      `/api/admin/alerts/test/${encodeURIComponent(channel)}`,
      undefined,
      undefined,
      { method: "POST", token: adminToken() },
    ),
  silence: (rule: string, forText: string) =>
    getJson<{ rule: string; silenced_until: string | null }>(
      `/api/admin/alerts/silence/${encodeURIComponent(rule)}`,
      new URLSearchParams({ for: forText }),
      undefined,
      { method: "POST", token: adminToken() },
    ),
  unsilence: (rule: string) =>
    getJson<{ rule: string; silenced_until: string | null }>(
      `/api/admin/alerts/silence/${encodeURIComponent(rule)}`,
      undefined,
      undefined,
      { method: "DELETE", token: adminToken() },
    ),
};
