// Today's clients, as `installstats seed` generates them for the newer part of its window: the
// /telemetry protocol (payload v1 from ProxmoxVE's misc/api.func, v2 from community-scripts/core)
// beside the /upload clients that are still around. Each install is a run of reports, as the
// clients send them: the start, progress pings (validation, configuring, the container's own
// minimal ping), the final report; a failed run may be run again as a new execution of the same
// install; tools and addons send one report. Hosts carry hardware, platform, kernel and repo; a
// few failure drivers are planted (jellyfin on one PVE version, immich on arm64, plex on AMD
// GPUs, docker on incus) so that breakdowns and driver analyses have something real to find.
// Pure: every choice is drawn from the PRNG given; the bodies are normalized by the service's own
// normalizer, so the reports are exactly what ingestion would get.
import { categoryOfExitCode } from "../domain/error-category.ts";
import type { Report } from "../domain/execution.ts";
import { explainExitCode } from "../domain/exit-codes.ts";
import type { JsonObject } from "../domain/json.ts";
import { normalizeTelemetry } from "../domain/normalize.ts";
import { DAY, HOUR, MINUTE } from "../domain/time.ts";
import { Weighted, failRateAt, failureText, uuid4, type AppSpec, type Rng } from "./seed-data.ts";
import { NORMALIZE, durationMs, normalized, startBody, type DayTables } from "./upload.ts";

// ---------------------------------------------------------------- who sends what, when

/** Days before the window's end when the community's clients changed (2026-02-12, 2026-08-18 and core a495a11, seen from 2026-11-27). */
const V1_FROM_DAYS = 288;
const V2_FROM_DAYS = 101;
const DECLINE_AS_ABORT_FROM_DAYS = 40;

export type Client = "upload" | "v1" | "v2" | "v2-new";

/** The client of an install `ago` ms before the window's end: /upload only before v1; then fewer and fewer. */
export function clientAt(rng: Rng, ago: number): Client {
  const days = ago / DAY;
  if (days > V1_FROM_DAYS) return "upload";
  // Old hosts and pinned forks keep sending /upload: a third at first, a few percent by the end.
  const upload = 0.05 + 0.3 * (days / V1_FROM_DAYS);
  if (rng.chance(upload)) return "upload";
  if (days > V2_FROM_DAYS) return "v1";
  // core's v2 takes over from the ProxmoxVE-only v1, to about two thirds by the end.
  const v2 = 0.68 * (1 - days / V2_FROM_DAYS);
  if (!rng.chance(v2 / (1 - upload))) return "v1";
  return days <= DECLINE_AS_ABORT_FROM_DAYS && rng.chance(0.6 * (1 - days / DECLINE_AS_ABORT_FROM_DAYS) + 0.2)
    ? "v2-new"
    : "v2";
}

// ---------------------------------------------------------------- hosts

interface Host {
  platform: "pve" | "incus";
  pveVersion: string;
  kernel: string;
  arch: "amd64" | "arm64";
  cpuVendor: string;
  cpuModel: string;
  gpuVendor: string;
  gpuModel: string;
  /** What GPU the host has (v1's gpu_passthrough): igpu, dgpu, unknown. */
  hostGpu: "igpu" | "dgpu" | "unknown";
  ramSpeed: string;
}

const CPUS = {
  intel: new Weighted([
    ["Intel(R) N100", 14],
    ["Intel(R) Core(TM) i5-8500T CPU @ 2.10GHz", 9],
    ["Intel(R) Core(TM) i7-12700H", 6],
    ["Intel(R) Core(TM) i3-N305", 6],
    ["Intel(R) Core(TM) i5-12500", 5],
    ["Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", 5],
    ["Intel(R) Celeron(R) J4125 CPU @ 2.00GHz", 4],
    ["Intel(R) Core(TM) i7-7700 CPU @ 3.60GHz", 4],
    ["Intel(R) Core(TM) Ultra 5 125H", 3],
    ["Intel(R) Xeon(R) E-2224 CPU @ 3.40GHz", 2],
    ["Intel(R) N150", 4],
  ] as const),
  amd: new Weighted([
    ["AMD Ryzen 7 5700U with Radeon Graphics", 8],
    ["AMD Ryzen 5 5600G with Radeon Graphics", 7],
    ["AMD Ryzen 9 7940HS w/ Radeon 780M Graphics", 6],
    ["AMD Ryzen 7 5800H with Radeon Graphics", 5],
    ["AMD EPYC 7302P 16-Core Processor", 3],
    ["AMD Ryzen 9 5950X 16-Core Processor", 3],
    ["AMD Ryzen 5 3600 6-Core Processor", 3],
  ] as const),
  arm: new Weighted([
    ["Cortex-A76", 6],
    ["Neoverse-N1", 3],
    ["Cortex-A72", 2],
  ] as const),
};
const GPUS = {
  intel: new Weighted([
    ["Intel Corporation Alder Lake-N [UHD Graphics]", 10],
    ["Intel Corporation CoffeeLake-S GT2 [UHD Graphics 630]", 6],
    ["Intel Corporation Iris Xe Graphics", 5],
    ["Intel Corporation Meteor Lake-P [Intel Arc Graphics]", 2],
  ] as const),
  amd: new Weighted([
    ["AMD/ATI Rembrandt [Radeon 680M]", 5],
    ["AMD/ATI Phoenix1 [Radeon 780M]", 5],
    ["AMD/ATI Cezanne [Radeon Vega]", 6],
    ["AMD/ATI Navi 23 [Radeon RX 6600]", 2],
  ] as const),
  nvidia: new Weighted([
    ["NVIDIA Corporation GA106 [GeForce RTX 3060]", 6],
    ["NVIDIA Corporation TU117GL [T400]", 3],
    ["NVIDIA Corporation AD107 [GeForce RTX 4060]", 4],
    ["NVIDIA Corporation GP108 [GeForce GT 1030]", 2],
    ["NVIDIA Corporation GA102 [GeForce RTX 3090]", 1],
  ] as const),
};
const RAM_SPEEDS = new Weighted([
  ["3200", 30],
  ["2666", 14],
  ["4800", 14],
  ["2400", 10],
  ["5600", 8],
  ["2133", 5],
  ["", 19],
] as const);
const INCUS = new Weighted([
  ["incus-6.0.4", 5],
  ["incus-6.13", 3],
  ["incus-6.17", 4],
] as const);

/** The kernel a PVE version ships (a few builds of each), or the host's own under incus. */
function kernelOf(rng: Rng, platform: Host["platform"], pve: string): string {
  if (platform === "incus") return rng.pick(["6.12.48+deb13-amd64", "6.1.0-37-amd64", "6.8.0-79-generic"]);
  if (pve.startsWith("9.1")) return `6.17.2-${rng.int(1, 2)}-pve`;
  if (pve.startsWith("9.")) return `6.14.${rng.pick([8, 11])}-${rng.int(1, 4)}-pve`;
  if (pve.startsWith("8.4") || pve.startsWith("8.3")) return `6.8.12-${rng.int(4, 15)}-pve`;
  if (pve.startsWith("8.")) return `6.${rng.pick([5, 8])}.${rng.int(11, 13)}-${rng.int(1, 8)}-pve`;
  return `5.15.${rng.int(102, 158)}-1-pve`;
}

function hostOf(rng: Rng, t: DayTables): Host {
  const platform = rng.chance(0.035) ? "incus" : "pve";
  const pveVersion = platform === "incus" ? INCUS.pick(rng) : t.pve.pick(rng);
  const arch = rng.chance(0.03) ? "arm64" : "amd64";
  const cpuVendor = arch === "arm64" ? "arm" : rng.chance(0.63) ? "intel" : "amd";
  const cpuModel = CPUS[cpuVendor as keyof typeof CPUS].pick(rng);
  // An Intel or AMD iGPU on most small hosts, a discrete NVIDIA or AMD card on some, none on others.
  const g = rng.next();
  const gpuVendor =
    arch === "arm64"
      ? g < 0.5
        ? ""
        : "unknown"
      : g < 0.44
        ? cpuVendor === "amd"
          ? "amd"
          : "intel"
        : g < 0.6
          ? "nvidia"
          : g < 0.66
            ? "amd"
            : g < 0.8
              ? "unknown"
              : "";
  const gpuModel =
    gpuVendor === "intel" || gpuVendor === "amd" || gpuVendor === "nvidia" ? GPUS[gpuVendor].pick(rng) : "";
  const hostGpu =
    gpuVendor === "nvidia" || (gpuVendor === "amd" && gpuModel.includes("Navi"))
      ? "dgpu"
      : gpuVendor === "intel" || gpuVendor === "amd"
        ? "igpu"
        : "unknown";
  return {
    platform,
    pveVersion,
    kernel: kernelOf(rng, platform, pveVersion),
    arch,
    cpuVendor,
    cpuModel,
    gpuVendor,
    gpuModel,
    hostGpu,
    ramSpeed: RAM_SPEEDS.pick(rng),
  };
}

// ---------------------------------------------------------------- repos

const FORKS = [
  "tteck/Proxmox",
  "bandit-labs/ProxmoxVE",
  "homelab-nerd/ProxmoxVE",
  "jcalvert/ProxmoxVE",
  "michelroegl-brunner/ProxmoxVE",
];

function repoOf(rng: Rng, client: Client): { source: string; slug: string } {
  if (client === "v1") return { source: "ProxmoxVE", slug: "community-scripts/ProxmoxVE" };
  const x = rng.next();
  // ProxmoxVED: the dev repo, and runs core attributes only to the engine.
  if (x < 0.08) return { source: "ProxmoxVED", slug: "community-scripts/ProxmoxVED" };
  if (x < 0.13) return { source: "external", slug: rng.pick(FORKS) };
  return { source: "ProxmoxVE", slug: "community-scripts/ProxmoxVE" };
}

// ---------------------------------------------------------------- how a run ends

type Ending =
  | { kind: "success" }
  | { kind: "failed"; code: number; text: string | null; command: string | null; line: number | null }
  /** The user declined a prompt or a check (113, 114, 122, 253, 254): failed, or aborted by the newest engine. */
  | { kind: "declined"; code: number }
  /** Ctrl+C, SIGTERM, a closed terminal. */
  | { kind: "aborted"; code: number }
  | { kind: "unknown" }
  /** No final report ever comes. */
  | { kind: "stuck" };

/** Failure exit codes with weights, as the clients' log tails show them. */
const FAILURE_CODES = new Weighted([
  [1, 34],
  [100, 14],
  [127, 4],
  [22, 5],
  [6, 3],
  [7, 3],
  [28, 4],
  [35, 1],
  [137, 3],
  [134, 1],
  [150, 4],
  [206, 3],
  [214, 3],
  [217, 1],
  [255, 3],
  [2, 2],
  [243, 2],
  [126, 1],
  [215, 1],
  [160, 1],
  [170, 1],
  [10, 1],
] as const);
const DECLINES = [113, 114, 122, 253, 254] as const;

/** A planted failure driver: the extra failure rate of one app under one condition, and what it says. */
interface Driver {
  app: string;
  applies(host: Host, gpuPassthrough: boolean): boolean;
  rate: number;
  code: number;
  command: string;
  text: string;
}

const DRIVERS: readonly Driver[] = [
  {
    app: "jellyfin",
    applies: (h) => h.pveVersion === "9.0.10",
    rate: 0.42,
    code: 1,
    command: "apt-get install -y intel-media-va-driver-non-free jellyfin-ffmpeg7",
    text: "jellyfin-ffmpeg7 : Depends: libva2 (>= 2.22) but 2.17.0-1 is to be installed",
  },
  {
    app: "immich",
    applies: (h) => h.arch === "arm64",
    rate: 0.7,
    code: 1,
    command: "/opt/immich/app/bin/immich-build",
    text: "exec /usr/bin/node: exec format error",
  },
  {
    app: "plex",
    applies: (h) => h.gpuVendor === "amd",
    rate: 0.45,
    code: 1,
    command: "vainfo --display drm --device /dev/dri/renderD128",
    text: "vaInitialize failed with error code -1 (unknown libva error), exit",
  },
  {
    app: "docker",
    applies: (h) => h.platform === "incus",
    rate: 0.3,
    code: 1,
    command: "systemctl start docker",
    text: "failed to mount overlay: operation not permitted (nesting disabled?)",
  },
];

/** A few lines of the install log before the failure, as the client's tail sends them. */
function logTail(rng: Rng, app: string, failure: string): string {
  const lines: string[] = [];
  const steps = [
    "Installing Dependencies",
    "Setting up Container OS",
    "Updating Container OS",
    `Installing ${app}`,
    `Configuring ${app}`,
    "Creating Service",
  ];
  for (let i = 0, n = rng.int(2, 12); i < n; i++) {
    const step = steps[Math.min(steps.length - 1, Math.floor((i / n) * steps.length))]!;
    lines.push(
      rng.chance(0.6)
        ? `  - ${step}`
        : `Setting up ${app}-dep${rng.int(1, 40)} (${rng.int(1, 9)}.${rng.int(0, 30)}.${rng.int(0, 9)}) ...`,
    );
  }
  lines.push(failure);
  return lines.join("\n");
}

/** The client's error text: "exit_code=N | explanation[ | at line L: CMD]", then "---" and the log tail. */
function errorText(
  rng: Rng,
  app: string,
  code: number,
  text: string | null,
  command: string | null,
  line: number | null,
): string {
  let head = `exit_code=${code} | ${explainExitCode(code)}`;
  if (command !== null) head += line !== null ? ` | at line ${line}: ${command}` : ` | command: ${command}`;
  return text === null ? head : `${head}\n---\n${logTail(rng, app, text)}`;
}

function endingOf(
  rng: Rng,
  app: AppSpec,
  frac: number,
  at: number,
  host: Host,
  passthrough: boolean,
  attempt: number,
): Ending {
  const x = rng.next();
  if (x < app.stuckRate) return { kind: "stuck" };
  if (x < app.stuckRate + app.abortRate) return { kind: "aborted", code: rng.pick([130, 130, 130, 143, 129]) };
  if (x < app.stuckRate + app.abortRate + 0.018) return { kind: "declined", code: rng.pick(DECLINES) };
  if (x < app.stuckRate + app.abortRate + 0.021) return { kind: "unknown" };
  for (const d of DRIVERS) {
    if (d.app === app.name && d.applies(host, passthrough) && rng.chance(d.rate))
      return { kind: "failed", code: d.code, text: d.text, command: d.command, line: rng.int(80, 140) };
  }
  // A retry after a failure is more often rescued than a first run succeeds.
  const fail = failRateAt(app, frac) * (attempt > 1 ? 0.55 : 1);
  if (!rng.chance(fail)) return { kind: "success" };
  const code = FAILURE_CODES.pick(rng);
  const ctid = 100 + Math.floor(rng.next() ** 2 * 400);
  return {
    kind: "failed",
    code,
    text: failureText(rng, { app, ctid, frac, at }),
    command: rng.chance(0.8)
      ? `$STD ${rng.pick(["apt-get install -y", "npm ci", "pip install", "curl -fsSL", "systemctl enable --now"])} ${app.name}`
      : null,
    line: rng.int(20, 400),
  };
}

// ---------------------------------------------------------------- reports

/** One report of a run: when it arrives, what it says, what it does to its execution. */
export interface SeedReport {
  at: number;
  report: Report;
  /** What the write comes to: a new execution, a change, or nothing new (a repeated ping). */
  expect: "created" | "updated" | "duplicate";
}

/** What every report of one execution carries, as the client builds it. */
function payload(
  rng: Rng,
  base: JsonObject,
  client: Client,
  host: Host,
  repo: { source: string; slug: string },
  app: AppSpec,
  passthrough: boolean,
  frac: number,
): JsonObject {
  const body: JsonObject = { ...base };
  delete body.disableip6;
  delete body.status;
  if (client === "v2" || client === "v2-new") body.payload_version = 2;
  if (body.ct_type === "") body.ct_type = 0; // the client's defaults: numbers, never empty
  for (const key of ["disk_size", "core_count", "ram_size"]) if (body[key] === "") body[key] = 0;
  if (typeof body.disk_size === "string") body.disk_size = Number.parseInt(body.disk_size, 10);
  body.pve_version = host.pveVersion;
  body.cpu_vendor = host.cpuVendor;
  body.cpu_model = host.cpuModel;
  body.gpu_vendor = host.gpuVendor;
  body.gpu_model = host.gpuModel;
  // Two questions under one name: v1 what the host has, v2 whether this guest got it.
  body.gpu_passthrough = client === "v1" ? host.hostGpu : passthrough ? "yes" : "no";
  body.ram_speed = host.ramSpeed;
  body.arch = host.arch;
  body.platform = host.platform;
  body.has_arm = host.arch === "arm64";
  body.repo_source = repo.source;
  body.repo_slug = repo.slug;
  if (client !== "v1") {
    body.kernel_version = host.kernel;
    // The app's release at this point of the window (a few releases a year, most users on the newest).
    const release = Math.max(0, Math.floor(frac * 9) - (rng.chance(0.25) ? 1 : 0));
    body.app_version =
      app.type === "vm" || app.ctType === null
        ? ""
        : `${1 + (app.rank % 5)}.${((app.rank * 7) % 20) + release}.${rng.int(0, 4)}`;
  }
  return body;
}

/** The final report's fields for an ending. */
function finalFields(rng: Rng, ending: Exclude<Ending, { kind: "stuck" }>, client: Client, app: string): JsonObject {
  switch (ending.kind) {
    case "success":
      return { status: "success", exit_code: 0, error: "", error_category: "" };
    case "unknown":
      return { status: "unknown", exit_code: 0, error: "", error_category: "" };
    case "aborted":
      return {
        status: "aborted",
        exit_code: ending.code,
        error: errorText(rng, app, ending.code, null, null, null),
        error_category: "user_aborted",
      };
    case "declined": {
      const error = errorText(rng, app, ending.code, null, null, null);
      // The newest engine sends a decline as the user's abort; every older client as a failure.
      if (client === "v2-new")
        return { status: "aborted", exit_code: ending.code, error, error_category: "user_aborted" };
      return { status: "failed", exit_code: ending.code, error, error_category: categoryOfExitCode(ending.code) };
    }
    case "failed": {
      const v2 = client === "v2" || client === "v2-new";
      return {
        status: "failed",
        exit_code: ending.code,
        error: errorText(rng, app, ending.code, ending.text, ending.command, ending.line),
        error_category: categoryOfExitCode(ending.code),
        ...(v2 ? { failed_command: ending.command ?? "", failed_line: ending.line ?? 0 } : {}),
      };
    }
  }
}

const telemetry = (body: JsonObject): Report => normalized(normalizeTelemetry(body, NORMALIZE), body);

/** The container's own ping: a few keys only (v2 nine, v1 eight). */
function containerPing(body: JsonObject): JsonObject {
  const ping: JsonObject = {};
  for (const key of [
    "payload_version",
    "random_id",
    "execution_id",
    "type",
    "nsapp",
    "platform",
    "repo_source",
    "repo_slug",
  ])
    if (body[key] !== undefined) ping[key] = body[key];
  ping.status = "configuring";
  return ping;
}

/**
 * The reports of one install of `app` by a /telemetry client, starting at `at`: its executions
 * (a failed run is sometimes run again as a new execution of the same install), each with its
 * pings and final report, or, for a tool or an addon, its one report. Reports after `end` are left
 * out; a run whose final report never comes is marked `stuck` (the service expires it later).
 */
export function telemetryInstall(
  rng: Rng,
  ids: Rng,
  app: AppSpec,
  t: DayTables,
  at: number,
  frac: number,
  client: Exclude<Client, "upload">,
): { reports: SeedReport[]; stuck: { executionId: string; at: number }[] } {
  const randomId = uuid4(ids);
  const host = hostOf(rng, t);
  const repo = repoOf(rng, client);
  const base = startBody(rng, app, t, randomId);
  const gpuApp = app.profile === "media" || app.profile === "ai" || app.name === "frigate";
  const passthrough = gpuApp && host.hostGpu !== "unknown" && rng.chance(0.65);
  const common = payload(rng, base, client, host, repo, app, passthrough, frac);
  const reports: SeedReport[] = [];
  const stuck: { executionId: string; at: number }[] = [];
  const oneShot = app.type === "pve" || app.type === "addon" || app.type === "tool";

  let start = at;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const executionId = attempt === 1 ? randomId : uuid4(ids);
    const body: JsonObject = { ...common, random_id: randomId, execution_id: executionId };
    let ending = endingOf(rng, app, frac, start, host, passthrough, attempt);
    // A tool or addon runs on the host and reports once, at its end: it is never left running.
    if (oneShot && ending.kind === "stuck") ending = { kind: "success" };
    const kind =
      ending.kind === "success" || ending.kind === "unknown" ? "done" : ending.kind === "failed" ? "failed" : "aborted";
    const ms = durationMs(rng, app, kind);
    if (oneShot && ending.kind !== "stuck") {
      // Sampled at the time of its one report, the end of its run.
      reports.push({
        at: start,
        report: telemetry({
          ...body,
          ...finalFields(rng, ending, client, app.name),
          install_duration: Math.round(ms / 1000),
        }),
        expect: "created",
      });
      break;
    }
    reports.push({
      at: start,
      report: telemetry({
        ...body,
        status: "installing",
        exit_code: 0,
        error: "",
        error_category: "",
        install_duration: 0,
      }),
      expect: "created",
    });
    const vm = app.type === "vm";
    if (!vm) {
      const validation = start + Math.round(Math.min(ms / 4, rng.int(2, 9) * 1000));
      const configuring = start + Math.round(Math.min(ms / 2, rng.int(20, 70) * 1000));
      reports.push({
        at: validation,
        report: telemetry({
          ...body,
          status: "validation",
          exit_code: 0,
          error: "",
          error_category: "",
          install_duration: 0,
        }),
        expect: "updated",
      });
      reports.push({
        at: configuring,
        report: telemetry({
          ...body,
          status: "configuring",
          exit_code: 0,
          error: "",
          error_category: "",
          install_duration: 0,
        }),
        expect: "updated",
      });
      // The container's ping says configuring again: nothing new for the execution.
      if (ending.kind !== "stuck" || rng.chance(0.5))
        reports.push({
          at: configuring + Math.round(Math.min(ms / 4, rng.int(5, 40) * 1000)),
          report: telemetry(containerPing(body)),
          expect: "duplicate",
        });
    }
    if (ending.kind === "stuck") {
      stuck.push({ executionId, at: start });
      break;
    }
    const finished = start + ms;
    reports.push({
      at: finished,
      report: telemetry({
        ...body,
        ...finalFields(rng, ending, client, app.name),
        install_duration: Math.round(ms / 1000),
      }),
      expect: "updated",
    });
    // After a failure half the users run it again, minutes later; fewer a third time.
    if (ending.kind !== "failed" || !rng.chance(attempt === 1 ? 0.5 : 0.3)) break;
    start = finished + rng.int(1, 20) * MINUTE + rng.int(0, 59_999);
  }
  // The pings of one execution can come close together: the list in time order.
  reports.sort((a, b) => a.at - b.at);
  return { reports, stuck };
}

/** How long after its start an execution that never ends is expired (the service's default). */
export const STUCK_AFTER = 12 * HOUR;
