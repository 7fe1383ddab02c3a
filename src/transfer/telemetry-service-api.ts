// Import over HTTP from any server that answers the community telemetry service's read API
// (community-scripts/telemetry-service; another installstats answers it too): every page of
// GET /api/records, oldest first (sort=created), over the longest window it serves (days=0: the
// last 365 days), every repository (repo=all). Each record is one execution with the steps it
// went through (domain/telemetry-service.ts recordExecution).
//
// The listing moves while it is read: new runs are added at its end, a run still going moves to
// the end when the community service lists it by its newest event, and the oldest day leaves the
// window at midnight (UTC). Each request therefore starts one record before the first unread one
// (a page size of 50 to 100 is chosen so that the page starts there) and checks that this record
// is the last one taken; if it is not, the listing shifted, and the importer finds its place
// again by the time of that record (a binary search over one-record pages). Reading a record
// twice costs nothing: it is there already.
//
// Position: the listing time of the last record taken, kept in the database (an import-mark op in
// the transaction of the records it covers), named by the source URL. A state file could tell a
// different story than the database it describes (a restored backup, another machine, a fresh
// database); the mark travels with the data and is exact after a crash. A run still going is not
// passed: the mark stays at the first such record of the last day, so the next run reads from
// there and takes how it ended.
import type { JsonObject } from "../domain/json.ts";
import type { NormalizeOptions } from "../domain/normalize.ts";
import { recordExecution, serviceTime } from "../domain/telemetry-service.ts";
import { DAY } from "../domain/time.ts";
import type { StoreReads } from "../store/contract/executions.ts";
import type { TransferReads } from "../store/contract/transfer.ts";
import type { Commit } from "../store/writer.ts";
import { ExecutionLoader, type LoadSummary } from "./load-executions.ts";

/** The source cannot be read (after the retries) or does not answer the read API: one line for the user. */
export class SourceError extends Error {}

const MAX_PAGE = 100;
const MIN_PAGE = 50;
/** Attempts per request unless told (1 s, 2 s, ... 30 s apart: about 2 minutes in all), and the longest wait between two. */
const ATTEMPTS = 8;
const MAX_BACKOFF_MS = 30_000;
const REQUEST_TIMEOUT_MS = 60_000;

export interface ApiSummary extends LoadSummary {
  source: string;
  /** Requests answered (pages and the one-record pages of a search). */
  requests: number;
  /** Records read (one read again after the listing shifted counts again, as there already). */
  records: number;
  /** Where this run began: the time of the record it resumed after, or null from the start. */
  resumedAfter: string | null;
  /** Times the listing was found shifted and the importer found its place again. */
  relocations: number;
  /** Records refused, by reason and field. */
  refused: Record<string, number>;
}

export interface ApiOptions {
  normalize: NormalizeOptions;
  /** Time zone of times printed without an offset (the community service prints ClickHouse's server zone). */
  zone: string;
  /** When the import runs. */
  at: number;
  /** Bearer token for a source that requires one for reads. */
  token?: string | null;
  /** Ignore the position kept from an earlier run. */
  fromStart?: boolean;
  /** Attempts per request before the import stops (default 8). */
  attempts?: number;
  /** First wait between attempts (doubled each time, at most 30 s); tests shorten it. */
  backoffMs?: number;
  onProgress?: (summary: Readonly<ApiSummary>, total: number) => void;
  onRefused?: (position: string, message: string) => void;
  /** A failed attempt and the wait before the next one. */
  onRetry?: (error: string, waitMs: number) => void;
}

interface Page {
  records: JsonObject[];
  total: number;
}

/** The listing's base URL, as the source is named (its position's key): origin and path, no query, no credentials. */
function sourceOf(url: string): string {
  const u = URL.parse(url);
  if (!u || (u.protocol !== "http:" && u.protocol !== "https:"))
    throw new SourceError(
      `--url must be an http:// or https:// URL such as http://10.0.0.5:8080, got ${JSON.stringify(url)}`,
    );
  const path = u.pathname.replace(/\/+$/, "").replace(/\/api\/records$/, "");
  return `${u.protocol}//${u.host}${path}`;
}

/** The page size and page number whose page starts at or before `from` and reaches furthest past `after` (from 50 to 100 a record). */
function windowAt(from: number, after: number): { limit: number; page: number; start: number } {
  let best = { limit: MAX_PAGE, page: Math.floor(from / MAX_PAGE) + 1, start: Math.floor(from / MAX_PAGE) * MAX_PAGE };
  for (let limit = MAX_PAGE; limit >= MIN_PAGE; limit--) {
    const page = Math.floor(from / limit) + 1;
    const start = (page - 1) * limit;
    if (start + limit - after > best.start + best.limit - after) best = { limit, page, start };
  }
  return best;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What one import works with: where it reads, how, and what it has counted so far. */
interface ApiImport {
  source: string;
  opts: ApiOptions;
  headers: Record<string, string>;
  loader: ExecutionLoader;
  summary: ApiSummary;
}

/** Where a run is in the listing. */
interface Cursor {
  /** The offset of the first record not yet taken. */
  next: number;
  /** The last record taken (the next page overlaps it by one), undefined after a relocation. */
  last: JsonObject | undefined;
  /** The listing time of the newest record taken, or the mark resumed from. */
  position: number;
  /** The listing time of the first record still going (of the last day) taken this run: the mark stays there. */
  going: number | null;
  /** Where the last shift was found: found there again, the listing's order is not stable (ties in time), and the page is taken as it is. */
  shiftedAt: number;
  /** Whether the listing states payload versions (seen on any record so far): then none is guessed. */
  versioned: boolean;
}

/** One page of the listing, retried with backoff while the source cannot answer; a SourceError when it will not. */
async function getPage(imp: ApiImport, page: number, limit: number): Promise<Page> {
  const { source, opts } = imp;
  const target = `${source}/api/records?page=${page}&limit=${limit}&days=0&repo=all&sort=created`;
  let wait = opts.backoffMs ?? 1000;
  for (let attempt = 1; ; attempt++) {
    let failure: string;
    let retryAfterMs: number | null = null;
    try {
      const res = await fetch(target, { headers: imp.headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const text = await res.text();
      if (res.ok) {
        const answered = pageOf(source, text);
        imp.summary.requests++;
        return answered;
      }
      failure = `HTTP ${res.status}${text ? `: ${text.slice(0, 120)}` : ""}`;
      if (res.status === 401 || res.status === 403)
        throw new SourceError(`${source} refused the read (${failure}); give its read token with --token-file`);
      if (res.status !== 429 && res.status < 500)
        throw new SourceError(`${source} answered GET /api/records with ${failure}`);
      const retryAfter = Number(res.headers.get("retry-after"));
      if (Number.isFinite(retryAfter) && retryAfter > 0) retryAfterMs = Math.min(retryAfter * 1000, MAX_BACKOFF_MS);
    } catch (e) {
      if (e instanceof SourceError) throw e;
      failure = (e as Error).message;
    }
    if (attempt >= (opts.attempts ?? ATTEMPTS))
      throw new SourceError(
        `${source} did not answer after ${attempt} attempt${attempt === 1 ? "" : "s"} (last: ${failure}); what was imported is kept, run the same command again to go on`,
      );
    const delay = retryAfterMs ?? Math.round(wait * (0.75 + Math.random() / 2));
    opts.onRetry?.(failure, delay);
    await sleep(delay);
    wait = Math.min(wait * 2, MAX_BACKOFF_MS);
  }
}

/** A page as a 2xx answer's text says it, or the SourceError of a source that does not serve the read API. */
function pageOf(source: string, text: string): Page {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SourceError(
      `${source} answered GET /api/records with something that is not JSON (${JSON.stringify(text.slice(0, 80))}); is it the telemetry service or installstats?`,
    );
  }
  const b = body as { records?: unknown; total?: unknown };
  if (typeof b !== "object" || b === null || !Array.isArray(b.records) || typeof b.total !== "number") {
    throw new SourceError(
      `${source} answered GET /api/records without {records: [...], total}; it does not serve the telemetry service's read API`,
    );
  }
  return { records: b.records as JsonObject[], total: b.total };
}

/** The listing time of a record (ms), or null when it has none that can be read. */
const timeOf = (imp: ApiImport, r: JsonObject): number | null =>
  typeof r.created === "string" ? serviceTime(r.created, imp.opts.zone) : null;
const identity = (r: JsonObject | undefined) =>
  r === undefined ? "" : `${String(r.execution_id ?? r.random_id)}\u0000${String(r.created)}`;

/** The first offset whose record was listed at `time` or later (records listed earlier are all taken). */
async function locate(imp: ApiImport, time: number): Promise<number> {
  const { total } = await getPage(imp, 1, 1);
  let lo = 0;
  let hi = total;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const { records } = await getPage(imp, mid + 1, 1);
    const t = records[0] === undefined ? null : timeOf(imp, records[0]);
    if (t === null) return lo; // the listing ended or its times cannot be read: start there
    if (t < time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The records of a page not yet taken: each loaded as an execution, or refused into the log. */
async function take(imp: ApiImport, cursor: Cursor, fresh: readonly JsonObject[]): Promise<void> {
  const { source, opts, summary, loader } = imp;
  for (const [i, record] of fresh.entries()) {
    const listed = timeOf(imp, record);
    const result = recordExecution(record, { ...opts, versioned: cursor.versioned });
    summary.records++;
    if (!result.ok) {
      const key = result.field === null ? "invalid_field" : `invalid_field: ${result.field}`;
      summary.refused[key] = (summary.refused[key] ?? 0) + 1;
      const where = `record ${cursor.next + i + 1}`;
      opts.onRefused?.(where, result.message);
      await loader.refuse({
        reason: "invalid_field",
        field: result.field,
        message: `${source}/api/records, ${where}: ${result.message}`,
        randomId: result.randomId,
        body: JSON.stringify(record),
      });
    } else {
      await loader.add(result.execution);
      if (result.execution.outcome === "in_progress" && listed !== null && listed > opts.at - DAY)
        cursor.going ??= listed;
    }
    if (listed !== null) cursor.position = Math.max(cursor.position, listed);
  }
}

/** Pages read and taken until the listing's end; each page's records stored with the mark that covers them. */
async function readListing(imp: ApiImport, cursor: Cursor): Promise<void> {
  const { source, opts, summary, loader } = imp;
  for (;;) {
    // One record of overlap with what was taken, once something was.
    const from = cursor.last === undefined ? cursor.next : cursor.next - 1;
    const w = windowAt(from, cursor.next);
    const { records, total } = await getPage(imp, w.page, w.limit);
    if (
      cursor.last !== undefined &&
      identity(records[from - w.start]) !== identity(cursor.last) &&
      cursor.shiftedAt !== cursor.next
    ) {
      cursor.shiftedAt = cursor.next;
      summary.relocations++;
      cursor.next = await locate(imp, timeOf(imp, cursor.last) ?? 0);
      cursor.last = undefined;
      continue;
    }
    const fresh = records.slice(cursor.next - w.start);
    cursor.versioned ||= records.some((r) => r.payload_version !== undefined);
    await take(imp, cursor, fresh);
    cursor.next += fresh.length;
    if (fresh.length > 0) cursor.last = fresh.at(-1);
    await loader.flush([{ kind: "import-mark", source, position: cursor.going ?? cursor.position, at: opts.at }]);
    opts.onProgress?.(Object.assign(summary, loader.summary), total);
    if (records.length < w.limit || fresh.length === 0) break;
  }
}

export async function importFromApi(
  deps: { reads: StoreReads & Pick<TransferReads, "importMark">; commit: Commit },
  url: string,
  opts: ApiOptions,
): Promise<ApiSummary> {
  const source = sourceOf(url);
  const loader = new ExecutionLoader(deps, { at: opts.at });
  const imp: ApiImport = {
    source,
    opts,
    headers: { accept: "application/json", ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}) },
    loader,
    summary: { source, requests: 0, records: 0, resumedAfter: null, relocations: 0, refused: {}, ...loader.summary },
  };
  const mark = opts.fromStart ? 0 : await deps.reads.importMark(source);
  const cursor: Cursor = { next: 0, last: undefined, position: mark, going: null, shiftedAt: -1, versioned: false };
  if (mark > 0) {
    imp.summary.resumedAfter = new Date(mark).toISOString();
    cursor.next = await locate(imp, mark);
  }
  try {
    await readListing(imp, cursor);
    return Object.assign(imp.summary, loader.summary);
  } finally {
    await loader.flush().catch(() => {});
  }
}
