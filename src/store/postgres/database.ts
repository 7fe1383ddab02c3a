// Connects to a PostgreSQL database and applies pending migrations, once however many nodes
// start together (an advisory lock around the migrator).
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import postgres, { type Sql } from "postgres";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import * as schema from "./schema.ts";
import { DatabaseOpenError, type OpenOptions } from "../engine.ts";

export type PgDb = PostgresJsDatabase<typeof schema>;

/** The advisory lock key nodes take while migrating ("inst" as in the SQLite header). */
const MIGRATION_LOCK = 0x696e7374;

/** Inside the compiled binary the migrations are an embedded asset; in development, beside the sources. */
function migrationsFolder(): string {
  const embedded = "/$bunfs/root/drizzle/postgres";
  return existsSync(`${embedded}/meta/_journal.json`) ? embedded : fileURLToPath(new URL("../../../drizzle/postgres", import.meta.url));
}

/** The location as it may be shown: the password never is. */
export function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unreadable URL)";
  }
}

/** One line for a failed connection: the cause and what to check. */
function connectFailure(url: string, e: unknown): DatabaseOpenError {
  const code = (e as { code?: string }).code;
  const where = redacted(url);
  const why =
    code === "ECONNREFUSED" ? "connection refused (is the server running, and listening there?)"
    : code === "28P01" || code === "28000" ? "authentication failed (check the user, and the password in the URL or in PGPASSWORD)"
    : code === "3D000" ? "the database does not exist (create it: createdb)"
    : (e as Error).message;
  return new DatabaseOpenError(`cannot connect to PostgreSQL at ${where}: ${why}`);
}

/**
 * A database migrated by a newer release has tables this binary does not know: refuse it with the
 * way back instead of failing on the first query (as the SQLite engine does).
 */
async function refuseNewerSchema(sql: Sql, url: string): Promise<void> {
  const [table] = await sql<{ found: boolean }[]>`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS found`;
  if (!table?.found) return;
  const [row] = await sql<{ newest: string | null }[]>`SELECT max(created_at)::text AS newest FROM drizzle.__drizzle_migrations`;
  const journal = JSON.parse(readFileSync(`${migrationsFolder()}/meta/_journal.json`, "utf8")) as { entries: { when: number }[] };
  const known = Math.max(...journal.entries.map((e) => e.when));
  const newest = row?.newest === null || row?.newest === undefined ? null : Number(row.newest);
  if (newest === null || newest <= known) return;
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  throw new DatabaseOpenError(
    `${redacted(url)} was upgraded by a newer installstats (schema of ${day(newest)}; this one knows schemas up to ${day(known)}); run that newer version, or restore a backup taken before the upgrade`,
  );
}

export async function openPostgres(url: string, opts: OpenOptions): Promise<{ sql: Sql; db: PgDb }> {
  const sql = postgres(url, {
    max: 8,
    onnotice: () => {},
    connect_timeout: 10,
    // int8 as numbers: every stored integer (milliseconds, counts, ids) is far below 2^53.
    types: { bigint: { to: 20, from: [20], parse: (x: string) => Number(x), serialize: (x: number) => String(x) } },
  });
  try {
    await sql`SELECT 1`;
  } catch (e) {
    await sql.end({ timeout: 1 });
    throw connectFailure(url, e);
  }
  try {
    await refuseNewerSchema(sql, url);
    if (opts.migrate) {
      // One session (a client of one connection) holds the lock and runs the migrator: nodes
      // starting together wait for it, then find nothing to do.
      const session = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
      try {
        await session`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
        await migrate(drizzle(session, { schema }), { migrationsFolder: migrationsFolder() });
      } finally {
        await session.end(); // the lock goes with the session
      }
    }
  } catch (e) {
    await sql.end({ timeout: 1 });
    if (e instanceof DatabaseOpenError) throw e;
    throw new DatabaseOpenError(`migrating ${redacted(url)} failed: ${(e as Error).message}`);
  }
  return { sql, db: drizzle(sql, { schema }) };
}
