// Table design for 100M+ executions on PostgreSQL (issue 17, item 5): the same generated
// executions in three layouts of the `executions` table, measured side by side on one throwaway
// server (docs/decisions/2026-11-26-postgresql-large-tables.md):
//   plain  - what the first PostgreSQL migration made: a heap, primary key execution_id, b-trees
//            on (created_at, seq), (nsapp, created_at, seq), random_id;
//   brin   - the same with a BRIN index on created_at instead of the (created_at, seq) b-tree;
//   month  - partitioned by month of created_at, the same b-trees in every partition (execution_id
//            not unique by index: unique across months under the writers' advisory locks).
// For each: load time, bytes per execution (heap + TOAST + each index), the write path of a start
// report and its final report at that size (PostgreSQL's CPU per report, measured on its backend),
// time-window reads and listing pages, and retention of the oldest month (DELETE + VACUUM, or
// DROP of a partition) with the WAL it writes.
//
//   bun scripts/bench-pg-tables.ts [--records 10000000] [--variants plain,brin,month] [--writes 20000] [--url postgres://...]
//
// Without --url a throwaway server (test/helpers/postgres.ts) is started and removed at the end.
// Executions come from `installstats seed`'s generator (a year, growing), copied into an unlogged
// staging table once, then into each layout in time order with its indexes in place.
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import postgres, { type Sql } from "postgres";
import { getTableColumns } from "drizzle-orm";
import { generateExecutions, seedOptions } from "../src/seed/seed.ts";
import { executions } from "../src/store/postgres/schema.ts";
import { rowOf } from "../src/store/postgres/rows.ts";
import type { Execution } from "../src/domain/execution.ts";
import { startPostgres, type PgServer } from "../test/helpers/postgres.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    records: { type: "string", default: "10000000" },
    variants: { type: "string", default: "plain,brin,month" },
    writes: { type: "string", default: "20000" },
    url: { type: "string" },
    runs: { type: "string", default: "10" },
  },
});
const RECORDS = Number(values.records);
const WRITES = Number(values.writes);
const RUNS = Number(values.runs);
type Variant = "plain" | "brin" | "month" | "keys";
const VARIANTS = values.variants!.split(",") as Variant[];
const DAY = 86_400_000;
const END = Date.UTC(2026, 10, 1); // the seed's year ends at the start of a month: whole months

/** Settings a server holding tens of GB would have (the defaults are for a small machine). */
export const BENCH_SETTINGS = {
  shared_buffers: "1GB",
  maintenance_work_mem: "512MB",
  work_mem: "32MB",
  max_wal_size: "16GB",
  checkpoint_timeout: "30min",
  effective_cache_size: "8GB",
  random_page_cost: "1.1",
};

const log = (m: string) => process.stderr.write(`[tables ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const lines: string[] = [];
const say = (s: string) => {
  lines.push(s);
  console.log(s);
};
const pct = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms < 1000 ? ms.toFixed(1) : ms.toFixed(0));
const mb = (b: number) => (b / 1e6).toFixed(0);

// ------------------------------------------------------------------ server and staging

let server: PgServer | null = null;
const url = values.url ?? (server = await startPostgres(BENCH_SETTINGS)).url;
// The throwaway server goes with the script, however it ends.
const stopServer = () => {
  if (server)
    Bun.spawnSync(
      [
        "sh",
        "-c",
        `runuser -u postgres -- pg_ctl -D ${server.dir} -m immediate stop >/dev/null 2>&1 || true; rm -rf ${server.dir}`,
      ],
      { env: { PATH: `/usr/lib/postgresql/15/bin:${process.env.PATH}` } },
    );
};
process.on("exit", stopServer);
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));
const admin = postgres(url, { max: 1, onnotice: () => {} });
await admin.unsafe("DROP DATABASE IF EXISTS tables_bench WITH (FORCE)");
await admin.unsafe("CREATE DATABASE tables_bench");
await admin.end();
const db = url.replace(/\/[^/?]*(\?|$)/, "/tables_bench$1");
const sql = postgres(db, {
  max: 2,
  onnotice: () => {},
  types: { bigint: { to: 20, from: [20], parse: (x: string) => Number(x), serialize: (x: number) => String(x) } },
});

const columns = Object.values(getTableColumns(executions)).filter((c) => c.name !== "seq");
const COLS = columns.map((c) => `"${c.name}" ${c.getSQLType()}${c.notNull ? " NOT NULL" : ""}`).join(",\n  ");
const NAMES = columns.map((c) => `"${c.name}"`).join(", ");

const esc = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
function copyLine(e: Execution): string {
  const row = rowOf(e);
  return `${columns
    .map((c) => {
      const v = row[c.name];
      return v === null || v === undefined
        ? "\\N"
        : typeof v === "boolean"
          ? v
            ? "t"
            : "f"
          : typeof v === "string"
            ? esc(v)
            : String(v);
    })
    .join("\t")}\n`;
}

async function copyInto(table: string, rows: Iterable<Execution>, total: number): Promise<number> {
  const t0 = performance.now();
  const stream = await sql.unsafe(`COPY ${table} (${NAMES}) FROM STDIN`).writable();
  let n = 0;
  let chunk = "";
  for (const e of rows) {
    chunk += copyLine(e);
    if (++n % 2000 === 0) {
      if (!stream.write(chunk)) await new Promise((r) => stream.once("drain", r));
      chunk = "";
      if (n % 500_000 === 0)
        log(
          `  ${n.toLocaleString()} / ${total.toLocaleString()} (${Math.round(n / ((performance.now() - t0) / 1000))}/s)`,
        );
    }
  }
  stream.write(chunk);
  await new Promise<void>((resolve, reject) => stream.end((e?: Error | null) => (e ? reject(e) : resolve())));
  return (performance.now() - t0) / 1000;
}

// The engine's lock function (drizzle/postgres/0001_lock_all.sql): the write path takes its locks with it.
await sql.unsafe(readFileSync(new URL("../drizzle/postgres/0001_lock_all.sql", import.meta.url), "utf8"));

log(`staging ${RECORDS.toLocaleString()} generated executions`);
await sql.unsafe(`CREATE UNLOGGED TABLE staging (\n  ${COLS}\n)`);
const stagingS = await copyInto("staging", generateExecutions(seedOptions({ records: RECORDS, end: END })), RECORDS);
const [span] = await sql<
  { first: number; last: number; n: number }[]
>`SELECT min(created_at) AS first, max(created_at) AS last, count(*)::bigint AS n FROM staging`;
log(`staged ${span!.n} in ${stagingS.toFixed(0)} s`);

// ------------------------------------------------------------------ helpers

const monthStart = (t: number) => Date.UTC(new Date(t).getUTCFullYear(), new Date(t).getUTCMonth(), 1);
const nextMonth = (t: number) => Date.UTC(new Date(t).getUTCFullYear(), new Date(t).getUTCMonth() + 1, 1);
const months: number[] = [];
for (let m = monthStart(span!.first); m <= span!.last + 31 * DAY; m = nextMonth(m)) months.push(m);

/** CPU seconds a backend used so far (this script runs on the server's machine). */
async function backendCpu(conn: Sql): Promise<() => number> {
  const [row] = await conn<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  const read = () => {
    const f = readFileSync(`/proc/${row!.pid}/stat`, "utf8");
    const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  };
  return read;
}

async function timeQuery(q: () => Promise<unknown>, runs: number): Promise<number[]> {
  await q();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await q();
    out.push(performance.now() - t0);
  }
  return out;
}

async function sizes(table: string, partitioned: boolean): Promise<{ name: string; bytes: number }[]> {
  const parts = partitioned
    ? `(SELECT relid FROM pg_partition_tree('${table}') WHERE isleaf)`
    : `(SELECT '${table}'::regclass)`;
  const heap = await sql<
    { bytes: number }[]
  >`SELECT coalesce(sum(pg_table_size(relid)), 0)::bigint AS bytes FROM ${sql.unsafe(parts)} p(relid)`;
  const idx = await sql<{ name: string; bytes: number }[]>`
    SELECT regexp_replace(ic.relname, '^${sql.unsafe(table)}(_p\\d+)?_', '') AS name, sum(pg_relation_size(i.indexrelid))::bigint AS bytes
    FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid WHERE i.indrelid IN ${sql.unsafe(parts)} GROUP BY 1 ORDER BY 1`;
  return [{ name: "heap + TOAST", bytes: heap[0]!.bytes }, ...idx];
}

const walNow = async () => (await sql<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`)[0]!.lsn;
const walSince = async (lsn: string) =>
  (await sql<{ b: number }[]>`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ${lsn}::pg_lsn)::bigint AS b`)[0]!.b;

const lockKey = (name: string): string => String(BigInt.asIntN(64, BigInt(Bun.hash.wyhash(name, 0n))));

// ------------------------------------------------------------------ the report

say(`# PostgreSQL table layouts for executions\n`);
say(
  `Command: \`bun scripts/bench-pg-tables.ts --records ${RECORDS} --variants ${VARIANTS.join(",")} --writes ${WRITES}\`  `,
);
say(
  `Machine: ${cpus().length} cores, ${cpus()[0]?.model ?? "?"}; PostgreSQL ${(await sql<{ server_version: string }[]>`SHOW server_version`)[0]!.server_version}; ${new Date().toISOString()}  `,
);
say(
  `Settings: ${Object.entries(BENCH_SETTINGS)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ")}  `,
);
say(
  `Data: ${span!.n.toLocaleString()} executions of \`installstats seed\` (a year to ${new Date(END).toISOString().slice(0, 10)}, ${months.length - 1} months), staged by COPY in ${stagingS.toFixed(0)} s\n`,
);

interface Result {
  variant: string;
  loadS: number;
  sizes: { name: string; bytes: number }[];
  write: { reports: number; wallUsPerReport: number; pgCpuUsPerReport: number; clientCpuUsPerReport: number };
  reads: { name: string; p50: number; p95: number }[];
  retention: { what: string; rows: number; seconds: number; walBytes: number; vacuumS: number | null };
}
const results: Result[] = [];

// New executions for the write path: the month after the staged year (its partition exists).
const fresh = [...generateExecutions(seedOptions({ records: WRITES, days: 20, end: END + 25 * DAY, seed: 99 }))];

/**
 * The statements of each layout, as the engine's write path runs them (src/store/postgres/intake.ts):
 * a batch reads the rows its reports name and their installs' attempt counts in one go, then
 * inserts and writes back set-wise; and one install's executions (GET /api/installs/{id}).
 */
interface Statements {
  byExecutions: string;
  attempts: string;
  insert: string[];
  update: string;
  byInstall: string;
}
function statements(variant: Variant, t: string): Statements {
  const fromJson = `json_populate_recordset(NULL::${t}, $1::text::json)`;
  const set =
    "(status, outcome, error, updated_at, finished_at, duration_ms) = (r.status, r.outcome, r.error, r.updated_at, r.finished_at, r.duration_ms)";
  const insert = `INSERT INTO ${t} (${NAMES}) SELECT ${NAMES} FROM ${fromJson}${variant === "plain" || variant === "brin" ? " ON CONFLICT (execution_id) DO NOTHING" : ""}`;
  // On a partitioned table a row is found by its creation time too, so one partition is touched.
  const sameRow =
    variant === "month" || variant === "keys"
      ? "e.execution_id = r.execution_id AND e.created_at = r.created_at"
      : "e.execution_id = r.execution_id";
  const update = `UPDATE ${t} AS e SET ${set} FROM ${fromJson} AS r WHERE ${sameRow}`;
  if (variant === "keys") {
    return {
      byExecutions: `SELECT t.* FROM ${t}_ids k JOIN ${t} t ON t.created_at = k.created_at AND t.execution_id = k.execution_id WHERE k.execution_id = ANY($1::text[])`,
      attempts: `SELECT random_id, count(*)::int FROM ${t}_ids WHERE random_id = ANY($1::text[]) GROUP BY random_id`,
      insert: [
        `INSERT INTO ${t}_ids (execution_id, random_id, created_at) SELECT execution_id, random_id, created_at FROM ${fromJson} ON CONFLICT (execution_id) DO NOTHING`,
        insert,
      ],
      update,
      byInstall: `SELECT t.* FROM ${t}_ids k JOIN ${t} t ON t.created_at = k.created_at AND t.execution_id = k.execution_id WHERE k.random_id = $1`,
    };
  }
  return {
    byExecutions: `SELECT * FROM ${t} WHERE execution_id = ANY($1::text[])`,
    attempts: `SELECT random_id, count(*)::int FROM ${t} WHERE random_id = ANY($1::text[]) GROUP BY random_id`,
    insert: [insert],
    update,
    byInstall: `SELECT * FROM ${t} WHERE random_id = $1`,
  };
}
const PREPARED = { prepare: true };

for (const variant of VARIANTS) {
  const t = `v_${variant}`;
  const partitioned = variant === "month" || variant === "keys";
  log(`${variant}: creating and loading`);
  if (partitioned) {
    await sql.unsafe(`CREATE SEQUENCE ${t}_seq`);
    await sql.unsafe(
      `CREATE TABLE ${t} (\n  ${COLS},\n  seq bigint NOT NULL DEFAULT nextval('${t}_seq')\n) PARTITION BY RANGE (created_at)`,
    );
    for (const m of months) {
      const name = `${t}_p${new Date(m).toISOString().slice(0, 7).replace("-", "")}`;
      await sql.unsafe(`CREATE TABLE ${name} PARTITION OF ${t} FOR VALUES FROM (${m}) TO (${nextMonth(m)})`);
    }
  } else {
    await sql.unsafe(
      `CREATE TABLE ${t} (\n  ${COLS},\n  seq bigint GENERATED ALWAYS AS IDENTITY NOT NULL,\n  PRIMARY KEY (execution_id)\n)`,
    );
  }
  if (variant === "brin") await sql.unsafe(`CREATE INDEX ${t}_created_at ON ${t} USING brin (created_at)`);
  else await sql.unsafe(`CREATE INDEX ${t}_created_at ON ${t} (created_at, seq)`);
  await sql.unsafe(`CREATE INDEX ${t}_nsapp_created_at ON ${t} (nsapp, created_at, seq)`);
  if (variant === "keys") {
    // The id -> month lookup: one row per execution, unique across months; its own BRIN for retention.
    await sql.unsafe(
      `CREATE TABLE ${t}_ids (execution_id text PRIMARY KEY, random_id text NOT NULL, created_at bigint NOT NULL)`,
    );
    await sql.unsafe(`CREATE INDEX ${t}_ids_random_id ON ${t}_ids (random_id)`);
    await sql.unsafe(`CREATE INDEX ${t}_ids_created_at ON ${t}_ids USING brin (created_at)`);
  } else {
    if (variant === "month") await sql.unsafe(`CREATE INDEX ${t}_execution_id ON ${t} (execution_id)`);
    await sql.unsafe(`CREATE INDEX ${t}_random_id ON ${t} (random_id)`);
  }
  const t0 = performance.now();
  if (variant === "keys")
    await sql.unsafe(
      `INSERT INTO ${t}_ids SELECT execution_id, random_id, created_at FROM staging ORDER BY created_at`,
    );
  await sql.unsafe(`INSERT INTO ${t} (${NAMES}) SELECT ${NAMES} FROM staging ORDER BY created_at`);
  const loadS = (performance.now() - t0) / 1000;
  await sql.unsafe(`VACUUM ANALYZE ${t}`);
  if (variant === "keys") await sql.unsafe(`VACUUM ANALYZE ${t}_ids`);
  await sql.unsafe(`CHECKPOINT`);
  log(`${variant}: loaded in ${loadS.toFixed(0)} s`);
  const size = await sizes(t, partitioned);
  if (variant === "keys")
    size.push(...(await sizes(`${t}_ids`, false)).map((x) => ({ name: `lookup ${x.name}`, bytes: x.bytes })));
  const st = statements(variant, t);

  // The write path of a start report and of its final report, 64 reports per transaction (the
  // group-commit writer's batch at 64 connections), on one connection, prepared statements.
  const conn = await sql.reserve();
  const cpu = await backendCpu(conn);
  const c0 = cpu();
  const u0 = process.cpuUsage();
  const w0 = performance.now();
  const BATCH = 64;
  /** One batch's transaction: its locks, the rows it names read at once, then `write`. */
  const batchTx = async (batch: Execution[], write: () => Promise<unknown>) => {
    await conn.unsafe("BEGIN");
    const keys = batch.flatMap((e) => [lockKey(`e:${e.executionId}`), lockKey(`r:${e.randomId}`)]).sort();
    await conn`SELECT installstats_lock_all(${keys}::bigint[])`;
    await Promise.all([
      conn.unsafe(st.byExecutions, [batch.map((e) => e.executionId)] as never[], PREPARED),
      conn.unsafe(st.attempts, [batch.map((e) => e.randomId)] as never[], PREPARED),
    ]);
    await write();
    await conn.unsafe("COMMIT");
  };
  for (let i = 0; i < fresh.length; i += BATCH) {
    const batch = fresh.slice(i, i + BATCH);
    const started = batch.map((e) =>
      rowOf({
        ...e,
        outcome: "in_progress",
        status: "installing",
        error: null,
        finishedAt: null,
        durationMs: null,
        updatedAt: e.createdAt,
      }),
    );
    await batchTx(batch, () => Promise.all(st.insert.map((q) => conn.unsafe(q, [JSON.stringify(started)], PREPARED))));
  }
  // The final reports: the rows read again, then written back with their final status.
  for (let i = 0; i < fresh.length; i += BATCH) {
    const batch = fresh.slice(i, i + BATCH);
    await batchTx(batch, () => conn.unsafe(st.update, [JSON.stringify(batch.map(rowOf))], PREPARED));
  }
  const wallS = (performance.now() - w0) / 1000;
  const pgS = cpu() - c0;
  const u = process.cpuUsage(u0);
  conn.release();
  const write = {
    reports: fresh.length * 2,
    wallUsPerReport: (wallS * 1e6) / (fresh.length * 2),
    pgCpuUsPerReport: (pgS * 1e6) / (fresh.length * 2),
    clientCpuUsPerReport: (u.user + u.system) / (fresh.length * 2),
  };
  log(
    `${variant}: write path ${write.wallUsPerReport.toFixed(0)} µs/report, PostgreSQL CPU ${write.pgCpuUsPerReport.toFixed(0)} µs`,
  );

  // Reads of the service's kinds: windows (scans when rollups cannot answer), pages, one install.
  const [{ n } = { n: 0 }] = await sql<{ n: number }[]>`SELECT count(*)::bigint AS n FROM ${sql(t)}`;
  const last = span!.last;
  const w30 = [last - 30 * DAY, last + 1];
  const w365 = [last - 365 * DAY, last + 1];
  const [top] = await sql<
    { nsapp: string }[]
  >`SELECT nsapp FROM staging WHERE created_at >= ${w30[0]!} GROUP BY nsapp ORDER BY count(*) DESC LIMIT 1`;
  const reads: Result["reads"] = [];
  const read = async (name: string, q: () => Promise<unknown>, runs = RUNS) => {
    const xs = await timeQuery(q, runs);
    reads.push({ name, p50: pct(xs, 0.5), p95: pct(xs, 0.95) });
    log(`${variant}: ${name} p50 ${fmt(pct(xs, 0.5))} ms`);
  };
  await read(
    "30 d window: outcomes (scan)",
    () =>
      sql.unsafe(
        `SELECT outcome, count(*) FROM ${t} WHERE created_at >= $1 AND created_at < $2 GROUP BY outcome`,
        w30 as never[],
      ),
    3,
  );
  await read(
    "365 d window: outcomes (scan)",
    () =>
      sql.unsafe(
        `SELECT outcome, count(*) FROM ${t} WHERE created_at >= $1 AND created_at < $2 GROUP BY outcome`,
        w365 as never[],
      ),
    2,
  );
  await read("one day, 7 days ago: outcomes", () =>
    sql.unsafe(`SELECT outcome, count(*) FROM ${t} WHERE created_at >= $1 AND created_at < $2 GROUP BY outcome`, [
      last - 7 * DAY,
      last - 6 * DAY,
    ] as never[]),
  );
  await read(`30 d of one app (${top!.nsapp})`, () =>
    sql.unsafe(
      `SELECT outcome, count(*) FROM ${t} WHERE nsapp = $3 AND created_at >= $1 AND created_at < $2 GROUP BY outcome`,
      [...w30, top!.nsapp] as never[],
    ),
  );
  const page = `SELECT * FROM ${t} WHERE (created_at, seq) < ($1, $2) ORDER BY created_at DESC, seq DESC LIMIT 50`;
  await read("newest page of 50", () => sql.unsafe(`SELECT * FROM ${t} ORDER BY created_at DESC, seq DESC LIMIT 50`));
  for (const depth of [10_000, Math.floor(n / 2), n - 100]) {
    const [at] = await sql.unsafe<{ c: number; s: number }[]>(
      `SELECT created_at AS c, seq AS s FROM ${t} ORDER BY created_at DESC, seq DESC LIMIT 1 OFFSET ${depth}`,
    );
    await read(`page of 50 at depth ${depth.toLocaleString()}`, () => sql.unsafe(page, [at!.c, at!.s] as never[]));
  }
  const someIds = (await sql<{ r: string }[]>`SELECT random_id AS r FROM staging TABLESAMPLE SYSTEM (1) LIMIT 200`).map(
    (r) => r.r,
  );
  let k = 0;
  await read(
    "one install by random_id",
    () => sql.unsafe(st.byInstall, [someIds[k++ % someIds.length]!], PREPARED),
    100,
  );
  const someExec = (
    await sql<{ e: string }[]>`SELECT execution_id AS e FROM staging TABLESAMPLE SYSTEM (1) LIMIT 200`
  ).map((r) => r.e);
  await read(
    "64 executions by execution_id (a batch's read)",
    () => sql.unsafe(st.byExecutions, [someExec.slice(k % 100, (k++ % 100) + 64)] as never[], PREPARED),
    100,
  );
  await read(
    "64 unknown execution_ids (a batch of new start reports)",
    () => sql.unsafe(st.byExecutions, [Array.from({ length: 64 }, () => crypto.randomUUID())] as never[], PREPARED),
    100,
  );

  // Retention of the oldest month.
  const boundary = nextMonth(span!.first);
  const [{ gone } = { gone: 0 }] = await sql<
    { gone: number }[]
  >`SELECT count(*)::bigint AS gone FROM ${sql(t)} WHERE created_at < ${boundary}`;
  const lsn = await walNow();
  const r0 = performance.now();
  let vacuumS: number | null = null;
  if (partitioned) {
    await sql.unsafe(
      `DROP TABLE ${t}_p${new Date(monthStart(span!.first)).toISOString().slice(0, 7).replace("-", "")}`,
    );
    if (variant === "keys") await sql.unsafe(`DELETE FROM ${t}_ids WHERE created_at < $1`, [boundary] as never[]);
  } else {
    await sql.unsafe(`DELETE FROM ${t} WHERE created_at < $1`, [boundary] as never[]);
  }
  const retentionS = (performance.now() - r0) / 1000;
  if (!partitioned || variant === "keys") {
    const v0 = performance.now();
    await sql.unsafe(`VACUUM ${variant === "keys" ? `${t}_ids` : t}`);
    vacuumS = (performance.now() - v0) / 1000;
  }
  const walBytes = await walSince(lsn);
  const retention = {
    what:
      variant === "keys"
        ? "DROP TABLE of the partition, DELETE of its ids, VACUUM of the lookup"
        : partitioned
          ? "DROP TABLE of the month's partition"
          : "DELETE of the month's rows, then VACUUM",
    rows: gone,
    seconds: retentionS,
    walBytes,
    vacuumS,
  };
  log(
    `${variant}: retention of ${gone} rows ${retentionS.toFixed(1)} s (+ vacuum ${vacuumS?.toFixed(1) ?? "-"} s), WAL ${mb(walBytes)} MB`,
  );
  results.push({ variant, loadS, sizes: size, write, reads, retention });
  await sql.unsafe(`DROP TABLE ${t}`);
  if (variant === "keys") await sql.unsafe(`DROP TABLE ${t}_ids`);
  if (partitioned) await sql.unsafe(`DROP SEQUENCE ${t}_seq`);
  await sql.unsafe(`CHECKPOINT`);
}

// ------------------------------------------------------------------ tables

const N = span!.n;
say(`## Size (bytes per execution, ${N.toLocaleString()} executions)\n`);
const names = [...new Set(results.flatMap((r) => r.sizes.map((s) => s.name)))];
say(`| part | ${results.map((r) => r.variant).join(" | ")} |`);
say(`|---|${results.map(() => "---:").join("|")}|`);
for (const name of names)
  say(
    `| ${name} | ${results
      .map((r) => {
        const s = r.sizes.find((x) => x.name === name);
        return s ? `${(s.bytes / N).toFixed(1)} (${mb(s.bytes)} MB)` : "-";
      })
      .join(" | ")} |`,
  );
say(
  `| **total** | ${results
    .map((r) => {
      const b = r.sizes.reduce((a, s) => a + s.bytes, 0);
      return `**${(b / N).toFixed(1)}** (${mb(b)} MB)`;
    })
    .join(" | ")} |`,
);
say(`| load, INSERT ... SELECT in time order, s | ${results.map((r) => r.loadS.toFixed(0)).join(" | ")} |`);

say(
  `\n## Write path at this size (${WRITES.toLocaleString()} start reports, then their final reports; 64 per transaction, one connection, set-wise as the engine writes)\n`,
);
say(`| per report | ${results.map((r) => r.variant).join(" | ")} |`);
say(`|---|${results.map(() => "---:").join("|")}|`);
say(`| wall µs | ${results.map((r) => r.write.wallUsPerReport.toFixed(0)).join(" | ")} |`);
say(`| PostgreSQL backend CPU µs | ${results.map((r) => r.write.pgCpuUsPerReport.toFixed(0)).join(" | ")} |`);
say(`| client CPU µs | ${results.map((r) => r.write.clientCpuUsPerReport.toFixed(0)).join(" | ")} |`);

say(`\n## Reads (p50 / p95 ms)\n`);
say(`| read | ${results.map((r) => r.variant).join(" | ")} |`);
say(`|---|${results.map(() => "---:").join("|")}|`);
for (const name of results[0]?.reads.map((r) => r.name) ?? []) {
  say(
    `| ${name} | ${results
      .map((r) => {
        const x = r.reads.find((y) => y.name === name);
        return x ? `${fmt(x.p50)} / ${fmt(x.p95)}` : "-";
      })
      .join(" | ")} |`,
  );
}

say(`\n## Retention of the oldest month\n`);
say(`| | ${results.map((r) => r.variant).join(" | ")} |`);
say(`|---|${results.map(() => "---:").join("|")}|`);
say(`| how | ${results.map((r) => r.retention.what).join(" | ")} |`);
say(`| executions removed | ${results.map((r) => r.retention.rows.toLocaleString()).join(" | ")} |`);
say(`| seconds (DELETE or DROP) | ${results.map((r) => r.retention.seconds.toFixed(2)).join(" | ")} |`);
say(`| VACUUM seconds | ${results.map((r) => r.retention.vacuumS?.toFixed(1) ?? "-").join(" | ")} |`);
say(`| WAL written, MB | ${results.map((r) => mb(r.retention.walBytes)).join(" | ")} |`);

await sql.end();
const out = new URL(`../bench-results/pg-tables-${new Date().toISOString().replace(/[:.]/g, "-")}.md`, import.meta.url)
  .pathname;
await Bun.write(out, `${lines.join("\n")}\n`);
log(`written to ${out}`);
await server?.stop();
