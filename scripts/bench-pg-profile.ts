#!/usr/bin/env bun
// Where a report's time goes with the PostgreSQL engine: one or more compiled nodes on one
// database under wrk load (scripts/bench/ingest.lua), and, over the measured run only:
//   - CPU per report of the nodes and of the server's processes (backends apart from the rest),
//   - the statements by total execution time (pg_stat_statements),
//   - what the backends serving the nodes were doing, sampled from pg_stat_activity and pg_locks
//     every --sample-ms: running, waiting for a lock (by lock type: advisory, transactionid,
//     tuple...), waiting for the WAL, or idle in the transaction while the node computes;
//     the lock share is what serializes the nodes;
//   - with --perf, the nodes' CPU by thread and by what the kernel did for them (scripts/bench/perf.ts:
//     the allocator's returns and page faults, the JIT, system calls), which --cpu-prof cannot see.
//
//   bun scripts/bench-pg-profile.ts [--nodes 1] [--connections 64] [--duration 10] [--warmup 3]
//                                   [--mode start|mixed|telemetry] [--sample-ms 10] [--bin path] [--pg URL] [--cpu-prof DIR] [--perf]
//
// Without --pg a throwaway server is started on loopback with pg_stat_statements (removed at the
// end); with --pg, the server must have pg_stat_statements in shared_preload_libraries. Prints a
// markdown report on stdout. Needs wrk (Debian: apt-get install -y wrk). Only 127.0.0.1 traffic.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import {
  cpuSeconds,
  killAllChildren,
  runWrk,
  sleep,
  spawnListening,
  stopGracefully,
  type Listening,
  type Mode,
} from "./bench/lib.ts";
import { perfRecord, perfTables, perfWorks } from "./bench/perf.ts";
import { BENCH_PG_SETTINGS, dropDatabase, freshDatabase, pgCpuSeconds, pgTarget, type PgTarget } from "./bench/pg.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const LUA = join(ROOT, "scripts/bench/ingest.lua");

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    nodes: { type: "string", default: "1" },
    connections: { type: "string", default: "64" },
    duration: { type: "string", default: "10" },
    warmup: { type: "string", default: "3" },
    mode: { type: "string", default: "start" },
    "sample-ms": { type: "string", default: "10" },
    bin: { type: "string" },
    pg: { type: "string" },
    "cpu-prof": { type: "string" },
    perf: { type: "boolean", default: false },
  },
});

function usage(message: string): never {
  console.error(`bench-pg-profile: ${message}`);
  process.exit(2);
}
const whole = (name: keyof typeof opt, min: number): number => {
  const n = Number(opt[name]);
  if (!Number.isInteger(n) || n < min) usage(`--${name} must be a whole number >= ${min}`);
  return n;
};
const nodes = whole("nodes", 1);
const connections = whole("connections", nodes);
const durationS = whole("duration", 1);
const warmupS = whole("warmup", 0);
const sampleMs = whole("sample-ms", 1);
const mode = opt.mode as Mode;
if (!["start", "mixed", "telemetry"].includes(mode)) usage("--mode must be start, mixed or telemetry");
if (!Bun.which("wrk")) usage("wrk is not installed (Debian: apt-get install -y wrk)");
if (opt.perf && !(await perfWorks()))
  usage(
    "--perf needs perf and the right to sample (Debian: apt-get install -y linux-perf; kernel.perf_event_paranoid <= 1 or root)",
  );

const log = (msg: string) => process.stderr.write(`[pg-profile ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const work = mkdtempSync(join(tmpdir(), "bench-pg-profile-"));
let pg: PgTarget | null = null;
let cleaned = false;
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  killAllChildren();
  if (pg?.throwaway) await pg.stop();
  rmSync(work, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => void cleanup().then(() => process.exit(130)));

/** CPU seconds of the server's processes by kind: the backends (one per connection) and the rest (WAL writer, checkpointer, ...). */
function pgCpuByKind(postmaster: number): { backends: number; others: number } {
  let backends = 0;
  let others = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[1]) !== postmaster) continue;
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8");
      const s = (Number(f[11]) + Number(f[12])) / 100;
      if (/postgres: \S+ \S+ 127\.0\.0\.1/.test(cmd.replaceAll("\0", " "))) backends += s;
      else others += s;
    } catch {
      // ended meanwhile
    }
  }
  return { backends, others };
}

interface Sample {
  /** Backends of the run's database with a query running or in a transaction. */
  busy: number;
  running: number;
  idleInTransaction: number;
  /** wait_event_type:wait_event -> backends. */
  waits: Map<string, number>;
  /** Lock type of ungranted locks -> backends waiting. */
  lockWaits: Map<string, number>;
}

async function sampleOnce(admin: postgres.Sql, db: string): Promise<Sample> {
  const rows = await admin<{ state: string | null; wait: string | null; locktype: string | null }[]>`
    SELECT a.state, a.wait_event_type || ':' || a.wait_event AS wait,
      (SELECT l.locktype FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted LIMIT 1) AS locktype
    FROM pg_stat_activity a WHERE a.datname = ${db} AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend'`;
  const s: Sample = { busy: 0, running: 0, idleInTransaction: 0, waits: new Map(), lockWaits: new Map() };
  for (const r of rows) {
    if (r.state === "idle in transaction") {
      s.busy++;
      s.idleInTransaction++;
    } else if (r.state === "active") {
      s.busy++;
      if (r.wait === null) s.running++;
      else s.waits.set(r.wait, (s.waits.get(r.wait) ?? 0) + 1);
      if (r.locktype !== null) s.lockWaits.set(r.locktype, (s.lockWaits.get(r.locktype) ?? 0) + 1);
    }
  }
  return s;
}

async function main(): Promise<void> {
  const bin = opt.bin ?? join(work, "installstats");
  if (!opt.bin) {
    log("building the binary from the current source");
    const b = Bun.spawnSync(["bun", "scripts/build.ts", "--outfile", bin], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    });
    if (b.exitCode !== 0) usage(`build failed: ${b.stderr.toString().slice(-400)}`);
  }
  log(opt.pg ? "using the server given" : "starting a throwaway PostgreSQL with pg_stat_statements");
  pg = await pgTarget(opt.pg, {
    ...BENCH_PG_SETTINGS,
    shared_preload_libraries: "pg_stat_statements",
    "pg_stat_statements.track": "all",
    ...(process.env.PG_EXTRA ? Object.fromEntries(process.env.PG_EXTRA.split(",").map((kv) => kv.split("="))) : {}),
  });
  if (pg.postmasterPid === null) log("the server is not on this machine: its CPU is not measured");
  const name = `profile_${process.pid}`;
  const url = await freshDatabase(pg, name);
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
  const servers: Listening[] = [];
  try {
    for (let i = 0; i < nodes; i++) {
      // --cpu-prof DIR: the node runs from source under Bun's CPU profiler (a markdown profile in DIR at exit).
      const node = opt["cpu-prof"]
        ? ["bun", "--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${opt["cpu-prof"]}`, join(ROOT, "src/main.ts")]
        : [bin];
      servers.push(
        await spawnListening([...node, "serve", "--host", "127.0.0.1", "--port", "0", "--db", url], {
          stderrPath: join(work, `node-${i}.log`),
          timeoutMs: 60_000,
        }),
      );
    }
    const acks = join(work, "acks");
    mkdirSync(acks, { recursive: true });
    let nonce = Math.floor(Math.random() * 60000);
    const load = (durationS: number, tag: string) =>
      Promise.all(
        servers.map((s, i) =>
          runWrk({
            lua: LUA,
            url: s.url,
            threads: 1,
            connections: Math.max(1, Math.floor(connections / nodes)),
            durationS,
            mode,
            outdir: acks,
            tag: `${tag}-${i}`,
            record: true,
            nonce: nonce++,
          }),
        ),
      );
    if (warmupS > 0) {
      log(`warm-up ${warmupS} s`);
      await load(warmupS, "warm");
    }
    await admin`SELECT pg_stat_statements_reset()`;
    const node0 = servers.map((s) => cpuSeconds(s.pid) ?? 0);
    const pg0 = pg.postmasterPid === null ? null : pgCpuByKind(pg.postmasterPid);
    const pgAll0 = pgCpuSeconds(pg.postmasterPid);
    log(`measuring ${durationS} s: ${nodes} node(s), ${connections} connections, ${mode}`);
    const samples: Sample[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        samples.push(await sampleOnce(admin, name));
        await sleep(sampleMs);
      }
    })();
    // --perf: the nodes' every thread and the kernel under them, sampled over the same seconds.
    const [runs, split] = await Promise.all([
      load(durationS, "run"),
      opt.perf
        ? perfRecord(
            servers.map((s) => s.pid),
            durationS,
            work,
          )
        : null,
    ]);
    sampling = false;
    await sampler;
    const node1 = servers.map((s) => cpuSeconds(s.pid) ?? 0);
    const pg1 = pg.postmasterPid === null ? null : pgCpuByKind(pg.postmasterPid);
    const pgAll1 = pgCpuSeconds(pg.postmasterPid);
    const requests = runs.reduce((n, r) => n + r.requests, 0);
    const statements = await admin<
      { query: string; calls: number; total: number; mean: number; rows: number; blocks: number; walBytes: number }[]
    >`
      SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::int AS calls, total_exec_time AS total, mean_exec_time AS mean, rows::int AS rows,
        (shared_blks_hit + shared_blks_read)::float8 AS blocks, wal_bytes::float8 AS "walBytes"
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = ${name}) AND query NOT LIKE '%pg_stat_%'
      ORDER BY total_exec_time DESC`;
    for (const s of servers) await stopGracefully(s.proc, 60_000);

    // ---- report
    const us = (s: number) => ((1e6 * s) / requests).toFixed(1);
    const nodeS = node1.reduce((n, c, i) => n + c - node0[i]!, 0);
    const lines: string[] = [];
    lines.push(`# PostgreSQL profile: ${nodes} node(s), ${connections} connections, ${mode}, ${durationS} s`, "");
    lines.push(
      `${requests} requests (${(requests / durationS).toFixed(0)}/s), p99 ${(Math.max(...runs.map((r) => r.latency_us.p99)) / 1000).toFixed(1)} ms`,
      "",
    );
    lines.push("| CPU per report | µs |", "|---|---:|");
    lines.push(`| installstats node(s) | ${us(nodeS)} |`);
    if (pg0 && pg1 && pgAll0 !== null && pgAll1 !== null) {
      lines.push(`| PostgreSQL backends | ${us(pg1.backends - pg0.backends)} |`);
      lines.push(`| PostgreSQL, everything (WAL writer, checkpointer, ...) | ${us(pgAll1 - pgAll0)} |`);
      lines.push(`| together | ${us(nodeS + pgAll1 - pgAll0)} |`);
    }
    if (split) lines.push("", ...perfTables(split, requests, "report"));
    const totalMs = statements.reduce((n, s) => n + s.total, 0);
    lines.push(
      "",
      `Statements (pg_stat_statements): ${((totalMs / requests) * 1000).toFixed(1)} µs of execution per report in all`,
      "",
    );
    lines.push(
      "| share | µs per report | calls per report | mean ms | rows per call | buffers per call | WAL bytes per report | statement |",
      "|---:|---:|---:|---:|---:|---:|---:|---|",
    );
    for (const s of statements.slice(0, 15)) {
      lines.push(
        `| ${((100 * s.total) / totalMs).toFixed(1)}% | ${((s.total / requests) * 1000).toFixed(1)} | ${(s.calls / requests).toFixed(3)} | ${s.mean.toFixed(3)} | ${(s.rows / Math.max(1, s.calls)).toFixed(1)} | ${(s.blocks / Math.max(1, s.calls)).toFixed(0)} | ${(s.walBytes / requests).toFixed(0)} | \`${s.query.slice(0, 140).replaceAll("|", "\\|")}\` |`,
      );
    }
    const busy = samples.reduce((n, s) => n + s.busy, 0);
    const add = (m: Map<string, number>, from: Map<string, number>) =>
      from.forEach((v, k) => m.set(k, (m.get(k) ?? 0) + v));
    const waits = new Map<string, number>();
    const lockWaits = new Map<string, number>();
    for (const s of samples) {
      add(waits, s.waits);
      add(lockWaits, s.lockWaits);
    }
    const running = samples.reduce((n, s) => n + s.running, 0);
    const idle = samples.reduce((n, s) => n + s.idleInTransaction, 0);
    const pct = (n: number) => (busy === 0 ? "0" : ((100 * n) / busy).toFixed(1));
    lines.push(
      "",
      `Backends in a transaction, ${samples.length} samples (every ${sampleMs} ms): ${(busy / Math.max(1, samples.length)).toFixed(2)} on average`,
      "",
    );
    lines.push("| what they were doing | share of backend-time |", "|---|---:|");
    lines.push(`| running a statement | ${pct(running)}% |`);
    lines.push(`| idle in the transaction (the node computing, or the network) | ${pct(idle)}% |`);
    for (const [k, v] of [...waits].sort((a, b) => b[1] - a[1])) lines.push(`| waiting: ${k} | ${pct(v)}% |`);
    const locks = [...lockWaits].reduce((n, [, v]) => n + v, 0);
    lines.push(
      "",
      `Waiting for a lock: ${pct(locks)}% of backend-time${locks ? ` (${[...lockWaits].map(([k, v]) => `${k} ${pct(v)}%`).join(", ")})` : ""}`,
    );
    console.log(lines.join("\n"));
  } finally {
    await admin.end();
    for (const s of servers) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
    await dropDatabase(pg, name).catch(() => {});
  }
}

try {
  await main();
  await cleanup();
  process.exit(0);
} catch (e) {
  console.error(`bench-pg-profile: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  await cleanup();
  process.exit(2);
}
