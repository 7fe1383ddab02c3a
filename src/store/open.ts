// Opens the engine a database location names: a postgres:// (or postgresql://) URL is a
// PostgreSQL database, anything else an SQLite file.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Durability } from "../config.ts";
import { BackupError, DatabaseOpenError, type BackupResult, type Engine, type OpenOptions, type RestoreResult } from "./engine.ts";
import { backupFile, databaseInUse, restoreDatabase } from "./sqlite/backup.ts";
import { openSqliteEngine } from "./sqlite/engine.ts";
import { openPostgresEngine } from "./postgres/engine.ts";
import { redacted, urlParts } from "./postgres/database.ts";

/** No database where one was expected: a command that only reads never creates one. */
export class DatabaseMissingError extends Error {}

const IN_MEMORY = ":memory:";

/** A PostgreSQL database is a server's: whether it exists is known when it is opened. */
const isServerUrl = (location: string): boolean => /^postgres(ql)?:\/\//i.test(location);

/** The location as messages and logs show it: a server URL without its password. */
export const displayLocation = (location: string): string => (isServerUrl(location) ? redacted(location) : location);

/**
 * The same database under the same name on every run, as a copy's target remembers its source: a
 * file's absolute path, a server URL without password or parameters.
 */
export function locationKey(location: string): string {
  if (!isServerUrl(location)) return location === IN_MEMORY ? location : resolve(location);
  const p = urlParts(location);
  return p ? `postgres://${p.user ? `${p.user}@` : ""}${p.hosts}${p.rest.replace(/[?#].*$/s, "")}` : redacted(location);
}

export const databaseExists = (location: string): boolean => location === IN_MEMORY || isServerUrl(location) || existsSync(location);

/** Opens the data at `location`; without `create`, a missing database is an error, not a new one. */
export async function openEngine(location: string, opts: OpenOptions & { create: boolean }): Promise<Engine> {
  if (!opts.create && !databaseExists(location)) throw new DatabaseMissingError(`no database at ${location}`);
  if (opts.readReplica && !isServerUrl(location)) {
    throw new DatabaseOpenError(`--read-db names a PostgreSQL replica, but --db ${location} is an SQLite file; give --db the primary's postgres:// URL, or leave --read-db unset`);
  }
  return isServerUrl(location) ? openPostgresEngine(location, opts) : openSqliteEngine(location, opts);
}

/**
 * Whether another process (a running server) has the database open; `unchecked` says why it
 * could not tell. A PostgreSQL database is made for many: nodes may run beside any command.
 */
export const engineInUse = (location: string): { inUse: boolean; unchecked: string | null } =>
  isServerUrl(location) ? { inUse: false, unchecked: "a PostgreSQL database is shared by design" } : databaseInUse(location);

/** Backups and restores of a PostgreSQL database are its server's: the tools and their one line. */
function serverBackups(what: "backup" | "restore"): never {
  throw new BackupError(
    what === "backup"
      ? `${what} copies an SQLite file; a PostgreSQL database is backed up by its server: pg_dump -Fc -d '<the --db URL>' -f installstats.dump`
      : `${what} replaces an SQLite file; a PostgreSQL database is restored by its server: pg_restore --clean -d '<the --db URL>' installstats.dump`,
  );
}

/** Replaces the data at `location` with a checked backup, migrated to the current schema. */
export function restoreEngine(backup: string, location: string, opts: { force: boolean; durability: Durability }): RestoreResult {
  if (isServerUrl(location)) serverBackups("restore");
  return restoreDatabase(backup, location, opts);
}

/** A consistent snapshot of the data at `location` written to `target`, also while a server writes. */
export function backupEngine(location: string, target: string, opts: { force: boolean; durability: Durability }): BackupResult {
  if (isServerUrl(location)) serverBackups("backup");
  if (!databaseExists(location)) throw new DatabaseMissingError(`no database at ${location}`);
  return backupFile(location, target, opts);
}
