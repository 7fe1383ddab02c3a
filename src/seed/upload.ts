// The /upload era's clients, as `installstats seed` generates them: one day's tables (apps, host
// and OS versions, methods at that point of the window), a start report's body and the status
// update's. Pure: no I/O; every choice is drawn from the PRNG given.
import { defaults } from "../config.ts";
import type { NormalizeOptions } from "../domain/normalize.ts";
import type { JsonObject } from "../domain/json.ts";
import { HOUR } from "../domain/time.ts";
import {
  ADVANCED_OS,
  METHODS,
  OS_VERSIONS,
  PVE_VERSIONS,
  Weighted,
  adoptionTable,
  doneText,
  failRateAt,
  failureText,
  interruptText,
  type AppSpec,
  type Rng,
} from "./seed-data.ts";

const MAX_DURATION_MS = 10 * HOUR;

/** What real clients send is normalized with the service's defaults (IP masking on). */
export const NORMALIZE: NormalizeOptions = {
  maxFieldLength: defaults.maxFieldLength,
  maxErrorLength: defaults.maxErrorLength,
  maskIps: defaults.maskIps,
};

// ---------------------------------------------------------------- one day's tables

export interface DayTables {
  apps: Weighted<AppSpec>;
  pve: Weighted<string>;
  methods: Weighted<string>;
  os: Map<string, Weighted<string>>;
  advancedOs: Weighted<string>;
  /** Share of container clients that send disableip6 (newer revisions). */
  ip6Share: number;
}

export function dayTables(catalogue: readonly AppSpec[], frac: number): DayTables {
  const os = new Map<string, Weighted<string>>();
  for (const [type, list] of Object.entries(OS_VERSIONS)) os.set(type, adoptionTable(list, frac));
  return {
    apps: new Weighted(catalogue.map((app) => [app, app.weight * app.trend(frac)] as const)),
    pve: adoptionTable(PVE_VERSIONS, frac),
    methods: adoptionTable(METHODS, frac),
    os,
    advancedOs: new Weighted(ADVANCED_OS),
    ip6Share: 0.55 + 0.4 * frac,
  };
}

// ---------------------------------------------------------------- one install

/** Resource settings users with saved defaults ("mydefaults") tend to have. */
const SAVED_DEFAULTS: readonly (readonly [disk: number, cores: number, ram: number])[] = [
  [8, 2, 2048],
  [16, 2, 4096],
  [4, 1, 1024],
  [32, 4, 8192],
  [10, 2, 2048],
  [20, 4, 4096],
];

const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/** The parsed body of the start report the app's client sends (wire field names and quirks). */
export function startBody(rng: Rng, app: AppSpec, t: DayTables, id: string): JsonObject {
  const method = t.methods.pick(rng);
  const vm = app.type === "vm";
  const host = app.ctType === null && !vm;
  const pve = t.pve.pick(rng);

  let osType = app.os;
  let osVersion: string;
  if (app.fixedOsVersion) {
    osVersion = rng.pick(app.fixedOsVersion);
  } else if (host) {
    // Host scripts report the host's own Debian, which follows the PVE major version.
    osVersion = pve.startsWith("9.") ? "13" : pve.startsWith("7.") ? "11" : "12";
  } else {
    if (method === "advanced" && app.profile !== "os" && app.profile !== "alp" && rng.chance(0.25))
      osType = t.advancedOs.pick(rng);
    osVersion = (t.os.get(osType) ?? t.os.get("debian")!).pick(rng);
  }

  const body: JsonObject = {};
  if (host) {
    // Host scripts have no container: the client leaves the numbers empty.
    body.ct_type = "";
    body.type = app.type;
    body.disk_size = "";
    body.core_count = "";
    body.ram_size = "";
  } else {
    let disk = app.disk!;
    let cores = app.cores!;
    let ram = app.ram!;
    if (method === "advanced") {
      disk = clamp(Math.ceil(disk * rng.pick([0.5, 1, 1, 1, 1.5, 2, 4])), vm ? 8 : 2, vm ? 128 : 64);
      cores = clamp(rng.pick([cores, cores, cores, cores * 2, Math.max(1, cores / 2), 4, 6, 8]), 1, 8);
      ram = clamp(ram * rng.pick([0.5, 1, 1, 1, 2, 4]), 512, vm ? 32768 : 16384);
    } else if (method.startsWith("mydefaults")) {
      const saved = rng.pick(SAVED_DEFAULTS);
      disk = Math.max(disk, saved[0]);
      cores = saved[1];
      ram = Math.max(ram, saved[2]);
    }
    let ctType = app.ctType!;
    if (!vm && rng.chance(app.otherCtTypeShare)) ctType = 1 - ctType;
    body.ct_type = ctType;
    body.type = app.type;
    // VM clients send the disk as "32G" or with the G stripped; some old clients quote numbers.
    body.disk_size = vm && rng.chance(0.5) ? `${disk}G` : disk;
    body.core_count = cores;
    body.ram_size = rng.chance(0.03) ? String(ram) : ram;
  }
  body.os_type = osType;
  body.os_version = osVersion;
  if (vm) body.disableip6 = "";
  else if (!host && rng.chance(t.ip6Share)) body.disableip6 = rng.chance(0.12) ? "yes" : "no";
  body.nsapp = app.name;
  body.method = method;
  body.pve_version = pve;
  body.status = "installing";
  body.random_id = id;
  return body;
}

/** Install duration: log-normal around the app's median, with a long tail; failures stop early. */
export function durationMs(rng: Rng, app: AppSpec, kind: "done" | "failed" | "aborted"): number {
  let s = app.medianS * Math.exp(app.sigma * rng.normal());
  if (rng.chance(0.03)) s *= Math.exp(rng.range(1, 3.5)); // slow mirrors, huge images, a forgotten prompt
  if (kind === "failed") s *= rng.range(0.05, 1);
  else if (kind === "aborted") s *= rng.range(0.02, 0.8);
  return Math.min(MAX_DURATION_MS, Math.max(4000, Math.round(s * 1000 + rng.next() * 1000)));
}

/** The parsed body of the status update, and when it arrives; null when the run never reports. */
export function updateBody(
  rng: Rng,
  app: AppSpec,
  at: number,
  frac: number,
  id: string,
): { body: JsonObject; ms: number } | null {
  const x = rng.next();
  if (x < app.stuckRate) return null;
  const fail = failRateAt(app, frac);
  let body: JsonObject;
  let ms: number;
  if (x < app.stuckRate + app.abortRate) {
    body = { status: "failed", error: interruptText(rng), random_id: id };
    ms = durationMs(rng, app, "aborted");
  } else if (x < app.stuckRate + app.abortRate + fail) {
    const ctid = 100 + Math.floor(rng.next() ** 2 * 400);
    let error = failureText(rng, { app, ctid, frac, at });
    // Some clients forward the coloured line of the failing step (the service strips the colours).
    if (rng.chance(0.04)) error = `\u001b[01;31m✖\u001b[m ${error}\u001b[m\n`;
    body = { status: "failed", error, random_id: id };
    ms = durationMs(rng, app, "failed");
  } else {
    body = { status: "done", error: doneText(rng), random_id: id };
    ms = durationMs(rng, app, "done");
  }
  return { body, ms };
}

export function normalized<T>(
  checked: { ok: true; value: T } | { ok: false; field: string; message: string },
  body: JsonObject,
): T {
  if (!checked.ok)
    throw new Error(`seed generated an invalid body (${checked.field}: ${checked.message}): ${JSON.stringify(body)}`);
  return checked.value;
}
