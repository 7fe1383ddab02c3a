// The executions feature of the Store contract: reports written, and the read side (executions,
// rollup cells, error signatures). Every method is asynchronous: an engine may answer from another
// thread or over the network (a read connection in a worker, a PostgreSQL server); an embedded
// one simply resolves at once.
import type { KnownSignature } from "../../domain/error-signature.ts";
import type { Execution, Report } from "../../domain/execution.ts";
import type { FilterValues } from "../../domain/fields.ts";
import type { Outcome } from "../../domain/outcome.ts";
import type { Endpoint } from "../../domain/rejection.ts";
import type { Dimension, Grain, RollupData, RollupPart } from "../../domain/rollup.ts";
import type { IssueReads } from "./issues.ts";
import type { ReadTable } from "./reads.ts";

/** What arrived with a report: where, its raw bytes (kept in the log when they needed repair, unless the report was a duplicate), when. */
interface Received {
  endpoint: Endpoint;
  raw: Uint8Array;
  /** Repairs the lenient parser made; none for a strict JSON body. */
  repairs: readonly string[];
  at: number;
  /** When its body is logged (repaired, refused as already final), only its head is kept: its client's share of the log is used up. */
  headOnly?: boolean;
  /** False: a final report before its start is applied on its own at once, not held (its client's share of held reports is used up). */
  holdable?: boolean;
}

/** What ingestion writes: a report of either protocol; domain/lifecycle.ts decides what it does to its execution. */
export type ReportWrite = { kind: "report"; report: Report } & Received;

/**
 * "created": a new execution; "updated": the report changed it; "duplicate": nothing new;
 * "held": a final report before its start, applied when that comes; "already-final": an
 * /upload status update for a record with a final status, not applied, logged.
 */
export type ReportResult =
  | { kind: "created"; outcome: Outcome }
  | { kind: "updated"; outcome: Outcome }
  | { kind: "duplicate" }
  | { kind: "held" }
  | { kind: "already-final"; outcome: Outcome };

/** An app and the type of its newest execution. */
export interface AppType {
  nsapp: string;
  type: string;
}

export interface ExecutionResults {
  report: ReportResult;
}

/**
 * Which executions a read covers: a value of each filter field (domain/fields.ts `filter`; "" for a
 * text filter matches executions without that value; kind absent: every kind), the platform
 * class, the time window, free text.
 */
export interface ExecutionFilter extends FilterValues {
  /** The platform as the community service reads it (domain/rollup.ts platformClass): pve, incus, or "" when nothing says. */
  platformClass?: string;
  from?: number;
  to?: number;
  /** Free text, matched in app name and error text. */
  q?: string;
  /** created_at <= until: a stream that began at `until` ends even while executions keep arriving. */
  until?: number;
  /**
   * Leaves out the executions this filter matches (an execution without a value it names is not
   * matched, so it stays): what a rollup answer takes away (read/aggregate.ts complementOf).
   */
  except?: ExecutionFilter;
}

/** What "heard from since" reads may be asked to narrow by. */
export type HeardFilter = Pick<ExecutionFilter, "outcome">;

type ListOrder = "newest" | "oldest";

/** Columns a numbered page can be sorted by (the community service's `sort`). */
export const PAGE_SORTS = ["created", "nsapp", "status", "os_type", "type", "method", "exit_code"] as const;
export type PageSort = (typeof PAGE_SORTS)[number];

/**
 * A numbered page as the community service lists records: `offset` rows skipped, sorted by one
 * column ("status" is the outcome; text by code point, absent values before every value; ties
 * newest first, then latest inserted), with two filters rollups do not know: any of several repo
 * sources ("" for none), and an app name containing a text (ASCII letters in any case, taken
 * literally).
 */
export interface PageQuery {
  offset: number;
  limit: number;
  sort: PageSort;
  descending: boolean;
  repoSources?: readonly string[];
  appContains?: string;
}

/** Position after the last row of a page. */
export interface ListCursor {
  createdAt: number;
  /** A tie-breaker among executions created in the same millisecond, increasing with insertion. */
  seq: number;
}

export interface RollupSelection {
  grain: Grain;
  /** A slice key (domain/rollup.ts sliceKey). */
  slice: string;
  from: number;
  to: number;
  parts: readonly RollupPart[];
  /**
   * The dimensions of the data part the reader needs; absent: all. An engine may leave the others
   * out (it need not decode every value of a cell for a total).
   */
  dims?: readonly Dimension[];
}

export interface RollupCell {
  slice: string;
  bucket: number;
  data: RollupData;
}

/** The reads of executions, rollup cells and error signatures: what a PostgreSQL read replica may answer. */
export interface ExecutionReads {
  /** An install's executions, first attempt first; empty when the random_id is unknown. */
  getExecutions(randomId: string): Promise<Execution[]>;
  /** Newest first (or oldest), `limit` rows after `after`; `next` is null on the last page. */
  listExecutions(
    filter: ExecutionFilter,
    page: { limit: number; after?: ListCursor; order?: ListOrder },
  ): Promise<{ rows: Execution[]; next: ListCursor | null }>;
  /**
   * Each app's type as of its newest execution (the latest inserted of a millisecond; an index
   * seek per app, reading the type alone); apps without one are left out.
   */
  typesOfApps(apps: readonly string[]): Promise<AppType[]>;
  /** One numbered page and how many executions match in all. */
  pageExecutions(filter: ExecutionFilter, page: PageQuery): Promise<{ rows: Execution[]; total: number }>;
  /**
   * Matching executions oldest first, `offset` skipped, at most `limit`, in chunks of `chunkRows`.
   * Each chunk is one query run to completion, so no statement stays open while a consumer
   * (a download, say) takes its time.
   */
  executionChunks(
    filter: ExecutionFilter,
    page?: { offset?: number; limit?: number; chunkRows?: number },
  ): AsyncGenerator<Execution[], void>;
  /** Every matching execution, oldest first, in constant memory (executionChunks, flattened). */
  iterateExecutions(filter: ExecutionFilter): AsyncIterable<Execution>;
  /**
   * How many executions matching `filter` reported anything at or after each time in `since`
   * (updated_at), one count per time: what is going on lately, whenever a run started. Bounded
   * reads, however old the store (store/common/heard.ts).
   */
  countUpdatedSince(filter: HeardFilter, since: readonly number[]): Promise<number[]>;
  /** Executions matching `filter` that reported anything at or after `since`, most recently heard from first, at most `limit`. */
  listUpdatedSince(filter: HeardFilter, since: number, limit: number): Promise<Execution[]>;
  /** Executions per exact error text (non-empty), most frequent first: one scan of every execution. */
  errorTextCounts(): Promise<{ error: string; count: number }[]>;
  /** Changes whenever anything is committed: a cheap key for caching answers. */
  changeMarker(): Promise<string>;
  /**
   * Rollup cells of one grain and slice with bucket in [from, to), oldest first, one per bucket;
   * open hours included, and hours older than the hour cells counted from their records.
   */
  readRollups(selection: RollupSelection): Promise<{ bucket: number; data: RollupData }[]>;
  /** Every rollup cell of one grain with bucket in [from, to), all app slices; open hours included. */
  rollupCells(grain: Grain, from: number, to: number): Promise<RollupCell[]>;
  /** Hours before this are in day and month cells too; later ones in hour cells only. */
  foldedUntil(): Promise<number>;
  signatures(ids: readonly string[]): Promise<KnownSignature[]>;
  /** created_at of the oldest and newest execution, or null when there are none. */
  recordSpan(): Promise<{ first: number; last: number } | null>;
}

/** How each read of executions answers (store/common/door.ts). */
export const EXECUTION_READS = {
  getExecutions: "once",
  listExecutions: "once",
  typesOfApps: "once",
  pageExecutions: "once",
  executionChunks: "stream",
  iterateExecutions: "stream",
  countUpdatedSince: "once",
  listUpdatedSince: "once",
  errorTextCounts: "once",
  changeMarker: "once",
  readRollups: "once",
  rollupCells: "once",
  foldedUntil: "once",
  signatures: "once",
  recordSpan: "once",
} as const satisfies ReadTable<ExecutionReads>;

/** What the read side asks: executions, rollup cells, error signatures and their issue links. */
export interface StoreReads extends ExecutionReads, IssueReads {}
