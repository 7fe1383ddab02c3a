// The read API as the dashboard calls it. Response types come from the server's schemas.
import type { ExecutionRecord, InstallDetail } from "../../read/record.ts";
import type { BreakdownResponse, ErrorsResponse, InstallPageResponse, SummaryResponse, TimeseriesResponse } from "../../read/routes.ts";

export type { BreakdownResponse, ErrorsResponse, InstallDetail, InstallPageResponse, ExecutionRecord, SummaryResponse, TimeseriesResponse };

const TOKEN_KEY = "installstats.readToken";

/** An answer other than 2xx, with the server's error body when it sent one. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

const readToken = (): string | null => localStorage.getItem(TOKEN_KEY);
export const saveToken = (token: string | null): void => (token ? localStorage.setItem(TOKEN_KEY, token) : localStorage.removeItem(TOKEN_KEY));

async function getJson<T>(path: string, params?: URLSearchParams, signal?: AbortSignal): Promise<T> {
  const token = readToken();
  const url = params && [...params.keys()].length > 0 ? `${path}?${params}` : path;
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal });
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
  installs: (p: URLSearchParams, s?: AbortSignal) => getJson<InstallPageResponse>("/api/installs", p, s),
  install: (id: string, s?: AbortSignal) => getJson<InstallDetail>(`/api/installs/${encodeURIComponent(id)}`, undefined, s),
};
