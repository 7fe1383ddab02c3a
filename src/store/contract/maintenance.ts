// The maintenance feature of the Store contract: what jobs and admin actions write and ask
// (deletes, retention, expiry, folding), the budgets, leases of scheduled jobs, rebuilds.
import type { ReadTable } from "./reads.ts";

/** What jobs and admin actions write. */
export type MaintenanceWrite =
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
  /** Adds the hour cells of every hour before `until` not yet folded into day and month cells. */
  | { kind: "fold"; until: number; at: number }
  /** The stuck-install job checked every install created in [from, until): the mark moves, unless it moved meanwhile. */
  | { kind: "stuck-checked"; from: number; until: number; at: number }
  /**
   * Held reports received before `before` (their start report never came), at most `limit`, oldest
   * first, are applied on their own: each becomes the execution it describes (no start, no duration).
   */
  | { kind: "expire-held"; before: number; limit: number; at: number };

export interface MaintenanceResults {
  /** `executions`: how many executions went. */
  delete: { kind: "deleted"; found: boolean; executions: number };
  expire: { kind: "expired"; changed: boolean };
  /** `executions`: how many went; `until`: everything created before it is gone (null: the engine has no periods). */
  "drop-before": { kind: "dropped"; executions: number; until: number | null };
  fold: { kind: "folded"; hours: number };
  "stuck-checked": { kind: "marked" };
  /** `count`: held reports applied. */
  "expire-held": { kind: "expired-held"; count: number };
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

/** What maintenance asks before it writes: stuck executions, what retention would remove, the budgets. */
export interface MaintenanceReads {
  /** Executions still in progress created in [from, before), oldest first. */
  stuckExecutions(from: number, before: number, limit: number): Promise<{ executionId: string; createdAt: number }[]>;
  /** Every execution created before this has a final outcome or was expired (stuckExecutions scans from here). */
  stuckCheckedUntil(): Promise<number>;
  /** How much is older than `cutoff`: executions created, held reports and log entries received before it. */
  countBefore(cutoff: number): Promise<{ executions: number; held: number; rejected: number }>;
  /** random_ids of reports held since before `cutoff` (their start report never came). */
  heldBefore(cutoff: number, limit: number): Promise<string[]>;
  /** Where the budgets of the log and the held reports stand. */
  budgets(): Promise<BudgetStatus>;
}

export const MAINTENANCE_READS = {
  stuckExecutions: "once",
  stuckCheckedUntil: "once",
  countBefore: "once",
  heldBefore: "once",
  budgets: "once",
} as const satisfies ReadTable<MaintenanceReads>;

/** What maintenance sets and runs beside reads and writes. */
export interface MaintenanceControl {
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
}
