// The original public read API (community-scripts/ProxmoxVE, api/main.go), same paths, parameters
// and response shapes, so existing dashboards and scripts keep working. Shapes: data-shapes.ts.
//
// Lists stream from store.executionChunks (each chunk one short query that completes at once), so
// memory stays constant at any size and ingestion interleaves with a long download.
import { Elysia, t } from "elysia";
import { ErrorBody, errorBody } from "../../http/errors.ts";
import type { ExecutionFilter, StoreReads } from "../../store/contract/executions.ts";
import {
  OriginalErrors,
  OriginalRecord,
  OriginalSummary,
  arrayEnd,
  arrayPiece,
  countsObject,
  dateRange,
  errorCountsBody,
  originalStatus,
  originalStatusCounts,
  outcomesOfOriginal,
  pageWindow,
  type OriginalSource,
} from "./data-shapes.ts";
import { allTime, openQuery } from "../query.ts";
import { createStats, type Stats } from "../stats.ts";
import { reuseWhileExpensive } from "../reuse.ts";

/** Rows per streamed chunk (one query each). */
export const CHUNK_ROWS = 1000;

/** A JSON array streamed from row chunks: one chunk serialised per pull, so memory stays bounded. */
function jsonArrayResponse(chunks: AsyncIterator<OriginalSource[], void>): Response {
  const encoder = new TextEncoder();
  let first = true;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) {
          controller.enqueue(encoder.encode(arrayEnd(first)));
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(arrayPiece(next.value, first)));
        first = false;
      } catch (e) {
        // Break the response rather than end it as valid JSON missing records.
        controller.error(e);
      }
    },
    async cancel() {
      await chunks.return?.();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "application/json" } });
}

async function* emptyChunks(): AsyncGenerator<OriginalSource[], void> {}

/**
 * Streams of rows (each oldest first) as one, oldest first, keeping the rows `keep` takes; in
 * chunks of up to CHUNK_ROWS. Each source is pulled a chunk at a time, so memory stays bounded.
 */
async function* mergedChunks<T extends { createdAt: number }>(
  sources: AsyncGenerator<T[], void>[],
  keep: (row: T) => boolean,
): AsyncGenerator<T[], void> {
  const heads = sources.map(() => ({ rows: [] as T[], at: 0, done: false }));
  const fill = async (i: number) => {
    const h = heads[i]!;
    while (!h.done && h.at >= h.rows.length) {
      const next = await sources[i]!.next();
      if (next.done) h.done = true;
      else {
        h.rows = next.value;
        h.at = 0;
      }
    }
  };
  try {
    let out: T[] = [];
    for (;;) {
      await Promise.all(heads.map((_, i) => fill(i)));
      let best = -1;
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i]!;
        if (
          h.at < h.rows.length &&
          (best === -1 || h.rows[h.at]!.createdAt < heads[best]!.rows[heads[best]!.at]!.createdAt)
        )
          best = i;
      }
      if (best === -1) break;
      const row = heads[best]!.rows[heads[best]!.at++]!;
      if (keep(row)) out.push(row);
      if (out.length >= CHUNK_ROWS) {
        yield out;
        out = [];
      }
    }
    if (out.length > 0) yield out;
  } finally {
    await Promise.all(sources.map((g) => g.return()));
  }
}

/** A query parameter as the original read it (Go's URL.Query().Get): the first value, "" when absent. */
const param = (request: Request, name: string): string => new URL(request.url).searchParams.get(name) ?? "";

export interface DataRoutesDeps {
  store: StoreReads;
  clock: () => number;
}

const queryText = (description: string) => t.Optional(t.String({ description }));
// The OpenAPI tag and schema titles (CompatRecord, ...) are published names: they stay.
const tags = ["compat"];
const RecordList = t.Array(OriginalRecord, { description: "streamed; oldest first" });

/** What the handlers work with: the store, its aggregates, the clock, and the reused error counts. */
interface DataContext {
  store: StoreReads;
  clock: () => number;
  stats: Stats;
  errorCounts: () => Promise<OriginalErrors>;
}

/** Streams the installs matching `f` that exist now (up to the newest one, so the stream ends). */
async function list(
  { store }: DataContext,
  f: ExecutionFilter,
  page?: { offset: number; limit: number },
): Promise<Response> {
  const span = await store.recordSpan();
  return jsonArrayResponse(
    span === null
      ? emptyChunks()
      : store.executionChunks({ ...f, until: span.last }, { ...page, chunkRows: CHUNK_ROWS }),
  );
}

const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });

/** Totals by status and by app, all time, from rollups. */
async function summary({ store, clock, stats }: DataContext): Promise<Response> {
  const span = await store.recordSpan();
  if (!span) return json({ total_entries: 0, status_count: {}, nsapp_count: {} });
  // All time, from rollups: the first install's hour up to past both now and the newest install.
  const w = allTime(span, clock());
  const every = { sort: "volume", minRuns: 0, limit: Number.MAX_SAFE_INTEGER } as const;
  const [totals, byStatus, byApp] = await Promise.all([
    stats.summary({}, w),
    stats.breakdown({}, w, { ...every, by: "status" }),
    stats.breakdown({}, w, { ...every, by: "nsapp" }),
  ]);
  // Statuses in the original's words: its readers count done as success (data-shapes.ts originalStatus).
  const body: OriginalSummary = {
    total_entries: totals.total,
    status_count: originalStatusCounts(byStatus.groups),
    nsapp_count: countsObject(byApp.groups),
  };
  // Serialised here: the response step copies record keys by assignment, and an app named
  // "__proto__" would vanish (or worse) on the way out.
  return json(body);
}

/**
 * A status in the original's words: the outcomes it can come from, read apart, merged, and kept
 * where they read as that word (an ended-unknown run may read installing or as sent).
 */
async function listOfStatus({ store }: DataContext, status: string): Promise<Response> {
  const wanted = status.toLowerCase();
  const span = await store.recordSpan();
  if (span === null) return jsonArrayResponse(emptyChunks());
  const sources = outcomesOfOriginal(wanted).map((outcome) =>
    store.executionChunks(
      {
        outcome,
        ...(wanted === "done" || wanted === "failed" || wanted === "installing" ? {} : { status: wanted }),
        until: span.last,
      },
      { chunkRows: CHUNK_ROWS },
    ),
  );
  return jsonArrayResponse(mergedChunks(sources, (row) => originalStatus(row) === wanted));
}

/** A route answering a streamed list of records: its response and docs. */
const listRoute = (summary: string, description: string) => ({
  response: { 200: RecordList },
  detail: { tags, summary, description },
});

const JsonRoute = listRoute("Every install (original API)", "All installs, oldest first, streamed as one JSON array.");
const PaginatedRoute = {
  query: openQuery(
    t.Object({
      page: queryText("1-based page; below 1 or not a number means 1"),
      limit: queryText("installs per page; below 1 or not a number means 10; no upper bound (the page is streamed)"),
    }),
  ),
  ...listRoute(
    "One page of installs (original API)",
    "Oldest first; a page past the end is []. No total or page count, as in the original.",
  ),
};
const SummaryRoute = {
  response: { 200: OriginalSummary },
  detail: {
    tags,
    summary: "Totals by status and by app, all time (original API)",
    description: "Answered from rollups: fast at any size.",
  },
};
const NsappRoute = {
  query: openQuery(
    t.Object({
      nsapp: queryText(
        'exact application name (case-sensitive); absent or "" lists installs without one, as in the original',
      ),
    }),
  ),
  ...listRoute("Installs of one app (original API)", "Oldest first, streamed; an unknown app is []."),
};
const DateRoute = {
  query: openQuery(
    t.Object({
      start_date: queryText("first day, YYYY-MM-DD (UTC); required"),
      end_date: queryText("last day, YYYY-MM-DD (UTC), included whole; required"),
    }),
  ),
  response: { 200: RecordList, 400: ErrorBody },
  detail: {
    tags,
    summary: "Installs created in a range of days (original API)",
    description:
      "Oldest first, streamed. A missing or malformed day is 400, as in the original. start_date after end_date is [].",
  },
};
const StatusRoute = {
  query: openQuery(
    t.Object({
      status: queryText(
        "in the original's words: done, failed or installing (today's success is done, an abort failed, a run still going installing); matched case-insensitively",
      ),
    }),
  ),
  ...listRoute("Installs with one status (original API)", "Oldest first, streamed."),
};
const OsRoute = {
  query: openQuery(
    t.Object({
      os_type: queryText("e.g. debian (stored lowercase, so matched case-insensitively)"),
      os_version: queryText(
        "e.g. 12, exact. Both parameters are matched: an absent one matches installs without that value, as in the original",
      ),
    }),
  ),
  ...listRoute("Installs on one OS type and version (original API)", "Oldest first, streamed."),
};
const ErrorsRoute = {
  response: { 200: OriginalErrors },
  detail: {
    tags,
    summary: "Installs per exact error text, all time (original API)",
    description:
      'Every install with a non-empty error, whatever its status (finished installs often carry "none"), most frequent first. ' +
      "Scans all installs; on large databases an answer may be reused for up to 10x the time it took to compute.",
  },
};

export function dataRoutes(deps: DataRoutesDeps) {
  const { store, clock } = deps;
  const ctx: DataContext = {
    store,
    clock,
    stats: createStats(store),
    errorCounts: reuseWhileExpensive(
      async () => errorCountsBody(await store.errorTextCounts()),
      () => store.changeMarker(),
      clock,
    ),
  };
  return new Elysia({ name: "compat" })
    .get("/data/json", () => list(ctx, {}), JsonRoute)
    .get(
      "/data/paginated",
      ({ request }) => list(ctx, {}, pageWindow(param(request, "page"), param(request, "limit"))),
      PaginatedRoute,
    )
    .get("/data/summary", () => summary(ctx), SummaryRoute)
    .get("/data/nsapp", ({ request }) => list(ctx, { nsapp: param(request, "nsapp") }), NsappRoute)
    .get(
      "/data/date",
      ({ request, status }) => {
        const range = dateRange(param(request, "start_date"), param(request, "end_date"));
        if (!range.ok) return status(400, errorBody("invalid_field", range.message, range.field));
        return list(ctx, { from: range.from, to: range.to });
      },
      DateRoute,
    )
    .get("/data/status", ({ request }) => listOfStatus(ctx, param(request, "status")), StatusRoute)
    .get(
      "/data/os",
      ({ request }) =>
        list(ctx, { osType: param(request, "os_type").toLowerCase(), osVersion: param(request, "os_version") }),
      OsRoute,
    )
    .get("/data/errors", () => ctx.errorCounts(), ErrorsRoute);
}
