// `installstats seed`: fills a database with realistic synthetic installs (src/seed/seed-data.ts)
// through the one write path, Store.write, so rows, rollups and error signatures are exactly what
// ingestion would have produced. Records are generated hour by hour in time order and written in
// batches that cover few hours, so each batch touches few rollup cells.
import { defaults } from "../config.ts";
import { normalizeStart, normalizeUpdate, type NormalizeOptions } from "../domain/normalize.ts";
import type { Store, WriteOp } from "../store/contract.ts";
import { ADVANCED_OS, DAY_OF_WEEK, HOUR_OF_DAY, METHODS, OS_VERSIONS, PVE_VERSIONS, Rng, Weighted, adoptionTable, buildCatalogue, doneText, failRateAt, failureText, growth, hashString, interruptText, uuid4, type AppSpec } from "./seed-data.ts";
import type { JsonObject } from "../domain/json.ts";
import { DAY, HOUR } from "../domain/time.ts";
import type { Execution, Report } from "../domain/execution.ts";
import { decide } from "../domain/lifecycle.ts";

export interface SeedOptions {
  /** Installs to create. */
  records: number;
  /** Length of the window the installs are spread over, ending at `end` (default 365). */
  days: number;
  /** End of the window, epoch ms (default now). */
  end: number;
  /** PRNG seed: the same seed and options give the same records (default 1). */
  seed: number;
  /** Operations per write transaction (a start and its status update are two; default 4000). */
  batchSize?: number;
}

export interface SeedProgress {
  written: number;
  total: number;
}

export const SEED_DEFAULTS = { days: 365, seed: 1, batchSize: 4000 } as const;

/** Complete options from what the command line gave. */
export function seedOptions(given: Partial<SeedOptions> & Pick<SeedOptions, "records">): SeedOptions {
  return {
    records: given.records,
    days: given.days ?? SEED_DEFAULTS.days,
    end: given.end ?? Date.now(),
    seed: given.seed ?? SEED_DEFAULTS.seed,
    batchSize: given.batchSize ?? SEED_DEFAULTS.batchSize,
  };
}

/** One synthetic install: its start report and, unless it never finished, its status update. */
export interface SeedInstall {
  /** When the start report arrived (epoch ms). */
  at: number;
  report: Report;
  update: Report | null;
  /** When the status update arrived: `at` + the install's duration; null without update. */
  updateAt: number | null;
}

const MAX_DURATION_MS = 10 * HOUR;

/** What real clients send is normalized with the service's defaults (IP masking on). */
const NORMALIZE: NormalizeOptions = {
  maxFieldLength: defaults.maxFieldLength,
  maxErrorLength: defaults.maxErrorLength,
  maskIps: defaults.maskIps,
};

function checkOptions(o: SeedOptions): void {
  if (!Number.isSafeInteger(o.records) || o.records < 0) throw new RangeError("records must be a whole number >= 0");
  if (!(o.days > 0) || !Number.isFinite(o.days)) throw new RangeError("days must be a positive number");
  if (!Number.isSafeInteger(o.end)) throw new RangeError("end must be a whole number of epoch milliseconds");
  if (!Number.isFinite(o.seed)) throw new RangeError("seed must be a number");
  if (o.batchSize !== undefined && (!Number.isSafeInteger(o.batchSize) || o.batchSize < 2)) throw new RangeError("batchSize must be a whole number >= 2");
}

// ---------------------------------------------------------------- time slots

interface Slot {
  from: number;
  to: number;
  count: number;
}

/** First moment of the window. */
const windowStart = (o: SeedOptions): number => o.end - Math.round(o.days * DAY);

/**
 * The window cut at UTC hour boundaries (the rollup buckets), each slot with its share of the
 * records: growth over the window x hour of day x day of week x day-to-day noise x a few event
 * days. Counts are cumulative roundings, so they add up to exactly `records`.
 */
function timeSlots(o: SeedOptions, rng: Rng): Slot[] {
  const start = windowStart(o);
  const span = o.end - start;
  const firstDay = Math.floor(start / DAY);
  const nDays = Math.floor(o.end / DAY) - firstDay + 1;
  const dayFactor = Float64Array.from({ length: nDays }, () => Math.exp(0.12 * rng.normal()));
  // Event days (a host release, a popular video): a few days with a burst of installs.
  for (let k = Math.max(1, Math.round(o.days / 60)); k > 0; k--) {
    const d = rng.int(0, nDays - 1);
    dayFactor[d] = dayFactor[d]! * rng.range(1.4, 2.2);
    if (d + 1 < nDays) dayFactor[d + 1] = dayFactor[d + 1]! * 1.2;
  }
  const slots: Slot[] = [];
  const weights: number[] = [];
  for (let from = start; from < o.end; ) {
    const to = Math.min(o.end, Math.floor(from / HOUR) * HOUR + HOUR);
    const date = new Date(from);
    const frac = (from - start) / span;
    const w =
      ((to - from) / HOUR) *
      HOUR_OF_DAY[date.getUTCHours()]! *
      DAY_OF_WEEK[date.getUTCDay()]! *
      dayFactor[Math.floor(from / DAY) - firstDay]! *
      growth(frac);
    slots.push({ from, to, count: 0 });
    weights.push(w);
    from = to;
  }
  const total = weights.reduce((a, b) => a + b, 0);
  let cum = 0;
  let placed = 0;
  slots.forEach((slot, i) => {
    cum += weights[i]!;
    const upto = i === slots.length - 1 ? o.records : Math.round((o.records * cum) / total);
    slot.count = upto - placed;
    placed = upto;
  });
  return slots;
}

// ---------------------------------------------------------------- one day's tables

interface DayTables {
  apps: Weighted<AppSpec>;
  pve: Weighted<string>;
  methods: Weighted<string>;
  os: Map<string, Weighted<string>>;
  advancedOs: Weighted<string>;
  /** Share of container clients that send disableip6 (newer revisions). */
  ip6Share: number;
}

function dayTables(catalogue: readonly AppSpec[], frac: number): DayTables {
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
  [8, 2, 2048], [16, 2, 4096], [4, 1, 1024], [32, 4, 8192], [10, 2, 2048], [20, 4, 4096],
];

const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/** The parsed body of the start report the app's client sends (wire field names and quirks). */
function startBody(rng: Rng, app: AppSpec, t: DayTables, id: string): JsonObject {
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
    if (method === "advanced" && app.profile !== "os" && app.profile !== "alp" && rng.chance(0.25)) osType = t.advancedOs.pick(rng);
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
function durationMs(rng: Rng, app: AppSpec, kind: "done" | "failed" | "aborted"): number {
  let s = app.medianS * Math.exp(app.sigma * rng.normal());
  if (rng.chance(0.03)) s *= Math.exp(rng.range(1, 3.5)); // slow mirrors, huge images, a forgotten prompt
  if (kind === "failed") s *= rng.range(0.05, 1);
  else if (kind === "aborted") s *= rng.range(0.02, 0.8);
  return Math.min(MAX_DURATION_MS, Math.max(4000, Math.round(s * 1000 + rng.next() * 1000)));
}

/** The parsed body of the status update, and when it arrives; null when the run never reports. */
function updateBody(rng: Rng, app: AppSpec, at: number, frac: number, id: string): { body: JsonObject; ms: number } | null {
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

function normalized<T>(checked: { ok: true; value: T } | { ok: false; field: string; message: string }, body: JsonObject): T {
  if (!checked.ok) throw new Error(`seed generated an invalid body (${checked.field}: ${checked.message}): ${JSON.stringify(body)}`);
  return checked.value;
}

// ---------------------------------------------------------------- generators

/**
 * The installs, one array per UTC hour (the rollup bucket), in time order. Start reports are
 * normalized by the service's own normalizers, so they are exactly what ingestion would store.
 * A status update whose time falls after `end` is left out (that install is still running).
 */
function* generateHourly(options: SeedOptions): Generator<SeedInstall[]> {
  checkOptions(options);
  const rng = new Rng(options.seed);
  // Ids come from their own stream, keyed by the seed and the window: the same seed and window
  // give the same ids (so a repeated run is recognised and refused), another window or seed
  // gives unrelated ones (so it can be added to the same database without collisions).
  const ids = new Rng(hashString(`${options.seed}|${options.end}|${options.days}`));
  const catalogue = buildCatalogue();
  const start = windowStart(options);
  const span = options.end - start;
  const slots = timeSlots(options, rng);
  let tables: DayTables | null = null;
  let tablesDay = Number.NaN;
  for (const slot of slots) {
    if (slot.count === 0) continue;
    const day = Math.floor(slot.from / DAY);
    if (day !== tablesDay) {
      tables = dayTables(catalogue, (Math.max(start, day * DAY + DAY / 2) - start) / span);
      tablesDay = day;
    }
    const t = tables!;
    const times = new Float64Array(slot.count);
    for (let i = 0; i < times.length; i++) times[i] = slot.from + Math.floor(rng.next() * (slot.to - slot.from));
    times.sort();
    const out: SeedInstall[] = new Array(slot.count);
    for (let i = 0; i < times.length; i++) {
      const at = times[i]!;
      const frac = (at - start) / span;
      const app = t.apps.pick(rng);
      const id = uuid4(ids);
      const sb = startBody(rng, app, t, id);
      const report = normalized(normalizeStart(sb, NORMALIZE), sb);
      const u = updateBody(rng, app, at, frac, id);
      let update: Report | null = null;
      let updateAt: number | null = null;
      if (u !== null && at + u.ms <= options.end) {
        update = normalized(normalizeUpdate(u.body, NORMALIZE), u.body);
        updateAt = at + u.ms;
      }
      out[i] = { at, report, update, updateAt };
    }
    yield out;
  }
}

/** The installs one by one, in order of their start time. */
export function* generateInstalls(options: SeedOptions): Generator<SeedInstall> {
  for (const hour of generateHourly(options)) yield* hour;
}

// ---------------------------------------------------------------- writing

/** The execution as it stands once its start report and (if any) status update have been applied, by the service's own rules. */
function finishedRow(i: SeedInstall): Execution {
  const circumstances = { attempt: 1, held: null, repaired: false };
  const started = decide(undefined, i.report, { ...circumstances, at: i.at });
  if (started.kind !== "insert") throw new Error(`seed: the start report of ${i.report.randomId} was not a new execution`);
  if (i.update === null || i.updateAt === null) return started.row;
  const ended = decide(started.row, i.update, { ...circumstances, at: i.updateAt });
  return ended.kind === "update" ? ended.row : started.row;
}

/** The generated installs as the executions they end as, one by one, oldest first (benchmarks load them in bulk). */
export function* generateExecutions(options: SeedOptions): Generator<Execution> {
  for (const install of generateInstalls(options)) yield finishedRow(install);
}

/**
 * Writes `options.records` generated installs through `store.write`: each batch holds whole hours
 * when it can (a start and its update in the same batch), at most `batchSize` operations.
 * Refuses a database that already holds this seed's records (the updates would be conflicts).
 */
export async function seedDatabase(store: Store, options: SeedOptions, onProgress?: (p: SeedProgress) => void): Promise<{ records: number; seconds: number }> {
  checkOptions(options);
  const began = performance.now();
  const batchSize = options.batchSize ?? SEED_DEFAULTS.batchSize;
  const total = options.records;
  let ops: WriteOp[] = [];
  let written = 0;
  let checked = false;

  const flush = async () => {
    if (ops.length === 0) return;
    const results = await store.write(ops);
    let created = 0;
    results.forEach((result, i) => {
      const op = ops[i]!;
      if (result.kind !== "created") {
        throw new Error(`seed: ${op.kind === "load" ? op.execution.randomId : op.kind} was ${result.kind}, expected created`);
      }
      if (result.kind === "created") created++;
    });
    written += created;
    ops = [];
    onProgress?.({ written, total });
  };

  for (const hour of generateHourly(options)) {
    if (!checked && hour.length > 0) {
      const first = hour[0]!.report.randomId;
      if ((await store.getExecutions(first)).length > 0) {
        throw new Error(`seed: the database already holds the records of seed ${options.seed} for this window (install ${first}); choose another seed`);
      }
      checked = true;
    }
    // Keep an hour whole in one batch when it fits; an hour larger than a batch is split.
    if (ops.length > 0 && ops.length + hour.length > batchSize) await flush();
    for (const install of hour) {
      // The finished record is loaded as it stands: counted once, as the start and update would end up.
      ops.push({ kind: "load", execution: finishedRow(install), at: install.at });
      if (ops.length >= batchSize) await flush();
    }
  }
  await flush();
  return { records: written, seconds: (performance.now() - began) / 1000 };
}
