// The SQLite write path's cost per report without HTTP: bodies as the clients send them are taken in
// (src/ingest/pipeline.ts) and written to a fresh database with durability full, a batch of --batch
// at a time, as the group-commit writer hands them over. --mode start: start reports (/upload);
// --mode telemetry: today's clients (/telemetry, payload v2), --batch runs in flight, each batch one
// report of each (installing, validation, configuring, then the final one; a fifth fail with a ~9 KiB
// log tail and a third of those are retried), as scripts/bench/ingest.lua sends them. Prints the
// process's user and system CPU per report, each round and the median. Where the machine is shared, count instructions
// instead: they do not move with the load (cachegrind, Debian package valgrind; JavaScriptCore's
// concurrent JIT and GC off so that runs repeat; the difference of two runs is what the extra
// reports cost, start-up and warm-up cancel):
//
//   bun scripts/bench-write-path.ts [--mode start|telemetry] [--reports 20000] [--warmup 5000] [--batch 64] [--rounds 5]
//   bun scripts/bench-write-path.ts [--mode ...] --instructions   (runs itself twice under cachegrind, ~1 min:)
//   BUN_JSC_useConcurrentJIT=0 BUN_JSC_useConcurrentGC=0 valgrind --tool=cachegrind --cache-sim=no \
//     --cachegrind-out-file=/dev/null bun scripts/bench-write-path.ts --reports 10240 --warmup 2560 --rounds 1
//   (again with --reports 2560; instructions per report = the difference of "I refs" / 7680)
//
// Only files under the system's temporary directory, removed at the end.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { defaults } from "../src/config.ts";
import { intake } from "../src/ingest/pipeline.ts";
import type { WriteOp } from "../src/store/contract/store.ts";
import { openEngine } from "../src/store/open.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    reports: { type: "string", default: "20000" },
    warmup: { type: "string", default: "5000" },
    batch: { type: "string", default: "64" },
    rounds: { type: "string", default: "5" },
    instructions: { type: "boolean", default: false },
    mode: { type: "string", default: "start" },
  },
});
if (values.mode !== "start" && values.mode !== "telemetry") {
  console.error(`bench-write-path: --mode is start or telemetry, not ${values.mode}`);
  process.exit(2);
}

if (values.instructions) {
  function missing(): never {
    console.error("bench-write-path: valgrind did not run (Debian: apt-get install -y valgrind)");
    process.exit(2);
  }
  const refs = (reports: number): number => {
    if (Bun.which("valgrind") === null) missing();
    const run = Bun.spawnSync(
      ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", process.execPath].concat([
        import.meta.path,
        "--mode",
        values.mode!,
        "--batch",
        values.batch!,
        "--reports",
        String(reports),
        "--warmup",
        "2560",
        "--rounds",
        "1",
      ]),
      { env: { ...process.env, BUN_JSC_useConcurrentJIT: "0", BUN_JSC_useConcurrentGC: "0" }, stdout: "ignore" },
    );
    const found = /I\s+refs:\s+([\d,]+)/.exec(run.stderr.toString());
    if (!run.success || !found) missing();
    return Number(found[1]!.replaceAll(",", ""));
  };
  const [more, fewer] = [refs(10_240), refs(2_560)];
  const what = values.mode === "start" ? "start report" : "/telemetry report";
  console.log(`${Math.round((more - fewer) / 7_680)} instructions per ${what} (${more} - ${fewer}, / 7680)`);
  process.exit(0);
}
const [reports, warmup, batch, rounds] = [values.reports, values.warmup, values.batch, values.rounds].map(Number);
if (![reports, warmup, batch, rounds].every((n) => Number.isSafeInteger(n) && n! >= 0) || batch! < 1) {
  console.error("bench-write-path: --reports, --warmup, --batch and --rounds take whole numbers (batch at least 1)");
  process.exit(2);
}

const APPS = Array.from({ length: 120 }, (_, i) => `app${i}`);
const OS = [
  ["debian", "12"],
  ["ubuntu", "24.04"],
  ["alpine", "3.20"],
] as const;
const encoder = new TextEncoder();
let seq = 0;
/** A seeded generator (mulberry32): every run writes the same reports, so instruction counts repeat. */
let state = 27;
function random(): number {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
/** Eight hex digits from the seeded generator. */
const word = () =>
  Math.floor(random() * 0x100000000)
    .toString(16)
    .padStart(8, "0");
/** A random id in the UUID shape the clients send, from the seeded generator. */
function someId(): string {
  const [a, b, c, d] = [word(), word(), word(), word()];
  return `${a}-${b.slice(0, 4)}-4${b.slice(5)}-a${c.slice(1, 4)}-${c.slice(4)}${d}`;
}
/** An app, skewed as real traffic is. */
const someApp = () => APPS[Math.floor(random() ** 2 * APPS.length)]!;

function taken(endpoint: "upload" | "telemetry", body: unknown): WriteOp {
  const taken = intake(endpoint, encoder.encode(JSON.stringify(body)), Date.now(), defaults);
  if (!taken.ok) throw new Error(`bench-write-path: a generated report was refused: ${taken.rejection.message}`);
  return taken.op;
}

/** A start report as /upload receives it: a new install. */
function startReport(): WriteOp {
  const [osType, osVersion] = OS[seq++ % OS.length]!;
  return taken("upload", {
    random_id: someId(),
    type: "lxc",
    nsapp: someApp(),
    status: "installing",
    disk_size: 8,
    core_count: 2,
    ram_size: 2048,
    os_type: osType,
    os_version: osVersion,
    disableip6: "yes",
    method: "default",
    pve_version: "8.2.4",
  });
}

const STEPS = ["installing", "validation", "configuring"] as const;
/** The ~9 KiB log tails failed runs send after their error line. */
const LOG_TAILS = Array.from({ length: 4 }, (_, k) =>
  Array.from(
    { length: 90 },
    (_, l) =>
      `[1${k}:${l % 60}] step ${l} of build ${k}: compiling module_${l}.c -> module_${l}.o (warning: unused variable 'tmp${l}')`,
  ).join("\n"),
);
interface Run {
  fields: Record<string, unknown>;
  step: number;
  failed: boolean;
}
/** A run of today's client: the same descriptive fields in each of its reports. */
function newRun(randomId: string, executionId: string): Run {
  const [osType, osVersion] = OS[seq++ % OS.length]!;
  const nsapp = someApp();
  return {
    step: 0,
    failed: false,
    fields: {
      payload_version: 2,
      random_id: randomId,
      execution_id: executionId,
      type: "lxc",
      nsapp,
      ct_type: 1,
      disk_size: 8,
      core_count: 2,
      ram_size: 2048,
      os_type: osType,
      os_version: osVersion,
      pve_version: "8.4.1",
      method: "default",
      cpu_vendor: "intel",
      cpu_model: "Intel(R) N100",
      gpu_vendor: "intel",
      gpu_model: "UHD Graphics 630",
      gpu_passthrough: "no",
      ram_speed: "3200",
      arch: "amd64",
      platform: "pve",
      has_arm: false,
      kernel_version: "6.8.12-4-pve",
      app_version: `1.${nsapp.length % 10}.0`,
      repo_source: "ProxmoxVE",
      repo_slug: "community-scripts/ProxmoxVE",
    },
  };
}
/** --batch runs in flight; each batch takes the next report of every one. */
const runs: Run[] = [];
/** The next report of run `i`; a run that ended is followed by its retry (a third of failures) or a new one. */
function telemetryReport(i: number): WriteOp {
  let run = runs[i];
  if (run === undefined || run.step > STEPS.length) {
    const retry = run?.failed === true && run.fields.execution_id === run.fields.random_id && random() < 0.33;
    const randomId = retry ? String(run!.fields.random_id) : someId();
    run = runs[i] = newRun(randomId, retry ? someId() : randomId);
  }
  const step = run.step++;
  if (step < STEPS.length) {
    if (step === STEPS.length - 1) run.failed = random() < 0.2;
    return taken("telemetry", {
      ...run.fields,
      status: STEPS[step],
      exit_code: 0,
      error: "",
      install_duration: step * 40,
    });
  }
  if (!run.failed)
    return taken("telemetry", { ...run.fields, status: "success", exit_code: 0, error: "", install_duration: 200 });
  return taken("telemetry", {
    ...run.fields,
    status: "failed",
    exit_code: 100,
    error: `exit_code=100 | APT: package installation failed | at line 212: apt-get install -y libssl-dev\n---\n${LOG_TAILS[seq % LOG_TAILS.length]}`,
    error_category: "dependency",
    failed_command: "apt-get install -y libssl-dev",
    failed_line: 212,
    install_duration: 130,
  });
}
const nextReport = values.mode === "start" ? startReport : telemetryReport;

const dir = mkdtempSync(join(tmpdir(), "installstats-write-path-"));
const engine = await openEngine(join(dir, "bench.db"), { create: true, durability: "full", migrate: true });
try {
  const write = async (n: number) => {
    for (let done = 0; done < n; done += batch!) {
      const ops = Array.from({ length: Math.min(batch!, n - done) }, (_, i) => nextReport(i));
      await engine.store.write(ops);
    }
  };
  await write(warmup!);
  const perReport: { user: number; system: number }[] = [];
  for (let r = 0; r < rounds!; r++) {
    const before = process.cpuUsage();
    await write(reports!);
    const used = process.cpuUsage(before);
    perReport.push({ user: used.user / reports!, system: used.system / reports! });
    console.log(
      `round ${r + 1}: user ${perReport[r]!.user.toFixed(2)} µs, system ${perReport[r]!.system.toFixed(2)} µs per report`,
    );
  }
  if (perReport.length > 0) {
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const user = median(perReport.map((p) => p.user));
    const system = median(perReport.map((p) => p.system));
    console.log(
      `median of ${rounds} rounds of ${reports} ${values.mode} reports, ${batch} a batch: user ${user.toFixed(2)} µs, system ${system.toFixed(2)} µs, together ${(user + system).toFixed(2)} µs per report`,
    );
  }
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}
// As the CLI's commands end (src/main.ts): exit once done, whatever handle a closed engine leaves.
process.exit(0);
