// Read-side benchmark: p50/p95 latency of every aggregate endpoint over 30- and 365-day windows
// at 1M and 10M records, next to the same question answered by a full scan of the raw records
// (SQL GROUP BY over `executions`) in the same run, and the ratio of the two (the target: 50x);
// listing pages at depth; export throughput; the database's bytes per install.
//
//   bun scripts/bench-report.ts [--sizes 1000000,10000000] [--dir /tmp/installstats-bench] [--runs 30] [--scan-runs 3]
//                               [--engine sqlite|postgres] [--pg postgres://user@host/postgres] [--aggregates-only]
//                               [--profile today|upload] [--storage-only]
//
// Databases are seeded once (`installstats seed` of --profile, default today: the same data for
// the same size and profile) and reused. With
// --engine postgres the data go into PostgreSQL: a server of the script's own whose data directory
// is kept in --dir (pg/), or with --pg a database per size on the server given (the role needs
// CREATEDB); seeded databases are folded up to the last hour (as a running node's fold job would
// have done) and analyzed before measuring. --aggregates-only skips listing pages and export;
// --storage-only prints the storage line (bytes per install, the rollups' cells and share) and
// measures nothing (a database rebuilt by another revision, compared with this one's).
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import postgres from "postgres";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SEED_PROFILES, seedDatabase, seedOptions, type SeedProfile } from "../src/seed/seed.ts";
import { openSqliteEngine } from "../src/store/sqlite/engine.ts";
import { openEngine } from "../src/store/open.ts";
import type { Engine } from "../src/store/engine.ts";
import { startPostgres, type PgServer } from "../test/helpers/postgres.ts";
import { BENCH_PG_SETTINGS, pgStorage, pgVersion, withDatabase, type PgStorage } from "./bench/pg.ts";
import { benchRuntime } from "./bench/runtime.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    sizes: { type: "string", default: "1000000,10000000" },
    dir: { type: "string", default: "/tmp/installstats-bench" },
    runs: { type: "string", default: "30" },
    "scan-runs": { type: "string", default: "3" },
    engine: { type: "string", default: "sqlite" },
    pg: { type: "string" },
    "aggregates-only": { type: "boolean", default: false },
    "storage-only": { type: "boolean", default: false },
    profile: { type: "string", default: "today" },
  },
});
const profile = values.profile as SeedProfile;
if (!(SEED_PROFILES as readonly string[]).includes(profile))
  throw new Error(`--profile must be one of ${SEED_PROFILES.join(", ")}`);
const engineName = values.pg !== undefined ? "postgres" : values.engine;
if (engineName !== "sqlite" && engineName !== "postgres")
  throw new Error(`--engine must be sqlite or postgres, got ${values.engine}`);
const sizes = values.sizes!.split(",").map(Number);
const runs = Number(values.runs);
const scanRuns = Number(values["scan-runs"]);
mkdirSync(values.dir!, { recursive: true });

const DAY = 86_400_000;
const HOUR = 3_600_000;
const pct = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

async function timeAsync(fn: () => Promise<unknown>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

/** The machine's load average (1, 5, 15 min): it is shared, so every table says what it ran beside. */
const loadNow = () =>
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(", ")}`;

const lines: string[] = [];
const say = (s: string) => {
  lines.push(s);
  console.log(s);
};

say(`# installstats read benchmark\n`);
say(
  `Command: \`bun scripts/bench-report.ts --sizes ${values.sizes} --runs ${runs} --scan-runs ${scanRuns} --profile ${profile}${engineName === "postgres" ? " --engine postgres" : ""}${values["aggregates-only"] ? " --aggregates-only" : ""}\`  `,
);

// PostgreSQL: the script's own server, its data kept beside the SQLite files, or the one given.
let server: PgServer | null = null;
const pgAdmin =
  engineName !== "postgres"
    ? null
    : (values.pg ?? (server = await startPostgres(BENCH_PG_SETTINGS, join(values.dir!, "pg"))).url);
process.on("exit", () => void server?.stop());
say(
  `Machine: ${cpus().length} cores, ${cpus()[0]?.model ?? "?"}; ${new Date().toISOString()}; ${loadNow()}${
    pgAdmin
      ? `; PostgreSQL ${await pgVersion(pgAdmin)} (${Object.entries(BENCH_PG_SETTINGS)
          .map(([k, v]) => `${k}=${v}`)
          .join(", ")})`
      : ""
  }\n`,
);

/** One size's database, opened; the SQL the scan baselines run on it; and how to make the next request cold. */
interface Bench {
  engine: Engine;
  location: string;
  count(): Promise<number>;
  scan(sql: string): Promise<unknown>;
  /** A write from another connection: the store's cached answers are stale. */
  touch(): Promise<void>;
  /** created_at and the tie-breaker of the row `depth` rows from the newest (a listing cursor). */
  rowAt(depth: number): Promise<{ c: number; r: number }>;
  bytes(): Promise<number>;
  /** What a running server would have done by now (fold; after a seed, statistics), and the storage: a line for the report. */
  settle(now: number, seeded: boolean): Promise<string>;
  close(): Promise<void>;
}

function sqliteBench(path: string): Bench {
  // The engine opened here, so the scan baselines can run SQL on its connection.
  const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
  const { sqlite } = engine;
  // A write from another connection makes the store drop every parsed cell: the next request is cold.
  const other = new Database(path);
  return {
    engine,
    location: path,
    count: async () => (sqlite.query("SELECT count(*) AS n FROM executions").get() as { n: number }).n,
    scan: async (sql) => sqlite.query(sql).all(),
    touch: async () => void other.run("UPDATE rollup_state SET folded_until = folded_until"),
    rowAt: async (depth) =>
      sqlite
        .query(
          `SELECT created_at AS c, rowid AS r FROM executions ORDER BY created_at DESC, rowid DESC LIMIT 1 OFFSET ${depth}`,
        )
        .get() as { c: number; r: number },
    bytes: async () => Bun.file(path).size,
    async settle() {
      // Installs are the first executions of their random_ids (the rest are retries: rid set).
      const { installs, executions } = sqlite
        .query("SELECT count(*) AS executions, count(*) - count(rid) AS installs FROM executions")
        .get() as { installs: number; executions: number };
      const parts = sqlite.query("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name").all() as {
        name: string;
        bytes: number;
      }[];
      const total = parts.reduce((n, p) => n + p.bytes, 0);
      const of = (test: (name: string) => boolean) =>
        parts.filter((p) => test(p.name)).reduce((n, p) => n + p.bytes, 0);
      const rollups = of((n) => n.startsWith("rollup"));
      const executionsBytes = of(
        (n) => n === "executions" || n.startsWith("executions_") || n === "sqlite_autoindex_executions_1",
      );
      const mb = (x: number) => (x / 1e6).toFixed(1);
      // The cells' own bytes, whatever the pages' fill: what a layout costs, apart from how it was written.
      const cells = sqlite
        .query(
          "SELECT count(*) AS n, sum(length(data) + ifnull(length(apps), 0) + ifnull(length(errors), 0)) AS bytes FROM rollups",
        )
        .get() as { n: number; bytes: number };
      return (
        `${cells.n.toLocaleString()} rollup cells of ${mb(cells.bytes)} MB encoded (${(cells.bytes / executions).toFixed(1)} per execution); ` +
        `${(total / installs).toFixed(1)} bytes per install (${installs.toLocaleString()} installs, ${executions.toLocaleString()} executions: ${(total / executions).toFixed(1)} per execution); ` +
        `executions and their indexes ${mb(executionsBytes)} MB, rollups ${mb(rollups)} MB (${((100 * rollups) / total).toFixed(1)}% of the database), the rest ${mb(total - rollups - executionsBytes)} MB`
      );
    },
    close: async () => other.close(),
  };
}

async function postgresBench(size: number): Promise<Bench> {
  const name = `installstats_bench_${size}${profile === "upload" ? "" : `_${profile}`}`;
  const admin = postgres(pgAdmin!, { max: 1, onnotice: () => {} });
  try {
    if ((await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`).length === 0)
      await admin.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(pgAdmin!, name);
  const engine = await openEngine(url, { durability: "normal", migrate: true, create: true });
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    types: { bigint: { to: 20, from: [20], parse: (x: string) => Number(x), serialize: (x: number) => String(x) } },
  });
  return {
    engine,
    location: url,
    count: async () => (await sql<{ n: number }[]>`SELECT count(*)::bigint AS n FROM executions`)[0]!.n,
    scan: (text) => sql.unsafe(text),
    // A commit anywhere moves the change marker (pg_current_snapshot) that cached answers are keyed by.
    touch: async () => void (await sql`UPDATE marks SET value = value WHERE name = 'folded_until'`),
    rowAt: async (depth) =>
      (
        await sql<
          { c: number; r: number }[]
        >`SELECT created_at AS c, seq AS r FROM executions ORDER BY created_at DESC, seq DESC LIMIT 1 OFFSET ${depth}`
      )[0]!,
    bytes: async () => (await sql<{ b: number }[]>`SELECT pg_database_size(current_database())::bigint AS b`)[0]!.b,
    async settle(now, seeded) {
      const notes: string[] = [];
      const until = Math.floor(now / HOUR) * HOUR;
      if ((await engine.store.foldedUntil()) < until) {
        const t0 = performance.now();
        await engine.store.write([{ kind: "fold", until, at: now }]);
        notes.push(`folded up to the last hour in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
      }
      const t1 = performance.now();
      // Statistics and visibility as autovacuum would have left them after a bulk load.
      if (seeded) notes.push(`VACUUM ANALYZE ${((await pgStorage(url), performance.now() - t1) / 1000).toFixed(0)} s`);
      const storage = await pgStorage(url, { vacuum: false });
      const total = (t: PgStorage["tables"][number]) => t.tableBytes + t.indexes.reduce((m, i) => m + i.bytes, 0);
      const group = (test: (name: string) => boolean) =>
        storage.tables.filter((t) => test(t.name)).reduce((n, t) => n + total(t), 0) / storage.executions;
      notes.push(
        `${storage.bytesPerExecution.toFixed(0)} bytes per execution in all tables and indexes: executions ${group((n) => n === "executions").toFixed(0)}, ` +
          `execution_ids ${group((n) => n === "execution_ids").toFixed(0)}, rollup_cells ${group((n) => n === "rollup_cells").toFixed(0)}, the rest ${group((n) => !["executions", "execution_ids", "rollup_cells"].includes(n)).toFixed(0)}`,
      );
      return notes.join("; ");
    },
    close: () => sql.end(),
  };
}

/** The drivers' counts as SQL over the raw records: finished runs and failures per value, one GROUP BY per dimension. */
const DRIVER_COLUMNS = [
  "pve_version",
  "kernel_version",
  "os_type || ' ' || os_version",
  "arch",
  "cpu_vendor",
  "gpu_vendor",
  "gpu_passthrough",
  "host_gpu",
  "core_count",
  "ram_size",
  "type",
  "ct_type",
  "method",
  "platform",
  "repo_source",
  "repo_slug",
  "attempt",
];
const driversScan = (where: string, extra: string[] = []) =>
  [...DRIVER_COLUMNS, ...extra]
    .map(
      (c, i) =>
        `SELECT ${i} AS d, CAST(${c} AS text) AS v, sum(CASE WHEN outcome = 'failed' THEN 1 ELSE 0 END) AS f, count(*) AS n FROM executions WHERE ${where} AND outcome IN ('success', 'failed') GROUP BY 2`,
    )
    .join(" UNION ALL ");

for (const size of sizes) {
  const b =
    engineName === "postgres"
      ? await postgresBench(size)
      : sqliteBench(join(values.dir!, `seed-${size}${profile === "upload" ? "" : `-${profile}`}.db`));
  const { engine } = b;
  const { store } = engine;
  const have = await b.count();
  let seeded = false;
  if (have === 0) {
    console.error(`seeding ${size.toLocaleString()} records into ${engine.location} ...`);
    const r = await seedDatabase(store, seedOptions({ records: size, profile }), (p) =>
      process.stderr.write(`\r${p.written}/${p.total}`),
    );
    console.error(`\nseeded in ${r.seconds.toFixed(0)} s (${Math.round(r.records / r.seconds)}/s)`);
    say(
      `Seeded now: ${r.records.toLocaleString()} records in ${r.seconds.toFixed(0)} s (${Math.round(r.records / r.seconds)}/s).  `,
    );
    seeded = true;
  } else if (have !== size) console.error(`note: ${engine.location} holds ${have} records, not ${size}`);
  const count = await b.count();
  const span = (await store.recordSpan())!;
  // Measure as of the newest record, so the windows hold data whenever the seed was made.
  const now = span.last;
  const settled = await b.settle(now, seeded);
  if (settled) say(`${settled}  `);
  if (values["storage-only"]) {
    await b.close();
    await engine.store.close();
    continue;
  }
  const runtime = await benchRuntime(engine, b.location, () => now);
  const { app } = runtime;
  const get = async (p: string) => {
    const res = await app.handle(new Request(`http://localhost${p}`));
    if (res.status !== 200) throw new Error(`${p}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const coldGet = async (p: string) => {
    await b.touch();
    return get(p);
  };
  const topApp = ((await get("/api/stats/breakdown?by=nsapp&days=30&limit=1")).groups as { value: string }[])[0]!.value;

  say(
    `## ${count.toLocaleString()} executions (${((await b.bytes()) / 1e9).toFixed(2)} GB, ${engineName}, profile ${profile})\n`,
  );
  // "first" is the question's first request on a freshly opened store: stored rollup cells are
  // read and parsed then, and stay parsed for the repeated requests (p50, p95) while unchanged.
  // "faster" is the scan's p50 over the endpoint's p50; the target is 50x.
  say(
    `| question | window | first request ms | endpoint p50 ms | endpoint p95 ms | CPU p50 ms | CPU p95 ms | cold CPU p50 ms | cold CPU p95 ms | full scan p50 ms | faster |`,
  );
  say(`|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|`);
  /** CPU time of this process (ms) over `n` requests, each after a write from another connection when `cold`. */
  const cpuOf = async (path: string, n: number, cold: boolean): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      if (cold) await b.touch();
      const c = process.cpuUsage();
      await get(path);
      const d = process.cpuUsage(c);
      out.push((d.user + d.system) / 1000);
    }
    return out;
  };
  const measure = async (name: string, window: string, path: string, scanSql: string | null) => {
    const [first] = await timeAsync(() => coldGet(path), 1);
    await timeAsync(() => get(path), 2); // warm
    const lat = await timeAsync(() => get(path), runs);
    const p95 = pct(lat, 0.95);
    // CPU time beside wall time (the machine is shared): of the repeated requests, and of requests
    // that each read their cells afresh (cold).
    const cpu = await cpuOf(path, runs, false);
    const cold = await cpuOf(path, Math.min(runs, 10), true);
    const cpus = `${fmt(pct(cpu, 0.5))} | ${fmt(pct(cpu, 0.95))} | ${fmt(pct(cold, 0.5))} | ${fmt(pct(cold, 0.95))}`;
    if (scanSql === null) {
      say(
        `| ${name} | ${window} | ${fmt(first!)} | ${fmt(pct(lat, 0.5))} | ${fmt(p95)}${p95 < 50 ? "" : " (over 50)"} | ${cpus} | - | - |`,
      );
      return;
    }
    const scan = await timeAsync(() => b.scan(scanSql), scanRuns);
    const faster = pct(scan, 0.5) / pct(lat, 0.5);
    say(
      `| ${name} | ${window} | ${fmt(first!)} | ${fmt(pct(lat, 0.5))} | ${fmt(p95)}${p95 < 50 ? "" : " (over 50)"} | ${cpus} | ${fmt(pct(scan, 0.5))} | ${Math.round(faster)}x${faster >= 50 ? "" : " (under 50x)"} |`,
    );
  };
  const to = Math.floor(now / HOUR) * HOUR + HOUR;
  for (const days of [30, 365]) {
    const from = to - days * DAY;
    const w = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
    const inWindow = `created_at >= ${from} AND created_at < ${to}`;
    // Each question, and the same question as a plain SQL scan of the raw records.
    const questions: [string, string, string][] = [
      [
        "summary",
        `/api/stats/summary?${w}`,
        `SELECT outcome, count(*) FROM executions WHERE ${inWindow} GROUP BY outcome`,
      ],
      [
        "breakdown by app",
        `/api/stats/breakdown?by=nsapp&limit=50&${w}`,
        `SELECT nsapp, outcome, count(*) FROM executions WHERE ${inWindow} GROUP BY nsapp, outcome`,
      ],
      [
        "failure ranking",
        `/api/stats/breakdown?by=nsapp&sort=failure_rate&min_runs=20&${w}`,
        `SELECT nsapp, outcome, count(*) FROM executions WHERE ${inWindow} GROUP BY nsapp, outcome`,
      ],
      [
        "breakdown by os",
        `/api/stats/breakdown?by=os&${w}`,
        `SELECT os_type, os_version, outcome, count(*) FROM executions WHERE ${inWindow} GROUP BY 1, 2, 3`,
      ],
      [
        "breakdown by pve version",
        `/api/stats/breakdown?by=pve_version&${w}`,
        `SELECT pve_version, outcome, count(*) FROM executions WHERE ${inWindow} GROUP BY 1, 2`,
      ],
      [
        "breakdown by exit code",
        `/api/stats/breakdown?by=exit_code&${w}`,
        `SELECT exit_code, outcome, count(*) FROM executions WHERE ${inWindow} GROUP BY 1, 2`,
      ],
      [
        "timeseries by day",
        `/api/stats/timeseries?interval=day&${w}`,
        `SELECT created_at / 86400000, outcome, count(*) FROM executions WHERE ${inWindow} GROUP BY 1, 2`,
      ],
      [
        "error signatures",
        `/api/stats/errors?${w}`,
        `SELECT error, count(*) FROM executions WHERE outcome = 'failed' AND ${inWindow} GROUP BY error`,
      ],
      [
        `one app (${topApp}) summary`,
        `/api/stats/summary?nsapp=${topApp}&${w}`,
        `SELECT outcome, count(*) FROM executions WHERE nsapp = '${topApp}' AND ${inWindow} GROUP BY outcome`,
      ],
      [
        `one app (${topApp}) by pve version`,
        `/api/stats/breakdown?by=pve_version&nsapp=${topApp}&${w}`,
        `SELECT pve_version, outcome, count(*) FROM executions WHERE nsapp = '${topApp}' AND ${inWindow} GROUP BY 1, 2`,
      ],
      ["failure drivers", `/api/stats/drivers?${w}`, driversScan(inWindow)],
      [
        `one app (${topApp}) failure drivers`,
        `/api/stats/drivers?nsapp=${topApp}&${w}`,
        driversScan(`nsapp = '${topApp}' AND ${inWindow}`, ["app_version"]),
      ],
    ];
    if (days <= 31)
      questions.push([
        "timeseries by hour",
        `/api/stats/timeseries?interval=hour&${w}`,
        `SELECT created_at / 3600000, outcome, count(*) FROM executions WHERE ${inWindow} GROUP BY 1, 2`,
      ]);
    for (const [name, path, scanSql] of questions) await measure(name, `${days} d`, path, scanSql);
  }
  const last30 = `created_at >= ${to - 30 * DAY} AND created_at < ${to}`;
  await measure(
    "top apps 30/90/365 d (one request)",
    "-",
    "/api/stats/top-apps?limit=20",
    `SELECT nsapp, count(*) FROM executions WHERE created_at >= ${to - 365 * DAY} GROUP BY nsapp`,
  );
  await measure(
    "/data/summary (original API)",
    "all time",
    "/data/summary",
    "SELECT status, nsapp, count(*) FROM executions GROUP BY status, nsapp",
  );
  await measure(
    "/api/dashboard (community service)",
    "30 d",
    "/api/dashboard?days=30",
    `SELECT nsapp, outcome, os_type, pve_version, count(*) FROM executions WHERE ${last30} GROUP BY 1, 2, 3, 4`,
  );
  await measure(
    "/api/scripts (community service)",
    "30 d",
    "/api/scripts?days=30",
    `SELECT nsapp, outcome, count(*) FROM executions WHERE ${last30} GROUP BY 1, 2`,
  );
  await measure(
    "/api/errors (community service)",
    "30 d",
    "/api/errors?days=30",
    `SELECT nsapp, exit_code, error_category, count(*) FROM executions WHERE outcome = 'failed' AND ${last30} GROUP BY 1, 2, 3`,
  );
  say("");

  // The community service's consolidated page and its drill-down (GET /api/new: every breakdown at
  // once). A filter rollups cannot select with another dimension (platform, an install type, a
  // slug) reads rollups without it less what it leaves out, or scans what it keeps, whichever is
  // fewer (read/stats.ts); "first request" is that computation, later ones reuse it while the data
  // are unchanged.
  // CPU time beside wall time: this machine is often shared, and CPU time is what the request cost.
  // "cold": every request after a write from another connection, so each computes its answer
  // (what a dashboard polling while data arrive pays); the others reuse it while nothing changed.
  say(
    `\n| community route | first request ms | p50 ms | p95 ms | CPU p50 ms | CPU p95 ms | cold p50 ms | cold p95 ms | cold CPU p50 ms | cold CPU p95 ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|`,
  );
  for (const path of [
    "/api/new?days=1",
    "/api/new",
    "/api/new?days=30",
    "/api/new?days=365",
    "/api/new?days=30&repo=ProxmoxVE",
    "/api/new?days=30&ctype=addon",
    "/api/new?days=7&platform=incus",
    "/api/new?days=7&ctype=lxc",
    "/api/new?days=30&ctype=lxc",
    "/api/new?days=365&ctype=lxc",
    "/api/new?days=30&ctype=vm",
    "/api/new?days=365&platform=pve",
    "/api/new?days=30&platform=pve",
    "/api/new?days=365&platform=incus",
    "/api/new?days=30&platform=pve&ctype=lxc",
    "/api/new?days=30&platform=incus&repo=ProxmoxVE",
    `/api/script-detail?app=${topApp}`,
    `/api/script-detail?app=${topApp}&days=365`,
    `/api/script-detail?app=${topApp}&days=365&platform=pve`,
    `/api/script-detail?app=${topApp}&days=365&platform=incus`,
    `/api/script-detail?app=${topApp}&days=7&platform=incus`,
    `/api/script-detail?app=${topApp}&days=30&platform=pve&repo=ProxmoxVE`,
    "/api/new/log.csv?days=30",
    "/api/dashboard?days=30",
    "/api/dashboard?days=30&platform=incus",
    "/api/dashboard?days=30&platform=pve",
    "/api/dashboard?days=365&platform=incus",
    "/api/scripts?days=30&platform=incus",
    "/api/errors?days=30",
    "/api/errors?days=30&platform=pve",
    "/api/stats/drivers?days=30",
    "/api/stats/drivers?days=365",
    `/api/stats/drivers?nsapp=${topApp}&days=365`,
  ]) {
    const raw = async () => {
      const res = await app.handle(new Request(`http://localhost${path}`));
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    };
    const [first] = await timeAsync(async () => (await b.touch(), raw()), 1);
    await timeAsync(raw, 2);
    const cpu: number[] = [];
    const lat = await timeAsync(async () => {
      const c = process.cpuUsage();
      await raw();
      const d = process.cpuUsage(c);
      cpu.push((d.user + d.system) / 1000);
    }, runs);
    const p95 = pct(lat, 0.95);
    const coldCpu: number[] = [];
    const cold: number[] = [];
    for (let i = 0; i < runs; i++) {
      await b.touch();
      const t0 = performance.now();
      const c = process.cpuUsage();
      await raw();
      const d = process.cpuUsage(c);
      cold.push(performance.now() - t0);
      coldCpu.push((d.user + d.system) / 1000);
    }
    const coldP95 = pct(cold, 0.95);
    say(
      `| \`${path}\` | ${fmt(first!)} | ${fmt(pct(lat, 0.5))} | ${fmt(p95)}${p95 < 50 ? "" : " (over 50)"} | ${fmt(pct(cpu, 0.5))} | ${fmt(pct(cpu, 0.95))} | ${fmt(pct(cold, 0.5))} | ${fmt(coldP95)}${coldP95 < 50 ? "" : " (over 50)"} | ${fmt(pct(coldCpu, 0.5))} | ${fmt(pct(coldCpu, 0.95))} |`,
    );
  }

  say(`\n${new Date().toISOString()}: ${loadNow()}`);
  if (values["aggregates-only"]) {
    say("");
    await b.close();
    await runtime.stop();
    continue;
  }
  // Listing: first page, and pages deep in the data (cursors taken from rows at those depths).
  say(`\n| /api/installs page (limit 50) | p50 ms | p95 ms |\n|---|---:|---:|`);
  const depths = [0, 10_000, Math.floor(count / 2), count - 100];
  for (const depth of depths) {
    const row = await b.rowAt(depth);
    const cursor = Buffer.from(`${row.c}.${row.r}`).toString("base64url");
    const path = depth === 0 ? "/api/installs?limit=50" : `/api/installs?limit=50&cursor=${cursor}`;
    await timeAsync(() => get(path), 2);
    const lat = await timeAsync(() => get(path), runs);
    say(`| at depth ${depth.toLocaleString()} | ${fmt(pct(lat, 0.5))} | ${fmt(pct(lat, 0.95))} |`);
  }
  const appCursor = await get(`/api/installs?limit=50&nsapp=${topApp}`);
  const appLat = await timeAsync(
    () => get(`/api/installs?limit=50&nsapp=${topApp}&cursor=${appCursor.next_cursor}`),
    runs,
  );
  say(`| filtered by app, page 2 | ${fmt(pct(appLat, 0.5))} | ${fmt(pct(appLat, 0.95))} |`);

  // Export throughput over 30 days (the NDJSON line count is the record count for both formats:
  // CSV cells may hold line breaks).
  say(`\n| export (30 days, streamed) | records | seconds | records/s |\n|---|---:|---:|---:|`);
  let records = 0;
  for (const format of ["ndjson", "csv"] as const) {
    const t0 = performance.now();
    const res = await app.handle(new Request(`http://localhost/api/export?format=${format}&days=30`));
    let lines = 0;
    for await (const chunk of res.body!) {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
    }
    const s = (performance.now() - t0) / 1000;
    if (format === "ndjson") records = lines;
    say(`| ${format} | ${records.toLocaleString()} | ${s.toFixed(1)} | ${Math.round(records / s).toLocaleString()} |`);
  }
  say("");
  await b.close();
  // The runtime's stop, not only the store's close: what it started would keep the process alive.
  await runtime.stop();
}

const out = join(new URL("..", import.meta.url).pathname, "bench-results");
mkdirSync(out, { recursive: true });
const file = join(out, `report-${new Date().toISOString().replace(/[:.]/g, "-")}.md`);
writeFileSync(file, `${lines.join("\n")}\n`);
console.error(`written to ${file}`);
// Something of the runtime still holds the event loop after stop (not found yet: the process
// stayed up for minutes after writing the report), so the script ends itself.
process.exit(existsSync(file) ? 0 : 1);
