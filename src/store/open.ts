// Opens the engine a database location names (store/location.ts decides which), and answers what
// the commands ask of a location before and beside opening it.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Durability } from "../config.ts";
import {
  BackupError,
  DatabaseOpenError,
  type BackupResult,
  type Engine,
  type OpenOptions,
  type RestoreResult,
} from "./engine.ts";
import { IN_MEMORY, locate } from "./location.ts";
import { backupFile, databaseInUse, restoreDatabase } from "./sqlite/backup.ts";
import { openSqliteEngine } from "./sqlite/engine.ts";
import { checkSqliteLocation, createdBy as createdBySqlite } from "./sqlite/location-checks.ts";
import { lockForServing as lockSqliteForServing, type ServeLock } from "./sqlite/serve-lock.ts";
import { openPostgresEngine } from "./postgres/engine.ts";
import { redacted, urlParts } from "./postgres/database.ts";

/** No database where one was expected: a command that only reads never creates one. */
export class DatabaseMissingError extends Error {}

/** The location as messages and logs show it: a server URL without its password. */
export function displayLocation(text: string): string {
  const where = locate(text);
  return where.engine === "postgres" ? redacted(where.url) : where.path;
}

/**
 * The same database under the same name on every run, as a copy's target remembers its source: a
 * file's absolute path, a server URL without password or parameters.
 */
export function locationKey(text: string): string {
  const where = locate(text);
  if (where.engine === "sqlite") return where.path === IN_MEMORY ? where.path : resolve(where.path);
  const p = urlParts(where.url);
  return p
    ? `postgres://${p.user ? `${p.user}@` : ""}${p.hosts}${p.rest.replace(/[?#].*$/s, "")}`
    : redacted(where.url);
}

/** A PostgreSQL database is a server's: whether it exists is known when it is opened. */
export function databaseExists(text: string): boolean {
  const where = locate(text);
  return where.engine === "postgres" || where.path === IN_MEMORY || existsSync(where.path);
}

/**
 * Before opening: throws a DatabaseOpenError naming what stands in the way of an SQLite file (its
 * directory missing, no permission, a read-only file system), which SQLite would answer with
 * "unable to open database file". A server's database is checked when it is opened.
 */
export function checkLocation(text: string, opts: { create: boolean }): void {
  const where = locate(text);
  if (where.engine === "sqlite") checkSqliteLocation(where.path, opts);
}

/** Call before opening: `undo()` removes the files of an SQLite database that did not exist before (nothing on a server). */
export function createdBy(text: string): { undo(): void } {
  const where = locate(text);
  return where.engine === "sqlite" ? createdBySqlite(where.path) : { undo() {} };
}

/** serve's lock: one server per SQLite file (sqlite/serve-lock.ts); a PostgreSQL database is made for many nodes. */
export function lockForServing(text: string): Promise<ServeLock> {
  const where = locate(text);
  return where.engine === "sqlite"
    ? lockSqliteForServing(where.path)
    : Promise.resolve({ warning: null, release() {} });
}

/** Opens the data at `location`; without `create`, a missing database is an error, not a new one. */
export async function openEngine(location: string, opts: OpenOptions & { create: boolean }): Promise<Engine> {
  const where = locate(location);
  if (!opts.create && !databaseExists(location)) throw new DatabaseMissingError(`no database at ${location}`);
  if (opts.readReplica && where.engine !== "postgres") {
    throw new DatabaseOpenError(
      `--read-db names a PostgreSQL replica, but --db ${location} is an SQLite file; give --db the primary's postgres:// URL, or leave --read-db unset`,
    );
  }
  if (opts.readReplica && locate(opts.readReplica.url).engine !== "postgres") {
    throw new DatabaseOpenError(
      `--read-db ${opts.readReplica.url} is not a postgres:// URL; give it the replica's URL, or leave --read-db unset`,
    );
  }
  return where.engine === "postgres" ? openPostgresEngine(where.url, opts) : openSqliteEngine(where.path, opts);
}

/**
 * Whether another process (a running server) has the database open; `unchecked` says why it
 * could not tell. A PostgreSQL database is made for many: nodes may run beside any command.
 */
export function engineInUse(text: string): { inUse: boolean; unchecked: string | null } {
  const where = locate(text);
  return where.engine === "postgres"
    ? { inUse: false, unchecked: "a PostgreSQL database is shared by design" }
    : databaseInUse(where.path);
}

/** Backups and restores of a PostgreSQL database are its server's: the tools and their one line. */
function serverBackups(what: "backup" | "restore"): never {
  throw new BackupError(
    what === "backup"
      ? `${what} copies an SQLite file; a PostgreSQL database is backed up by its server: pg_dump -Fc -d '<the --db URL>' -f installstats.dump`
      : `${what} replaces an SQLite file; a PostgreSQL database is restored by its server: pg_restore --clean -d '<the --db URL>' installstats.dump`,
  );
}

/** Replaces the data at `location` with a checked backup, migrated to the current schema. */
export function restoreEngine(
  backup: string,
  location: string,
  opts: { force: boolean; durability: Durability },
): RestoreResult {
  const where = locate(location);
  if (where.engine === "postgres") serverBackups("restore");
  return restoreDatabase(backup, where.path, opts);
}

/** A consistent snapshot of the data at `location` written to `target`, also while a server writes. */
export function backupEngine(
  location: string,
  target: string,
  opts: { force: boolean; durability: Durability },
): BackupResult {
  const where = locate(location);
  if (where.engine === "postgres") serverBackups("backup");
  if (!databaseExists(location)) throw new DatabaseMissingError(`no database at ${location}`);
  return backupFile(where.path, target, opts);
}
