// Connects to a PostgreSQL database and applies pending migrations, once however many nodes
// start together (an advisory lock around the migrator).
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import postgres, { type Sql } from "postgres";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { readMigrationFiles } from "drizzle-orm/migrator";
import * as schema from "./schema.ts";
import { DatabaseOpenError, type OpenOptions } from "../engine.ts";
import { passwordFileProblem, passwordFor, type Target } from "./passwords.ts";
import { transaction } from "./transaction.ts";

export type PgDb = PostgresJsDatabase<typeof schema>;

/** The advisory lock key nodes take while migrating ("inst" as in the SQLite header). */
const MIGRATION_LOCK = 0x696e7374;

/** Inside the compiled binary the migrations are an embedded asset; in development, beside the sources. */
function migrationsFolder(): string {
  const embedded = "/$bunfs/root/drizzle/postgres";
  return existsSync(`${embedded}/meta/_journal.json`)
    ? embedded
    : fileURLToPath(new URL("../../../drizzle/postgres", import.meta.url));
}

/**
 * The parts of a postgres:// URL, with any number of hosts ("h1:5432,h2:5432", which URL parsers
 * refuse): the user information is what precedes the last @ of the authority.
 */
export function urlParts(
  url: string,
): { scheme: string; user: string; password: string | null; hosts: string; rest: string } | null {
  const m = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/is.exec(url);
  if (!m) return null;
  const authority = m[2]!;
  const at = authority.lastIndexOf("@");
  const userinfo = at < 0 ? null : authority.slice(0, at);
  const colon = userinfo?.indexOf(":") ?? -1;
  return {
    scheme: m[1]!,
    user: userinfo === null ? "" : colon < 0 ? userinfo : userinfo.slice(0, colon),
    password: userinfo === null || colon < 0 ? null : userinfo.slice(colon + 1),
    hosts: authority.slice(at + 1),
    rest: m[3]!,
  };
}

/** The location as it may be shown: the password never is. */
export function redacted(url: string): string {
  const p = urlParts(url);
  if (!p) return "postgres://(unreadable URL)";
  const userinfo = p.password ? `${p.user}:***@` : p.user ? `${p.user}@` : "";
  return `${p.scheme}${userinfo}${p.hosts}${p.rest}`;
}

/** Where a client connects, as postgres.js resolved it (PGHOST, PGUSER, ... filled in): for messages and the password file. */
function targetOf(sql: Sql): Target {
  const o = sql.options as unknown as { host: string[]; port: number[]; database: string; user: string };
  return { hosts: o.host, ports: o.port, database: o.database, user: o.user };
}

/** One line for a failed connection: the cause and what to check. */
/**
 * `message` with the fix when `e` says a prepared statement is missing: a pooler in transaction
 * mode hands each transaction another server connection, which does not know the statements
 * postgres.js prepared on the last one.
 */
export function withPoolerHint(e: unknown, message: string): string {
  return (e as { code?: string }).code === "26000"
    ? `${message} (behind a pooler in transaction mode add ?prepare=false to the URL: docs/postgresql.md)`
    : message;
}

function connectFailure(url: string, sql: Sql, passwordSource: string, e: unknown): DatabaseOpenError {
  const code = (e as { code?: string }).code;
  const t = targetOf(sql);
  const where = `${redacted(url)}${urlParts(url)?.hosts ? "" : ` (${t.user}@${t.hosts.map((h, i) => `${h}:${t.ports[i] ?? t.ports[0]}`).join(",")}/${t.database})`}`;
  const why =
    code === "ECONNREFUSED"
      ? "connection refused (is the server running, and listening there?)"
      : code === "28P01" || code === "28000"
        ? `authentication failed for user "${t.user}" (the password came from ${passwordSource}; passwords come from the URL, --db-password-file, PGPASSWORD or ~/.pgpass)`
        : code === "3D000"
          ? "the database does not exist (create it: createdb)"
          : (e as Error).message;
  return new DatabaseOpenError(`cannot connect to PostgreSQL at ${where}: ${why}`);
}

/**
 * A postgres.js client of `url`: int8 as numbers, notices ignored, and the password, when the URL
 * has none, from passwords.ts (asked when the server wants one).
 */
function client(url: string, opts: OpenOptions, max: number): { sql: Sql; passwordSource: () => string } {
  const inUrl = urlParts(url)?.password;
  const password = inUrl
    ? null
    : passwordFor(() => targetOf(sql), {
        file: opts.passwordFile ?? null,
        env: process.env,
        warn: opts.warn ?? (() => {}),
      });
  const sql: Sql = postgres(url, {
    max,
    onnotice: () => {},
    connect_timeout: 10,
    // int8 as numbers: every stored integer (milliseconds, counts, ids) is far below 2^53.
    types: { bigint: { to: 20, from: [20], parse: (x: string) => Number(x), serialize: (x: number) => String(x) } },
    ...(password ? { pass: password.pass } : {}),
    // postgres.js 3.4 judges read-write by default_transaction_read_only alone, which a hot standby
    // leaves off: it would connect to a standby during a failover. A primary is what is meant.
    ...(/[?&]target_session_attrs=read-write(&|$)/.test(url) ? { target_session_attrs: "primary" as const } : {}),
  });
  return { sql, passwordSource: () => (inUrl ? "the URL" : password!.source()) };
}

/**
 * A database migrated by a newer release has tables this binary does not know: refuse it with the
 * way back instead of failing on the first query (as the SQLite engine does).
 */
async function refuseNewerSchema(sql: Sql, url: string): Promise<void> {
  const [table] = await sql<
    { found: boolean }[]
  >`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS found`;
  if (!table?.found) return;
  const [row] = await sql<
    { newest: string | null }[]
  >`SELECT max(created_at)::text AS newest FROM drizzle.__drizzle_migrations`;
  const journal = JSON.parse(readFileSync(`${migrationsFolder()}/meta/_journal.json`, "utf8")) as {
    entries: { when: number }[];
  };
  const known = Math.max(...journal.entries.map((e) => e.when));
  const newest = row?.newest === null || row?.newest === undefined ? null : Number(row.newest);
  if (newest === null || newest <= known) return;
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  throw new DatabaseOpenError(
    `${redacted(url)} was upgraded by a newer installstats (schema of ${day(newest)}; this one knows schemas up to ${day(known)}); run that newer version, or restore a backup taken before the upgrade`,
  );
}

/**
 * Applies the migrations drizzle-kit generated that the database lacks, as drizzle's migrator does
 * (same files, same `drizzle.__drizzle_migrations` table), but in one transaction that first takes
 * a transaction-level advisory lock: nodes starting together wait for it, then find nothing to do,
 * directly or through a pooler in transaction mode (where a session-level lock is held by whichever
 * server connection ran it, not by the node: docs/decisions/2026-11-26-pgbouncer.md).
 */
async function migrate(sql: Sql): Promise<void> {
  await transaction(sql, async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`CREATE SCHEMA IF NOT EXISTS drizzle`;
    await tx`CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`;
    const [last] = await tx<
      { at: string }[]
    >`SELECT created_at::text AS at FROM drizzle.__drizzle_migrations ORDER BY created_at DESC LIMIT 1`;
    for (const m of readMigrationFiles({ migrationsFolder: migrationsFolder() })) {
      if (last && Number(last.at) >= m.folderMillis) continue;
      for (const statement of m.sql) await tx.unsafe(statement);
      await tx`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES (${m.hash}, ${m.folderMillis})`;
    }
  });
}

export async function openPostgres(url: string, opts: OpenOptions): Promise<{ sql: Sql; db: PgDb }> {
  if (opts.passwordFile && !urlParts(url)?.password) {
    const problem = passwordFileProblem(opts.passwordFile);
    if (problem) throw new DatabaseOpenError(problem);
  }
  const { sql, passwordSource } = client(url, opts, 8);
  try {
    await sql`SELECT 1`;
  } catch (e) {
    await sql.end({ timeout: 1 });
    throw connectFailure(url, sql, passwordSource(), e);
  }
  try {
    await refuseNewerSchema(sql, url);
    if (opts.migrate) await migrate(sql);
  } catch (e) {
    await sql.end({ timeout: 1 });
    if (e instanceof DatabaseOpenError) throw e;
    throw new DatabaseOpenError(withPoolerHint(e, `migrating ${redacted(url)} failed: ${(e as Error).message}`));
  }
  return { sql, db: drizzle(sql, { schema }) };
}
