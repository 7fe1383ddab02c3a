// Opens the engine a database location names: a postgres:// (or postgresql://) URL is a
// PostgreSQL database, anything else an SQLite file.
import { existsSync } from "node:fs";
import type { Durability } from "../config.ts";
import type { BackupResult, Engine, OpenOptions, RestoreResult } from "./engine.ts";
import { backupFile, databaseInUse, restoreDatabase } from "./sqlite/backup.ts";
import { openSqliteEngine } from "./sqlite/engine.ts";
import { openPostgresEngine } from "./postgres/engine.ts";

/** No database where one was expected: a command that only reads never creates one. */
export class DatabaseMissingError extends Error {}

const IN_MEMORY = ":memory:";

/** A PostgreSQL database is a server's: whether it exists is known when it is opened. */
const isServerUrl = (location: string): boolean => /^postgres(ql)?:\/\//i.test(location);

export const databaseExists = (location: string): boolean => location === IN_MEMORY || isServerUrl(location) || existsSync(location);

/** Opens the data at `location`; without `create`, a missing database is an error, not a new one. */
export async function openEngine(location: string, opts: OpenOptions & { create: boolean }): Promise<Engine> {
  if (!opts.create && !databaseExists(location)) throw new DatabaseMissingError(`no database at ${location}`);
  return isServerUrl(location) ? openPostgresEngine(location, opts) : openSqliteEngine(location, opts);
}

/** Whether another process (a running server) has the database open; `unchecked` says why it could not tell. */
export const engineInUse = (location: string): { inUse: boolean; unchecked: string | null } => databaseInUse(location);

/** Replaces the data at `location` with a checked backup, migrated to the current schema. */
export const restoreEngine = (backup: string, location: string, opts: { force: boolean; durability: Durability }): RestoreResult => restoreDatabase(backup, location, opts);

/** A consistent snapshot of the data at `location` written to `target`, also while a server writes. */
export function backupEngine(location: string, target: string, opts: { force: boolean; durability: Durability }): BackupResult {
  if (!databaseExists(location)) throw new DatabaseMissingError(`no database at ${location}`);
  return backupFile(location, target, opts);
}
