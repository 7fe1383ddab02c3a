// What a storage engine is besides its Store: opened from a location, it serves, measures, checks
// and copies itself. The composition root and the commands use this; they never see SQL.
import type { Durability } from "../config.ts";
import type { Logger } from "../log.ts";
import type { BudgetStatus } from "./contract/maintenance.ts";
import type { Store, WriteOp, WriteResult } from "./contract/store.ts";

/** The data cannot be opened: corrupted, or a file of another application. */
export class DatabaseOpenError extends Error {}

/** Something the user can fix about a copy: a missing file, a target that exists, a database in use. */
export class BackupError extends Error {}

export interface OpenOptions {
  durability: Durability;
  /** Apply pending migrations (every command does; a backup copies the data as it is). */
  migrate: boolean;
  /** A streaming replica the reads may use while its lag is within `maxLagMs` (PostgreSQL). */
  readReplica?: { url: string; maxLagMs: number } | null;
  /** A file holding only the password, for a PostgreSQL URL without one (--db-password-file). */
  passwordFile?: string | null;
  /** Told what the user should know but does not stop the open (a password file ignored). */
  warn?: (text: string) => void;
  /**
   * Rollup labels one generation of the SQLite engine's dictionary holds (common/labels.ts); the
   * others are looked up in the table when met again. For a bulk writer (seed), whose dictionary
   * would grow with every distinct failure it writes; unset, every label met is held, as reads of a
   * year's failures need them at once. PostgreSQL holds every label either way.
   */
  labelLimit?: number;
  /**
   * A bulk writer (seed) whose records all lie in the past: the SQLite engine counts them in hour
   * and day cells only and sums each month from its day cells once the load has passed it (the
   * rest at the next fold), instead of rewriting each month cell every batch. PostgreSQL's deltas
   * fold rewrites them once per fold either way.
   */
  deferMonths?: boolean;
}

/** The engine's worker entry points: checkpoints, and reads off the thread that acknowledges reports. */
export interface Workers {
  checkpointer: URL;
  scanner: URL;
}

/** What serving needs of the engine besides the store: background work and the commit it wraps. */
interface ServeOptions {
  log: Logger;
  /** Worker entry points, resolved by the entry module (only its URL means something in the binary). */
  workers: Workers;
  /** Longest one read of executions (a listing, one chunk of a stream) may take, in ms; 0 = no limit. */
  readBudgetMs: number;
  /** Called with each wait of the writer for the engine's background work (metrics). */
  onHold?: (seconds: number) => void;
}

export interface Serving {
  /** Writes one batch in one transaction (the group-commit writer's commit). */
  commit(ops: readonly WriteOp[]): WriteResult[] | Promise<WriteResult[]>;
  /** After the last write: background work ends, and the data is left tidy on disk. */
  stop(): Promise<void>;
}

export interface BackupResult {
  path: string;
  bytes: number;
  installs: number;
}

export interface RestoreResult extends BackupResult {
  from: string;
  /** Migrations applied on top of the backup (an older backup gets the current schema). */
  migrationsApplied: number;
  /** Things the user should know: e.g. the old database could not be checked for other users. */
  warnings: string[];
}

/** What health checks and /metrics say about storage (GET /healthz `storage`). */
export interface StorageHealth {
  /** False once the engine refuses writes for good: its files were replaced or removed under it. */
  writable: boolean;
  /** What is wrong, one sentence each; empty when nothing is known to be. */
  problems: string[];
  /** The engine's own check of its files since start (SQLite: quick_check, in the background); null until one ran. */
  integrity: { ok: boolean; checkedAt: number; ms: number; problems: string[] } | null;
  /** Null when they could not be read (damage). */
  budgets: BudgetStatus | null;
  /** Which database this node uses (passwords left out), and where its reads go. */
  database: {
    engine: "sqlite" | "postgres";
    location: string;
    /** Null without a replica. `lagS` is null while it cannot be measured (the replica does not answer). */
    replica: { location: string; lagS: number | null; readsFrom: "replica" | "primary"; problem: string | null } | null;
  };
}

export interface Engine {
  readonly store: Store;
  /** Where the data is, as the user gave it. */
  readonly location: string;
  serve(opts: ServeOptions): Serving;
  /** Bytes on disk, per file. */
  sizes(): Promise<{ file: string; bytes: number }[]>;
  /**
   * The engine's own integrity check: ["ok"] when sound, else what is damaged (never throws).
   * "full" (the default) is thorough; "quick" skips what is slow (SQLite: index-to-table matching).
   */
  checkIntegrity(kind?: "quick" | "full"): Promise<string[]>;
  /** Files, damage seen, the background integrity check and the budgets (cheap: for every health check). */
  health(): Promise<StorageHealth>;
  close(): Promise<void>;
}
