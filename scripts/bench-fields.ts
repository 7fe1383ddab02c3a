// What the fields table (src/domain/fields.ts) costs where it runs per report or per record, this
// tree against another in one run: normalization of realistic bodies (CPU per body), the record
// and its CSV and NDJSON lines (CPU per stored execution), counting into rollups (CPU per record),
// and the peak memory of fresh processes normalizing 200,000 bodies (the optimizing JIT's share).
// Each part checks first that both trees give the same output, then interleaves them.
//
//   git worktree add /tmp/ref <commit>   (or: mkdir /tmp/ref && git archive <commit> | tar -x -C /tmp/ref)
//   bun scripts/bench-fields.ts --against /tmp/ref [--bodies 100000] [--rounds 15]
//
// Bodies, as the clients send them (scripts/bench/ingest.lua's mix): per /telemetry v2 execution a
// start report with every field, two minimal pings from inside the container and the final report
// (a fifth fail, with an error text and the log tail); v1 reports; /upload start reports and their
// status updates.
import { parseArgs } from "node:util";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { JsonObject } from "../src/domain/json.ts";
import type { Execution } from "../src/domain/execution.ts";

const { values: opt } = parseArgs({
  options: {
    against: { type: "string" },
    bodies: { type: "string", default: "100000" },
    rounds: { type: "string", default: "15" },
    "rss-child": { type: "string" },
  },
});

const OPTS = { maxFieldLength: 128, maxErrorLength: 131_072, maskIps: true };

// A small deterministic generator, so both trees and every run see the same bodies.
let seed = 42;
const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

const APPS = [
  "docker",
  "homeassistant",
  "pihole",
  "jellyfin",
  "adguard",
  "debian",
  "vaultwarden",
  "plex",
  "immich",
  "frigate",
  "nodered",
  "paperless-ngx",
];
const OS = [
  ["debian", "12"],
  ["debian", "13"],
  ["ubuntu", "24.04"],
  ["alpine", "3.22"],
] as const;
const PVE = ["8.4.1", "8.3.5", "9.0.10", "9.1.1", "7.4-19", "not found"];
const ERRORS = [
  "exit code 100: apt-get -y install ffmpeg",
  "curl: (7) Failed to connect to 192.168.1.50 port 443 after 3072 ms: Couldn't connect to server",
  '[ERROR] in line 87: exit code 1: while executing command "systemctl enable -q --now $APP"',
  "\u001b[01;31m✖\u001b[m Failed to set up database: psql: error: connection to server on socket failed",
];
const LOG_LINE =
  "Setting up libssl3:amd64 (3.0.15-1~deb12u1) ... Unpacking nodejs (22.11.0-1nodesource1) over (20.18.0-1nodesource1) ...\n";

function telemetryRun(n: number): JsonObject[] {
  const id = `8f0e4c2a-1b2c-4d5e-8f90-${String(n).padStart(12, "0")}`;
  const [osType, osVersion] = pick(OS);
  const full: JsonObject = {
    payload_version: 2,
    random_id: id,
    execution_id: id,
    type: pick(["lxc", "lxc", "lxc", "vm"]),
    nsapp: pick(APPS),
    status: "installing",
    ct_type: 1,
    disk_size: pick([4, 8, 16, 32]),
    core_count: pick([1, 2, 4]),
    ram_size: pick([512, 1024, 2048, 4096]),
    os_type: osType,
    os_version: osVersion,
    disableip6: "no",
    pve_version: pick(PVE),
    method: pick(["default", "advanced"]),
    exit_code: 0,
    error: "",
    error_category: "",
    install_duration: 0,
    cpu_vendor: pick(["intel", "amd"]),
    cpu_model: "Intel(R) Core(TM) i5-8500T CPU @ 2.10GHz",
    gpu_vendor: pick(["intel", "nvidia", ""]),
    gpu_model: "UHD Graphics 630",
    gpu_passthrough: pick(["no", "yes"]),
    ram_speed: "2666",
    arch: "amd64",
    platform: "pve",
    has_arm: false,
    kernel_version: "6.8.12-4-pve",
    app_version: "",
    failed_command: "",
    failed_line: 0,
    repo_source: "ProxmoxVE",
    repo_slug: "community-scripts/ProxmoxVE",
  };
  const ping = (status: string): JsonObject => ({
    payload_version: 2,
    random_id: id,
    execution_id: id,
    type: full.type!,
    nsapp: full.nsapp!,
    status,
    platform: "pve",
    repo_source: "ProxmoxVE",
    repo_slug: "community-scripts/ProxmoxVE",
  });
  const failed = random() < 0.2;
  const error = failed
    ? `exit_code=100 | ${pick(ERRORS)} | at line 12: apt-get install -y x\n---\n${LOG_LINE.repeat(Math.floor(random() * 60))}`
    : "";
  const final: JsonObject = {
    ...full,
    status: failed ? "failed" : "success",
    exit_code: failed ? 100 : 0,
    error,
    error_category: failed ? "dependency" : "",
    install_duration: 95,
    app_version: "10.10.3",
    failed_command: failed ? "apt-get install -y x" : "",
    failed_line: failed ? 12 : 0,
  };
  return [full, ping("validation"), ping("configuring"), final];
}
const v1 = (n: number): JsonObject => ({
  random_id: `v1-${n}`,
  type: "lxc",
  nsapp: pick(APPS),
  status: pick(["installing", "done"]),
  gpu_passthrough: pick(["igpu", "dgpu", "unknown"]),
  has_arm: "false",
  pve_version: pick(PVE),
  ct_type: "1",
  disk_size: "8",
  core_count: "2",
  ram_size: "2048",
});
const start = (n: number): JsonObject => ({
  ct_type: 1,
  type: "lxc",
  disk_size: "8G",
  core_count: 2,
  ram_size: 2048,
  os_type: "Debian",
  os_version: "12",
  disableip6: "yes",
  nsapp: pick(APPS),
  method: "default",
  pve_version: pick(PVE),
  status: "installing",
  random_id: `up-${n}`,
});
const update = (n: number): JsonObject => ({
  status: pick(["done", "done", "done", "failed"]),
  error: pick(["none", "", ...ERRORS]),
  random_id: `up-${n}`,
});

type Body = { kind: "telemetry" | "start" | "update"; body: JsonObject };
const BODIES: Body[] = [];
for (let n = 0; BODIES.length < Number(opt.bodies); n++) {
  const r = random();
  if (r < 0.6) BODIES.push(...telemetryRun(n).map((body) => ({ kind: "telemetry" as const, body })));
  else if (r < 0.7) BODIES.push({ kind: "telemetry", body: v1(n) });
  else BODIES.push({ kind: "start", body: start(n) }, { kind: "update", body: update(n) });
}
BODIES.length = Number(opt.bodies);

type Normalize = typeof import("../src/domain/normalize.ts");
const normalize = (n: Normalize, b: Body) =>
  b.kind === "telemetry"
    ? n.normalizeTelemetry(b.body, OPTS)
    : b.kind === "start"
      ? n.normalizeStart(b.body, OPTS)
      : n.normalizeUpdate(b.body, OPTS);

// --rss-child <tree>: one fresh process normalizing 200,000 bodies; prints its peak RSS in MB.
if (opt["rss-child"] !== undefined) {
  const n: Normalize = await import(resolve(opt["rss-child"], "src/domain/normalize.ts"));
  let ok = 0;
  for (let i = 0; i < 200_000; i++) ok += normalize(n, BODIES[i % BODIES.length]!).ok ? 1 : 0;
  // The peak of this process's own memory (VmHWM): getrusage's maxRSS keeps the parent's across exec.
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))!;
  console.log(JSON.stringify({ rssMb: Number(hwm[1]) / 1024, ok }));
  process.exit(0);
}
if (opt.against === undefined) {
  console.error("usage: bun scripts/bench-fields.ts --against <another tree> [--bodies N] [--rounds N]");
  process.exit(2);
}
const here = resolve(import.meta.dir, "..");
const there = resolve(opt.against);
const load = async <T>(tree: string, path: string): Promise<T> => (await import(resolve(tree, path))) as T;

let sink = 0;
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const quartiles = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return `${s[Math.floor(s.length / 4)]!.toFixed(3)}-${s[Math.floor((3 * s.length) / 4)]!.toFixed(3)}`;
};

/**
 * CPU (user + system) of `run` over every item, this tree's against the other's. The machine is
 * shared: load comes and goes within a second. So the items are timed in chunks (tens of ms), each
 * chunk through both trees back to back in alternating order, and the ratio is the median of the
 * chunks' ratios; the per-item times are medians of the rounds.
 */
function compare<T, I>(
  what: string,
  unit: string,
  items: readonly I[],
  chunk: number,
  a: T,
  b: T,
  run: (m: T, item: I) => number,
): void {
  const cpu = (m: T, list: readonly I[]) => {
    const t0 = process.cpuUsage();
    for (const item of list) sink += run(m, item);
    const t = process.cpuUsage(t0);
    return t.user + t.system;
  };
  const chunks: I[][] = [];
  for (let i = 0; i < items.length; i += chunk) chunks.push(items.slice(i, i + chunk));
  for (let i = 0; i < 2; i++) cpu(a, items), cpu(b, items); // warm-up
  const ratios: number[] = [];
  const rounds = { a: [] as number[], b: [] as number[] };
  for (let round = 0; round < Number(opt.rounds); round++) {
    let [ta, tb] = [0, 0];
    chunks.forEach((list, i) => {
      const first = (round + i) % 2 === 0;
      const x = first ? cpu(a, list) : 0;
      const y = cpu(b, list);
      const z = first ? x : cpu(a, list);
      if (y > 0) ratios.push(z / y);
      ta += z;
      tb += y;
    });
    rounds.a.push((ta * 1000) / items.length);
    rounds.b.push((tb * 1000) / items.length);
  }
  const per = (t: number[]) => median(t).toFixed(0).padStart(6);
  console.log(
    `${what.padEnd(28)} ${per(rounds.a)} vs ${per(rounds.b)} ns CPU per ${unit}; ratio ${median(ratios).toFixed(3)} (interquartile ${quartiles(ratios)}, ${ratios.length} chunks)`,
  );
}
const same = (what: string, a: unknown, b: unknown) => {
  if (JSON.stringify(a) !== JSON.stringify(b))
    throw new Error(
      `the trees differ in ${what}:\n${JSON.stringify(a).slice(0, 400)}\n${JSON.stringify(b).slice(0, 400)}`,
    );
};

console.log(`${here} against ${there}: ${opt.rounds} rounds, interleaved`);

// Normalization.
const [na, nb] = [
  await load<Normalize>(here, "src/domain/normalize.ts"),
  await load<Normalize>(there, "src/domain/normalize.ts"),
];
for (const b of BODIES.slice(0, 5000))
  same(`normalizing ${JSON.stringify(b.body).slice(0, 100)}`, normalize(na, b), normalize(nb, b));
compare(`normalize (${BODIES.length} bodies)`, "body", BODIES, 5000, na, nb, (n, b) => (normalize(n, b).ok ? 1 : 0));

// The record and its CSV and NDJSON lines, of executions as these bodies leave them.
type Records = typeof import("../src/read/record.ts");
type Export = typeof import("../src/read/export.ts");
type Rollup = typeof import("../src/domain/rollup.ts");
const ROWS: Execution[] = [];
for (const [i, b] of BODIES.entries()) {
  const r = normalize(na, b);
  if (!r.ok || r.value.fields === null || ROWS.length === 20_000) continue;
  const at = 1_780_000_000_000 + i * 1000;
  const final = r.value.outcome !== "in_progress";
  const { fields, ...report } = r.value;
  ROWS.push({
    ...report,
    ...fields,
    attempt: 1,
    kind: "install",
    createdAt: at,
    updatedAt: at + 95_000,
    durationMs: final ? 95_000 : null,
    installingAt: at,
    validationAt: null,
    configuringAt: null,
    finishedAt: final ? at + 95_000 : null,
    repaired: false,
  });
}
const [ra, rb] = [await load<Records>(here, "src/read/record.ts"), await load<Records>(there, "src/read/record.ts")];
const [xa, xb] = [await load<Export>(here, "src/read/export.ts"), await load<Export>(there, "src/read/export.ts")];
for (const row of ROWS.slice(0, 2000))
  same("records", [ra.toRecord(row), xa.csvRow(ra.toRecord(row))], [rb.toRecord(row), xb.csvRow(rb.toRecord(row))]);
compare(`record (${ROWS.length} executions)`, "record", ROWS, 2000, ra, rb, (m, row) => m.toRecord(row).attempt);
compare(
  "record + CSV line",
  "record",
  ROWS,
  2000,
  [ra, xa] as const,
  [rb, xb] as const,
  ([m, x], row) => x.csvRow(m.toRecord(row)).length,
);
compare(
  "record + NDJSON line",
  "record",
  ROWS,
  2000,
  [ra, xa] as const,
  [rb, xb] as const,
  ([m, x], row) => x.ndjsonLine(m.toRecord(row)).length,
);

// Counting into rollup cells.
const [ca, cb] = [await load<Rollup>(here, "src/domain/rollup.ts"), await load<Rollup>(there, "src/domain/rollup.ts")];
const [da, db] = [ca.emptyData(), cb.emptyData()];
for (const row of ROWS)
  ca.addRecord(da, row, row.outcome, 1, true, null), cb.addRecord(db, row, row.outcome, 1, true, null);
same("rollup cells", da, db);
// Into one cell each, as a batch counts its records into the cells it touches.
const cell = new Map<Rollup, ReturnType<Rollup["emptyData"]>>([
  [ca, da],
  [cb, db],
]);
compare("count into a rollup cell", "record", ROWS, 2000, ca, cb, (m, row) => {
  m.addRecord(cell.get(m)!, row, row.outcome, 1, true, null);
  return 1;
});

// Peak memory of fresh processes: the optimizing JIT compiles what runs hot.
const rss = async (tree: string): Promise<number> => {
  const out = await Bun.$`bun ${import.meta.path} --rss-child ${tree} --bodies 20000`.text();
  return (JSON.parse(out) as { rssMb: number }).rssMb;
};
const peaks = { a: [] as number[], b: [] as number[] };
for (let i = 0; i < 3; i++) peaks.a.push(await rss(here)), peaks.b.push(await rss(there));
const mb = (a: number[]) => a.map((m) => m.toFixed(0)).join(", ");
console.log(
  `peak RSS of a fresh process normalizing 200,000 bodies: ${median(peaks.a).toFixed(0)} vs ${median(peaks.b).toFixed(0)} MB (medians of 3: ${mb(peaks.a)} vs ${mb(peaks.b)})`,
);
console.log(`[checksum ${sink}]`);
