#!/usr/bin/env bun
// Ingestion benchmark: builds the current source into a temporary binary, then drives it with wrk
// (scripts/bench/ingest.lua: realistic, unique start reports and status updates over keep-alive
// connections) at several concurrency levels, next to a no-storage baseline server
// (scripts/bench/baseline-server.ts) driven by the same script in the same run. Reports req/s,
// p50/p99 latency, the ratio to the baseline, peak RSS, start-up time and bytes per stored record
// after a fill, and checks that every acknowledged report is in the database.
//
//   bun scripts/bench-ingest.ts [--duration 10] [--connections 16,64,256] [--fill 1000000]
//                               [--fill-mode start|telemetry] [--durability full|normal] [--quick] [--threads 2] [--warmup 2]
//                               [--startup-runs 20] [--repeat 1] [--quiet-wait 60] [--bin path] [--keep] [--fill-max-s 3600]
//   bun scripts/bench-ingest.ts --engine postgres [--pg postgres://user@host/postgres] ...
//   bun scripts/bench-ingest.ts --render bench-results/ingest-<timestamp>.json   (re-render a saved run)
// --engine postgres adds, for every (mode, connections), PostgreSQL with one node and with two
// nodes (two compiled binaries on one database, the load split over them by two wrk processes)
// beside the baseline and SQLite of the same run; the fill then goes into PostgreSQL (one node).
// Without --pg a throwaway server is started on loopback (scripts/bench/pg.ts, removed at the
// end); with --pg, a database per run is created on that server (the role needs CREATEDB).
// PostgreSQL's own processes' CPU is measured when the server runs on this machine.
// --repeat N runs every (mode, connections) pair N times, alternating baseline and installstats,
// and reports the median (with the range): this machine may be shared, so one run can be disturbed.
// --quiet-wait S (default 60, 0 in --quick): before each run, wait up to S seconds until other
// processes use less than 20% of a core; every run reports the CPU others used while it ran.
//
// Needs wrk (Debian: apt-get install -y wrk). Only 127.0.0.1 traffic. Every child process is
// killed at the end, also on failure. Output: a markdown report on stdout and in
// bench-results/ingest-<timestamp>.md (+ .json with the raw numbers).
// Exit code: 1 if an acknowledged report is missing from the database (or could not be checked),
// 2 if the harness itself failed; missed performance targets are only marked in the report.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Database } from "bun:sqlite";
import {
  cpuSeconds,
  fileSizes,
  healthStats,
  tailCounters,
  killAllChildren,
  machineCpu,
  memSampler,
  readAcks,
  readMem,
  runWrk,
  sleep,
  spawnListening,
  stopGracefully,
  storageBreakdown,
  sumThreads,
  verifyAcks,
  waitForQuiet,
  type FileSizes,
  type Listening,
  type Mode,
  type TailCounters,
  type Verification,
  type WrkResult,
  type WrkRun,
} from "./bench/lib.ts";
import {
  dropDatabase,
  freshDatabase,
  pgCpuSeconds,
  pgStorage,
  pgTarget,
  pgVersion,
  verifyAcksPg,
  type PgTarget,
} from "./bench/pg.ts";
import {
  renderReport,
  type BenchResults,
  type CellResult,
  type FillResult,
  type StartupResult,
} from "./bench/report.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const LUA = join(ROOT, "scripts/bench/ingest.lua");
const BASELINE = join(ROOT, "scripts/bench/baseline-server.ts");

// ------------------------------------------------------------------ options

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    duration: { type: "string" },
    connections: { type: "string" },
    fill: { type: "string" },
    "fill-mode": { type: "string", default: "start" },
    "fill-max-s": { type: "string" },
    durability: { type: "string", default: "full" },
    quick: { type: "boolean", default: false },
    threads: { type: "string" },
    warmup: { type: "string" },
    "startup-runs": { type: "string" },
    repeat: { type: "string" },
    "quiet-wait": { type: "string" },
    bin: { type: "string" },
    keep: { type: "boolean", default: false },
    render: { type: "string" },
    engine: { type: "string", default: "sqlite" },
    pg: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (opt.help) {
  const lines = readFileSync(new URL(import.meta.url).pathname, "utf8")
    .split("\n")
    .slice(1);
  console.log(
    lines
      .slice(
        0,
        lines.findIndex((l) => !l.startsWith("//")),
      )
      .map((l) => l.replace(/^\/\/ ?/, ""))
      .join("\n"),
  );
  process.exit(0);
}

if (opt.render) {
  // Re-renders the markdown of a saved run (after a change to the report), next to its JSON.
  const saved = JSON.parse(readFileSync(opt.render, "utf8")) as BenchResults;
  const { markdown } = renderReport(saved);
  console.log(markdown);
  writeFileSync(opt.render.replace(/\.json$/, ".md"), markdown);
  process.exit(0);
}

function intOption(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) usage(`--${name} must be a whole number >= ${min}`);
  return n;
}

function usage(message: string): never {
  console.error(`bench-ingest: ${message}`);
  process.exit(2);
}

const quick = opt.quick;
const threads = intOption("threads", opt.threads, Math.min(2, availableParallelism()), 1);
const durationS = intOption("duration", opt.duration, quick ? 2 : 10, 1);
const warmupS = intOption("warmup", opt.warmup, quick ? 1 : 2, 0);
const fillTarget = intOption("fill", opt.fill, quick ? 10_000 : 1_000_000, 0);
// What fills the database: start reports (one per record), or the current clients (telemetry: four
// requests per execution, every field; the fill stops at about `fillTarget` executions).
const fillMode = opt["fill-mode"] === "telemetry" ? ("telemetry" as const) : ("start" as const);
if (opt["fill-mode"] !== "start" && opt["fill-mode"] !== "telemetry") {
  console.error(`--fill-mode must be start or telemetry, got ${opt["fill-mode"]}`);
  process.exit(2);
}
/** Requests per stored record in the fill's mode (telemetry: 4 per execution, retries add a few). */
const fillPerRecord = fillMode === "telemetry" ? 4.3 : 1;
const startupRuns = intOption("startup-runs", opt["startup-runs"], 20, 0);
const repeat = intOption("repeat", opt.repeat, 1, 1);
const quietWaitS = intOption("quiet-wait", opt["quiet-wait"], quick ? 0 : 60, 0);
const QUIET_OTHER_PCT = 20;
const connections = (opt.connections ?? "16,64,256").split(",").map((s) => Number(s.trim()));
if (connections.some((c) => !Number.isInteger(c) || c < threads))
  usage(`--connections must be whole numbers >= threads (${threads})`);
const durability = opt.durability;
if (durability !== "full" && durability !== "normal") usage("--durability must be full or normal");
const FILL_CONNECTIONS = 64;
const engine = opt.pg !== undefined ? "postgres" : opt.engine;
if (engine !== "sqlite" && engine !== "postgres") usage(`--engine must be sqlite or postgres, got ${opt.engine}`);
if (engine === "postgres" && threads < 2)
  usage("--engine postgres needs --threads of at least 2 (one wrk thread per node with two nodes)");
/** The PostgreSQL server of this run (--engine postgres), set in main(). */
let pg: PgTarget | null = null;
/** The fill stops here even short of its target (a slow or shared machine). */
const FILL_MAX_S = intOption("fill-max-s", opt["fill-max-s"], 3600, 1);

// ------------------------------------------------------------------ cleanup, always

const work = mkdtempSync(join(tmpdir(), "bench-ingest-"));
let cleaned = false;
function cleanup(): void {
  if (cleaned) return;
  cleaned = true;
  killAllChildren();
  // A throwaway server's stop runs synchronously (pg_ctl, then the files go).
  if (pg?.throwaway) void pg.stop();
  if (!opt.keep) rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    console.error(`bench-ingest: ${signal}, stopping every child process`);
    cleanup();
    process.exit(130);
  });
}

const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// Unique per wrk run within this benchmark, so ids never collide in one database.
let nonceCounter = Math.floor(Math.random() * 65536);
const nextNonce = () => (nonceCounter = (nonceCounter + 1) % 65536);

// ------------------------------------------------------------------ build

async function build(): Promise<{ bin: string; buildS: number; sizeBytes: number }> {
  if (opt.bin) return { bin: opt.bin, buildS: 0, sizeBytes: statSync(opt.bin).size };
  const bin = join(work, "bin", "installstats");
  mkdirSync(join(work, "bin"));
  const started = performance.now();
  const proc = Bun.spawn(["bun", "scripts/build.ts", "--outfile", bin], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`build failed (${code}): ${out}\n${err}`);
  return { bin, buildS: (performance.now() - started) / 1000, sizeBytes: statSync(bin).size };
}

// ------------------------------------------------------------------ servers

/** installstats is the SQLite engine (the name saved runs use); postgres-N is N nodes on one PostgreSQL database. */
type Target = CellResult["target"];

const nodesOf = (target: Target): number => (target === "postgres-2" ? 2 : 1);
const isServer = (target: Target): boolean => target !== "baseline";
const isPostgres = (target: Target): boolean => target === "postgres" || target === "postgres-2";

/** What a run measures: its servers, and the PostgreSQL database they share (if any). */
interface Started {
  servers: Listening[];
  /** postgres:// URL of the run's database, or the SQLite file. */
  db: string;
  pgName: string | null;
}

async function startTarget(target: Target, bin: string, dir: string, label: string): Promise<Started> {
  if (target === "baseline") {
    const server = await spawnListening(["bun", BASELINE, "--host", "127.0.0.1", "--port", "0"], {
      stderrPath: join(dir, "baseline.stderr.log"),
      timeoutMs: 15_000,
    });
    return { servers: [server], db: "", pgName: null };
  }
  let db = join(dir, "installs.db");
  let pgName: string | null = null;
  if (isPostgres(target)) {
    pgName = `bench_${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}`;
    db = await freshDatabase(pg!, pgName);
  }
  const servers: Listening[] = [];
  try {
    // The nodes start one after the other: the first applies the migrations.
    for (let i = 0; i < nodesOf(target); i++) {
      servers.push(
        await spawnListening(
          [bin, "serve", "--host", "127.0.0.1", "--port", "0", "--db", db, "--durability", durability!],
          { stderrPath: join(dir, `${target}-${i}.stderr.log`), timeoutMs: 30_000 },
        ),
      );
    }
  } catch (e) {
    for (const s of servers) s.proc.kill("SIGKILL");
    throw e;
  }
  return { servers, db, pgName };
}

/** Stops a server and insists on a clean exit (0): the benchmark checks a graceful shutdown too. */
async function stopTarget(server: Listening, what: string): Promise<number | null> {
  const code = await stopGracefully(server.proc, 120_000);
  if (code !== 0)
    log(`WARNING: ${what} exited with ${code === null ? "no exit within 120 s (killed)" : code} on SIGTERM`);
  return code;
}

/** Every acknowledged id of the runs with `tags`, looked up in the run's database after its servers stopped. */
async function verifyRun(
  started: Started,
  target: Target,
  acks: string[],
  tags: string[],
  threadsPerRun: number,
  results: WrkResult[],
  mode: Mode | "fill-start" | "fill-telemetry",
): Promise<Verification> {
  const withUpdates = mode !== "start" && mode !== "fill-start";
  // concat, not push(...): a fill acknowledges millions of ids, more than a call takes arguments.
  let starts: string[] = [];
  let updates: string[] = [];
  for (const tag of tags) {
    for (const dir of acks) {
      starts = starts.concat(readAcks(dir, tag, threadsPerRun, "start"));
      if (withUpdates) updates = updates.concat(readAcks(dir, tag, threadsPerRun, "update"));
    }
  }
  const expectedUpdates = withUpdates ? sumThreads(results, "n_updated") : 0;
  return isPostgres(target)
    ? verifyAcksPg(started.db, starts, updates, sumThreads(results, "n_created"), expectedUpdates)
    : verifyAcks(started.db, starts, updates, sumThreads(results, "n_created"), expectedUpdates);
}

/** Sums of the nodes' counters (null when one could not be read). */
async function nodesHealth(servers: Listening[]): Promise<{ writes: number; batches: number } | null> {
  const all = await Promise.all(servers.map((s) => healthStats(s.url)));
  if (all.some((h) => h === null)) return null;
  return { writes: all.reduce((n, h) => n + h!.writes, 0), batches: all.reduce((n, h) => n + h!.batches, 0) };
}

async function nodesTail(servers: Listening[]): Promise<TailCounters | null> {
  const all = await Promise.all(servers.map((s) => tailCounters(s.url)));
  if (all.some((t) => t === null)) return null;
  const sum = (k: keyof TailCounters) => all.reduce((n, t) => n + t![k], 0);
  return {
    holds: sum("holds"),
    holdSeconds: sum("holdSeconds"),
    batches: sum("batches"),
    batchesUnder10ms: sum("batchesUnder10ms"),
  };
}

const cpuOf = (servers: Listening[]): number | null => {
  let total = 0;
  for (const s of servers) {
    const c = cpuSeconds(s.pid);
    if (c === null) return null;
    total += c;
  }
  return total;
};

/**
 * One wrk per node, the connections and threads split evenly, run at the same time; their
 * summaries merged: requests and counters add up, latency percentiles are the higher node's
 * (wrk reports percentiles, not histograms, so that is an upper bound of the true one).
 */
async function runWrkOnNodes(
  servers: Listening[],
  base: Omit<WrkRun, "url" | "threads" | "connections" | "tag" | "nonce">,
  total: { threads: number; connections: number },
  tag: string,
): Promise<{ merged: WrkResult; tags: string[] }> {
  const n = servers.length;
  if (n === 1)
    return {
      merged: await runWrk({
        ...base,
        url: servers[0]!.url,
        threads: total.threads,
        connections: total.connections,
        tag,
        nonce: nextNonce(),
      }),
      tags: [tag],
    };
  const tags = servers.map((_, i) => `${tag}-n${i}`);
  const runs = await Promise.all(
    servers.map((s, i) =>
      runWrk({
        ...base,
        url: s.url,
        threads: Math.max(1, Math.floor(total.threads / n)),
        connections: Math.max(1, Math.floor(total.connections / n)),
        tag: tags[i]!,
        nonce: nextNonce(),
      }),
    ),
  );
  return { merged: mergeWrk(runs, tag), tags };
}

function mergeWrk(runs: WrkResult[], tag: string): WrkResult {
  const sum = (f: (r: WrkResult) => number) => runs.reduce((n, r) => n + f(r), 0);
  const max = (f: (r: WrkResult) => number) => Math.max(...runs.map(f));
  const requests = sum((r) => r.requests);
  const latency = runs[0]!.latency_us;
  const lat = Object.fromEntries(
    Object.keys(latency).map((k) => [k, max((r) => r.latency_us[k as keyof typeof latency])]),
  ) as typeof latency;
  lat.mean = sum((r) => r.latency_us.mean * r.requests) / requests;
  lat.min = Math.min(...runs.map((r) => r.latency_us.min));
  const errors = runs[0]!.errors;
  return {
    requests,
    duration_us: max((r) => r.duration_us),
    bytes: sum((r) => r.bytes),
    errors: Object.fromEntries(
      Object.keys(errors).map((k) => [k, sum((r) => r.errors[k as keyof typeof errors])]),
    ) as typeof errors,
    latency_us: lat,
    threads: runs.flatMap((r) => r.threads),
    rps: sum((r) => r.rps),
    cpuS: sum((r) => r.cpuS),
    wallS: max((r) => r.wallS),
    stdout: "",
    tag,
    record: runs[0]!.record,
  };
}

// ------------------------------------------------------------------ one measured cell

interface CellOptions {
  target: Target;
  mode: Mode;
  connections: number;
  record: boolean;
  label: string;
  rep: number;
}

async function quietEnough(what: string): Promise<{ waitedS: number; quiet: boolean }> {
  if (quietWaitS === 0) return { waitedS: 0, quiet: true };
  const q = await waitForQuiet(QUIET_OTHER_PCT, quietWaitS);
  if (!q.quiet)
    log(
      `  machine still busy after ${q.waitedS.toFixed(0)} s (others use ${q.otherPct.toFixed(0)}% of a core); running ${what} anyway`,
    );
  else if (q.waitedS > 1.5) log(`  waited ${q.waitedS.toFixed(0)} s for a quiet machine`);
  return { waitedS: q.waitedS, quiet: q.quiet };
}

async function runCell(bin: string, o: CellOptions): Promise<CellResult> {
  const quiet = await quietEnough(o.label);
  const dir = join(work, o.label);
  const acks = join(dir, "acks");
  mkdirSync(acks, { recursive: true });
  const started = await startTarget(o.target, bin, dir, o.label);
  const { servers } = started;
  const mems = servers.map((s) => memSampler(s.pid));
  const server = isServer(o.target);
  try {
    const base = { lua: LUA, mode: o.mode, outdir: acks, record: o.record };
    const total = { threads, connections: o.connections };
    const runs: WrkResult[] = [];
    const tags: string[] = [];
    if (warmupS > 0) {
      const w = await runWrkOnNodes(servers, { ...base, durationS: warmupS }, total, "warm");
      runs.push(w.merged);
      tags.push(...w.tags);
    }
    const h0 = server ? await nodesHealth(servers) : null;
    const t0 = server ? await nodesTail(servers) : null;
    const cpu0 = cpuOf(servers);
    const pg0 = isPostgres(o.target) ? pgCpuSeconds(pg!.postmasterPid) : null;
    const machine0 = machineCpu();
    const self0 = process.cpuUsage();
    const m = await runWrkOnNodes(servers, { ...base, durationS }, total, "run");
    const measured = m.merged;
    runs.push(measured);
    tags.push(...m.tags);
    const cpu1 = cpuOf(servers);
    const pg1 = isPostgres(o.target) ? pgCpuSeconds(pg!.postmasterPid) : null;
    const machine1 = machineCpu();
    const selfS = (() => {
      const d = process.cpuUsage(self0);
      return (d.user + d.system) / 1e6;
    })();
    const h1 = server ? await nodesHealth(servers) : null;
    const t1 = server ? await nodesTail(servers) : null;
    const peaks = mems.map((x) => x.finish());
    const live: FileSizes | null = o.target === "installstats" ? fileSizes(started.db) : null;
    let exitCode: number | null = 0;
    for (const [i, s] of servers.entries()) {
      const code = await stopTarget(s, `${o.target}${servers.length > 1 ? ` node ${i + 1}` : ""} (${o.label})`);
      if (code !== 0) exitCode = code;
    }

    const verification =
      server && o.record
        ? await verifyRun(
            started,
            o.target,
            [acks],
            tags,
            servers.length > 1 ? Math.max(1, Math.floor(threads / servers.length)) : threads,
            runs,
            o.mode,
          )
        : null;
    if (started.pgName !== null && !opt.keep) await dropDatabase(pg!, started.pgName);
    const writes = h0 && h1 ? h1.writes - h0.writes : null;
    const batches = h0 && h1 ? h1.batches - h0.batches : null;
    const serverS = cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : 0;
    const pgS = pg0 !== null && pg1 !== null ? pg1 - pg0 : null;
    const otherCpuPct =
      (100 * (machine1.busyS - machine0.busyS - serverS - (pgS ?? 0) - measured.cpuS - selfS)) / measured.wallS;
    return {
      target: o.target,
      mode: o.mode,
      connections: o.connections,
      record: o.record,
      rep: o.rep,
      quietWaitS: quiet.waitedS,
      otherCpuPct: Math.max(0, otherCpuPct),
      stealPct: (100 * (machine1.stealS - machine0.stealS)) / measured.wallS,
      wrk: stripStdout(measured),
      warmup: runs.length > 1 ? stripStdout(runs[0]!) : null,
      serverCpuPct: cpu0 !== null && cpu1 !== null ? (100 * (cpu1 - cpu0)) / measured.wallS : null,
      pgCpuPct: pgS === null ? null : (100 * pgS) / measured.wallS,
      nodes: servers.length,
      wrkCpuPct: (100 * measured.cpuS) / measured.wallS,
      avgBatch: writes !== null && batches ? writes / batches : null,
      tail:
        t0 && t1
          ? {
              holds: t1.holds - t0.holds,
              holdMs: 1000 * (t1.holdSeconds - t0.holdSeconds),
              batchesOver10ms: t1.batches - t1.batchesUnder10ms - (t0.batches - t0.batchesUnder10ms),
            }
          : null,
      peakRssKb: Math.max(...peaks.map((p) => p.peakRssKb)),
      hwmKb: Math.max(...peaks.map((p) => p.hwmKb)),
      exitCode,
      liveFiles: live,
      verification,
      unexpected: {
        n_duplicate: sumThreads(runs, "n_duplicate"),
        n_held: sumThreads(runs, "n_held"),
        n_409: sumThreads(runs, "n_409"),
        n_4xx: sumThreads(runs, "n_4xx"),
        n_5xx: sumThreads(runs, "n_5xx"),
        n_noid: sumThreads(runs, "n_noid"),
        socketErrors: runs.reduce(
          (n, r) => n + r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout,
          0,
        ),
      },
    };
  } finally {
    for (const x of mems) x.finish();
    for (const s of servers) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
  }
}

const stripStdout = (r: WrkResult): WrkResult => ({ ...r, stdout: "" });

// ------------------------------------------------------------------ fill and bytes per record

async function runFill(bin: string): Promise<FillResult> {
  await quietEnough("the fill");
  const dir = join(work, "fill");
  const acks = join(dir, "acks");
  mkdirSync(acks, { recursive: true });
  const target: Target = engine === "postgres" ? "postgres" : "installstats";
  const startedTarget = await startTarget(target, bin, dir, "fill");
  const server = startedTarget.servers[0]!;
  const mem = memSampler(server.pid, 100);
  const progress: { t: number; writes: number; rssKb: number }[] = [];
  const started = performance.now();
  let lastLog = 0;
  try {
    const machine0 = machineCpu();
    const cpu0 = cpuSeconds(server.pid) ?? 0;
    const pg0 = isPostgres(target) ? pgCpuSeconds(pg!.postmasterPid) : null;
    const self0 = process.cpuUsage();
    let interrupted: string | null = null;
    const wrk = await runWrk({
      lua: LUA,
      url: server.url,
      threads,
      connections: FILL_CONNECTIONS,
      mode: fillMode,
      outdir: acks,
      record: true,
      durationS: FILL_MAX_S,
      nonce: nextNonce(),
      tag: "fill",
      pollMs: 250,
      stopWhen: async () => {
        const h = await healthStats(server.url);
        if (!h) return false;
        const t = (performance.now() - started) / 1000;
        progress.push({ t, writes: h.writes, rssKb: readMem(server.pid)?.rssKb ?? 0 });
        if (t - lastLog >= 15) {
          lastLog = t;
          log(`fill: ${h.writes} / ${Math.round(fillTarget * fillPerRecord)} writes after ${t.toFixed(0)} s`);
        }
        return h.writes >= fillTarget * fillPerRecord;
      },
    }).catch((e: unknown): null => {
      // wrk died (killed from outside, ...): its id files are cut short, so the acknowledged ids
      // cannot be checked, but the database is intact and still measured.
      interrupted =
        `load generator failed, acknowledged ids not verified: ${e instanceof Error ? e.message : String(e)}`.slice(
          0,
          300,
        );
      log(`fill: ${interrupted}`);
      return null;
    });
    const wallS = (performance.now() - started) / 1000;
    const serverS = (cpuSeconds(server.pid) ?? cpu0) - cpu0;
    const pg1 = isPostgres(target) ? pgCpuSeconds(pg!.postmasterPid) : null;
    const pgS = pg0 !== null && pg1 !== null ? pg1 - pg0 : null;
    const selfUsage = process.cpuUsage(self0);
    const otherS =
      machineCpu().busyS -
      machine0.busyS -
      serverS -
      (pgS ?? 0) -
      (wrk?.cpuS ?? 0) -
      (selfUsage.user + selfUsage.system) / 1e6;
    const peak = mem.finish();
    const live = target === "installstats" ? fileSizes(startedTarget.db) : null;
    const exitCode = await stopTarget(server, `${target} (fill)`);
    let verification: Verification | null = null;
    if (wrk) {
      log("fill: verifying the acknowledged ids");
      verification = await verifyRun(
        startedTarget,
        target,
        [acks],
        ["fill"],
        threads,
        [wrk],
        fillMode === "telemetry" ? "fill-telemetry" : "fill-start",
      );
    }
    log("fill: measuring the storage");
    const storage = target === "installstats" ? storageBreakdown(startedTarget.db) : null;
    const pgStored = isPostgres(target) ? await pgStorage(startedTarget.db) : null;
    if (startedTarget.pgName !== null && !opt.keep) await dropDatabase(pg!, startedTarget.pgName);
    // Progress is in writes (requests); a record is `fillPerRecord` of them. Rates are in writes per second.
    const goal = fillTarget * fillPerRecord;
    const timeAt = (n: number) => progress.find((p) => p.writes >= n)?.t ?? NaN;
    const tenth = goal / 10;
    return {
      target: fillTarget,
      engine: isPostgres(target) ? "postgres" : "sqlite",
      connections: FILL_CONNECTIONS,
      wrk: wrk ? stripStdout(wrk) : null,
      interrupted,
      seconds: wallS,
      serverCpuPct: (100 * serverS) / wallS,
      pgCpuPct: pgS === null ? null : (100 * pgS) / wallS,
      otherCpuPct: Math.max(0, (100 * otherS) / wallS),
      rateFirstTenth: tenth / timeAt(tenth),
      rateLastTenth: tenth / (timeAt(goal) - timeAt(goal - tenth)),
      peakRssKb: peak.peakRssKb,
      hwmKb: peak.hwmKb,
      // RSS when the database passed each tenth of the fill: a plateau is a cache filling up, a slope a leak.
      rssByTenth: Array.from(
        { length: 10 },
        (_, i) => progress.find((p) => p.writes >= (goal * (i + 1)) / 10)?.rssKb ?? NaN,
      ),
      exitCode,
      liveFiles: live,
      verification,
      storage,
      pgStorage: pgStored,
    };
  } finally {
    mem.finish();
    if (server.proc.exitCode === null) server.proc.kill("SIGKILL");
  }
}

// ------------------------------------------------------------------ start-up

async function measureStartup(bin: string): Promise<StartupResult> {
  const dir = join(work, "startup");
  mkdirSync(dir, { recursive: true });
  const lineMs: number[] = [];
  const healthMs: number[] = [];
  const exitCodes: (number | null)[] = [];
  for (let i = 0; i < startupRuns; i++) {
    const server = await spawnListening(
      [
        bin,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--db",
        join(dir, `empty-${i}.db`),
        "--durability",
        durability!,
      ],
      { stderrPath: join(dir, `server-${i}.stderr.log`), timeoutMs: 15_000 },
    );
    try {
      lineMs.push(server.readyMs);
      for (let attempt = 0; ; attempt++) {
        const ok = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) {
          healthMs.push(performance.now() - server.spawnedAt);
          break;
        }
        if (attempt > 1000) throw new Error("GET /healthz never succeeded");
        await sleep(1);
      }
      exitCodes.push(await stopGracefully(server.proc, 15_000));
    } finally {
      if (server.proc.exitCode === null) server.proc.kill("SIGKILL");
    }
  }
  return { runs: startupRuns, lineMs, healthMs, exitCodes };
}

// ------------------------------------------------------------------ machine

function machineInfo(): BenchResults["machine"] {
  const cpuModel = cpus()[0]?.model ?? "unknown";
  const text = (cmd: string[]) => {
    try {
      const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
      return (r.stdout.toString() + r.stderr.toString()).trim();
    } catch {
      return "";
    }
  };
  const mem = new Database(":memory:");
  const sqlite = (mem.query("SELECT sqlite_version() AS v").get() as { v: string }).v;
  mem.close();
  return {
    nproc: availableParallelism(),
    cpuModel,
    memGiB: totalmem() / 2 ** 30,
    kernel: release(),
    bun: Bun.version,
    wrk: text(["wrk", "-v"]).split("\n")[0] ?? "",
    sqlite,
    workDir: work,
    workFs: text(["stat", "-f", "-c", "%T", work]),
    commit: text(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]),
    loadBefore: loadavg(),
    loadAfter: [],
  };
}

// ------------------------------------------------------------------ main

async function main(): Promise<number> {
  if (!Bun.which("wrk")) usage("wrk is not installed (Debian: apt-get install -y wrk)");
  const started = new Date();
  const machine = machineInfo();
  log(
    `work dir ${work}; ${threads} wrk threads; ${durationS} s per run (+${warmupS} s warm-up); connections ${connections.join(",")}; durability ${durability}`,
  );

  if (engine === "postgres") {
    pg = await pgTarget(opt.pg);
    machine.postgres = await pgVersion(pg.url);
    log(
      `PostgreSQL: ${pg.throwaway ? "a throwaway server" : "the server given"} at ${pg.url.replace(/:[^:@/]*@/, ":***@")}${pg.postmasterPid === null ? " (not on this machine: its CPU is not measured)" : ""}`,
    );
  }
  log("building the binary from the current source");
  const { bin, buildS, sizeBytes } = await build();
  log(`built ${bin} (${(sizeBytes / 1e6).toFixed(0)} MB) in ${buildS.toFixed(1)} s`);

  // A failed phase (a server that would not start, a wrk killed from outside, ...) is recorded and
  // the run goes on, so the report is always written; the exit code is then 2.
  const harnessErrors: string[] = [];
  async function attempt<T>(what: string, fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (e) {
      const message = `${what}: ${e instanceof Error ? e.message : String(e)}`.slice(0, 500);
      log(`ERROR ${message}`);
      harnessErrors.push(message);
      return null;
    }
  }

  log(`start-up: ${startupRuns} spawns on a fresh empty database`);
  await quietEnough("start-up");
  const startup = (await attempt("start-up", () => measureStartup(bin))) ?? {
    runs: 0,
    lineMs: [],
    healthMs: [],
    exitCodes: [],
  };

  const cells: CellResult[] = [];
  for (let rep = 0; rep < repeat; rep++) {
    for (const mode of ["start", "mixed", "telemetry"] as const) {
      for (const c of connections) {
        for (const target of engine === "postgres"
          ? (["baseline", "installstats", "postgres", "postgres-2"] as const)
          : (["baseline", "installstats"] as const)) {
          log(`${mode} c=${c}: ${target}${repeat > 1 ? ` (repetition ${rep + 1}/${repeat})` : ""}`);
          const label = `${target}-${mode}-c${c}-r${rep}`;
          const cell = await attempt(label, () =>
            runCell(bin, { target, mode, connections: c, record: true, label, rep }),
          );
          if (!cell) continue;
          log(
            `  ${cell.wrk.rps.toFixed(0)} req/s, p50 ${(cell.wrk.latency_us.p50 / 1000).toFixed(2)} ms, p99 ${(cell.wrk.latency_us.p99 / 1000).toFixed(2)} ms, other processes ${cell.otherCpuPct.toFixed(0)}% CPU`,
          );
          cells.push(cell);
        }
      }
    }
  }

  // What wrk's response() callback costs: the same baseline run with and without it.
  const probeConnections = connections.includes(64) ? 64 : connections[Math.floor(connections.length / 2)]!;
  log(`response() cost on the baseline, start c=${probeConnections}`);
  // Alternated (with, without, with, without, ...) so drift on a shared machine hits both sides.
  const withResponse: CellResult[] = [];
  const withoutResponse: CellResult[] = [];
  for (let i = 0; i < (quick ? 1 : 2); i++) {
    for (const record of [true, false]) {
      const label = `probe-${record ? "with" : "without"}-response-${i}`;
      const cell = await attempt(label, () =>
        runCell(bin, { target: "baseline", mode: "start", connections: probeConnections, record, label, rep: i }),
      );
      if (cell) (record ? withResponse : withoutResponse).push(cell);
    }
  }

  let fill: FillResult | null = null;
  if (fillTarget > 0) {
    log(`fill: ${fillMode} traffic at c=${FILL_CONNECTIONS} until the database holds about ${fillTarget} records`);
    fill = await attempt("fill", () => runFill(bin));
    if (fill?.interrupted) harnessErrors.push(`fill: ${fill.interrupted}`);
  }
  machine.loadAfter = loadavg();

  const results: BenchResults = {
    command: `bun scripts/bench-ingest.ts${Bun.argv.length > 2 ? ` ${Bun.argv.slice(2).join(" ")}` : ""}`,
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    settings: {
      durationS,
      warmupS,
      threads,
      connections,
      durability,
      fill: fillTarget,
      quick,
      startupRuns,
      repeat,
      quietWaitS,
      engine,
    },
    machine,
    build: { buildS, sizeBytes },
    startup,
    cells,
    responseProbe: { connections: probeConnections, with: withResponse, without: withoutResponse },
    fill,
    harnessErrors,
  };
  const { markdown, correctnessFailures } = renderReport(results);
  console.log(markdown);
  const outDir = join(ROOT, "bench-results");
  mkdirSync(outDir, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const mdPath = join(outDir, `ingest-${stamp}.md`);
  writeFileSync(mdPath, markdown);
  writeFileSync(join(outDir, `ingest-${stamp}.json`), JSON.stringify(results, null, 2));
  log(`report written to ${mdPath}`);
  if (correctnessFailures.length > 0) {
    log(`CORRECTNESS FAILURE: ${correctnessFailures.join("; ")}`);
    return 1;
  }
  if (harnessErrors.length > 0) {
    log(`incomplete run: ${harnessErrors.length} phase(s) failed (see the report)`);
    return 2;
  }
  return 0;
}

try {
  const code = await main();
  cleanup();
  process.exit(code);
} catch (e) {
  console.error(`bench-ingest: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  cleanup();
  process.exit(2);
}
