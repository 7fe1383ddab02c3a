// PostgreSQL for the benchmark scripts: a throwaway server on loopback (or one given by URL), a
// fresh database per run, the CPU the server's processes use, every acknowledged id read back,
// and what each table and index weighs.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import postgres from "postgres";
import { startPostgres } from "../../test/helpers/postgres.ts";
import type { Verification } from "./lib.ts";

/**
 * Settings of a server sized for tens of GB on this machine (the defaults suit a small one):
 * memory for caches and index builds, checkpoints far enough apart that a run is not measured
 * against one. fsync stays on, and synchronous_commit is the default (on): a 2xx after COMMIT
 * means on disk, as with SQLite's durability full.
 */
export const BENCH_PG_SETTINGS = {
  shared_buffers: "1GB",
  maintenance_work_mem: "512MB",
  work_mem: "32MB",
  max_wal_size: "16GB",
  checkpoint_timeout: "30min",
  effective_cache_size: "8GB",
  random_page_cost: "1.1",
  max_connections: "200",
};

export interface PgTarget {
  /** The admin URL (database postgres); runs get databases of their own beside it. */
  url: string;
  /** The postmaster's pid when the server runs on this machine (its CPU is then measured). */
  postmasterPid: number | null;
  /** Whether the harness started it (and removes it). */
  throwaway: boolean;
  /** Stops a throwaway server and removes its files; nothing for a given one. */
  stop(): Promise<void>;
}

/** The server at `url`, or a throwaway one started now with the bench settings. */
export async function pgTarget(
  url: string | undefined,
  settings: Record<string, string> = BENCH_PG_SETTINGS,
): Promise<PgTarget> {
  if (url === undefined) {
    const server = await startPostgres(settings);
    const pid = Number(readFileSync(`${server.dir}/postmaster.pid`, "utf8").split("\n")[0]);
    return {
      url: server.url,
      postmasterPid: Number.isInteger(pid) ? pid : null,
      throwaway: true,
      stop: () => server.stop(),
    };
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    return { url, postmasterPid: parentOf(row!.pid), throwaway: false, stop: async () => {} };
  } finally {
    await sql.end();
  }
}

/** A backend's parent (the postmaster) when it is a process on this machine, else null. */
function parentOf(pid: number): number | null {
  const path = `/proc/${pid}/stat`;
  if (!existsSync(path)) return null;
  const ppid = Number(statFields(readFileSync(path, "utf8"))[1]);
  const comm = existsSync(`/proc/${ppid}/comm`) ? readFileSync(`/proc/${ppid}/comm`, "utf8").trim() : "";
  return comm.startsWith("postgres") ? ppid : null;
}

/** The fields of /proc/PID/stat after the command name: [0] is field 3 (state). */
const statFields = (stat: string) => stat.slice(stat.lastIndexOf(")") + 2).split(" ");

const CLK_TCK = 100;

/**
 * CPU seconds used so far by the whole server: the postmaster, its live children (backends,
 * checkpointer, WAL writer, autovacuum...) and, through cutime/cstime, the children that ended.
 */
export function pgCpuSeconds(postmasterPid: number | null): number | null {
  if (postmasterPid === null) return null;
  let ticks = 0;
  try {
    const f = statFields(readFileSync(`/proc/${postmasterPid}/stat`, "utf8"));
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  } catch {
    return null;
  }
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const f = statFields(readFileSync(`/proc/${name}/stat`, "utf8"));
      if (Number(f[1]) === postmasterPid) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // ended meanwhile: its time is in the postmaster's cutime now
    }
  }
  return ticks / CLK_TCK;
}

/** The server's version, as SHOW server_version says it. */
export async function pgVersion(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ server_version: string }[]>`SHOW server_version`;
    return row!.server_version;
  } finally {
    await sql.end();
  }
}

/** A new empty database `name` on the target (dropped first if a previous run left it); its URL. */
export async function freshDatabase(target: PgTarget, name: string): Promise<string> {
  const admin = postgres(target.url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return withDatabase(target.url, name);
}

export async function dropDatabase(target: PgTarget, name: string): Promise<void> {
  const admin = postgres(target.url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** The URL of another database on the same server. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

const open = (url: string) =>
  postgres(url, {
    max: 1,
    onnotice: () => {},
    types: { bigint: { to: 20, from: [20], parse: (x: string) => Number(x), serialize: (x: number) => String(x) } },
  });

/** Every acknowledged id looked up after the nodes stopped (the PostgreSQL twin of lib.ts verifyAcks). */
export async function verifyAcksPg(
  url: string,
  starts: string[],
  updates: string[],
  expectedStarts: number,
  expectedUpdates: number,
): Promise<Verification> {
  const sql = open(url);
  try {
    const outcomes = async (ids: string[]) => {
      const found = new Map<string, string>();
      for (let i = 0; i < ids.length; i += 10_000) {
        const chunk = ids.slice(i, i + 10_000);
        for (const r of await sql<
          { id: string; outcome: string }[]
        >`SELECT execution_id AS id, outcome FROM executions WHERE execution_id = ANY(${chunk}::text[])`)
          found.set(r.id, r.outcome);
      }
      return found;
    };
    const examplesMissing: string[] = [];
    const startsFound = await outcomes(starts);
    let missingStarts = 0;
    for (const id of starts) {
      if (startsFound.has(id)) continue;
      missingStarts++;
      if (examplesMissing.length < 5) examplesMissing.push(id);
    }
    const updatesFound = await outcomes(updates);
    let updatesNotApplied = 0;
    for (const id of updates) {
      const outcome = updatesFound.get(id);
      if (outcome !== undefined && outcome !== "in_progress") continue;
      updatesNotApplied++;
      if (examplesMissing.length < 10)
        examplesMissing.push(`${id} (update ${outcome === undefined ? "record missing" : "not final"})`);
    }
    const count = async (table: string) =>
      (await sql<{ n: number }[]>`SELECT count(*)::bigint AS n FROM ${sql(table)}`)[0]!.n;
    return {
      ackedStarts: starts.length,
      missingStarts,
      ackedUpdates: updates.length,
      updatesNotApplied,
      unrecordedAcks: Math.max(0, expectedStarts - starts.length) + Math.max(0, expectedUpdates - updates.length),
      rows: await count("executions"),
      heldUpdates: await count("held_reports"),
      rejectedReports: await count("rejected_reports"),
      examplesMissing,
    };
  } finally {
    await sql.end();
  }
}

export interface PgStorage {
  executions: number;
  /** Every table of the schema (partitions summed into their table): heap with TOAST, and each index. */
  tables: { name: string; tableBytes: number; indexes: { name: string; bytes: number }[] }[];
  totalBytes: number;
  /** pg_database_size: what the database takes on disk, catalogs included. */
  databaseBytes: number;
  bytesPerExecution: number;
  /** Rows updated, and of those HOT (no index entry: the new version on the same page), per table (partitions summed). */
  updates: { name: string; updated: number; hot: number }[];
}

/** What every table and index of the database weighs, after a VACUUM (ANALYZE) so the figures are settled (`vacuum`, the default). */
export async function pgStorage(url: string, { vacuum = true } = {}): Promise<PgStorage> {
  const sql = open(url);
  try {
    if (vacuum) {
      await sql`VACUUM ANALYZE`;
      await sql`CHECKPOINT`;
    }
    // Leaf tables, each under its top-level table (a partition's root).
    const rels = await sql<{ root: string; rel: string; table_bytes: number }[]>`
      SELECT coalesce(pg_partition_root(c.oid), c.oid)::regclass::text AS root,
             c.oid::regclass::text AS rel, pg_table_size(c.oid)::bigint AS table_bytes
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname = 'public'`;
    const idx = await sql<{ rel: string; name: string; bytes: number }[]>`
      SELECT i.indrelid::regclass::text AS rel, ic.relname AS name, pg_relation_size(i.indexrelid)::bigint AS bytes
      FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = 'public' AND t.relkind = 'r'`;
    const rootOf = new Map(rels.map((r) => [r.rel, r.root]));
    const tables = new Map<string, { name: string; tableBytes: number; indexes: Map<string, number> }>();
    for (const r of rels) {
      const t = tables.get(r.root) ?? { name: r.root, tableBytes: 0, indexes: new Map() };
      t.tableBytes += r.table_bytes;
      tables.set(r.root, t);
    }
    for (const i of idx) {
      const root = rootOf.get(i.rel) ?? i.rel;
      const t = tables.get(root)!;
      // A partition's index is named after its partition: name it by what it indexes instead.
      const name = i.name.replace(/^executions_p\d{6}_/, "executions_");
      t.indexes.set(name, (t.indexes.get(name) ?? 0) + i.bytes);
    }
    const list = [...tables.values()]
      .map((t) => ({
        name: t.name,
        tableBytes: t.tableBytes,
        indexes: [...t.indexes].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes),
      }))
      .sort(
        (a, b) =>
          b.tableBytes +
          b.indexes.reduce((s, i) => s + i.bytes, 0) -
          (a.tableBytes + a.indexes.reduce((s, i) => s + i.bytes, 0)),
      );
    const totalBytes = list.reduce((s, t) => s + t.tableBytes + t.indexes.reduce((x, i) => x + i.bytes, 0), 0);
    const stats = await sql<{ rel: string; updated: number; hot: number }[]>`
      SELECT relid::regclass::text AS rel, n_tup_upd::bigint AS updated, n_tup_hot_upd::bigint AS hot FROM pg_stat_user_tables WHERE schemaname = 'public'`;
    const updates = new Map<string, { name: string; updated: number; hot: number }>();
    for (const r of stats) {
      const name = rootOf.get(r.rel) ?? r.rel;
      const u = updates.get(name) ?? { name, updated: 0, hot: 0 };
      u.updated += r.updated;
      u.hot += r.hot;
      updates.set(name, u);
    }
    const [{ n } = { n: 0 }] = await sql<{ n: number }[]>`SELECT count(*)::bigint AS n FROM executions`;
    const [{ bytes } = { bytes: 0 }] = await sql<
      { bytes: number }[]
    >`SELECT pg_database_size(current_database())::bigint AS bytes`;
    return {
      executions: n,
      tables: list,
      totalBytes,
      databaseBytes: bytes,
      bytesPerExecution: n > 0 ? totalBytes / n : NaN,
      updates: [...updates.values()].filter((u) => u.updated > 0).sort((a, b) => b.updated - a.updated),
    };
  } finally {
    await sql.end();
  }
}
