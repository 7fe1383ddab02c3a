// The Store contract: everything the rest of the service may ask of storage. Ingestion, the read
// side and maintenance depend on this file alone; each engine (sqlite/, later postgres/) fulfils
// it, and test/contract/ proves that an engine does. Results are in storage terms: what happened
// to the data, never how a protocol answers it (the HTTP edge maps them to status codes).
// Every method is asynchronous: an engine may answer from another thread or over the network
// (a read connection in a worker, a PostgreSQL server); an embedded one simply resolves at once.
import type { KnownSignature } from "../domain/error-signature.ts";
import type { Execution, Kind, Report } from "../domain/execution.ts";
import type { Outcome } from "../domain/outcome.ts";
import type { Endpoint, RejectReason, Rejection } from "../domain/rejection.ts";
import type { Grain, RollupData, RollupPart } from "../domain/rollup.ts";

/** What arrived with a report: where, its raw bytes (kept in the log when they needed repair, unless the report was a duplicate), when. */
interface Received {
  endpoint: Endpoint;
  raw: Uint8Array;
  /** Repairs the lenient parser made; none for a strict JSON body. */
  repairs: readonly string[];
  at: number;
}

// ------------------------------------------------------------------ writes

/** What ingestion (and import, seed, replay) writes: reports, refusals, whole records. */
export type ReportWrite =
  /** Any report of either protocol; domain/lifecycle.ts decides what it does to its execution. */
  | ({ kind: "report"; report: Report } & Received)
  /** A refused request, logged raw with its reason. */
  | { kind: "reject"; rejection: Rejection; at: number }
  /**
   * A complete execution as it stands (seed, copy): stored and counted once, where a start report
   * and its final report would be counted three times (+1 in progress, -1, +1 final).
   */
  | { kind: "load"; execution: Execution; at: number };

/** What jobs and admin actions write. */
type MaintenanceWrite =
  /** Removes everything stored about one install: its executions, held reports, rejected-log bodies. */
  | { kind: "delete"; randomId: string; at: number }
  /** An execution still in progress becomes outcome "unknown" (timed out); its status stays as sent. */
  | { kind: "expire"; executionId: string; at: number }
  /**
   * Retention by whole periods, where the engine keeps executions by period (PostgreSQL: months of
   * created_at): with `until` the start of the period `before` falls in, every install with an
   * execution created before `until` goes at once, with all its executions, held reports and log
   * entries (what deletes would do), its rollup counts with it. An engine without periods (SQLite)
   * removes nothing and answers `until` null.
   */
  | { kind: "drop-before"; before: number; at: number }
  /** Drops rejected-log entries received before `before` (retention). */
  | { kind: "forget-rejected"; before: number; at: number }
  /** Records what came of replaying a rejected-log entry through the current parser. */
  | { kind: "mark-replayed"; rejectedId: number; result: string; at: number }
  /** Adds the hour cells of every hour before `until` not yet folded into day and month cells. */
  | { kind: "fold"; until: number; at: number }
  /** The stuck-install job checked every install created in [from, until): the mark moves, unless it moved meanwhile. */
  | { kind: "stuck-checked"; from: number; until: number; at: number }
  /**
   * Held reports received before `before` (their start report never came), at most `limit`, oldest
   * first, are applied on their own: each becomes the execution it describes (no start, no duration).
   */
  | { kind: "expire-held"; before: number; limit: number; at: number };

export type WriteOp = ReportWrite | MaintenanceWrite;

/** What each kind of write comes to. */
export interface ResultOf {
  /**
   * "created": a new execution; "updated": the report changed it; "duplicate": nothing new;
   * "held": a final report before its start, applied when that comes; "already-final": an
   * /upload status update for a record with a final status, not applied, logged.
   */
  report:
    | { kind: "created"; outcome: Outcome }
    | { kind: "updated"; outcome: Outcome }
    | { kind: "duplicate" }
    | { kind: "held" }
    | { kind: "already-final"; outcome: Outcome };
  reject: { kind: "logged" };
  load: { kind: "created"; outcome: Outcome } | { kind: "duplicate" };
  /** `executions`: how many executions went. */
  delete: { kind: "deleted"; found: boolean; executions: number };
  expire: { kind: "expired"; changed: boolean };
  "forget-rejected": { kind: "forgotten"; count: number };
  /** `executions`: how many went; `until`: everything created before it is gone (null: the engine has no periods). */
  "drop-before": { kind: "dropped"; executions: number; until: number | null };
  "mark-replayed": { kind: "marked" };
  fold: { kind: "folded"; hours: number };
  "stuck-checked": { kind: "marked" };
  /** `count`: held reports applied. */
  "expire-held": { kind: "expired-held"; count: number };
}
export type ResultFor<Op extends WriteOp> = ResultOf[Op["kind"]];
export type WriteResult = ResultOf[keyof ResultOf];

// ------------------------------------------------------------------ reads

/** Which executions a read covers; "" for a text filter matches executions without that value. */
export interface ExecutionFilter {
  /** Absent: every kind. */
  kind?: Kind;
  randomId?: string;
  nsapp?: string;
  status?: string;
  outcome?: Outcome;
  type?: string;
  osType?: string;
  osVersion?: string;
  pveVersion?: string;
  method?: string;
  exitCode?: number;
  errorCategory?: string;
  platform?: string;
  arch?: string;
  cpuVendor?: string;
  gpuVendor?: string;
  gpuPassthrough?: string;
  repoSource?: string;
  repoSlug?: string;
  appVersion?: string;
  kernelVersion?: string;
  from?: number;
  to?: number;
  /** Free text, matched in app name and error text. */
  q?: string;
  /** created_at <= until: a stream that began at `until` ends even while executions keep arriving. */
  until?: number;
}

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
}

export interface RollupCell {
  slice: string;
  bucket: number;
  data: RollupData;
}

/** What the read side asks: executions, rollup cells, error signatures. */
export interface StoreReads {
  /** An install's executions, first attempt first; empty when the random_id is unknown. */
  getExecutions(randomId: string): Promise<Execution[]>;
  /** Newest first (or oldest), `limit` rows after `after`; `next` is null on the last page. */
  listExecutions(filter: ExecutionFilter, page: { limit: number; after?: ListCursor; order?: ListOrder }): Promise<{ rows: Execution[]; next: ListCursor | null }>;
  /** Each app's newest execution (an index seek per app); apps without one are left out. */
  newestOfApps(apps: readonly string[]): Promise<Execution[]>;
  /** One numbered page and how many executions match in all. */
  pageExecutions(filter: ExecutionFilter, page: PageQuery): Promise<{ rows: Execution[]; total: number }>;
  /**
   * Matching executions oldest first, `offset` skipped, at most `limit`, in chunks of `chunkRows`.
   * Each chunk is one query run to completion, so no statement stays open while a consumer
   * (a download, say) takes its time.
   */
  executionChunks(filter: ExecutionFilter, page?: { offset?: number; limit?: number; chunkRows?: number }): AsyncGenerator<Execution[], void>;
  /** Every matching execution, oldest first, in constant memory (executionChunks, flattened). */
  iterateExecutions(filter: ExecutionFilter): AsyncIterable<Execution>;
  /** Executions per exact error text (non-empty), most frequent first: one scan of every execution. */
  errorTextCounts(): Promise<{ error: string; count: number }[]>;
  /** Changes whenever anything is committed: a cheap key for caching answers. */
  changeMarker(): Promise<string>;
  /** Rollup cells of one grain and slice with bucket in [from, to), oldest first; open hours included. */
  readRollups(selection: RollupSelection): Promise<{ bucket: number; data: RollupData }[]>;
  /** Every rollup cell of one grain with bucket in [from, to), all app slices; open hours included. */
  rollupCells(grain: Grain, from: number, to: number): Promise<RollupCell[]>;
  /** Hours before this are in day and month cells too; later ones in hour cells only. */
  foldedUntil(): Promise<number>;
  signatures(ids: readonly string[]): Promise<KnownSignature[]>;
  /** created_at of the oldest and newest execution, or null when there are none. */
  recordSpan(): Promise<{ first: number; last: number } | null>;
}

/** One entry of the rejected-reports log, in storage terms. */
export interface RejectedEntry extends Omit<Rejection, "body"> {
  id: number;
  receivedAt: number;
  /** What the write of a repaired report came to; null for refusals. */
  result: ResultOf["report"]["kind"] | null;
  /** The raw body; only its first bytes when `bodyKept` is false. */
  body: Uint8Array;
  replayedAt: number | null;
  replayResult: string | null;
  /** Bytes of the body as received. */
  bodySize: number;
  /** SHA-256 of the body as received (hex); null for entries logged before budgets existed. */
  bodySha256: string | null;
  /** False when the log was past its budget: `body` is then the body's head only. */
  bodyKept: boolean;
}

/** How much a store may keep of what is not an execution (the rejected-reports log, held reports). */
export interface StoreLimits {
  /** Bytes of the rejected-reports log (bodies compressed, each stored once, and the entries). */
  logBytes: number;
  /** Bytes of held reports; past it the oldest are applied on their own (expire-held). */
  heldBytes: number;
}

/** Where the budgets stand: running totals, and what was done to stay within them (counters since the database was created). */
export interface BudgetStatus {
  log: {
    limitBytes: number;
    usedBytes: number;
    entries: number;
    /** Bytes of whole bodies as stored (compressed), and as received. */
    bodyBytes: number;
    bodyRawBytes: number;
    /** Entries whose body is not kept (head only), now. */
    headOnly: number;
    /** Entries that shared a body already stored. */
    deduplicated: number;
    /** Entries kept with the head of their body only (the log was past its budget for whole bodies). */
    truncated: number;
    /** Head-only entries removed, oldest first, to make room for newer ones. */
    evicted: number;
    /** Entries not kept at all (the log was full of entries that may not be removed); counted only. */
    dropped: number;
    /** Raw body bytes not kept (truncated or dropped). */
    droppedBytes: number;
  };
  held: {
    limitBytes: number;
    usedBytes: number;
    count: number;
    /** Applied on their own after waiting too long (expire-held). */
    expired: number;
    /** Applied on their own, oldest first, because held reports were past their budget. */
    overflowed: number;
  };
}

/** What maintenance asks before it writes: stuck executions, what retention would remove, the log. */
export interface MaintenanceReads {
  /** Executions still in progress created in [from, before), oldest first. */
  stuckExecutions(from: number, before: number, limit: number): Promise<{ executionId: string; createdAt: number }[]>;
  /** Every execution created before this has a final outcome or was expired (stuckExecutions scans from here). */
  stuckCheckedUntil(): Promise<number>;
  /** How much is older than `cutoff`: executions created, held reports and log entries received before it. */
  countBefore(cutoff: number): Promise<{ executions: number; held: number; rejected: number }>;
  /** random_ids of reports held since before `cutoff` (their start report never came). */
  heldBefore(cutoff: number, limit: number): Promise<string[]>;
  /** The rejected-reports log, newest first; `before` is the id to continue from. */
  listRejected(opts: { limit: number; reason?: RejectReason; before?: number }): Promise<RejectedEntry[]>;
  /**
   * Log entries of `reasons` that a replay should try, oldest first, with ids above `afterId`:
   * never replayed, or replayed with a result starting with `retryPrefix` (still invalid then).
   */
  replayCandidates(opts: { reasons: readonly RejectReason[]; retryPrefix: string; afterId: number; limit: number }): Promise<RejectedEntry[]>;
  /** Entries of `reasons` replayed for good (with a result not starting with `retryPrefix`). */
  countReplayed(reasons: readonly RejectReason[], retryPrefix: string): Promise<number>;
  /** Where the budgets of the log and the held reports stand. */
  budgets(): Promise<BudgetStatus>;
}

/** The storage could not take a write (disk full, read-only, I/O error): nothing was written; retry later. */
/**
 * A read ran past the read budget and was stopped, so that it cannot hold up the service; or it
 * was stopped with a read that did. The HTTP edge answers 503 with this message.
 */
export class ReadBudgetError extends Error {}

export class StorageUnavailableError extends Error {
  constructor(message: string) {
    super(`storage cannot accept writes: ${message}`);
  }
}

/**
 * The stored data cannot be read: damaged pages or values (a disk fault, bytes changed under the
 * server), or files replaced under it. Not the request's fault and not a bug: an operator runs
 * `installstats verify`. A StorageUnavailableError, so the HTTP edge answers it 503 without a stack.
 */
export class StorageDamagedError extends StorageUnavailableError {
  constructor(
    message: string,
    /** What is damaged, when known ("rollup cell day * 2026-06-01"). */
    readonly where: string | null = null,
  ) {
    super(message);
    this.name = "StorageDamagedError";
    this.message = `storage is damaged${where ? ` (${where})` : ""}: ${message}; run installstats verify`;
  }
}

export interface Store extends StoreReads, MaintenanceReads {
  /**
   * Applies the operations in one transaction, in order; results in the same order. Throws
   * StorageUnavailableError when the storage refuses the transaction (anything else is a bug).
   */
  write(ops: readonly WriteOp[]): Promise<WriteResult[]>;
  /**
   * Recomputes every rollup cell from the raw records, one day per transaction (after an upgrade
   * that changes what rollups hold, or to repair what `verify` found). Run with the server stopped.
   */
  rebuildRollups(onDay?: (day: number, end: number) => void): Promise<void>;
  /** How much of what is not an execution the store keeps (the defaults until called). */
  setLimits(limits: StoreLimits): void;
  /**
   * Runs `fn` as the scheduled job `name` unless it runs now, or ran less than `everyMs` before
   * `at`, on any process sharing this store; null when skipped. An SQLite file has one server
   * (the serve lock), so there it always runs; nodes sharing a PostgreSQL database take a lease.
   */
  leaseJob<T>(name: string, everyMs: number, at: number, fn: () => Promise<T>): Promise<T | null>;
  close(): Promise<void>;
}
