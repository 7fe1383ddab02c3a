#!/usr/bin/env bun
// Ingestion with the relay on, while the upstream hangs: is it slower than without the relay?
// Builds the current source, then drives the binary with wrk (scripts/bench/ingest.lua, the same
// load as bench-ingest) in three set-ups, each on a fresh database, alternated in every repetition:
//   off:     no --relay-url (the baseline of this run)
//   hanging: --relay-url to a local upstream that takes every request and never answers (the
//            relay's requests time out after --relay-timeout; it backs off; the outbox grows)
//   healthy: --relay-url to a local upstream that answers 202 at once (the relay sends while
//            ingesting: its own cost, for context)
// Reports req/s, p50/p99 latency and server CPU per request, medians over the repetitions, and
// each as a ratio to "off". The upstream runs in this process (a hanging request costs it nothing).
//
//   bun scripts/bench-relay.ts [--duration 8] [--connections 16,64] [--repeat 3] [--mode telemetry|start]
//                              [--threads 2] [--warmup 2] [--bin path] [--keep]
//
// Needs wrk (Debian: apt-get install -y wrk). Only 127.0.0.1 traffic. Output: a markdown report
// on stdout and in bench-results/relay-<timestamp>.md (+ .json). Exit 2 if the harness failed.
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { cpuSeconds, killAllChildren, runWrk, spawnListening, stopGracefully, type Mode } from "./bench/lib.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const LUA = join(ROOT, "scripts/bench/ingest.lua");

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    duration: { type: "string", default: "8" },
    connections: { type: "string", default: "16,64" },
    repeat: { type: "string", default: "3" },
    mode: { type: "string", default: "telemetry" },
    threads: { type: "string" },
    warmup: { type: "string", default: "2" },
    bin: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});

function whole(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    console.error(`bench-relay: --${name} must be a whole number >= ${min}`);
    process.exit(2);
  }
  return n;
}
const durationS = whole("duration", opt.duration!, 1);
const warmupS = whole("warmup", opt.warmup!, 0);
const repeat = whole("repeat", opt.repeat!, 1);
const threads = whole("threads", opt.threads ?? String(Math.min(2, availableParallelism())), 1);
const connections = opt.connections!.split(",").map((c) => whole("connections", c.trim(), threads));
const mode = opt.mode as Mode;
if (mode !== "telemetry" && mode !== "start") {
  console.error("bench-relay: --mode must be telemetry or start");
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), "bench-relay-"));
let cleaned = false;
function cleanup(): void {
  if (cleaned) return;
  cleaned = true;
  killAllChildren();
  upstream.release();
  void upstream.server.stop(true);
  if (!opt.keep) rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    cleanup();
    process.exit(130);
  });
}
const log = (msg: string) => process.stderr.write(`[bench-relay ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// ------------------------------------------------------------------ the upstream

type Setup = "off" | "hanging" | "healthy";
const SETUPS: readonly Setup[] = ["off", "hanging", "healthy"];

const upstream = (() => {
  let hang = false;
  let taken = 0;
  const held = new Set<() => void>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      await req.arrayBuffer();
      taken++;
      if (hang) {
        await new Promise<void>((resolve) => held.add(resolve));
        return new Response(null, { status: 504 });
      }
      return new Response(null, { status: 202 });
    },
  });
  return {
    server,
    url: `http://127.0.0.1:${server.port}`,
    set(next: Setup) {
      hang = next === "hanging";
      taken = 0;
    },
    taken: () => taken,
    release() {
      for (const r of held) r();
      held.clear();
    },
  };
})();

// ------------------------------------------------------------------ runs

let nonce = Math.floor(Math.random() * 65536);

interface Cell {
  setup: Setup;
  connections: number;
  rep: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerReq: number;
  /** Requests the upstream saw during the measured run, and the outbox after it. */
  upstreamRequests: number;
  outbox: { entries: number; sent: number; state: string } | null;
  non2xx: number;
}

async function runCell(bin: string, setup: Setup, conns: number, rep: number): Promise<Cell> {
  const dir = join(work, `${setup}-${conns}-${rep}`);
  mkdirSync(join(dir, "acks"), { recursive: true });
  upstream.set(setup);
  const relay = setup === "off" ? [] : ["--relay-url", upstream.url, "--relay-rate", "0", "--relay-timeout", "10s"];
  const server = await spawnListening(
    [
      bin,
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--db",
      join(dir, "installs.db"),
      "--rate-limit",
      "0",
      ...relay,
    ],
    {
      stderrPath: join(dir, "stderr.log"),
      timeoutMs: 15_000,
    },
  );
  try {
    const base = {
      lua: LUA,
      url: server.url,
      threads,
      connections: conns,
      mode,
      outdir: join(dir, "acks"),
      record: true,
    };
    if (warmupS > 0) await runWrk({ ...base, durationS: warmupS, nonce: (nonce = (nonce + 1) % 65536), tag: "warm" });
    const seen0 = upstream.taken();
    const cpu0 = cpuSeconds(server.pid);
    const r = await runWrk({ ...base, durationS, nonce: (nonce = (nonce + 1) % 65536), tag: "run" });
    const cpu1 = cpuSeconds(server.pid);
    const health = (await (await fetch(`${server.url}/healthz`)).json()) as {
      relay?: { enabled: boolean; entries: number; sent: number; state: string };
    };
    const non2xx = r.threads.reduce((n, t) => n + t.n_4xx + t.n_5xx + t.n_409, 0) + r.errors.status;
    return {
      setup,
      connections: conns,
      rep,
      rps: r.rps,
      p50Ms: r.latency_us.p50 / 1000,
      p99Ms: r.latency_us.p99 / 1000,
      cpuUsPerReq: cpu0 !== null && cpu1 !== null ? ((cpu1 - cpu0) * 1e6) / r.requests : Number.NaN,
      upstreamRequests: upstream.taken() - seen0,
      outbox: health.relay?.enabled
        ? { entries: health.relay.entries, sent: health.relay.sent, state: health.relay.state }
        : null,
      non2xx,
    };
  } finally {
    // The hanging requests end with the server; the relay's in-flight ones are aborted on SIGTERM.
    const code = await stopGracefully(server.proc, 60_000);
    if (code !== 0) log(`WARNING: the server (${setup}) exited with ${code} on SIGTERM`);
    upstream.release();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;

async function main(): Promise<void> {
  let bin = opt.bin;
  if (!bin) {
    bin = join(work, "installstats");
    log("building the binary");
    const p = Bun.spawn(["bun", "scripts/build.ts", "--outfile", bin], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    if ((await p.exited) !== 0) throw new Error(`build failed: ${await new Response(p.stderr).text()}`);
  }
  const cells: Cell[] = [];
  for (let rep = 1; rep <= repeat; rep++) {
    for (const conns of connections) {
      // A different order each repetition, so no set-up always runs first (or last) on a warming machine.
      const order = SETUPS.map((_, i) => SETUPS[(i + rep - 1) % SETUPS.length]!);
      for (const setup of order) {
        log(`rep ${rep}/${repeat}, ${conns} connections, relay ${setup}`);
        const cell = await runCell(bin, setup, conns, rep);
        log(
          `  ${cell.rps.toFixed(0)} req/s, p50 ${cell.p50Ms.toFixed(2)} ms, p99 ${cell.p99Ms.toFixed(2)} ms, ${cell.cpuUsPerReq.toFixed(0)} µs CPU/req, upstream saw ${cell.upstreamRequests}`,
        );
        cells.push(cell);
      }
    }
  }

  const lines: string[] = [];
  const date = new Date().toISOString();
  lines.push(`# Ingestion with the relay on, upstream hanging (${date})`, "");
  lines.push(
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; binary ${statSync(bin).size} bytes; wrk -t${threads}, ${durationS} s per run after ${warmupS} s warm-up, mode ${mode}, ${repeat} repetition(s), medians (range over repetitions for ratios).`,
    "",
  );
  lines.push(
    "| connections | relay | req/s | p50 ms | p99 ms | CPU µs/req | ratio p50 | ratio p99 | ratio CPU/req | upstream requests | outbox after (entries, state) |",
  );
  lines.push("|---|---|---|---|---|---|---|---|---|---|---|");
  const summary: Record<string, unknown>[] = [];
  for (const conns of connections) {
    const of = (setup: Setup) => cells.filter((c) => c.setup === setup && c.connections === conns);
    const off = of("off");
    for (const setup of SETUPS) {
      const cs = of(setup);
      const ratios = (pick: (c: Cell) => number) => cs.map((c) => pick(c) / pick(off.find((o) => o.rep === c.rep)!));
      const row = {
        connections: conns,
        setup,
        rps: median(cs.map((c) => c.rps)),
        p50Ms: median(cs.map((c) => c.p50Ms)),
        p99Ms: median(cs.map((c) => c.p99Ms)),
        cpuUsPerReq: median(cs.map((c) => c.cpuUsPerReq)),
        ratioP50: median(ratios((c) => c.p50Ms)),
        ratioP99: median(ratios((c) => c.p99Ms)),
        ratioCpu: median(ratios((c) => c.cpuUsPerReq)),
        ranges: {
          p50: range(ratios((c) => c.p50Ms)),
          p99: range(ratios((c) => c.p99Ms)),
          cpu: range(ratios((c) => c.cpuUsPerReq)),
        },
        upstreamRequests: median(cs.map((c) => c.upstreamRequests)),
        outbox: cs.at(-1)!.outbox,
        non2xx: cs.reduce((n, c) => n + c.non2xx, 0),
      };
      summary.push(row);
      const o = row.outbox ? `${row.outbox.entries}, ${row.outbox.state}` : "-";
      lines.push(
        `| ${conns} | ${setup} | ${row.rps.toFixed(0)} | ${row.p50Ms.toFixed(2)} | ${row.p99Ms.toFixed(2)} | ${row.cpuUsPerReq.toFixed(0)} | ${row.ratioP50.toFixed(2)} (${row.ranges.p50}) | ${row.ratioP99.toFixed(2)} (${row.ranges.p99}) | ${row.ratioCpu.toFixed(2)} (${row.ranges.cpu}) | ${row.upstreamRequests} | ${o} |`,
      );
    }
  }
  const bad = summary.reduce((n, r) => n + (r.non2xx as number), 0);
  lines.push("", bad === 0 ? "Every request was answered 2xx." : `**${bad} requests were not answered 2xx.**`);
  const md = lines.join("\n");
  console.log(md);
  mkdirSync(join(ROOT, "bench-results"), { recursive: true });
  const stamp = date.replace(/[:.]/g, "-");
  writeFileSync(join(ROOT, "bench-results", `relay-${stamp}.md`), `${md}\n`);
  writeFileSync(
    join(ROOT, "bench-results", `relay-${stamp}.json`),
    JSON.stringify({ date, durationS, warmupS, repeat, threads, mode, cells, summary }, null, 2),
  );
}

try {
  await main();
  cleanup();
  process.exit(0);
} catch (e) {
  console.error(`bench-relay: ${e instanceof Error ? e.message : String(e)}`);
  cleanup();
  process.exit(2);
}
