// Opens the SQLite database with a deliberate setup and applies pending migrations.
import { Database } from "bun:sqlite";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import * as schema from "./schema.ts";
import { DatabaseOpenError, type OpenOptions } from "../engine.ts";

export type Db = BunSQLiteDatabase<typeof schema>;

/** Written into the file header so a foreign SQLite file is never mistaken for ours ("inst"). */
export const APPLICATION_ID = 0x696e7374;

/** Inside the compiled binary the migrations are an embedded asset; in development, beside the sources. */
export function migrationsFolder(): string {
  const embedded = "/$bunfs/root/drizzle/sqlite";
  return existsSync(`${embedded}/meta/_journal.json`)
    ? embedded
    : fileURLToPath(new URL("../../../drizzle/sqlite", import.meta.url));
}

/**
 * Checkpoint every 4000 WAL pages (16 MB) instead of SQLite's 1000: index pages written again and
 * again under load reach the database file once per checkpoint (measured: 10-15% less CPU per
 * report at 64 connections). `serve` moves checkpoints to a thread of their own instead
 * (checkpoint-thread.ts); other commands keep SQLite's automatic ones.
 */
export const AUTO_CHECKPOINT_PAGES = 4000;

function checkOwnership(sqlite: Database, path: string): void {
  const { application_id } = sqlite.query("PRAGMA application_id").get() as { application_id: number };
  const { n } = sqlite.query("SELECT count(*) AS n FROM sqlite_master").get() as { n: number };
  if (application_id === APPLICATION_ID) return;
  if (n > 0 || application_id !== 0) {
    throw new DatabaseOpenError(`${path} is an SQLite database of another application; refusing to touch it`);
  }
  sqlite.run(`PRAGMA application_id = ${APPLICATION_ID}`);
}

/**
 * A database migrated by a newer release has tables this binary does not know (and may lack ones
 * it expects): after a downgrade, refuse it with the way back instead of failing on the first
 * query. Drizzle records each applied migration's journal time in `__drizzle_migrations`.
 */
function refuseNewerSchema(sqlite: Database, path: string): void {
  const table = sqlite
    .query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get();
  if (!table) return;
  const { newest } = sqlite.query("SELECT max(created_at) AS newest FROM __drizzle_migrations").get() as {
    newest: number | null;
  };
  const journal = JSON.parse(readFileSync(`${migrationsFolder()}/meta/_journal.json`, "utf8")) as {
    entries: { when: number; tag: string }[];
  };
  const known = Math.max(...journal.entries.map((e) => e.when));
  if (newest === null || newest <= known) return;
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  throw new DatabaseOpenError(
    `${path} was upgraded by a newer installstats (schema of ${day(newest)}; this one knows schemas up to ${day(known)}); run that newer version, or restore a backup taken before the upgrade`,
  );
}

export function openDatabase(path: string, opts: OpenOptions): { sqlite: Database; db: Db } {
  let sqlite: Database;
  try {
    sqlite = new Database(path, { create: true, strict: true });
  } catch (e) {
    throw new DatabaseOpenError(`cannot open ${path}: ${(e as Error).message}`);
  }
  try {
    // WAL: readers never block the writer. synchronous=FULL syncs the WAL at every commit, so an
    // acknowledged report survives power loss; NORMAL survives process crashes only (config.durability).
    sqlite.run("PRAGMA busy_timeout = 5000");
    // Before anything that writes (even switching to WAL rewrites the header).
    checkOwnership(sqlite, path);
    sqlite.run("PRAGMA journal_mode = WAL");
    sqlite.run(`PRAGMA synchronous = ${opts.durability === "full" ? "FULL" : "NORMAL"}`);
    sqlite.run("PRAGMA foreign_keys = ON");
    sqlite.run("PRAGMA temp_store = MEMORY");
    // 2 MB (SQLite's default), on purpose: random primary-key inserts miss any cache smaller than
    // the index anyway (2 MB to 200 MB gave the same insert cost), reads keep rollup cells parsed
    // in memory, and more cache only raised the server's peak RSS (16 -> 2 MB: about -15 MB at
    // 256 connections) with no change in the read benchmark.
    sqlite.run("PRAGMA cache_size = -2000");
    sqlite.run(`PRAGMA wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
    // Keep the WAL from growing without bound after a burst.
    sqlite.run("PRAGMA journal_size_limit = 67108864");
  } catch (e) {
    sqlite.close();
    if (e instanceof DatabaseOpenError) throw e;
    throw new DatabaseOpenError(`${path} is not a usable SQLite database: ${(e as Error).message}`);
  }
  try {
    refuseNewerSchema(sqlite, path);
  } catch (e) {
    sqlite.close();
    throw e;
  }
  const db = drizzle(sqlite, { schema });
  if (opts.migrate) {
    try {
      migrate(db, { migrationsFolder: migrationsFolder() });
    } catch (e) {
      sqlite.close();
      throw new DatabaseOpenError(`migrating ${path} failed: ${(e as Error).message}`);
    }
  }
  return { sqlite, db };
}
