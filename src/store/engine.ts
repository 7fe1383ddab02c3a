// What a storage engine is besides its Store: opened from a location, it serves, measures, checks
// and copies itself. The composition root and the commands use this; they never see SQL.
import type { Durability } from "../config.ts";
import type { Logger } from "../log.ts";
import type { Store, WriteOp, WriteResult } from "./contract.ts";

/** The data cannot be opened: corrupted, or a file of another application. */
export class DatabaseOpenError extends Error {}

/** Something the user can fix about a copy: a missing file, a target that exists, a database in use. */
export class BackupError extends Error {}

export interface OpenOptions {
  durability: Durability;
  /** Apply pending migrations (every command does; a backup copies the data as it is). */
  migrate: boolean;
}

/** What serving needs of the engine besides the store: background work and the commit it wraps. */
interface ServeOptions {
  log: Logger;
  /** Worker entry points, resolved by the entry module (only its URL means something in the binary). */
  workers: { checkpointer: URL };
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

export interface Engine {
  readonly store: Store;
  /** Where the data is, as the user gave it. */
  readonly location: string;
  serve(opts: ServeOptions): Serving;
  /** Bytes on disk, per file. */
  sizes(): Promise<{ file: string; bytes: number }[]>;
  /** The engine's own integrity check: ["ok"] when sound, else what is damaged. */
  checkIntegrity(): Promise<string[]>;
  close(): Promise<void>;
}
