// The narrow storage interface: ingestion and the read API depend on this, not on SQLite,
// so another backend (PostgreSQL) can sit beside the SQLite one.
import type { ErrorSignatureRow, InstallRow, NewInstallRow, Outcome, RejectReason } from "./sqlite/schema.ts";
import type { Grain, RollupData, RollupPart } from "../domain/rollup.ts";
import type { RejectedEntry } from "./sqlite/rejected-log.ts";

/** Every column present (null when absent): the prepared insert binds each one. */
type Complete<T> = { [K in keyof T]-?: Exclude<T[K], undefined> };

export type StartReport = Complete<Omit<NewInstallRow, "createdAt" | "updatedAt" | "durationMs" | "repaired">>;

export interface StatusUpdate {
  randomId: string;
  status: string;
  outcome: Outcome;
  error: string | null;
}

export type Endpoint = "upload" | "updatestatus";

export interface Rejection {
  endpoint: Endpoint;
  reason: RejectReason;
  httpStatus: number;
  field: string | null;
  message: string;
  randomId: string | null;
  body: Uint8Array;
}

/** What arrived with a report, kept so a repaired body can be logged raw. */
interface Received {
  raw: Uint8Array;
  repairs: readonly string[];
  at: number;
}

export type WriteOp =
  | ({ kind: "start"; report: StartReport } & Received)
  | ({ kind: "update"; update: StatusUpdate } & Received)
  | { kind: "reject"; rejection: Rejection; at: number }
  /**
   * A complete record as it stands (seed, import): stored and counted once, where a start report
   * and its update would be counted three times (+1 in progress, -1, +1 final).
   */
  | { kind: "load"; row: InstallRow; at: number }
  /** Removes everything stored about one install: record, held update, rejected-log bodies. */
  | { kind: "delete"; randomId: string; at: number }
  /** An install still in progress becomes outcome "unknown" (timed out); its status stays as sent. */
  | { kind: "expire"; randomId: string; at: number }
  /** Drops rejected-log entries received before `before` (retention). */
  | { kind: "forget-rejected"; before: number; at: number }
  /** Records the outcome of replaying a rejected-log entry through the current parser. */
  | { kind: "mark-replayed"; rejectedId: number; result: string; at: number }
  /** Adds the hour cells of every hour before `until` not yet folded into day and month cells. */
  | { kind: "fold"; until: number; at: number }
  /** The stuck-install job checked every install created in [from, until): the mark moves, unless it moved meanwhile. */
  | { kind: "stuck-checked"; from: number; until: number; at: number };

export type WriteResult =
  | { kind: "created"; outcome: Outcome }
  | { kind: "duplicate" }
  | { kind: "updated"; outcome: Outcome }
  | { kind: "held" }
  | { kind: "conflict"; outcome: Outcome }
  | { kind: "logged" }
  | { kind: "deleted"; found: boolean }
  | { kind: "expired"; changed: boolean }
  | { kind: "forgotten"; count: number }
  | { kind: "marked" }
  | { kind: "folded"; hours: number };

/** The HTTP status each result is answered with (DESIGN.md section 2); the rejected log records it too. */
export const RESULT_STATUS = {
  created: 201,
  duplicate: 200,
  updated: 200,
  held: 202,
  conflict: 409,
  logged: 0, // a rejection carries its own status
  deleted: 200,
  expired: 200,
  forgotten: 200,
  marked: 200,
  folded: 200,
} as const satisfies Record<WriteResult["kind"], number>;

/** Which installs a read covers; "" for a text filter matches installs without that value. */
export interface InstallFilter {
  nsapp?: string;
  status?: string;
  outcome?: Outcome;
  type?: string;
  osType?: string;
  osVersion?: string;
  pveVersion?: string;
  method?: string;
  from?: number;
  to?: number;
  /** Free text, matched in app name and error text. */
  q?: string;
  /** created_at <= until: a stream that began at `until` ends even while installs keep arriving. */
  until?: number;
}

export type ListOrder = "newest" | "oldest";

/** Position after the last row of a page. */
export interface ListCursor {
  createdAt: number;
  rowid: number;
}

export interface RollupSelection {
  grain: Grain;
  app: string;
  from: number;
  to: number;
  parts: readonly RollupPart[];
}

export interface StoreReads {
  getInstall(randomId: string): InstallRow | undefined;
  /** Newest first (or oldest), `limit` rows after `after`; `next` is null on the last page. */
  listInstalls(filter: InstallFilter, page: { limit: number; after?: ListCursor; order?: ListOrder }): { rows: InstallRow[]; next: ListCursor | null };
  /**
   * Matching installs oldest first, `offset` skipped, at most `limit`, in chunks of `chunkRows`.
   * Each chunk is one query run to completion, so no statement stays open while a consumer
   * (a download, say) takes its time: WAL checkpoints are never held up.
   */
  installChunks(filter: InstallFilter, page?: { offset?: number; limit?: number; chunkRows?: number }): Generator<InstallRow[], void>;
  /** Every matching install, oldest first, in constant memory (installChunks, flattened). */
  iterateInstalls(filter: InstallFilter): Iterable<InstallRow>;
  /** Installs per exact error text (non-empty), most frequent first: one scan of every install. */
  errorTextCounts(): { error: string; count: number }[];
  /** The rejected-reports log, newest first; `before` is the id to continue from. */
  listRejected(opts: { limit: number; reason?: RejectReason; before?: number }): RejectedEntry[];
  /** Installs still in progress created in [from, before), oldest first. */
  stuckInstalls(from: number, before: number, limit: number): { randomId: string; createdAt: number }[];
  /** Every install created before this has a final outcome or was expired (stuckInstalls scans from here). */
  stuckCheckedUntil(): number;
  /** Changes whenever any connection commits: a cheap key for caching answers. */
  changeMarker(): string;
  /** Rollup cells of one grain and app slice with bucket in [from, to), oldest first. */
  readRollups(selection: RollupSelection): { bucket: number; data: RollupData }[];
  /** Every rollup cell of one grain with bucket in [from, to), all app slices. */
  rollupCells(grain: Grain, from: number, to: number): { app: string; bucket: number; data: RollupData }[];
  /** Hours before this are in day and month cells too; later ones in hour cells only (grainsOf). */
  foldedUntil(): number;
  signatures(ids: readonly string[]): ErrorSignatureRow[];
  /** created_at of the oldest and newest install, or null when there are none. */
  recordSpan(): { first: number; last: number } | null;
}

export interface Store extends StoreReads {
  /** Applies the operations in one transaction, in order. Throws if the transaction cannot commit. */
  write(ops: readonly WriteOp[]): WriteResult[];
  /**
   * Recomputes every rollup cell from the raw records, one day per transaction (after an upgrade
   * that changes what rollups hold, or to repair what `verify` found). Run with the server stopped.
   */
  rebuildRollups(onDay?: (day: number, end: number) => void): void;
  close(): void;
}
