// CPU time of normalization (src/domain/normalize.ts), this tree against another, in one run:
// the same realistic bodies through both, interleaved rounds, medians. For changes to how reports
// are read (the fields table, the readers), where ingestion must not get slower.
//
//   git worktree add /tmp/ref <commit>   (or: mkdir /tmp/ref && git archive <commit> | tar -x -C /tmp/ref)
//   bun scripts/bench-normalize.ts --against /tmp/ref [--bodies 100000] [--rounds 9]
//
// Bodies, as the clients send them (scripts/bench/ingest.lua's mix): per /telemetry v2 execution a
// start report with every field, two minimal pings from inside the container and the final report
// (a fifth fail, with an error text and the log tail); v1 reports; /upload start reports and their
// status updates. Both trees' results are compared first, so a difference in what they produce
// fails the run before any timing.
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import type { JsonObject } from "../src/domain/json.ts";

const { values: opt } = parseArgs({
  options: { against: { type: "string" }, bodies: { type: "string", default: "100000" }, rounds: { type: "string", default: "9" } },
});
if (opt.against === undefined) {
  console.error("usage: bun scripts/bench-normalize.ts --against <another tree> [--bodies N] [--rounds N]");
  process.exit(2);
}

type Normalize = typeof import("../src/domain/normalize.ts");
const here: Normalize = await import("../src/domain/normalize.ts");
const there: Normalize = await import(resolve(opt.against, "src/domain/normalize.ts"));

// A small deterministic generator, so both trees and every run see the same bodies.
let seed = 42;
const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

const APPS = ["docker", "homeassistant", "pihole", "jellyfin", "adguard", "debian", "vaultwarden", "plex", "immich", "frigate", "nodered", "paperless-ngx"];
const OS = [["debian", "12"], ["debian", "13"], ["ubuntu", "24.04"], ["alpine", "3.22"]] as const;
const PVE = ["8.4.1", "8.3.5", "9.0.10", "9.1.1", "7.4-19", "not found"];
const ERRORS = [
  "exit code 100: apt-get -y install ffmpeg",
  "curl: (7) Failed to connect to 192.168.1.50 port 443 after 3072 ms: Couldn't connect to server",
  "[ERROR] in line 87: exit code 1: while executing command \"systemctl enable -q --now $APP\"",
  "\u001b[01;31m✖\u001b[m Failed to set up database: psql: error: connection to server on socket failed",
];
const LOG_LINE = "Setting up libssl3:amd64 (3.0.15-1~deb12u1) ... Unpacking nodejs (22.11.0-1nodesource1) over (20.18.0-1nodesource1) ...\n";

function telemetryRun(n: number): JsonObject[] {
  const id = `8f0e4c2a-1b2c-4d5e-8f90-${String(n).padStart(12, "0")}`;
  const [osType, osVersion] = pick(OS);
  const full: JsonObject = {
    payload_version: 2, random_id: id, execution_id: id, type: pick(["lxc", "lxc", "lxc", "vm"]), nsapp: pick(APPS), status: "installing",
    ct_type: 1, disk_size: pick([4, 8, 16, 32]), core_count: pick([1, 2, 4]), ram_size: pick([512, 1024, 2048, 4096]), os_type: osType, os_version: osVersion,
    disableip6: "no", pve_version: pick(PVE), method: pick(["default", "advanced"]), exit_code: 0, error: "", error_category: "", install_duration: 0,
    cpu_vendor: pick(["intel", "amd"]), cpu_model: "Intel(R) Core(TM) i5-8500T CPU @ 2.10GHz", gpu_vendor: pick(["intel", "nvidia", ""]), gpu_model: "UHD Graphics 630",
    gpu_passthrough: pick(["no", "yes"]), ram_speed: "2666", arch: "amd64", platform: "pve", has_arm: false, kernel_version: "6.8.12-4-pve", app_version: "",
    failed_command: "", failed_line: 0, repo_source: "ProxmoxVE", repo_slug: "community-scripts/ProxmoxVE",
  };
  const ping = (status: string): JsonObject => ({ payload_version: 2, random_id: id, execution_id: id, type: full.type!, nsapp: full.nsapp!, status, platform: "pve", repo_source: "ProxmoxVE", repo_slug: "community-scripts/ProxmoxVE" });
  const failed = random() < 0.2;
  const error = failed ? `exit_code=100 | ${pick(ERRORS)} | at line 12: apt-get install -y x\n---\n${LOG_LINE.repeat(Math.floor(random() * 60))}` : "";
  const final: JsonObject = { ...full, status: failed ? "failed" : "success", exit_code: failed ? 100 : 0, error, error_category: failed ? "dependency" : "", install_duration: 95, app_version: "10.10.3", failed_command: failed ? "apt-get install -y x" : "", failed_line: failed ? 12 : 0 };
  return [full, ping("validation"), ping("configuring"), final];
}
const v1 = (n: number): JsonObject => ({ random_id: `v1-${n}`, type: "lxc", nsapp: pick(APPS), status: pick(["installing", "done"]), gpu_passthrough: pick(["igpu", "dgpu", "unknown"]), has_arm: "false", pve_version: pick(PVE), ct_type: "1", disk_size: "8", core_count: "2", ram_size: "2048" });
const start = (n: number): JsonObject => ({ ct_type: 1, type: "lxc", disk_size: "8G", core_count: 2, ram_size: 2048, os_type: "Debian", os_version: "12", disableip6: "yes", nsapp: pick(APPS), method: "default", pve_version: pick(PVE), status: "installing", random_id: `up-${n}` });
const update = (n: number): JsonObject => ({ status: pick(["done", "done", "done", "failed"]), error: pick(["none", "", ...ERRORS]), random_id: `up-${n}` });

type Body = { kind: "telemetry" | "start" | "update"; body: JsonObject };
const BODIES: Body[] = [];
for (let n = 0; BODIES.length < Number(opt.bodies); n++) {
  const r = random();
  if (r < 0.6) BODIES.push(...telemetryRun(n).map((body) => ({ kind: "telemetry" as const, body })));
  else if (r < 0.7) BODIES.push({ kind: "telemetry", body: v1(n) });
  else BODIES.push({ kind: "start", body: start(n) }, { kind: "update", body: update(n) });
}
BODIES.length = Number(opt.bodies);

const OPTS = { maxFieldLength: 128, maxErrorLength: 131_072, maskIps: true };
const run = (n: Normalize, b: Body) =>
  b.kind === "telemetry" ? n.normalizeTelemetry(b.body, OPTS) : b.kind === "start" ? n.normalizeStart(b.body, OPTS) : n.normalizeUpdate(b.body, OPTS);

// The same output first: key order included (JSON.stringify keeps it).
for (const b of BODIES.slice(0, 5000)) {
  const [a, c] = [JSON.stringify(run(here, b)), JSON.stringify(run(there, b))];
  if (a !== c) throw new Error(`the trees differ on ${JSON.stringify(b.body).slice(0, 200)}:\n${a}\n${c}`);
}

let sink = 0;
/** CPU time (user + system, µs) of normalizing `bodies` once. */
function cpu(n: Normalize, bodies: readonly Body[]): number {
  const t0 = process.cpuUsage();
  for (const b of bodies) sink += run(n, b).ok ? 1 : 0;
  const t = process.cpuUsage(t0);
  return t.user + t.system;
}
// The machine is shared: load comes and goes within a second. So the bodies are timed in chunks of
// CHUNK (tens of ms), each chunk through both trees back to back in alternating order, and the
// ratio is the median of the chunks' ratios; totals are medians of the rounds.
const CHUNK = 5000;
const chunks: Body[][] = [];
for (let i = 0; i < BODIES.length; i += CHUNK) chunks.push(BODIES.slice(i, i + CHUNK));
for (let i = 0; i < 2; i++) cpu(here, BODIES), cpu(there, BODIES); // warm-up
const ratios: number[] = [];
const rounds = { here: [] as number[], there: [] as number[] };
for (let round = 0; round < Number(opt.rounds); round++) {
  let [h, t] = [0, 0];
  chunks.forEach((chunk, i) => {
    const first = (round + i) % 2 === 0;
    const a = first ? cpu(here, chunk) : 0;
    const b = cpu(there, chunk);
    const c = first ? a : cpu(here, chunk);
    if (b > 0) ratios.push(c / b);
    h += c;
    t += b;
  });
  rounds.here.push((h * 1000) / BODIES.length);
  rounds.there.push((t * 1000) / BODIES.length);
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const quartiles = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return `${s[Math.floor(s.length / 4)]!.toFixed(3)}-${s[Math.floor((3 * s.length) / 4)]!.toFixed(3)}`;
};
console.log(`${BODIES.length} bodies x ${opt.rounds} rounds, chunks of ${CHUNK}; ns CPU per body, median of rounds:`);
console.log(`  this tree         ${median(rounds.here).toFixed(0)} ns`);
console.log(`  ${opt.against}  ${median(rounds.there).toFixed(0)} ns`);
console.log(`ratio this/that: median of ${ratios.length} chunk ratios ${median(ratios).toFixed(3)} (interquartile ${quartiles(ratios)})  [checksum ${sink}]`);
