// Online backup and restore of the SQLite database.
//
// Backup: `VACUUM INTO` runs inside one read transaction of the connection it is given, so the
// copy is the database as of one commit (WAL: the writer keeps going meanwhile, unblocked). It is
// written to a temporary file beside the target, checked (integrity, application id), synced, and
// only then given the target's name: a half-written or broken file never carries that name.
//
// Restore: the backup is checked, copied (VACUUM INTO from a read-only connection, so a backup
// that is itself a WAL database with its -wal beside it comes out whole) to a temporary file
// beside the target, synced, and renamed over the target; the target's stale -wal/-shm go, then
// the database is opened with migrations, so an older backup comes back at the current schema.
import { Database } from "bun:sqlite";
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { Durability } from "../../config.ts";
import { BackupError, DatabaseOpenError, type BackupResult, type RestoreResult } from "../engine.ts";
import { APPLICATION_ID, openDatabase } from "./database.ts";

export interface DatabaseCheck {
  ok: boolean;
  /** Why the file is not a usable installstats database; null when ok. */
  problem: string | null;
  /** PRAGMA integrity_check lines (["ok"] when sound); [] when the check could not run. */
  integrity: string[];
  installs: number | null;
  /** Migrations recorded in the file (drizzle's journal), null when unknown. */
  migrations: number | null;
}

const hex = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, "0")}`;

/**
 * Opens `path` read-only and checks that it is a sound installstats database: it opens, it carries
 * our application id, PRAGMA integrity_check says ok, and its records can be read.
 * `quick` runs PRAGMA quick_check instead (no index cross-checks: for a copy SQLite just made
 * from a database that passed the full check).
 */
export function checkDatabaseFile(path: string, opts: { quick?: boolean } = {}): DatabaseCheck {
  const check: DatabaseCheck = { ok: false, problem: null, integrity: [], installs: null, migrations: null };
  if (!existsSync(path)) return { ...check, problem: `${path} does not exist` };
  let c: Database;
  try {
    c = new Database(path, { readonly: true });
  } catch (e) {
    return { ...check, problem: `cannot open ${path}: ${(e as Error).message}` };
  }
  try {
    const { application_id } = c.query("PRAGMA application_id").get() as { application_id: number };
    if (application_id !== APPLICATION_ID) {
      check.problem = `${path} is not an installstats database (application_id ${hex(application_id)}, expected ${hex(APPLICATION_ID)})`;
      return check;
    }
    const pragma = opts.quick ? "quick_check" : "integrity_check";
    check.integrity = (c.query(`PRAGMA ${pragma}`).all() as Record<string, string>[]).map((r) => r[pragma]!);
    if (check.integrity.length !== 1 || check.integrity[0] !== "ok") {
      check.problem = `${path} fails the integrity check: ${check.integrity.slice(0, 3).join("; ")}`;
      return check;
    }
    // Records: executions, or installs in a backup made before migration 0007 (a restore migrates it).
    const table = c.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'executions'").get()
      ? "executions"
      : "installs";
    check.installs = (c.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    const journal = c.query("SELECT count(*) AS n FROM sqlite_master WHERE name = '__drizzle_migrations'").get() as {
      n: number;
    };
    check.migrations =
      journal.n === 0 ? 0 : (c.query('SELECT count(*) AS n FROM "__drizzle_migrations"').get() as { n: number }).n;
    check.ok = true;
    return check;
  } catch (e) {
    check.problem = `${path} is not a usable installstats database: ${(e as Error).message}`;
    return check;
  } finally {
    c.close(); // statements made with query() are finalized here, so the file is really closed
  }
}

/** A temporary name beside `target` (same directory, so the final rename is atomic). */
function tempBeside(target: string, what: string): string {
  return join(
    dirname(target),
    `.${basename(target)}.${what}-${process.pid}-${Math.random().toString(36).slice(2, 8)}.tmp`,
  );
}

function fsyncPath(path: string, flags: "r" | "r+" = "r"): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } catch {
    // Directories cannot be synced on every platform; the file itself was.
  } finally {
    closeSync(fd);
  }
}

/** -wal, -shm and -journal that belong to whatever file had `path`'s name before: never to be applied to a new file. */
function removeCompanions(path: string): void {
  for (const suffix of ["-wal", "-shm", "-journal"]) rmSync(`${path}${suffix}`, { force: true });
}

/** `VACUUM INTO` a temporary file beside `target`; removed again if anything fails. */
function vacuumInto(source: Database, target: string, what: string): string {
  const temp = tempBeside(target, what);
  try {
    source.run("VACUUM INTO ?", [temp]);
    fsyncPath(temp, "r+"); // VACUUM INTO does not sync its output
    return temp;
  } catch (e) {
    rmSync(temp, { force: true });
    throw e;
  }
}

/**
 * Gives `temp` the name `target`. Without `force`, never replaces an existing file: a hard link
 * fails if the name is taken (no window between a check and the rename); file systems without
 * hard links fall back to check-then-rename.
 */
function publish(temp: string, target: string, force: boolean): void {
  if (force) {
    removeCompanions(target);
    renameSync(temp, target);
    return;
  }
  try {
    linkSync(temp, target);
    unlinkSync(temp);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || existsSync(target))
      throw new BackupError(`${target} already exists; use --force to overwrite it`);
    renameSync(temp, target);
  }
  removeCompanions(target); // leftovers of an earlier file of that name, never to be applied to this one
}

/**
 * Writes a consistent snapshot of the database behind `source` to `target`. `source` may be any
 * connection to the live database (VACUUM INTO only reads: writers go on meanwhile; the copy
 * holds one read snapshot, so the WAL cannot be checkpointed past it until the copy is done).
 * Refuses an existing target unless `force`. Throws BackupError, or Error if the copy fails its check.
 */
export function backupDatabase(source: Database, target: string, opts: { force?: boolean } = {}): BackupResult {
  const path = resolve(target);
  const own = (source.query("PRAGMA database_list").all() as { name: string; file: string }[]).find(
    (d) => d.name === "main",
  )?.file;
  if (own && resolve(own) === path) throw new BackupError(`${target} is the database itself; choose another file`);
  if (!opts.force && existsSync(path)) throw new BackupError(`${target} already exists; use --force to overwrite it`);
  if (!existsSync(dirname(path))) throw new BackupError(`directory ${dirname(path)} does not exist`);
  const temp = vacuumInto(source, path, "backup");
  try {
    const check = checkDatabaseFile(temp);
    if (!check.ok) throw new Error(`the backup failed its check: ${check.problem}`);
    publish(temp, path, opts.force ?? false);
    fsyncPath(dirname(path));
    return { path, bytes: statSync(path).size, installs: check.installs ?? 0 };
  } finally {
    rmSync(temp, { force: true });
  }
}

/** backupDatabase over a connection of its own, without migrations: the copy is the database as it is (restore migrates). */
export function backupFile(
  path: string,
  target: string,
  opts: { force: boolean; durability: Durability },
): BackupResult {
  const { sqlite } = openDatabase(path, { durability: opts.durability, migrate: false });
  try {
    return backupDatabase(sqlite, target, opts);
  } finally {
    sqlite.close();
  }
}

/**
 * Whether another connection (a running server, another command) has the database open.
 *
 * Every connection to a WAL database holds a SHARED lock on the database file from its first read
 * until it closes (SQLite keeps it so that nobody takes the database out of WAL mode under it).
 * With locking_mode=EXCLUSIVE, opening the WAL asks for an EXCLUSIVE lock on the file, which
 * fails at once (busy_timeout 0) while any such connection exists, in this process or another.
 * A connection opened but never used holds no lock; serve reads at start-up, so it always does.
 * `unchecked` says why the question could not be answered (the file is not a readable database).
 */
export function databaseInUse(path: string): { inUse: boolean; unchecked: string | null } {
  let c: Database;
  try {
    c = new Database(path, { readwrite: true, create: false });
  } catch (e) {
    return { inUse: false, unchecked: (e as Error).message };
  }
  try {
    c.run("PRAGMA busy_timeout = 0");
    c.run("PRAGMA locking_mode = EXCLUSIVE");
    c.run("BEGIN EXCLUSIVE");
    c.run("COMMIT");
    return { inUse: false, unchecked: null };
  } catch (e) {
    const code = (e as { code?: string }).code ?? "";
    if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return { inUse: true, unchecked: null };
    return { inUse: false, unchecked: (e as Error).message };
  } finally {
    c.close(); // only run() was used: nothing left unfinalized, the lock goes with the connection
  }
}

const SQLITE_MAGIC = "SQLite format 3\u0000";

/** Whether `path` may be replaced by a restore: empty, or an SQLite file with our application id (read from the header, so a damaged database still qualifies). */
function replaceable(path: string): string | null {
  const size = statSync(path).size;
  if (size === 0) return null;
  const header = Buffer.alloc(100);
  const fd = openSync(path, "r");
  let n: number;
  try {
    n = readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (n < 100 || header.toString("latin1", 0, 16) !== SQLITE_MAGIC)
    return `${path} is not an SQLite database; refusing to replace it (move it away first)`;
  const appId = header.readUInt32BE(68);
  if (appId !== APPLICATION_ID)
    return `${path} is an SQLite database of another application (application_id ${hex(appId)}); refusing to replace it`;
  return null;
}

/**
 * Replaces the database at `target` with the backup at `backup`.
 * - The backup must be a sound installstats database (else DatabaseOpenError).
 * - An existing target is replaced only with `force`, only if it is ours (application id in its
 *   header), and only if no other connection has it open (see databaseInUse).
 * - The copy goes to a temporary file beside the target and is renamed over it (atomic); stale
 *   -wal/-shm/-journal of the target are removed; then migrations run.
 * The in-use check happens right before the rename, after the (slow) copy, so the window in which
 * a server starting up could still open the old file is a few milliseconds.
 */
export function restoreDatabase(
  backup: string,
  target: string,
  opts: { force?: boolean; durability: Durability },
): RestoreResult {
  const from = resolve(backup);
  const path = resolve(target);
  if (!existsSync(from)) throw new BackupError(`${backup} does not exist`);
  if (statSync(from).isDirectory()) throw new BackupError(`${backup} is a directory`);
  if (from === path) throw new BackupError(`${backup} is the database itself`);
  const check = checkDatabaseFile(from);
  if (!check.ok) throw new DatabaseOpenError(`${check.problem}; not restoring`);
  const exists = existsSync(path);
  if (exists) {
    if (!opts.force) throw new BackupError(`${target} already exists; use --force to replace it with the backup`);
    const refusal = replaceable(path);
    if (refusal) throw new DatabaseOpenError(refusal);
  } else if (!existsSync(dirname(path))) {
    throw new BackupError(`directory ${dirname(path)} does not exist`);
  }

  const warnings: string[] = [];
  const reader = new Database(from, { readonly: true });
  let temp: string;
  try {
    temp = vacuumInto(reader, path, "restore");
  } finally {
    reader.close();
  }
  try {
    const copy = checkDatabaseFile(temp, { quick: true });
    if (!copy.ok) throw new Error(`the copy of the backup failed its check: ${copy.problem}`);
    if (exists) {
      const use = databaseInUse(path);
      if (use.inUse)
        throw new BackupError(`${target} is in use (a running installstats server?); stop it, then restore`);
      if (use.unchecked)
        warnings.push(`could not check whether ${target} is in use (${use.unchecked}); it was replaced anyway`);
    }
    // The old database's -wal/-shm go first, so the new file never sits beside them.
    removeCompanions(path);
    renameSync(temp, path);
    fsyncPath(dirname(path));
  } finally {
    rmSync(temp, { force: true });
  }

  const { sqlite } = openDatabase(path, { durability: opts.durability, migrate: true });
  try {
    const migrations = (sqlite.query('SELECT count(*) AS n FROM "__drizzle_migrations"').get() as { n: number }).n;
    const installs = (sqlite.query("SELECT count(*) AS n FROM executions").get() as { n: number }).n;
    return {
      path,
      from,
      bytes: statSync(path).size,
      installs,
      migrationsApplied: migrations - (check.migrations ?? 0),
      warnings,
    };
  } finally {
    sqlite.close();
  }
}
