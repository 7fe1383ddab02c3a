#!/usr/bin/env bun
// Performance guard: builds a reference commit's binary and the working tree's, measures both in
// one run on this machine and fails when the working tree lost more than --threshold (10%) on any
// of: server CPU per ingested report (start reports and /telemetry lifecycles, medians over
// --rounds), peak RSS under that load, idle RSS of an empty server, seed CPU time and peak RSS
// (medians over --rounds, alternated) and bytes per install after `seed --records N`, and the
// p95 of the heaviest aggregate read over the seeded data (each aggregate's median over --rounds,
// alternated). Prints every figure, both sides and their ratio.
//
//   bun run bench:guard [--against <commit>] [--current <commit>] [--quick] [--rounds 2] [--duration 10]
//                       [--warmup 5] [--connections 64] [--records 200000] [--profile upload] [--threshold 0.10] [--keep]
//
// --against defaults to where this branch left main (git merge-base HEAD main): what the branch
// changed. On main itself that is HEAD, so there it must be given (the previous release or stop).
// --current <commit> measures that commit instead of the working tree (bisecting a regression:
// one commit against another); --quick measures ingestion and memory only (no seed, no reads).
// --profile is passed to `seed` of each binary whose `seed --help` lists --profile; one without
// it seeds /upload installs only, which is what `--profile upload` makes, the default here, so
// both sides seed the same data. A profile other than upload needs both sides to have --profile.
// The reference is checked out in a temporary git worktree (bun install, bun run build); both
// binaries are compiled the same way. Runs alternate between the two so drift on a shared machine
// hits both. CPU figures are /proc utime+stime of the server (every thread) per request, which
// holds up far better than throughput when other processes share the cores.
//
// Exit code: 0 all within the threshold, 1 a loss past it, 2 the harness failed (a build, a
// server that would not start, a bad flag). Needs git, wrk (Debian: apt-get install -y wrk).
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { Database } from "bun:sqlite";
import {
  cpuSeconds,
  killAllChildren,
  memSampler,
  readMem,
  runWrk,
  sleep,
  spawnListening,
  stopGracefully,
  sumThreads,
  track,
  type Mode,
} from "./bench/lib.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const LUA = join(ROOT, "scripts/bench/ingest.lua");

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    against: { type: "string" },
    current: { type: "string" },
    quick: { type: "boolean", default: false },
    rounds: { type: "string", default: "2" },
    duration: { type: "string", default: "10" },
    warmup: { type: "string", default: "5" },
    connections: { type: "string", default: "64" },
    records: { type: "string", default: "200000" },
    profile: { type: "string", default: "upload" },
    threshold: { type: "string", default: "0.10" },
    keep: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

function usage(message: string): never {
  console.error(`bench-guard: ${message}`);
  process.exit(2);
}

if (opt.help) {
  const text = await Bun.file(new URL(import.meta.url).pathname).text();
  const lines = text.split("\n").slice(1);
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

const whole = (name: string, min: number): number => {
  const n = Number(opt[name as keyof typeof opt]);
  if (!Number.isInteger(n) || n < min) usage(`--${name} must be a whole number >= ${min}`);
  return n;
};
const rounds = whole("rounds", 2);
const durationS = whole("duration", 1);
const warmupS = whole("warmup", 0);
const connections = whole("connections", 2);
const records = whole("records", 1000);
const threshold = Number(opt.threshold);
if (!(threshold > 0 && threshold < 1)) usage("--threshold must be a fraction between 0 and 1, e.g. 0.10");
if (!Bun.which("wrk")) usage("wrk is not installed (Debian: apt-get install -y wrk)");

const log = (msg: string) => process.stderr.write(`[guard ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function git(args: string[], cwd = ROOT): string {
  const r = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
}

/** A commit named on the command line, as its full hash. */
function commitOf(flag: string, name: string): string {
  try {
    return git(["rev-parse", "--verify", `${name}^{commit}`]);
  } catch {
    usage(`--${flag} ${name} is not a commit of this repository (git rev-parse could not find it)`);
  }
}

/** The commit to compare with, and how it was chosen. */
function reference(): { commit: string; how: string } {
  if (opt.against !== undefined) return { commit: commitOf("against", opt.against), how: `--against ${opt.against}` };
  let base: string;
  try {
    base = git(["merge-base", "HEAD", "main"]);
  } catch {
    usage("no --against given and no branch main to start from: give --against <commit>");
  }
  if (base === git(["rev-parse", "HEAD"]))
    usage("HEAD is on main's tip, so main is no reference: give --against <commit> (the previous release or stop)");
  return { commit: base, how: "git merge-base HEAD main" };
}

const work = mkdtempSync(join(tmpdir(), "bench-guard-"));
const refTree = join(work, "ref-tree");
const curTree = join(work, "current-tree");
let cleaned = false;
function cleanup(): void {
  if (cleaned) return;
  cleaned = true;
  killAllChildren();
  for (const tree of [refTree, curTree]) {
    if (!existsSync(tree)) continue;
    try {
      git(["worktree", "remove", "--force", tree]);
    } catch {
      rmSync(tree, { recursive: true, force: true });
      try {
        git(["worktree", "prune"]);
      } catch {
        // nothing registered
      }
    }
  }
  if (!opt.keep) rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    cleanup();
    process.exit(130);
  });
}

async function run(cmd: string[], cwd: string, what: string): Promise<void> {
  const proc = track(Bun.spawn(cmd, { cwd, stdout: "pipe", stderr: "pipe" }));
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0)
    throw new Error(`${what} failed (exit ${code}): ${(out + err).trim().split("\n").slice(-5).join(" | ")}`);
}

/** Compiles `tree` (its own scripts/build.ts, as that commit built itself) into `outfile`. */
async function build(tree: string, outfile: string): Promise<string> {
  await run(["bun", "scripts/build.ts", "--outfile", outfile], tree, `building ${tree}`);
  return outfile;
}

// ------------------------------------------------------------------ measurements

type Side = "reference" | "current";

interface Server {
  url: string;
  pid: number;
  stop: () => Promise<number | null>;
}

async function serve(bin: string, db: string, dir: string): Promise<Server> {
  const s = await spawnListening([bin, "serve", "--host", "127.0.0.1", "--port", "0", "--db", db], {
    stderrPath: join(dir, "serve.stderr.log"),
    timeoutMs: 60_000,
  });
  return { url: s.url, pid: s.pid, stop: () => stopGracefully(s.proc, 120_000) };
}

/** RSS of an empty server once its start-up work is done. */
async function idleRss(bin: string, dir: string): Promise<number> {
  mkdirSync(dir, { recursive: true });
  const s = await serve(bin, join(dir, "empty.db"), dir);
  try {
    await sleep(5000);
    return (readMem(s.pid)?.rssKb ?? NaN) / 1024;
  } finally {
    await s.stop();
  }
}

let nonce = Math.floor(Math.random() * 60000);

interface Ingestion {
  cpuUsPerRequest: number;
  requests: number;
  rps: number;
  p99Ms: number;
  peakRssMb: number;
  /** Answers that were not 2xx (a reference without /telemetry answers 404). */
  refused: number;
}

async function ingestion(bin: string, mode: Mode, dir: string): Promise<Ingestion> {
  mkdirSync(join(dir, "acks"), { recursive: true });
  const s = await serve(bin, join(dir, "ingest.db"), dir);
  const mem = memSampler(s.pid, 100);
  try {
    const base = { lua: LUA, url: s.url, threads: 2, connections, mode, outdir: join(dir, "acks"), record: true };
    if (warmupS > 0) await runWrk({ ...base, durationS: warmupS, tag: "warm", nonce: nonce++ });
    const cpu0 = cpuSeconds(s.pid)!;
    const w = await runWrk({ ...base, durationS, tag: "run", nonce: nonce++ });
    const cpu1 = cpuSeconds(s.pid)!;
    const refused =
      sumThreads([w], "n_4xx") + sumThreads([w], "n_5xx") + sumThreads([w], "n_409") + sumThreads([w], "n_noid");
    return {
      cpuUsPerRequest: (1e6 * (cpu1 - cpu0)) / w.requests,
      requests: w.requests,
      rps: w.rps,
      p99Ms: w.latency_us.p99 / 1000,
      peakRssMb: mem.finish().hwmKb / 1024,
      refused,
    };
  } finally {
    mem.finish();
    await s.stop();
  }
}

interface Seeded {
  db: string;
  wallS: number;
  cpuS: number;
  peakRssMb: number;
  bytesPerInstall: number;
}

/** The rounds' medians; the database (the same data every round) and its size of the last. */
function medianSeed(rounds: readonly Seeded[]): Seeded {
  const last = rounds.at(-1)!;
  return {
    db: last.db,
    wallS: median(rounds.map((s) => s.wallS)),
    cpuS: median(rounds.map((s) => s.cpuS)),
    peakRssMb: median(rounds.map((s) => s.peakRssMb)),
    bytesPerInstall: last.bytesPerInstall,
  };
}

/** Whether `bin seed` takes --profile (binaries before seed profiles seed /upload installs only). */
function seedHasProfile(bin: string): boolean {
  const r = Bun.spawnSync([bin, "seed", "--help"], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0)
    throw new Error(`${bin} seed --help failed (exit ${r.exitCode}): ${r.stderr.toString().trim().slice(-300)}`);
  return /^\s*--profile\b/m.test(r.stdout.toString());
}

/** The flags that make `bin seed` write the --profile data set. */
function seedProfileFlags(bin: string, side: Side): string[] {
  if (seedHasProfile(bin)) return ["--profile", opt.profile];
  if (opt.profile !== "upload")
    usage(`the ${side} binary's seed has no --profile (it seeds /upload installs only): use --profile upload`);
  return [];
}

async function seed(bin: string, profile: string[], dir: string): Promise<Seeded> {
  mkdirSync(dir, { recursive: true });
  const db = join(dir, "seeded.db");
  const started = performance.now();
  const proc = track(
    Bun.spawn([bin, "seed", "--records", String(records), ...profile, "--db", db], {
      stdout: "ignore",
      stderr: "pipe",
    }),
  );
  const mem = memSampler(proc.pid, 100);
  const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  const wallS = (performance.now() - started) / 1000;
  const peak = mem.finish();
  if (code !== 0) throw new Error(`seed failed (exit ${code}): ${err.trim().slice(-300)}`);
  const usage = proc.resourceUsage();
  const cpuS = usage ? Number(usage.cpuTime.total) / 1e6 : NaN;
  // What the files hold once the WAL is copied in: the database as it is kept.
  const sqlite = new Database(db);
  try {
    sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    sqlite.close();
  }
  const size = statSync(db).size + (existsSync(`${db}-wal`) ? statSync(`${db}-wal`).size : 0);
  // The kernel's own peak (VmHWM) when it was seen; else the sampled one.
  return { db, wallS, cpuS, peakRssMb: peak.hwmKb / 1024, bytesPerInstall: size / records };
}

/** Aggregates both versions answer; the guard compares the slowest of them (its p95). */
const AGGREGATES = [
  "/data/summary",
  "/api/stats/summary?days=365",
  "/api/stats/summary?days=30",
  "/api/stats/breakdown?by=os&days=365",
  "/api/stats/breakdown?by=nsapp&days=30",
  "/api/stats/timeseries?days=365",
];
const READS = 40;

/** p95 (ms) of each aggregate in AGGREGATES, over READS requests after 3 to warm up. */
async function reads(bin: string, seeded: Seeded, dir: string): Promise<Record<string, number>> {
  const s = await serve(bin, seeded.db, dir);
  try {
    await sleep(3000);
    const all: Record<string, number> = {};
    for (const path of AGGREGATES) {
      const times: number[] = [];
      for (let i = 0; i < READS + 3; i++) {
        const t0 = performance.now();
        const r = await fetch(`${s.url}${path}`);
        await r.arrayBuffer();
        if (!r.ok) throw new Error(`GET ${path} answered ${r.status}`);
        if (i >= 3) times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      all[path] = times[Math.min(times.length - 1, Math.ceil(0.95 * times.length) - 1)]!;
    }
    return all;
  } finally {
    await s.stop();
  }
}

// ------------------------------------------------------------------ report

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Row {
  metric: string;
  reference: number | null;
  current: number;
  unit: string;
  /** lower: a higher current figure is a loss. */
  better: "lower" | "higher";
  /** Only shown, never failing the run (a figure the reference does not have). */
  info?: boolean;
}

function render(rows: Row[]): { text: string; losses: string[] } {
  const losses: string[] = [];
  const fmt = (v: number | null) => (v === null || Number.isNaN(v) ? "n/a" : v >= 100 ? v.toFixed(0) : v.toFixed(2));
  const lines = ["| metric | reference | current | current / reference | verdict |", "|---|---:|---:|---:|---|"];
  for (const r of rows) {
    const ratio = r.reference ? r.current / r.reference : null;
    const loss = ratio === null ? false : r.better === "lower" ? ratio > 1 + threshold : ratio < 1 - threshold;
    const verdict =
      r.info || ratio === null ? "(shown only)" : loss ? `**LOSS** (> ${Math.round(threshold * 100)}%)` : "ok";
    if (loss && !r.info) losses.push(`${r.metric}: x${ratio!.toFixed(2)}`);
    lines.push(
      `| ${r.metric} | ${fmt(r.reference)} ${r.unit} | ${fmt(r.current)} ${r.unit} | ${ratio === null ? "n/a" : `x${ratio.toFixed(2)}`} | ${verdict} |`,
    );
  }
  return { text: lines.join("\n"), losses };
}

// ------------------------------------------------------------------ main

/** A commit checked out in a temporary worktree with its dependencies installed. */
async function checkout(tree: string, commit: string, what: string): Promise<string> {
  git(["worktree", "add", "--detach", tree, commit]);
  await run(["bun", "install", "--frozen-lockfile"], tree, `bun install (${what})`).catch(() =>
    run(["bun", "install"], tree, `bun install (${what})`),
  );
  return tree;
}

async function main(): Promise<number> {
  const ref = reference();
  const current = opt.current === undefined ? null : commitOf("current", opt.current);
  const head = current ? current.slice(0, 12) : git(["rev-parse", "--short", "HEAD"]);
  const dirty = current === null && git(["status", "--porcelain", "--untracked-files=no"]) !== "";
  log(
    `reference ${ref.commit.slice(0, 12)} (${ref.how}); current: ${current ? `commit ${head}` : `the working tree at ${head}${dirty ? " with uncommitted changes" : ""}`}`,
  );
  log(`work dir ${work}`);

  log("building the reference in a temporary worktree");
  const bins: Record<Side, string> = {
    reference: await build(await checkout(refTree, ref.commit, "reference"), join(work, "installstats-reference")),
    current: await build(
      current ? await checkout(curTree, current, "current") : ROOT,
      join(work, "installstats-current"),
    ),
  };
  const sides: Side[] = ["reference", "current"];
  // Checked before anything is measured: a profile one side cannot seed stops the run at once.
  const seedFlags = { reference: [], current: [] } as Record<Side, string[]>;
  for (const side of opt.quick ? [] : sides) seedFlags[side] = seedProfileFlags(bins[side], side);
  const order = (round: number): Side[] => (round % 2 === 0 ? sides : [...sides].reverse());

  log(`idle RSS: ${rounds} rounds`);
  const idle: Record<Side, number[]> = { reference: [], current: [] };
  for (let r = 0; r < rounds; r++)
    for (const side of order(r)) idle[side].push(await idleRss(bins[side], join(work, `idle-${side}-${r}`)));

  const modes: Mode[] = ["start", "telemetry"];
  const ingest: Record<Mode, Record<Side, Ingestion[]>> = {
    start: { reference: [], current: [] },
    mixed: { reference: [], current: [] },
    telemetry: { reference: [], current: [] },
  };
  for (let r = 0; r < rounds; r++) {
    for (const mode of modes) {
      for (const side of order(r)) {
        log(`ingestion ${mode}, ${connections} connections, round ${r + 1}/${rounds}: ${side}`);
        const m = await ingestion(bins[side], mode, join(work, `ingest-${mode}-${side}-${r}`));
        log(
          `  ${m.cpuUsPerRequest.toFixed(1)} µs CPU per request, ${m.rps.toFixed(0)} req/s, p99 ${m.p99Ms.toFixed(1)} ms, peak RSS ${m.peakRssMb.toFixed(0)} MB${m.refused ? `, ${m.refused} not accepted` : ""}`,
        );
        ingest[mode][side].push(m);
      }
    }
  }

  // Seeds alternate by round as the ingestion rounds do: one seed per side once measured its
  // CPU x1.11 of the other's with the same code (the machine's drift), x0.99 alternated.
  const seeds: Record<Side, Seeded[]> = { reference: [], current: [] };
  for (let r = 0; r < (opt.quick ? 0 : rounds); r++)
    for (const side of order(r)) {
      log(`seed --records ${records}, round ${r + 1}/${rounds}: ${side}`);
      const s = await seed(bins[side], seedFlags[side], join(work, `seed-${side}-${r}`));
      log(
        `  ${s.wallS.toFixed(1)} s (${s.cpuS.toFixed(1)} s CPU), peak RSS ${s.peakRssMb.toFixed(0)} MB, ${s.bytesPerInstall.toFixed(0)} bytes per install`,
      );
      seeds[side].push(s);
    }
  const seeded = {} as Record<Side, Seeded>;
  for (const side of opt.quick ? [] : sides) seeded[side] = medianSeed(seeds[side]);
  // Reads alternate by round too: one pass per side, the reference's first, flagged /data/summary
  // x1.33 and x1.38 with the same read code (the second pass slower; alternated by hand: no loss).
  const readRounds: Record<Side, Record<string, number>[]> = { reference: [], current: [] };
  for (let r = 0; r < (opt.quick ? 0 : rounds); r++)
    for (const side of order(r)) {
      log(`aggregate reads over the seeded data, round ${r + 1}/${rounds}: ${side}`);
      readRounds[side].push(await reads(bins[side], seeded[side], dirname(seeded[side].db)));
    }
  const readResults = {} as Record<Side, { heaviest: string; p95Ms: number; all: Record<string, number> }>;
  for (const side of opt.quick ? [] : sides) {
    // Each aggregate's median p95 over the rounds; the heaviest is the highest of those.
    const all = Object.fromEntries(AGGREGATES.map((p) => [p, median(readRounds[side].map((x) => x[p]!))]));
    const [heaviest, p95Ms] = Object.entries(all).sort((a, b) => b[1] - a[1])[0]!;
    readResults[side] = { heaviest, p95Ms, all };
  }

  // A reference without /telemetry (older than the current clients' protocol) answers 404: its
  // lifecycle figures do not exist, and the current one is shown against its start reports.
  const refTelemetry = ingest.telemetry.reference.every((m) => m.refused < m.requests / 2);
  const med = (mode: Mode, side: Side, f: (m: Ingestion) => number) => median(ingest[mode][side].map(f));
  const rows: Row[] = [
    {
      metric: "server CPU per start report (/upload)",
      reference: med("start", "reference", (m) => m.cpuUsPerRequest),
      current: med("start", "current", (m) => m.cpuUsPerRequest),
      unit: "µs",
      better: "lower",
    },
    refTelemetry
      ? {
          metric: "server CPU per /telemetry request (v2 lifecycle)",
          reference: med("telemetry", "reference", (m) => m.cpuUsPerRequest),
          current: med("telemetry", "current", (m) => m.cpuUsPerRequest),
          unit: "µs",
          better: "lower",
        }
      : {
          metric: "server CPU per /telemetry request, against the reference's start report",
          reference: med("start", "reference", (m) => m.cpuUsPerRequest),
          current: med("telemetry", "current", (m) => m.cpuUsPerRequest),
          unit: "µs",
          better: "lower",
          info: true,
        },
    {
      metric: "p99 latency, start reports",
      reference: med("start", "reference", (m) => m.p99Ms),
      current: med("start", "current", (m) => m.p99Ms),
      unit: "ms",
      better: "lower",
      info: true,
    },
    {
      metric: "peak RSS under the load (start reports)",
      reference: Math.max(...ingest.start.reference.map((m) => m.peakRssMb)),
      current: Math.max(...ingest.start.current.map((m) => m.peakRssMb)),
      unit: "MB",
      better: "lower",
    },
    {
      metric: "idle RSS of an empty server",
      reference: median(idle.reference),
      current: median(idle.current),
      unit: "MB",
      better: "lower",
    },
  ];
  if (!opt.quick) {
    rows.push(
      {
        metric: `seed --records ${records}: CPU time`,
        reference: seeded.reference.cpuS,
        current: seeded.current.cpuS,
        unit: "s",
        better: "lower",
      },
      {
        metric: `seed --records ${records}: wall time`,
        reference: seeded.reference.wallS,
        current: seeded.current.wallS,
        unit: "s",
        better: "lower",
        info: true,
      },
      {
        metric: "seed: peak RSS",
        reference: seeded.reference.peakRssMb,
        current: seeded.current.peakRssMb,
        unit: "MB",
        better: "lower",
      },
      {
        metric: `bytes per install at ${records}`,
        reference: seeded.reference.bytesPerInstall,
        current: seeded.current.bytesPerInstall,
        unit: "B",
        better: "lower",
      },
      {
        metric: "heaviest aggregate, p95",
        reference: readResults.reference.p95Ms,
        current: readResults.current.p95Ms,
        unit: "ms",
        better: "lower",
      },
    );
  }
  const { text, losses } = render(rows);
  console.log(
    `\nbench:guard: current (${head}${dirty ? "+changes" : ""}) against ${ref.commit.slice(0, 12)} (${ref.how}), ${rounds} rounds of ${durationS} s at ${connections} connections${opt.quick ? "" : `, ${records} seeded installs (profile ${opt.profile})`}\n`,
  );
  console.log(text);
  if (!opt.quick) {
    console.log(
      `\nheaviest aggregate: reference ${readResults.reference.heaviest}, current ${readResults.current.heaviest}`,
    );
    console.log(
      `p95 of each aggregate (ms), reference / current: ${AGGREGATES.map((p) => `${p} ${readResults.reference.all[p]!.toFixed(1)}/${readResults.current.all[p]!.toFixed(1)}`).join("; ")}`,
    );
  }
  console.log(
    `per round, CPU µs per request: ${modes.map((m) => `${m} reference ${ingest[m].reference.map((x) => x.cpuUsPerRequest.toFixed(1)).join(",")} current ${ingest[m].current.map((x) => x.cpuUsPerRequest.toFixed(1)).join(",")}`).join("; ")}`,
  );
  if (losses.length > 0) {
    console.log(`\nLOSS past ${Math.round(threshold * 100)}%: ${losses.join("; ")}`);
    return 1;
  }
  console.log(`\nno loss past ${Math.round(threshold * 100)}%`);
  return 0;
}

try {
  const code = await main();
  cleanup();
  process.exit(code);
} catch (e) {
  console.error(`bench-guard: ${e instanceof Error ? e.message : String(e)}`);
  cleanup();
  process.exit(2);
}
