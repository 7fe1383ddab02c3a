// Building blocks of scripts/bench-ingest.ts: child processes that are always reaped, servers that
// announce their address on stdout, wrk runs, memory/CPU sampling from /proc, and the checks of
// the database after a run.
import { Database } from "bun:sqlite";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { encodeId } from "../../src/store/sqlite/ids.ts";

// ------------------------------------------------------------------ child processes

type Child = Bun.Subprocess<
  "ignore" | "pipe",
  "pipe" | "ignore" | number | Bun.BunFile,
  "pipe" | "ignore" | number | Bun.BunFile
>;

/** Every child the harness starts; all of them are SIGKILLed on exit, whatever the reason. */
const children = new Set<Child>();

export function track<T extends Child>(proc: T): T {
  children.add(proc);
  void proc.exited.then(() => children.delete(proc));
  return proc;
}

export function killAllChildren(): void {
  for (const proc of children) {
    try {
      proc.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  children.clear();
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves with the process's exit code, or null if it did not exit within `ms` (it is then SIGKILLed). */
export async function exitWithin(proc: Child, ms: number): Promise<number | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  const code = await Promise.race([proc.exited, timeout]);
  clearTimeout(timer);
  if (code === null) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
  return code;
}

export interface Listening {
  proc: Bun.Subprocess<"ignore", "pipe", number | Bun.BunFile>;
  url: string;
  pid: number;
  /** ms from spawn to the "listening on" line. */
  readyMs: number;
  spawnedAt: number;
}

/** Spawns a server that prints "... listening on http://HOST:PORT" on stdout, and waits for that line. */
export async function spawnListening(
  cmd: string[],
  opts: { stderrPath: string; timeoutMs: number; cwd?: string },
): Promise<Listening> {
  const spawnedAt = performance.now();
  const proc = track(
    Bun.spawn(cmd, {
      cwd: opts.cwd,
      stdin: "ignore",
      stdout: "pipe",
      stderr: Bun.file(opts.stderrPath),
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" },
    }),
  );
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let out = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), opts.timeoutMs);
  });
  try {
    for (;;) {
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        const readyMs = performance.now() - spawnedAt;
        reader.releaseLock();
        return { proc, url: match[1]!, pid: proc.pid, readyMs, spawnedAt };
      }
      const chunk = await Promise.race([reader.read(), timedOut]);
      if (chunk === "timeout")
        throw new Error(`${cmd[0]} did not report listening within ${opts.timeoutMs} ms; stdout: ${out}`);
      if (chunk.done) {
        const code = await proc.exited;
        const err = existsSync(opts.stderrPath) ? readFileSync(opts.stderrPath, "utf8").slice(-2000) : "";
        throw new Error(`${cmd.join(" ")} exited (${code}) before listening; stdout: ${out}; stderr: ${err}`);
      }
      out += decoder.decode(chunk.value);
    }
  } catch (e) {
    proc.kill("SIGKILL");
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/** SIGTERM, then wait (SIGKILL after `ms`). Returns the exit code, or null when it had to be killed. */
export async function stopGracefully(proc: Child, ms = 60_000): Promise<number | null> {
  proc.kill("SIGTERM");
  return exitWithin(proc, ms);
}

// ------------------------------------------------------------------ /proc sampling

export interface MemSample {
  rssKb: number;
  hwmKb: number;
}

export function readMem(pid: number): MemSample | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rss = /VmRSS:\s+(\d+)/.exec(status);
    const hwm = /VmHWM:\s+(\d+)/.exec(status);
    return { rssKb: Number(rss?.[1] ?? 0), hwmKb: Number(hwm?.[1] ?? 0) };
  } catch {
    return null;
  }
}

/** Samples VmRSS every `everyMs`; VmHWM (the kernel's own peak) is read at each sample too. */
export function memSampler(pid: number, everyMs = 50) {
  let peakRssKb = 0;
  let hwmKb = 0;
  const sample = () => {
    const m = readMem(pid);
    if (!m) return;
    peakRssKb = Math.max(peakRssKb, m.rssKb);
    hwmKb = Math.max(hwmKb, m.hwmKb);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  let finished = false;
  return {
    /** Takes a last sample (call it before stopping the process) and stops sampling; idempotent. */
    finish(): { peakRssKb: number; hwmKb: number } {
      if (!finished) sample();
      finished = true;
      clearInterval(timer);
      return { peakRssKb, hwmKb: Math.max(hwmKb, peakRssKb) };
    },
  };
}

const CLK_TCK = 100; // USER_HZ on Linux

/** CPU seconds (user + system) used so far by a process. */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return null;
  }
}

/**
 * Whole-machine CPU counters (seconds) from /proc/stat: busy (user+nice+system) and steal.
 * irq/softirq time is left out: on loopback most of it is our own traffic's network processing,
 * which would otherwise show up as someone else's load.
 */
export function machineCpu(): { busyS: number; stealS: number } {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , , , steal = 0] = fields;
  return { busyS: (user + nice + system) / CLK_TCK, stealS: steal / CLK_TCK };
}

/**
 * On a shared machine: waits until the CPU used by everyone else over a 1 s window is below
 * `maxOtherPct` (% of one core), for at most `maxWaitS`. Call it while none of our own children
 * is busy. Returns the seconds waited and the last measured share.
 */
export async function waitForQuiet(
  maxOtherPct: number,
  maxWaitS: number,
): Promise<{ waitedS: number; otherPct: number; quiet: boolean }> {
  const started = performance.now();
  let otherPct = NaN;
  for (;;) {
    const m0 = machineCpu();
    const self0 = process.cpuUsage();
    await sleep(1000);
    const self = process.cpuUsage(self0);
    otherPct = Math.max(0, 100 * (machineCpu().busyS - m0.busyS - (self.user + self.system) / 1e6));
    const waitedS = (performance.now() - started) / 1000;
    if (otherPct < maxOtherPct) return { waitedS, otherPct, quiet: true };
    if (waitedS >= maxWaitS) return { waitedS, otherPct, quiet: false };
  }
}

// ------------------------------------------------------------------ wrk

export type Mode = "start" | "mixed" | "telemetry";

export interface WrkThreadCounts {
  tid: number;
  sent_start: number;
  sent_update: number;
  n_created: number;
  n_updated: number;
  n_duplicate: number;
  n_held: number;
  n_other2xx: number;
  n_409: number;
  n_4xx: number;
  n_5xx: number;
  n_noid: number;
}

export interface WrkSummary {
  requests: number;
  duration_us: number;
  bytes: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latency_us: {
    min: number;
    mean: number;
    stdev: number;
    max: number;
    p50: number;
    p90: number;
    p99: number;
    p999: number;
  };
  threads: WrkThreadCounts[];
}

export interface WrkResult extends WrkSummary {
  rps: number;
  /** CPU seconds wrk itself used (user + system). */
  cpuS: number;
  wallS: number;
  stdout: string;
  tag: string;
  record: boolean;
}

export interface WrkRun {
  lua: string;
  url: string;
  threads: number;
  connections: number;
  durationS: number;
  mode: Mode;
  nonce: number;
  outdir: string;
  tag: string;
  record: boolean;
  /** Polled every pollMs while wrk runs; when it returns true, wrk is stopped with SIGINT (it still reports). */
  stopWhen?: () => Promise<boolean> | boolean;
  pollMs?: number;
}

export async function runWrk(run: WrkRun): Promise<WrkResult> {
  const cmd = [
    "wrk",
    `-t${run.threads}`,
    `-c${run.connections}`,
    `-d${run.durationS}s`,
    "--timeout",
    "10s",
    "-s",
    run.lua,
    run.url,
    "--",
    run.mode,
    String(run.nonce),
    run.outdir,
    run.tag,
    run.record ? "1" : "0",
  ];
  const started = performance.now();
  const proc = track(Bun.spawn(cmd, { stdin: "ignore", stdout: "pipe", stderr: "pipe" }));
  const stdoutText = new Response(proc.stdout).text();
  const stderrText = new Response(proc.stderr).text();
  let stopping = false;
  let poller: ReturnType<typeof setInterval> | undefined;
  if (run.stopWhen) {
    let busy = false;
    poller = setInterval(async () => {
      if (busy || stopping) return;
      busy = true;
      try {
        if (await run.stopWhen!()) {
          stopping = true;
          proc.kill("SIGINT");
        }
      } finally {
        busy = false;
      }
    }, run.pollMs ?? 250);
  }
  // wrk ends by itself after -d; give it generous slack before calling it hung.
  const code = await exitWithin(proc, (run.durationS + 60) * 1000);
  clearInterval(poller);
  const wallS = (performance.now() - started) / 1000;
  const stdout = await stdoutText;
  if (code !== 0)
    throw new Error(`wrk ${code === null ? "hung and was killed" : `exited ${code}`}: ${stdout} ${await stderrText}`);
  const line = stdout.split("\n").find((l) => l.startsWith("BENCHJSON "));
  if (!line) throw new Error(`wrk printed no BENCHJSON summary: ${stdout} ${await stderrText}`);
  const summary = JSON.parse(line.slice("BENCHJSON ".length)) as WrkSummary;
  const usage = proc.resourceUsage();
  const cpuS = usage ? Number(usage.cpuTime.total) / 1e6 : NaN;
  return {
    ...summary,
    rps: summary.requests / (summary.duration_us / 1e6),
    cpuS,
    wallS,
    stdout,
    tag: run.tag,
    record: run.record,
  };
}

/** The random_ids a wrk run recorded as acknowledged, read from its per-thread files. */
export function readAcks(outdir: string, tag: string, threads: number, kind: "start" | "update"): string[] {
  const ids: string[] = [];
  for (let t = 0; t < threads; t++) {
    const path = join(outdir, `${tag}-t${t}-${kind}.txt`);
    if (!existsSync(path)) continue;
    for (const line of readFileSync(path, "utf8").split("\n")) if (line !== "") ids.push(line);
  }
  return ids;
}

export function sumThreads(results: WrkResult[], key: keyof Omit<WrkThreadCounts, "tid">): number {
  let n = 0;
  for (const r of results) for (const t of r.threads) n += t[key];
  return n;
}

// ------------------------------------------------------------------ the database after a run

export interface Verification {
  ackedStarts: number;
  missingStarts: number;
  ackedUpdates: number;
  /** Acknowledged updates whose record is absent or not final. */
  updatesNotApplied: number;
  /** Ids counted by wrk's response() but missing from its files (files cut short): the check is then incomplete. */
  unrecordedAcks: number;
  rows: number;
  heldUpdates: number;
  rejectedReports: number;
  examplesMissing: string[];
}

/** Opens the database read-only after the server stopped and looks up every acknowledged id. */
export function verifyAcks(
  dbPath: string,
  starts: string[],
  updates: string[],
  expectedStarts: number,
  expectedUpdates: number,
): Verification {
  const db = new Database(dbPath, { readonly: true });
  try {
    // Ids are stored as 16 bytes when they are UUIDs (src/store/sqlite/ids.ts): looked up as stored.
    const q = db.query<{ outcome: string }, [string | Uint8Array]>(
      "SELECT outcome FROM executions WHERE execution_id = ?",
    );
    const find = { get: (id: string) => q.get(encodeId(id)) };
    const examplesMissing: string[] = [];
    let missingStarts = 0;
    for (const id of starts) {
      if (find.get(id) === null) {
        missingStarts++;
        if (examplesMissing.length < 5) examplesMissing.push(id);
      }
    }
    let updatesNotApplied = 0;
    for (const id of updates) {
      const row = find.get(id);
      if (row === null || row.outcome === "in_progress") {
        updatesNotApplied++;
        if (examplesMissing.length < 10)
          examplesMissing.push(`${id} (update ${row === null ? "record missing" : "not final"})`);
      }
    }
    const count = (sql: string) => db.query<{ n: number }, []>(sql).get()?.n ?? 0;
    return {
      ackedStarts: starts.length,
      missingStarts,
      ackedUpdates: updates.length,
      updatesNotApplied,
      unrecordedAcks: Math.max(0, expectedStarts - starts.length) + Math.max(0, expectedUpdates - updates.length),
      rows: count("SELECT count(*) AS n FROM executions"),
      heldUpdates: count("SELECT count(*) AS n FROM held_reports"),
      rejectedReports: count("SELECT count(*) AS n FROM rejected_reports"),
      examplesMissing,
    };
  } finally {
    db.close();
  }
}

export interface FileSizes {
  db: number;
  wal: number;
  shm: number;
}

export function fileSizes(dbPath: string): FileSizes {
  const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
  return { db: size(dbPath), wal: size(`${dbPath}-wal`), shm: size(`${dbPath}-shm`) };
}

export interface StorageBreakdown {
  rows: number;
  before: FileSizes;
  after: FileSizes;
  pageSize: number;
  pageCount: number;
  freelistCount: number;
  /** Per table and index: pages, bytes on disk, payload bytes (dbstat). Null when dbstat is missing. */
  objects: { name: string; pages: number; bytes: number; payload: number; unused: number }[] | null;
  bytesPerRecord: number;
}

/**
 * After the server stopped: checkpoint whatever is left in the WAL into the main file
 * (wal_checkpoint(TRUNCATE)), then measure. `before` is what the server left behind at exit.
 */
export function storageBreakdown(dbPath: string): StorageBreakdown {
  const before = fileSizes(dbPath);
  if (before.wal > 0) {
    const rw = new Database(dbPath);
    try {
      rw.run("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      rw.close();
    }
  }
  const after = fileSizes(dbPath);
  const db = new Database(dbPath, { readonly: true });
  try {
    const one = <T>(sql: string) => db.query<T, []>(sql).get() as T;
    const rows = one<{ n: number }>("SELECT count(*) AS n FROM executions").n;
    const pageSize = one<{ page_size: number }>("PRAGMA page_size").page_size;
    const pageCount = one<{ page_count: number }>("PRAGMA page_count").page_count;
    const freelistCount = one<{ freelist_count: number }>("PRAGMA freelist_count").freelist_count;
    let objects: StorageBreakdown["objects"] = null;
    try {
      objects = db
        .query<{ name: string; pages: number; bytes: number; payload: number; unused: number }, []>(
          "SELECT name, count(*) AS pages, sum(pgsize) AS bytes, sum(payload) AS payload, sum(unused) AS unused FROM dbstat GROUP BY name ORDER BY bytes DESC",
        )
        .all();
    } catch {
      objects = null; // SQLite built without SQLITE_ENABLE_DBSTAT_VTAB
    }
    return {
      rows,
      before,
      after,
      pageSize,
      pageCount,
      freelistCount,
      objects,
      bytesPerRecord: rows > 0 ? (after.db + after.wal) / rows : NaN,
    };
  } finally {
    db.close();
  }
}

// ------------------------------------------------------------------ small statistics

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

/** The server's own counters that explain a latency tail: holds for WAL restarts, slow batches. */
export interface TailCounters {
  holds: number;
  holdSeconds: number;
  batches: number;
  batchesUnder10ms: number;
}

export async function tailCounters(url: string): Promise<TailCounters | null> {
  try {
    const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    const value = (series: string) =>
      Number(
        text
          .split("\n")
          .find((l) => l.startsWith(`${series} `))
          ?.slice(series.length + 1) ?? 0,
      );
    return {
      holds: value("installstats_wal_restart_hold_seconds_count"),
      holdSeconds: value("installstats_wal_restart_hold_seconds_sum"),
      batches: value("installstats_write_commit_seconds_count"),
      batchesUnder10ms: value('installstats_write_commit_seconds_bucket{le="0.01"}'),
    };
  } catch {
    return null;
  }
}

export async function healthStats(url: string): Promise<{ writes: number; batches: number } | null> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) });
    const body = (await res.json()) as { storage?: { writes?: number; batches?: number } };
    return { writes: body.storage?.writes ?? 0, batches: body.storage?.batches ?? 0 };
  } catch {
    return null;
  }
}
