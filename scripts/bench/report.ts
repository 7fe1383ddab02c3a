// The markdown report of scripts/bench-ingest.ts, and the list of correctness failures.
import type { FileSizes, Mode, StorageBreakdown, Verification, WrkResult } from "./lib.ts";
import type { PgStorage } from "./pg.ts";

export interface CellResult {
  /** installstats: the SQLite engine; postgres: one node on PostgreSQL; postgres-2: two nodes on one database. */
  target: "installstats" | "baseline" | "postgres" | "postgres-2";
  mode: Mode;
  connections: number;
  record: boolean;
  /** Repetition index (--repeat). */
  rep: number;
  /** CPU used by every other process on the machine during the measured run, % of one core: interference. */
  otherCpuPct: number;
  stealPct: number;
  /** Seconds spent waiting for other processes to go quiet before this run. */
  quietWaitS: number;
  wrk: WrkResult;
  warmup: WrkResult | null;
  /** Server CPU during the measured run, % of one core (every node's, added). */
  serverCpuPct: number | null;
  /** PostgreSQL's processes (the whole server) during the measured run, % of one core; null when not measured. */
  pgCpuPct?: number | null;
  /** installstats processes serving the run (two for postgres-2). */
  nodes?: number;
  wrkCpuPct: number;
  /** Reports per write transaction during the measured run (writer stats from /healthz). */
  avgBatch: number | null;
  /** During the measured run, from /metrics; absent in results saved before session 4. */
  tail?: { holds: number; holdMs: number; batchesOver10ms: number } | null;
  peakRssKb: number;
  hwmKb: number;
  exitCode: number | null;
  liveFiles: FileSizes | null;
  verification: Verification | null;
  unexpected: {
    n_duplicate: number;
    n_held: number;
    n_409: number;
    n_4xx: number;
    n_5xx: number;
    n_noid: number;
    socketErrors: number;
  };
}

export interface FillResult {
  target: number;
  /** Absent in runs saved before PostgreSQL: sqlite. */
  engine?: "sqlite" | "postgres";
  connections: number;
  /** Null when the load generator died before reporting (see interrupted). */
  wrk: WrkResult | null;
  interrupted: string | null;
  seconds: number;
  serverCpuPct: number;
  pgCpuPct?: number | null;
  otherCpuPct: number;
  rateFirstTenth: number;
  rateLastTenth: number;
  peakRssKb: number;
  hwmKb: number;
  rssByTenth?: number[];
  exitCode: number | null;
  liveFiles: FileSizes | null;
  verification: Verification | null;
  /** SQLite's files and dbstat; null for a fill into PostgreSQL. */
  storage: StorageBreakdown | null;
  pgStorage?: PgStorage | null;
}

export interface StartupResult {
  runs: number;
  lineMs: number[];
  healthMs: number[];
  exitCodes: (number | null)[];
}

export interface BenchResults {
  command: string;
  startedAt: string;
  finishedAt: string;
  settings: {
    durationS: number;
    warmupS: number;
    threads: number;
    connections: number[];
    durability: string;
    fill: number;
    quick: boolean;
    startupRuns: number;
    repeat: number;
    quietWaitS: number;
    engine?: string;
  };
  machine: {
    nproc: number;
    cpuModel: string;
    memGiB: number;
    kernel: string;
    bun: string;
    wrk: string;
    sqlite: string;
    postgres?: string;
    workDir: string;
    workFs: string;
    commit: string;
    loadBefore: number[];
    loadAfter: number[];
  };
  build: { buildS: number; sizeBytes: number };
  startup: StartupResult;
  cells: CellResult[];
  responseProbe: { connections: number; with: CellResult[]; without: CellResult[] };
  fill: FillResult | null;
  /** Phases that failed (the run went on without them). */
  harnessErrors?: string[];
}

// Targets from the issue.
export const TARGETS = {
  startRatio: 0.6,
  startConnections: 64,
  startP99Ms: 25,
  mixedRatio: 0.5,
  peakRssMb: 150,
  bytesPerRecord: 250,
  bytesPerRecordAt: 1_000_000,
  startupMs: 100,
};

const fmt = (n: number | null | undefined, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? "n/a"
    : n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (us: number) => fmt(us / 1000, 2);
const mb = (kb: number) => fmt(kb / 1024, 1);
const pct = (x: number | null) => (x === null || Number.isNaN(x) ? "n/a" : `${(x * 100).toFixed(0)}%`);
const yes = (ok: boolean) => (ok ? "yes" : "**NO**");
const median = (v: number[]) => quantile(v, 50);

function quantile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** PostgreSQL's CPU time per answered request, µs (NaN when not measured). */
function pgCpuPerRequest(c: CellResult): number {
  return c.pgCpuPct === null || c.pgCpuPct === undefined
    ? NaN
    : ((c.pgCpuPct / 100) * c.wrk.wallS * 1e6) / c.wrk.requests;
}

/** Server CPU time per answered request, µs. */
export function cpuPerRequest(c: CellResult): number {
  return c.serverCpuPct === null ? NaN : ((c.serverCpuPct / 100) * c.wrk.wallS * 1e6) / c.wrk.requests;
}

function missingOf(v: Verification | null): number {
  return v ? v.missingStarts + v.updatesNotApplied : 0;
}

export function renderReport(r: BenchResults): { markdown: string; correctnessFailures: string[] } {
  const out: string[] = [];
  const line = (s = "") => out.push(s);
  const failures: string[] = [];
  const serverCells = r.cells.filter((c) => c.target === "installstats");
  /** Every run that stored something: SQLite and PostgreSQL alike. */
  const storingCells = r.cells.filter((c) => c.target !== "baseline");
  const group = (target: CellResult["target"], mode: Mode, connections: number) =>
    r.cells
      .filter((c) => c.target === target && c.mode === mode && c.connections === connections)
      .sort((a, b) => a.wrk.rps - b.wrk.rps);
  /** The median run (by req/s) of a (target, mode, connections) group stands for it. */
  const representative = (target: CellResult["target"], mode: Mode, connections: number): CellResult | undefined => {
    const g = group(target, mode, connections);
    return g[Math.floor((g.length - 1) / 2)];
  };
  const pairs: { mode: Mode; connections: number }[] = [];
  for (const c of serverCells)
    if (!pairs.some((p) => p.mode === c.mode && p.connections === c.connections))
      pairs.push({ mode: c.mode, connections: c.connections });
  const range = (g: CellResult[]) => (g.length > 1 ? ` (${fmt(g[0]!.wrk.rps)}-${fmt(g[g.length - 1]!.wrk.rps)})` : "");

  line(`# installstats ingestion benchmark (${r.settings.durability} durability)`);
  line();
  line(`Command: \`${r.command}\`  `);
  line(
    `Run: ${r.startedAt} to ${r.finishedAt}; commit ${r.machine.commit || "?"} plus the working tree, compiled into a temporary binary (${fmt(r.build.sizeBytes / 1e6)} MB, built in ${fmt(r.build.buildS, 1)} s).  `,
  );
  line(
    `Load: wrk ${r.settings.threads} threads, ${r.settings.durationS} s per measured run after a ${r.settings.warmupS} s warm-up on the same server, keep-alive connections, a fresh server and a fresh database for every run; installstats \`--durability ${r.settings.durability}\`.${r.settings.repeat > 1 ? ` Every pair ran ${r.settings.repeat} times (baseline and installstats alternating); the table shows the median run and the req/s range.` : ""}`,
  );
  line();

  // ---------------------------------------------------------------- main table
  line("## Throughput and latency");
  line();
  line(
    "| mode | conns | req/s | p50 ms | p99 ms | baseline req/s | baseline p50 ms | baseline p99 ms | ratio | target | met | server CPU µs/req | baseline CPU µs/req |",
  );
  line("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|");
  const targetRows: { name: string; measured: string; met: boolean | null }[] = [];
  for (const { mode, connections } of pairs) {
    const c = representative("installstats", mode, connections)!;
    const b = representative("baseline", mode, connections);
    const ratio = b ? c.wrk.rps / b.wrk.rps : NaN;
    const p99Ms = c.wrk.latency_us.p99 / 1000;
    let target = "(info)";
    let met: boolean | null = null;
    if (c.mode === "start" && c.connections === TARGETS.startConnections) {
      target = `>= ${pct(TARGETS.startRatio)}, p99 < ${TARGETS.startP99Ms} ms`;
      met = ratio >= TARGETS.startRatio && p99Ms < TARGETS.startP99Ms;
      targetRows.push({
        name: `start reports, ${c.connections} connections: >= ${pct(TARGETS.startRatio)} of baseline`,
        measured: pct(ratio),
        met: ratio >= TARGETS.startRatio,
      });
      targetRows.push({
        name: `start reports, ${c.connections} connections: p99 < ${TARGETS.startP99Ms} ms`,
        measured: `${fmt(p99Ms, 2)} ms`,
        met: p99Ms < TARGETS.startP99Ms,
      });
    } else if (c.mode === "mixed") {
      target = `>= ${pct(TARGETS.mixedRatio)}`;
      met = ratio >= TARGETS.mixedRatio;
      targetRows.push({
        name: `mixed (start + update), ${c.connections} connections: >= ${pct(TARGETS.mixedRatio)} of baseline`,
        measured: pct(ratio),
        met,
      });
    }
    line(
      `| ${mode} | ${connections} | ${fmt(c.wrk.rps)}${range(group("installstats", mode, connections))} | ${ms(c.wrk.latency_us.p50)} | ${ms(c.wrk.latency_us.p99)} | ${b ? fmt(b.wrk.rps) + range(group("baseline", mode, connections)) : "n/a"} | ${b ? ms(b.wrk.latency_us.p50) : "n/a"} | ${b ? ms(b.wrk.latency_us.p99) : "n/a"} | ${pct(ratio)} | ${target} | ${met === null ? "-" : yes(met)} | ${fmt(cpuPerRequest(c))} | ${b ? fmt(cpuPerRequest(b)) : "n/a"} |`,
    );
  }
  line();
  line(
    "req/s counts every answered request (in mixed mode a start report and its status update are two). Latency is wrk's, per request, from the request written to the response read. CPU µs/req is the server process's CPU time (user + system, all its threads) divided by the requests answered: unlike req/s it hardly changes when other work shares the machine, so it is the steadier measure of cost; 1e6 / (CPU µs/req) is the req/s one fully busy core would give.",
  );
  line();

  if (r.cells.some((c) => c.target === "postgres" || c.target === "postgres-2")) renderPostgres();
  function renderPostgres() {
    line("## PostgreSQL: one node and two nodes, beside SQLite and the baseline");
    line();
    line(
      "Each row is a fresh database on one PostgreSQL server on this machine; two nodes are two compiled binaries on the same database, each driven by its own wrk with half the connections and threads. CPU per report: the installstats processes (all nodes), and PostgreSQL's processes (the whole server, backends and background workers) measured separately; ratios are against the baseline and the SQLite engine of the same (mode, connections) in this run.",
    );
    line();
    line(
      "| mode | conns | engine | req/s | p50 ms | p99 ms | x baseline req/s | x SQLite req/s | installstats CPU µs/report | PostgreSQL CPU µs/report | together µs/report | together x SQLite | acknowledged | missing |",
    );
    line("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    const pgPairs: { mode: Mode; connections: number }[] = [];
    for (const c of storingCells)
      if (!pgPairs.some((p) => p.mode === c.mode && p.connections === c.connections))
        pgPairs.push({ mode: c.mode, connections: c.connections });
    for (const { mode, connections } of pgPairs) {
      const b = representative("baseline", mode, connections);
      const lite = representative("installstats", mode, connections);
      const liteCpu = lite ? cpuPerRequest(lite) : NaN;
      for (const target of ["installstats", "postgres", "postgres-2"] as const) {
        const c = representative(target, mode, connections);
        if (!c) continue;
        const own = cpuPerRequest(c);
        const pgUs = pgCpuPerRequest(c);
        const together = own + (Number.isNaN(pgUs) ? 0 : pgUs);
        const name =
          target === "installstats" ? "SQLite" : target === "postgres" ? "PostgreSQL, 1 node" : "PostgreSQL, 2 nodes";
        const v = c.verification;
        const acked = v ? v.ackedStarts + v.ackedUpdates : NaN;
        line(
          `| ${mode} | ${connections} | ${name} | ${fmt(c.wrk.rps)} | ${ms(c.wrk.latency_us.p50)} | ${ms(c.wrk.latency_us.p99)} | ${b ? fmt(c.wrk.rps / b.wrk.rps, 2) : "n/a"} | ${lite ? fmt(c.wrk.rps / lite.wrk.rps, 2) : "n/a"} | ${fmt(own)} | ${target === "installstats" ? "-" : fmt(pgUs)} | ${fmt(together)} | ${target === "installstats" ? "1.00" : fmt(together / liteCpu, 2)} | ${fmt(acked)} | ${v ? fmt(missingOf(v)) : "-"} |`,
        );
      }
    }
    line();
    line(
      "With two nodes the p50 and p99 are the higher of the two load generators' (wrk reports percentiles, not histograms). On PostgreSQL a report's CPU is shared between the node (HTTP, parsing, the domain's decisions) and the server (locks, lookups, the row, the rollup counters); on SQLite both are in the one process.",
    );
    line();
  }

  // ---------------------------------------------------------------- details
  line("## Per run");
  line();
  line(
    "| target | mode | conns | rep | req/s | server CPU % of a core | PostgreSQL CPU % | wrk CPU % | other processes CPU % | reports per commit | batches over 10 ms | WAL restart holds (ms in all) | peak RSS MB (VmHWM) | acked starts | acked updates | missing | unexpected answers | exit |",
  );
  line("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|");
  for (const c of r.cells) {
    const v = c.verification;
    const u = c.unexpected;
    const odd =
      Object.entries(u)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${k.replace(/^n_/, "")}: ${n}`)
        .join(", ") || "none";
    const acked = (kind: "n_created" | "n_updated") => sumCounts([c.wrk, ...(c.warmup ? [c.warmup] : [])], kind);
    line(
      `| ${c.target} | ${c.mode} | ${c.connections} | ${c.rep + 1} | ${fmt(c.wrk.rps)} | ${fmt(c.serverCpuPct)} | ${c.pgCpuPct === undefined || c.pgCpuPct === null ? "-" : fmt(c.pgCpuPct)} | ${fmt(c.wrkCpuPct)} | ${fmt(c.otherCpuPct)}${c.stealPct >= 5 ? ` (steal ${fmt(c.stealPct)})` : ""} | ${c.avgBatch === null ? "-" : fmt(c.avgBatch, 1)} | ${c.tail ? fmt(c.tail.batchesOver10ms) : "-"} | ${c.tail ? `${fmt(c.tail.holds)} (${fmt(c.tail.holdMs)})` : "-"} | ${mb(c.hwmKb)} | ${fmt(acked("n_created"))} | ${fmt(acked("n_updated"))} | ${v ? fmt(missingOf(v)) : "-"} | ${odd} | ${c.exitCode ?? "killed"} |`,
    );
  }
  line();
  line(
    "CPU % is of one core (the machine has " +
      r.machine.nproc +
      "). other processes = machine-wide user+system CPU (/proc/stat, irq and softirq left out) minus server, wrk and harness during the measured run: anything well above a few % means the run shared the CPUs with someone else's work and its numbers are low. batches over 10 ms and WAL restart holds come from the server's /metrics (installstats_write_commit_seconds, installstats_wal_restart_hold_seconds): the writer's stalls, which set the latency tail (a batch's time includes a hold just before it). acked = 2xx answers recorded by wrk's response() (warm-up included). missing = acknowledged start reports absent from the database plus acknowledged updates whose record is absent or not final, checked read-only after the server stopped. The baseline stores nothing, so it has no missing column.",
  );
  line();

  // ---------------------------------------------------------------- correctness
  const allVerifications: { what: string; v: Verification }[] = storingCells
    .filter((c) => c.verification)
    .map((c) => ({ what: `${c.target} ${c.mode} c=${c.connections}`, v: c.verification! }));
  if (r.fill?.verification) allVerifications.push({ what: "fill", v: r.fill.verification });
  let totalAcked = 0;
  let totalMissing = 0;
  for (const { what, v } of allVerifications) {
    totalAcked += v.ackedStarts + v.ackedUpdates;
    totalMissing += missingOf(v);
    if (v.missingStarts > 0)
      failures.push(
        `${what}: ${v.missingStarts} acknowledged start reports missing (e.g. ${v.examplesMissing.slice(0, 3).join(", ")})`,
      );
    if (v.updatesNotApplied > 0)
      failures.push(`${what}: ${v.updatesNotApplied} acknowledged status updates not applied`);
    if (v.unrecordedAcks > 0)
      failures.push(
        `${what}: ${v.unrecordedAcks} acknowledgements counted by wrk but not in its id files (check incomplete)`,
      );
  }
  for (const c of storingCells)
    if (c.exitCode !== 0)
      failures.push(`${c.target} ${c.mode} c=${c.connections}: server exit ${c.exitCode ?? "killed"} on SIGTERM`);
  if (r.fill && r.fill.exitCode !== 0) failures.push(`fill: server exit ${r.fill.exitCode ?? "killed"} on SIGTERM`);

  // ---------------------------------------------------------------- targets
  const peakHwm = Math.max(0, ...storingCells.map((c) => c.hwmKb), r.fill?.hwmKb ?? 0);
  targetRows.push({
    name: `peak RSS of the server < ${TARGETS.peakRssMb} MB (all runs and the fill)`,
    measured: `${mb(peakHwm)} MB`,
    met: peakHwm / 1024 < TARGETS.peakRssMb,
  });
  if (r.fill?.pgStorage) {
    const s = r.fill.pgStorage;
    targetRows.push({
      name: `PostgreSQL: bytes per execution (every table and index) at ${fmt(TARGETS.bytesPerRecordAt)} executions (the SQLite target, ${TARGETS.bytesPerRecord}, for reference)`,
      measured: `${fmt(s.bytesPerExecution, 1)} B at ${fmt(s.executions)} executions`,
      met: s.executions >= TARGETS.bytesPerRecordAt ? s.bytesPerExecution < TARGETS.bytesPerRecord : null,
    });
  }
  if (r.fill?.storage) {
    const bpr = r.fill.storage.bytesPerRecord;
    const atSize = r.fill.storage.rows >= TARGETS.bytesPerRecordAt;
    targetRows.push({
      name: `bytes on disk per record < ${TARGETS.bytesPerRecord}, indexes included, at ${fmt(TARGETS.bytesPerRecordAt)} records`,
      measured: `${fmt(bpr, 1)} B at ${fmt(r.fill.storage.rows)} records${atSize ? "" : " (smaller fill: not the target size)"}`,
      met: atSize ? bpr < TARGETS.bytesPerRecord : null,
    });
  }
  const startupMedian = median(r.startup.healthMs);
  targetRows.push({
    name: `start-up on an empty database: listening within ${TARGETS.startupMs} ms (spawn to GET /healthz 200, median)`,
    measured: `median ${fmt(startupMedian, 1)} ms, p95 ${fmt(quantile(r.startup.healthMs, 95), 1)} ms`,
    met: r.startup.healthMs.length > 0 ? startupMedian < TARGETS.startupMs : null,
  });
  targetRows.push({
    name: "zero acknowledged reports missing after each run",
    measured: `${fmt(totalMissing)} missing of ${fmt(totalAcked)} acknowledged`,
    met: failures.length === 0,
  });

  line("## Targets");
  line();
  line("| target | measured | met |");
  line("|---|---|---|");
  for (const t of targetRows) line(`| ${t.name} | ${t.measured} | ${t.met === null ? "-" : yes(t.met)} |`);
  line();
  if (failures.length > 0) {
    line("**Correctness failures:**");
    line();
    for (const f of failures) line(`- ${f}`);
    line();
  }

  // ---------------------------------------------------------------- fill / storage
  if (r.fill?.pgStorage) renderPgFill(r.fill, r.fill.pgStorage);
  function renderPgFill(f: FillResult, s: PgStorage) {
    line("## Fill into PostgreSQL and bytes per execution");
    line();
    const lat = f.wrk
      ? `, ${fmt(f.wrk.rps)} req/s overall, p50 ${ms(f.wrk.latency_us.p50)} ms, p99 ${ms(f.wrk.latency_us.p99)} ms`
      : "";
    const verified = f.verification
      ? `Verified: ${fmt(f.verification.ackedStarts + f.verification.ackedUpdates)} acknowledged, ${fmt(missingOf(f.verification))} missing.`
      : `**Not verified: ${f.interrupted ?? "no acknowledgements"}.**`;
    line(
      `One node at ${f.connections} connections into a fresh database until it held about ${fmt(f.target)} executions: ${fmt(s.executions)} executions in ${fmt(f.seconds, 1)} s${lat}; node CPU ${fmt(f.serverCpuPct)}% of a core, PostgreSQL ${f.pgCpuPct === null || f.pgCpuPct === undefined ? "n/a" : `${fmt(f.pgCpuPct)}%`}, other processes ${fmt(f.otherCpuPct)}%, node peak RSS ${mb(f.hwmKb)} MB. ${verified}`,
    );
    line();
    line(
      `**Bytes per execution: ${fmt(s.bytesPerExecution, 1)}** (every table and index of the schema, pg_table_size + pg_relation_size after VACUUM ANALYZE, / ${fmt(s.executions)} executions; the whole database with its catalogs: ${fmt(s.databaseBytes / 1e6, 1)} MB).`,
    );
    line();
    line("| table | table (heap + TOAST) MB | indexes MB | bytes per execution | indexes |");
    line("|---|---:|---:|---:|---|");
    for (const t of s.tables) {
      const idx = t.indexes.reduce((a, i) => a + i.bytes, 0);
      line(
        `| ${t.name} | ${fmt(t.tableBytes / 1e6, 1)} | ${fmt(idx / 1e6, 1)} | ${fmt((t.tableBytes + idx) / s.executions, 1)} | ${t.indexes.map((i) => `${i.name} ${fmt(i.bytes / s.executions, 1)}`).join(", ")} |`,
      );
    }
    line();
    if (s.updates?.length) {
      line(
        `Rows updated during the fill, and how many of them in place (HOT: no new index entries): ${s.updates.map((u) => `${u.name} ${fmt(u.updated)} (${pct(u.hot / u.updated)} HOT)`).join(", ")}.`,
      );
      line();
    }
  }
  if (r.fill?.storage) {
    const f = r.fill;
    const s = f.storage!;
    line("## Fill and bytes per record");
    line();
    const lat = f.wrk
      ? `, ${fmt(f.wrk.rps)} req/s overall, p50 ${ms(f.wrk.latency_us.p50)} ms, p99 ${ms(f.wrk.latency_us.p99)} ms`
      : "";
    const verified = f.verification
      ? `Verified: ${fmt(f.verification.ackedStarts)} acknowledged, ${fmt(f.verification.missingStarts)} missing.`
      : `**Not verified: ${f.interrupted ?? "no acknowledgements"}.**`;
    line(
      `Start reports at ${f.connections} connections into a fresh database until it held ${fmt(f.target)} records: ${fmt(s.rows)} records in ${fmt(f.seconds, 1)} s (${fmt(f.rateFirstTenth)} records/s over the first tenth, ${fmt(f.rateLastTenth)} records/s over the last tenth${lat}), server CPU ${fmt(f.serverCpuPct)}% of a core, other processes ${fmt(f.otherCpuPct)}%, peak RSS ${mb(f.hwmKb)} MB. ${verified}`,
    );
    line();
    if (f.rssByTenth) {
      line(
        `Server RSS (MB) as the database passed each tenth of the fill: ${f.rssByTenth.map((kb) => mb(kb)).join(", ")}.`,
      );
      line();
    }
    const live = f.liveFiles ?? { db: NaN, wal: NaN, shm: NaN };
    line(
      `Files while the server ran (just before SIGTERM): db ${fmt(live.db / 1e6, 1)} MB, wal ${fmt(live.wal / 1e6, 1)} MB, shm ${fmt(live.shm / 1e6, 2)} MB. After the server stopped: db ${fmt(s.before.db / 1e6, 1)} MB, wal ${fmt(s.before.wal / 1e6, 1)} MB; after \`wal_checkpoint(TRUNCATE)\`: db ${fmt(s.after.db / 1e6, 1)} MB, wal ${fmt(s.after.wal / 1e6, 1)} MB.`,
    );
    line();
    line(
      `**Bytes per record: ${fmt(s.bytesPerRecord, 1)}** ((db + wal) / ${fmt(s.rows)} records; page size ${s.pageSize}, ${fmt(s.pageCount)} pages, ${fmt(s.freelistCount)} free).`,
    );
    line();
    if (s.objects) {
      line(
        "| table / index (dbstat) | pages | MB | bytes per record | payload bytes per record | unused bytes per record |",
      );
      line("|---|---:|---:|---:|---:|---:|");
      for (const o of s.objects) {
        line(
          `| ${o.name} | ${fmt(o.pages)} | ${fmt(o.bytes / 1e6, 1)} | ${fmt(o.bytes / s.rows, 1)} | ${fmt(o.payload / s.rows, 1)} | ${fmt(o.unused / s.rows, 1)} |`,
        );
      }
      line();
    } else {
      line("(dbstat is not compiled into this SQLite: no per-table breakdown)");
      line();
    }
  }

  // ---------------------------------------------------------------- start-up
  const st = r.startup;
  line("## Start-up");
  line();
  line(`${st.runs} spawns of the binary, each on a new empty database file (migrations applied at start-up):`);
  const lo = (v: number[]) => (v.length ? Math.min(...v) : NaN);
  const hi = (v: number[]) => (v.length ? Math.max(...v) : NaN);
  line();
  line("| from spawn to | median ms | p95 ms | min ms | max ms |");
  line("|---|---:|---:|---:|---:|");
  line(
    `| the "listening on" line on stdout | ${fmt(median(st.lineMs), 1)} | ${fmt(quantile(st.lineMs, 95), 1)} | ${fmt(lo(st.lineMs), 1)} | ${fmt(hi(st.lineMs), 1)} |`,
  );
  line(
    `| the first GET /healthz answered 200 | ${fmt(median(st.healthMs), 1)} | ${fmt(quantile(st.healthMs, 95), 1)} | ${fmt(lo(st.healthMs), 1)} | ${fmt(hi(st.healthMs), 1)} |`,
  );
  line();
  const badExits = st.exitCodes.filter((c) => c !== 0).length;
  if (badExits > 0) line(`${badExits} of the start-up runs did not exit 0 on SIGTERM.`), line();

  // ---------------------------------------------------------------- response() cost
  const p = r.responseProbe;
  if (p.with.length > 0 && p.without.length > 0) renderProbe();
  function renderProbe() {
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const rpsWith = mean(p.with.map((c) => c.wrk.rps));
    const rpsWithout = mean(p.without.map((c) => c.wrk.rps));
    // wrk's own CPU per answered request: the direct cost of the callback, independent of the server.
    const usPerReq = (cs: CellResult[]) => mean(cs.map((c) => (c.wrk.cpuS * 1e6) / c.wrk.requests));
    const cost = 1 - rpsWith / rpsWithout;
    line("## What wrk's Lua response() callback costs");
    line();
    line(
      `Baseline server, start reports, ${p.connections} connections, ${p.with.length} alternated pair(s) of runs with and without response() (the callback parses every answer and writes the acknowledged id to a file):`,
    );
    line();
    line("| wrk script | req/s (each run) | mean req/s | p99 ms | wrk CPU % | wrk CPU µs per request |");
    line("|---|---|---:|---:|---:|---:|");
    for (const [name, cs] of [
      ["with response()", p.with],
      ["without response()", p.without],
    ] as const) {
      line(
        `| ${name} | ${cs.map((c) => fmt(c.wrk.rps)).join(", ")} | ${fmt(mean(cs.map((c) => c.wrk.rps)))} | ${fmt(mean(cs.map((c) => c.wrk.latency_us.p99)) / 1000, 2)} | ${fmt(mean(cs.map((c) => c.wrkCpuPct)))} | ${fmt(usPerReq(cs), 1)} |`,
      );
    }
    line();
    line(
      `Throughput with the callback is ${cost >= 0 ? `${(cost * 100).toFixed(1)}% lower` : `${(-cost * 100).toFixed(1)}% higher (noise)`}; it costs wrk ${fmt(usPerReq(p.with) - usPerReq(p.without), 1)} µs of CPU per request. Against installstats (a few thousand req/s) that is negligible; against the baseline it takes CPU the baseline server could use, so it lowers the baseline a little and flatters the ratios by at most that much. Every measured row uses response() on both sides.`,
    );
    line();
  }

  if (r.harnessErrors && r.harnessErrors.length > 0) {
    line("## Incomplete run");
    line();
    line("These phases failed and are missing from the tables above:");
    line();
    for (const e of r.harnessErrors) line(`- ${e}`);
    line();
  }

  // ---------------------------------------------------------------- machine and notes
  const m = r.machine;
  line("## Machine");
  line();
  line(`- ${m.nproc} CPUs (nproc), ${m.cpuModel}, ${fmt(m.memGiB, 1)} GiB RAM, Linux ${m.kernel}`);
  line(`- Bun ${m.bun}, SQLite ${m.sqlite}${m.postgres ? `, PostgreSQL ${m.postgres}` : ""}, ${m.wrk}`);
  line(`- databases in ${m.workDir} (${m.workFs}); load generator, server and harness share the machine`);
  const disturbed = r.cells.filter((c) => c.otherCpuPct >= 20);
  const waited = r.cells.reduce((n, c) => n + c.quietWaitS, 0);
  line(
    `- other processes during the measured runs: median ${fmt(median(r.cells.map((c) => c.otherCpuPct)))}%, max ${fmt(r.cells.length ? Math.max(...r.cells.map((c) => c.otherCpuPct)) : NaN)}% of a core; ${disturbed.length} of ${r.cells.length} runs shared the machine with >= 20% of a core of someone else's work${disturbed.length > 0 ? ` (${disturbed.map((c) => `${c.target} ${c.mode} c=${c.connections}${r.settings.repeat > 1 ? ` rep ${c.rep + 1}` : ""}`).join(", ")})` : ""}; ${fmt(waited)} s spent waiting for a quiet machine (--quiet-wait ${r.settings.quietWaitS})`,
  );
  line(
    `- load average before ${m.loadBefore.map((x) => x.toFixed(2)).join(" ")}, after ${m.loadAfter.map((x) => x.toFixed(2)).join(" ")}`,
  );
  line();
  line(
    "Notes: wrk's Lua API gives no connection identity, so in mixed mode the status update for an id is sent after that id's 2xx by the same wrk thread, over whichever of the thread's keep-alive connections is free next (real clients use a new curl connection per request anyway); updates therefore always hit an existing record (200), never the held path. Bodies are valid JSON (the repair path is not exercised).",
  );
  return { markdown: out.join("\n"), correctnessFailures: failures };
}

function sumCounts(results: WrkResult[], key: "n_created" | "n_updated"): number {
  let n = 0;
  for (const r of results) for (const t of r.threads) n += t[key];
  return n;
}
