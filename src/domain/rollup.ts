// Rollups: per time bucket (hour, day) and per app slice ("*" = every app), the counts of every
// dimension value by outcome, plus duration histograms and error-signature counts.
// One row holds every dimension, so a write batch touches (distinct apps + 1) x grains rows
// however many dimensions there are (docs/decisions/2026-11-21-read-api-and-rollups.md).
import { kindOfType, type Execution, type Kind } from "./execution.ts";
import type { DimensionField } from "./fields.ts";
import { OUTCOMES, isFailure, type Outcome } from "./outcome.ts";
import { DAY, HOUR } from "./time.ts";
import { RecentlyUsed } from "./recently-used.ts";

export const OUTCOME_INDEX = Object.fromEntries(OUTCOMES.map((o, i) => [o, i])) as Record<Outcome, number>;

/**
 * What the cells count and how they are stored, as a version: when it changes (a dimension added,
 * a slice changed, a new cell layout), the engines rebuild stored cells from the records at
 * start-up (SQLite's rollup_state, PostgreSQL's rollup_version mark). 2: executions, kinds, repo
 * slices. 3: a failure ending in a decline exit code counts as an abort (drizzle/sqlite 0015,
 * drizzle/postgres 0010); dimensions disk_size, client, platform_class, arch_class and failure.
 * 4: cells of repo classes only, hour cells for HOUR_CELL_DAYS, binary parts (rollup-codec.ts).
 * 5: a sixth outcome, blocked, and 129/143 as aborts (drizzle/sqlite 0018, drizzle/postgres 0012);
 * the failure dimension and error signatures count blocked runs with the failed ones; slices of
 * platform classes too (sliceKey), so a platform filter reads cells.
 */
export const ROLLUP_VERSION = 5;

/**
 * Dimensions a breakdown can group by. nsapp stays first: an app's own slice skips it.
 * disk_size, client, platform_class and arch_class answer the community service's breakdowns of
 * what a run was given; failure is a failed run's exit code, category, error signature and app in
 * one key, so counts by exit code or signature come with the number of apps behind them.
 */
export const DIMENSIONS = [
  "nsapp",
  "os",
  "pve_version",
  "type",
  "method",
  "status",
  "ct_type",
  "core_count",
  "ram_size",
  "exit_code",
  "error_category",
  "platform",
  "arch",
  "cpu_vendor",
  "gpu_vendor",
  "gpu_passthrough",
  "host_gpu",
  "repo_source",
  "repo_slug",
  "app_version",
  "kernel_version",
  "attempt",
  "failed_command",
  "disk_size",
  "client",
  "platform_class",
  "arch_class",
  "failure",
] as const;
export type Dimension = (typeof DIMENSIONS)[number];
/** Dimensions whose values read as one thing each (failure's key is four): what /api/stats/breakdown offers. */
export const BREAKDOWN_DIMENSIONS = DIMENSIONS.filter((d): d is Exclude<Dimension, "failure"> => d !== "failure");

/** The failure dimension's key: its parts joined by this (a control character no value keeps, normalize.ts strips them). */
export const FAILURE_SEPARATOR = "\u001f";
/** A failure key's parts. */
export function failureParts(key: string): { exitCode: number; category: string; signature: string; app: string } {
  const [exitCode = "0", category = "", signature = "", app = ""] = key.split(FAILURE_SEPARATOR);
  return { exitCode: Number(exitCode), category, signature, app };
}

/**
 * The virtualization platform a run was on: pve or incus as the client sent it, else read from the
 * host version as the community service does (an "incus-6.x" host is Incus, any other is Proxmox
 * VE); "" when neither says.
 */
export function platformClass(r: Pick<Execution, "platform" | "pveVersion">): string {
  if (r.platform === "pve" || r.platform === "incus") return r.platform;
  if (r.pveVersion === null || r.pveVersion === "") return "";
  return /^incus/i.test(r.pveVersion) ? "incus" : "pve";
}

/**
 * Rollup slices: every execution counts in the slices of its kind, for every repo and for its
 * repo source, for every platform and for its platform class, each for every app ("*") and for
 * its own app ("=<nsapp>"). A key is `kind|repo|platform|app`, repo and platform "*" (every one)
 * or "=<class>"; the app last, as an app's name may hold "|".
 */
export const ALL_APPS = "*";
export const appSlice = (nsapp: string | null): string => `=${nsapp ?? ""}`;
const part = (v: string | null): string => (v === null ? "*" : `=${v}`);
export const sliceKey = (kind: Kind, repo: string | null, app: string, platform: string | null = null): string =>
  `${kind}|${part(repo)}|${part(platform)}|${app}`;

/** Repo sources the client sends; anything else is a fork ("external"); "" when none was sent (/upload). */
const REPO_SOURCES = new Set(["ProxmoxVE", "ProxmoxVED", "external"]);
export const repoClass = (source: string | null): string =>
  source === null || source === "" ? "" : REPO_SOURCES.has(source) ? source : "external";
/** Every value repoClass gives. */
const REPO_CLASSES = ["", ...REPO_SOURCES] as const;

/** Every value platformClass gives. */
const PLATFORM_CLASSES = ["pve", "incus", ""] as const;

/** Which slices an execution counts in. */
export type Slices = (r: Pick<Execution, "type" | "repoSource" | "nsapp" | "platform" | "pveVersion">) => string[];

/** The slices an execution counts in: every repo or its repo class, times every platform or its class, times every app or its own. */
export const slicesOf: Slices = (r) => {
  const kind = kindOfType(r.type);
  const repo = repoClass(r.repoSource);
  const platform = platformClass(r);
  const app = appSlice(r.nsapp);
  const out: string[] = [];
  for (const rp of [null, repo])
    for (const pl of [null, platform]) for (const a of [ALL_APPS, app]) out.push(sliceKey(kind, rp, a, pl));
  return out;
};

/**
 * The slices the engines store: its repo class's and platform class's, for every app and for its
 * own. A slice of every repo or every platform is the sum of the stored slices it contains
 * (storedSlicesIn), made when read: stored, it would repeat the counts of its largest class, so
 * each execution still counts in two stored slices (docs/decisions/2026-11-27-platform-slices.md).
 */
export const storedSlicesOf: Slices = (r) => {
  const kind = kindOfType(r.type);
  const repo = repoClass(r.repoSource);
  const platform = platformClass(r);
  return [sliceKey(kind, repo, ALL_APPS, platform), sliceKey(kind, repo, appSlice(r.nsapp), platform)];
};

/** The stored slices a slice adds up: one per repo class for every repo, times one per platform class for every platform; a stored slice is itself. */
export function storedSlicesIn(slice: string): readonly string[] {
  let stored = storedSlices.get(slice);
  if (stored === undefined) {
    const { kind, repo, platform, app } = sliceParts(slice);
    const repos = repo === null ? REPO_CLASSES : [repo];
    const platforms = platform === null ? PLATFORM_CLASSES : [platform];
    stored =
      repo !== null && platform !== null
        ? [slice]
        : repos.flatMap((rp) => platforms.map((pl) => sliceKey(kind, rp, app, pl)));
    storedSlices.set(slice, stored);
  }
  return stored;
}

/**
 * storedSlicesIn's answers for the slices read lately: a read asks for the same slices request
 * after request, and the same strings are cheaper to look up than new ones (their hashes kept).
 */
const storedSlices = new RecentlyUsed<readonly string[]>(4096);

/** A slice key's parts as written: repo and platform null for every one, the app as its slice ("*" or "=<nsapp>"). */
function sliceParts(slice: string): { kind: Kind; repo: string | null; platform: string | null; app: string } {
  const first = slice.indexOf("|");
  const second = slice.indexOf("|", first + 1);
  const third = slice.indexOf("|", second + 1);
  const unpart = (p: string): string | null => (p === "*" ? null : p.slice(1));
  return {
    kind: slice.slice(0, first) as Kind,
    repo: unpart(slice.slice(first + 1, second)),
    platform: unpart(slice.slice(second + 1, third)),
    app: slice.slice(third + 1),
  };
}

/** The slice of every repo and every platform a stored slice belongs to. */
function everySlice(slice: string): string {
  const { kind, app } = sliceParts(slice);
  return sliceKey(kind, null, app, null);
}

export const isAllApps = (slice: string): boolean => slice.endsWith(`|${ALL_APPS}`);
/** Hour and day cells serve ragged window edges; month cells (calendar months, UTC) long windows. */
export const GRAINS = { hour: 0, day: 1, month: 2 } as const;
export type Grain = (typeof GRAINS)[keyof typeof GRAINS];
const ALL_GRAINS: readonly Grain[] = [GRAINS.hour, GRAINS.day, GRAINS.month];
const DAY_AND_MONTH: readonly Grain[] = [GRAINS.day, GRAINS.month];
const HOUR_AND_DAY: readonly Grain[] = [GRAINS.hour, GRAINS.day];
const DAY_ONLY: readonly Grain[] = [GRAINS.day];

/**
 * Days of hour cells kept before the fold mark's day: hourly series reach back at most 31 days.
 * Older hours are in day and month cells only; a read that needs one of them (the ragged edge of
 * a longer window) counts it from the records of that day (docs/decisions/2026-11-27-rollup-cells.md).
 */
export const HOUR_CELL_DAYS = 32;
/** The first hour that has hour cells, for a fold mark: whole days, HOUR_CELL_DAYS before its day. */
export const hoursFrom = (foldedUntil: number): number => Math.floor(foldedUntil / DAY) * DAY - HOUR_CELL_DAYS * DAY;
/** Counts by outcome, indexed as OUTCOMES. */
export type Counts = [number, number, number, number, number, number];
/** Counts of nothing. */
export const zeroCounts = (): Counts => [0, 0, 0, 0, 0, 0];

/**
 * Every map keyed by values clients send (dimension values, and for symmetry bins and signature
 * ids) has no prototype: a value "__proto__", "constructor" or "toString" is a key like any other,
 * never Object.prototype or one of its methods (issue 15). Maps parsed from stored JSON hold such a
 * key as an own property (JSON.parse defines, never sets), and lose their prototype too.
 */
export const valueMap = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;

/**
 * Entries of the value maps, kept beside them: whether a map became empty is asked after every
 * removal, and counting keys (for-in) costs O(keys) in JavaScriptCore (1.9 µs at 100 values,
 * 30 µs at 1,000; the app and failed-command maps have hundreds), ~16% of an ingestion's CPU.
 * A map is counted at its first removal, and kept count of from then on: most maps (a batch's
 * deltas, cells read to merge into) never lose an entry, and registering every new one cost 12%
 * of a bulk load.
 */
const sizes = new WeakMap<object, number>();
function sizeOf(map: object): number {
  let n = sizes.get(map);
  if (n === undefined) {
    n = 0;
    for (const _ in map) n++;
    sizes.set(map, n);
  }
  return n;
}
/** `key` is set in `map`, counted if it is new. */
function put<T>(map: Record<string, T>, key: string, value: T): void {
  if (map[key] === undefined) putNew(map, key, value);
  else map[key] = value;
}
/** `key`, which the caller just found absent, is set in `map` and counted (no second look-up). */
function putNew<T>(map: Record<string, T>, key: string, value: T): void {
  map[key] = value;
  const n = sizes.get(map);
  if (n !== undefined) sizes.set(map, n + 1);
}
/** `key` leaves `map`; true when that left it empty. */
function remove(map: Record<string, unknown>, key: string): boolean {
  delete map[key];
  const n = sizes.get(map);
  if (n === undefined) return sizeOf(map) === 0;
  sizes.set(map, n - 1);
  return n - 1 === 0;
}

export interface RollupData {
  /** dimension -> value -> counts; "" stands for an absent value. */
  dims: Partial<Record<Dimension, Record<string, Counts>>>;
  /** outcome -> duration bin -> installs that finished with that outcome and a known duration. */
  dur: Partial<Record<Outcome, Record<string, number>>>;
  /** error signature id -> failed installs with that signature. */
  err: Record<string, number>;
}

/** The fields of a record that rollups read: those of the dimensions counted by a field's value (domain/fields.ts `dimension`), and what the others are derived from. */
export type RollupRecord = Pick<
  Execution,
  | DimensionField["key"]
  | "osType"
  | "osVersion"
  | "outcome"
  | "createdAt"
  | "durationMs"
  | "error"
  | "attempt"
  | "failedCommand"
  | "payloadVersion"
  | "hasArm"
>;

/** Long free-text values (a failing command) are cut so a cell's key set stays small. */
/** The longest value a dimension keeps of a text (a failure key its app's name). */
export const MAX_VALUE_LENGTH = 96;

const text = (v: string | number | null): string => (v === null ? "" : String(v));

/**
 * A record's value in one dimension. The dimensions of a field (domain/fields.ts `dimension`) are its
 * value as stored, written out case by case: read by a key looked up per dimension, counting a
 * record cost ~20% more CPU (test/unit/fields-table-drives-normalization-and-rollups.test.ts checks every such case against the table).
 */
function dimensionValue(r: RollupRecord, dim: Dimension, outcome: Outcome, errorSig: string | null): string {
  switch (dim) {
    case "nsapp":
      return text(r.nsapp);
    case "os":
      return r.osType === null ? (r.osVersion ?? "") : r.osVersion === null ? r.osType : `${r.osType} ${r.osVersion}`;
    case "pve_version":
      return text(r.pveVersion);
    case "type":
      return r.type;
    case "method":
      return text(r.method);
    case "status":
      return r.status;
    case "ct_type":
      return text(r.ctType);
    case "core_count":
      return text(r.coreCount);
    case "ram_size":
      return text(r.ramSize);
    case "exit_code":
      return text(r.exitCode);
    case "error_category":
      return text(r.errorCategory);
    case "platform":
      return text(r.platform);
    case "arch":
      return text(r.arch);
    case "cpu_vendor":
      return text(r.cpuVendor);
    case "gpu_vendor":
      return text(r.gpuVendor);
    case "gpu_passthrough":
      return text(r.gpuPassthrough);
    case "host_gpu":
      return text(r.hostGpu);
    case "repo_source":
      return text(r.repoSource);
    case "repo_slug":
      return text(r.repoSlug);
    case "app_version":
      return text(r.appVersion);
    case "kernel_version":
      return text(r.kernelVersion);
    // Retries: 1, 2, 3 and "4+" keep the key set small; executions per install follow from them.
    case "attempt":
      return r.attempt >= 4 ? "4+" : String(r.attempt);
    case "failed_command":
      return r.failedCommand === null ? "" : r.failedCommand.slice(0, MAX_VALUE_LENGTH);
    case "disk_size":
      return text(r.diskSize);
    // The client's revision: /upload null, /telemetry's payload_version (1 when it sent none).
    case "client":
      return text(r.payloadVersion);
    case "platform_class":
      return platformClass(r);
    // The architecture, or for clients that sent none whether the host is ARM (has_arm).
    case "arch_class":
      return r.arch !== null && r.arch !== ""
        ? r.arch
        : r.hasArm === true
          ? "arm64"
          : r.hasArm === false
            ? "x86_64 (inferred)"
            : "";
    case "failure":
      return !isFailure(outcome)
        ? ""
        : [text(r.exitCode), text(r.errorCategory), errorSig ?? "", text(r.nsapp).slice(0, MAX_VALUE_LENGTH)].join(
            FAILURE_SEPARATOR,
          );
  }
}

// Durations in log-spaced bins, four per doubling (each bin spans +19%), from 1 s to ~18 days.
const BINS_PER_DOUBLING = 4;
/** Bins are 0 to DURATION_BINS - 1. */
export const DURATION_BINS = 81;
function durationBin(ms: number): number {
  const s = Math.max(ms, 1000) / 1000;
  return Math.min(Math.floor(Math.log2(s) * BINS_PER_DOUBLING), DURATION_BINS - 1);
}
/** The geometric middle of a bin, in seconds. */
export const binMiddleSeconds = (bin: number): number => 2 ** ((bin + 0.5) / BINS_PER_DOUBLING);

export function bucketStart(t: number, grain: Grain): number {
  if (grain === GRAINS.hour) return t - (t % HOUR);
  if (grain === GRAINS.day) return t - (t % DAY);
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** The first month boundary at or after `t`. */
export function monthCeil(t: number): number {
  const start = bucketStart(t, GRAINS.month);
  if (start === t) return t;
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

export const emptyData = (): RollupData => ({ dims: {}, dur: {}, err: valueMap() });

/** A record's value in every dimension (counted as `outcome`), computed once however many cells it is counted in. */
function dimensionValues(r: RollupRecord, outcome: Outcome, errorSig: string | null): string[] {
  const values = new Array<string>(DIMENSIONS.length);
  for (let k = 0; k < DIMENSIONS.length; k++) values[k] = dimensionValue(r, DIMENSIONS[k]!, outcome, errorSig);
  return values;
}

/**
 * Adds `sign` installs with `outcome` (and, for final outcomes, duration and error signature) of
 * record `r` into `d`. Entries a removal brings to zero go, so a cell always equals a recount.
 */
export function addRecord(
  d: RollupData,
  r: RollupRecord,
  outcome: Outcome,
  sign: 1 | -1,
  allApps: boolean,
  errorSig: string | null,
  values = dimensionValues(r, outcome, errorSig),
): void {
  const i = OUTCOME_INDEX[outcome];
  // An app row is its own nsapp: it skips the first dimension.
  for (let k = allApps ? 0 : 1; k < DIMENSIONS.length; k++) bump(d, DIMENSIONS[k]!, values[k]!, i, sign);
  countEnding(d, durationKey(r, outcome), outcome, errorSig, sign);
}

/** The parts of a cell only an ended run counts in: its duration bin and its error signature. */
function countEnding(d: RollupData, bin: number | null, outcome: Outcome, errorSig: string | null, sign: 1 | -1): void {
  if (bin !== null) {
    const bins = (d.dur[outcome] ??= valueMap());
    const v = (bins[bin] ?? 0) + sign;
    if (v !== 0) put(bins, String(bin), v);
    else if (remove(bins, String(bin))) delete d.dur[outcome];
  }
  // The signature counts (the native API's, issues', alerts') are of failed runs; a blocked run's
  // signature is in the failure dimension only, counted by outcome there.
  if (errorSig !== null && outcome === "failed") {
    const v = (d.err[errorSig] ?? 0) + sign;
    if (v !== 0) d.err[errorSig] = v;
    else delete d.err[errorSig];
  }
}

/** `sign` at outcome index `i` of one dimension's value; an entry brought to zero goes. */
function bump(d: RollupData, dim: Dimension, value: string, i: number, sign: 1 | -1): void {
  const byValue = (d.dims[dim] ??= valueMap());
  let counts = byValue[value];
  if (counts === undefined) putNew(byValue, value, (counts = zeroCounts()));
  counts[i] = counts[i]! + sign;
  if (sign < 0 && counts[i] === 0 && counts.every((c) => c === 0) && remove(byValue, value)) delete d.dims[dim];
}

/** One count of a dimension's value moves from outcome index `i` to `j` (a delta cell may lack the entry, or empty it). */
function shift(d: RollupData, dim: Dimension, value: string, i: number, j: number): void {
  const byValue = (d.dims[dim] ??= valueMap());
  let counts = byValue[value];
  if (counts === undefined) putNew(byValue, value, (counts = zeroCounts()));
  counts[i] = counts[i]! - 1;
  counts[j] = counts[j]! + 1;
  if (counts[j] === 0 && counts.every((c) => c === 0) && remove(byValue, value)) delete d.dims[dim];
}

/** How a record was counted, or is to be: the record, its outcome and its failure signature. */
interface Counted {
  r: RollupRecord;
  outcome: Outcome;
  errorSig: string | null;
}

/**
 * Moves one record from how it was counted (`from`) to how it counts now (`to`) in `d`, both in
 * the same cells: what `addRecord(from, -1)` and `addRecord(to, +1)` come to, without touching a
 * dimension whose value stayed (a progress ping changes one of 23), and moving a value that stayed
 * from one outcome to the other in place (a final report).
 */
function moveRecord(
  d: RollupData,
  allApps: boolean,
  from: Counted,
  to: Counted,
  fromValues: readonly string[],
  toValues: readonly string[],
): void {
  const i = OUTCOME_INDEX[from.outcome];
  const j = OUTCOME_INDEX[to.outcome];
  for (let k = allApps ? 0 : 1; k < DIMENSIONS.length; k++) {
    const dim = DIMENSIONS[k]!;
    if (fromValues[k] !== toValues[k]) {
      bump(d, dim, fromValues[k]!, i, -1);
      bump(d, dim, toValues[k]!, j, 1);
    } else if (i !== j) shift(d, dim, fromValues[k]!, i, j);
  }
  const binFrom = durationKey(from.r, from.outcome);
  const binTo = durationKey(to.r, to.outcome);
  if (binFrom !== binTo || from.outcome !== to.outcome || from.errorSig !== to.errorSig) {
    countEnding(d, binTo, to.outcome, to.errorSig, 1);
    countEnding(d, binFrom, from.outcome, from.errorSig, -1);
  }
}

/**
 * The one stored slice that no other adds up (its kind, repo class, platform class and app): the
 * other stored slice of an hour (its repo and platform classes', every app) is a sum of these
 * (addLeaf), so a cell kept in memory can be counted once instead of twice and summed when read.
 */
export const leafSliceOf: Slices = (r) => [
  sliceKey(kindOfType(r.type), repoClass(r.repoSource), appSlice(r.nsapp), platformClass(r)),
];

/** Counts `sign` installs of `r` into its hour cell of every slice it belongs to. */
export function countHour(
  cellOf: (app: string, hour: number) => RollupData,
  c: OpenCount,
  slices: Slices = slicesOf,
): void {
  const values = dimensionValues(c.r, c.outcome, c.errorSig);
  const hour = bucketStart(c.r.createdAt, GRAINS.hour);
  if (c.from) {
    const fromValues = dimensionValues(c.from.r, c.from.outcome, c.from.errorSig);
    for (const slice of slices(c.r)) moveRecord(cellOf(slice, hour), isAllApps(slice), c.from, c, fromValues, values);
    return;
  }
  for (const slice of slices(c.r))
    addRecord(cellOf(slice, hour), c.r, c.outcome, c.sign, isAllApps(slice), c.errorSig, values);
}

/**
 * Counts `c` into `d`, the hour cell of its leaf slice (leafSliceOf): what countHour does there,
 * for a caller that finds the cell without making the slice's key (open-hours.ts). A move stays in
 * that cell: RollupDeltas.change moves only within one hour and leaf.
 */
export function countLeaf(d: RollupData, c: OpenCount): void {
  const values = dimensionValues(c.r, c.outcome, c.errorSig);
  if (c.from) moveRecord(d, false, c.from, c, dimensionValues(c.from.r, c.from.outcome, c.from.errorSig), values);
  else addRecord(d, c.r, c.outcome, c.sign, false, c.errorSig, values);
}

/**
 * Adds the cell of a leaf slice (leafSliceOf) into a cell of a slice that contains it; into a
 * slice of every app, its executions count in nsapp too, under the leaf's app (`app`, appSlice).
 * What addRecord would have counted there record by record.
 */
export function addLeaf(d: RollupData, leaf: RollupData, app: string | null): void {
  mergeInto(d, leaf);
  // Every execution counts once in every dimension but nsapp: any of them gives the totals.
  const totals = leaf.dims.type;
  if (app === null || totals === undefined) return;
  const byApp = (d.dims.nsapp ??= valueMap());
  const nsapp = app.slice(1);
  let counts = byApp[nsapp];
  if (counts === undefined) putNew(byApp, nsapp, (counts = zeroCounts()));
  for (const value in totals) {
    const c = totals[value]!;
    for (let k = 0; k < counts.length; k++) counts[k] = counts[k]! + c[k]!;
  }
}

/** a += b, dropping entries that reach zero so a row always equals a recount. */
export function mergeInto(a: RollupData, b: RollupData): RollupData {
  // A map can only become empty if it was new or lost an entry: only then is it checked.
  for (const dim in b.dims) {
    const values = b.dims[dim as Dimension]!;
    let target = a.dims[dim as Dimension];
    let check = target === undefined;
    target ??= a.dims[dim as Dimension] = valueMap();
    for (const value in values) {
      const counts = values[value]!;
      let t = target[value];
      if (t === undefined) putNew(target, value, (t = zeroCounts()));
      let any = 0;
      for (let k = 0; k < t.length; k++) any |= t[k] = t[k]! + counts[k]!;
      if (any === 0) {
        remove(target, value);
        check = true;
      }
    }
    if (check && sizeOf(target) === 0) delete a.dims[dim as Dimension];
  }
  for (const outcome in b.dur) {
    const bins = b.dur[outcome as Outcome]!;
    let target = a.dur[outcome as Outcome];
    let check = target === undefined;
    target ??= a.dur[outcome as Outcome] = valueMap();
    for (const bin in bins) {
      const v = (target[bin] ?? 0) + bins[bin]!;
      if (v === 0) {
        remove(target, bin);
        check = true;
      } else put(target, bin, v);
    }
    if (check && sizeOf(target) === 0) delete a.dur[outcome as Outcome];
  }
  for (const sig in b.err) {
    const v = (a.err[sig] ?? 0) + b.err[sig]!;
    if (v === 0) delete a.err[sig];
    else a.err[sig] = v;
  }
  return a;
}

const settled = new WeakSet<RollupData>();

/**
 * Marks a cell no one changes any more (decoded from stored bytes, or a sum of such), so a reader
 * may keep what it derives from it for as long as the cell lives. Its failure dimension (the one
 * readers keep most from) is frozen: a write into it throws rather than leave a kept answer stale.
 */
export function settle(d: RollupData): RollupData {
  if (d.dims.failure !== undefined) Object.freeze(d.dims.failure);
  settled.add(d);
  return d;
}

export const isSettled = (d: RollupData): boolean => settled.has(d);

export const isEmpty = (d: RollupData): boolean => Object.keys(d.dims).length === 0;

/** Row key of a rollup cell. */
export type RollupKey = {
  grain: Grain;
  /** The slice key (sliceKey); stored in the column `app`. */
  app: string;
  bucket: number;
};

/** The text a cell is keyed by in memory, the same in every engine's maps (verify compares them). */
export const cellId = (grain: Grain, bucket: number, app: string): string => `${grain}|${bucket}|${app}`;

type CellMap = Map<string, { key: RollupKey; data: RollupData }>;

/** One record counted (+1) or uncounted (-1) as `outcome`; or, with `from`, moved from how it was counted. */
export interface OpenCount {
  r: RollupRecord;
  outcome: Outcome;
  sign: 1 | -1;
  errorSig: string | null;
  /** A move (RollupDeltas.change): how the record was counted, in the same cells. */
  from?: Counted;
}

/** What a record's duration adds to a cell: its bin, or nothing (in progress, or unknown). */
const durationKey = (r: RollupRecord, outcome: Outcome): number | null =>
  r.durationMs === null || outcome === "in_progress" ? null : durationBin(r.durationMs);

/**
 * Deltas of one write batch, collected in memory and merged into the stored rows in the same
 * transaction: each row is read and written once per batch, whatever the number of records.
 *
 * Hours before `foldedUntil` are folded: their records count in stored hour, day and month cells
 * (`cells`); hour cells only from hoursFrom(foldedUntil) on. Later hours are open: their hour
 * cells are not stored but kept in memory by the store, derived from the raw records (`open`);
 * the fold job stores each closed hour's cells and adds them to the day and month cells
 * (docs/decisions/2026-11-21-open-hours-in-memory.md). `slices` says which slices a record counts
 * in: the engines count in the slices they store (storedSlicesOf), a recount to compare with what
 * they answer (verify) in every slice (slicesOf).
 */
export class RollupDeltas {
  readonly cells: CellMap = new Map();
  /**
   * Counts in open hours, kept as records: the store counts them straight into its in-memory
   * cells after COMMIT (building cells per batch and merging them cost twice as much).
   */
  readonly open: OpenCount[] = [];
  /** Hours before this have no hour cells. */
  readonly hoursFrom: number;

  /**
   * `target`, when given, is where folded counts go instead of `cells`: the cell as stored, counted
   * into in place (an engine that keeps its stored cells parsed, and drops them all when a
   * transaction fails, saves building and merging a delta cell per cell a batch touches).
   */
  constructor(
    readonly foldedUntil: number,
    readonly slices: Slices = slicesOf,
    private readonly target: ((key: RollupKey) => RollupData) | null = null,
    /**
     * Month cells from this month on are not counted: the engine sums them from their day cells
     * later (SQLite's bulk loads, docs/decisions/2026-11-28-month-cells-summed-after-bulk-loads.md).
     */
    readonly monthsFrom: number = Number.POSITIVE_INFINITY,
  ) {
    this.hoursFrom = hoursFrom(foldedUntil);
  }

  private static cell(map: CellMap, grain: Grain, bucket: number, app: string): RollupData {
    const id = cellId(grain, bucket, app);
    let cell = map.get(id);
    if (!cell) map.set(id, (cell = { key: { grain, app, bucket }, data: emptyData() }));
    return cell.data;
  }

  /** The cell folded counts of `key` go to. */
  private folded(grain: Grain, bucket: number, app: string): RollupData {
    return this.target ? this.target({ grain, app, bucket }) : RollupDeltas.cell(this.cells, grain, bucket, app);
  }

  /** The stored grains a folded hour counts in. */
  private grainsOf(hour: number): readonly Grain[] {
    const month = hour < this.monthsFrom;
    if (hour >= this.hoursFrom) return month ? ALL_GRAINS : HOUR_AND_DAY;
    return month ? DAY_AND_MONTH : DAY_ONLY;
  }

  /** Counts `sign` installs of `r` as `outcome` in every cell it belongs to. */
  add(r: RollupRecord, outcome: Outcome, sign: 1 | -1, errorSig: string | null): void {
    const hour = bucketStart(r.createdAt, GRAINS.hour);
    if (hour >= this.foldedUntil) {
      this.open.push({ r, outcome, sign, errorSig });
      return;
    }
    const values = dimensionValues(r, outcome, errorSig);
    const slices = this.slices(r);
    for (const grain of this.grainsOf(hour)) {
      const bucket = bucketStart(r.createdAt, grain);
      for (const slice of slices)
        addRecord(this.folded(grain, bucket, slice), r, outcome, sign, isAllApps(slice), errorSig, values);
    }
  }

  /**
   * A counted record changed from `before` to `after`: counted out and in again. When it stays in
   * the same cells (same hour and slices: a progress ping, a final report, a field filled in) it
   * moves within them, which is what the two counts would come to.
   */
  change(before: RollupRecord, after: RollupRecord, sigBefore: string | null, sigAfter: string | null): void {
    const hour = bucketStart(after.createdAt, GRAINS.hour);
    const movable =
      bucketStart(before.createdAt, GRAINS.hour) === hour &&
      kindOfType(before.type) === kindOfType(after.type) &&
      repoClass(before.repoSource) === repoClass(after.repoSource) &&
      platformClass(before) === platformClass(after) &&
      before.nsapp === after.nsapp;
    if (!movable) {
      this.add(before, before.outcome, -1, sigBefore);
      this.add(after, after.outcome, 1, sigAfter);
      return;
    }
    const from: Counted = { r: before, outcome: before.outcome, errorSig: sigBefore };
    if (hour >= this.foldedUntil) {
      this.open.push({ r: after, from, outcome: after.outcome, sign: 1, errorSig: sigAfter });
      return;
    }
    const to: Counted = { r: after, outcome: after.outcome, errorSig: sigAfter };
    const fromValues = dimensionValues(before, before.outcome, sigBefore);
    const toValues = dimensionValues(after, after.outcome, sigAfter);
    const slices = this.slices(after);
    for (const grain of this.grainsOf(hour)) {
      const bucket = bucketStart(after.createdAt, grain);
      for (const slice of slices)
        moveRecord(this.folded(grain, bucket, slice), isAllApps(slice), from, to, fromValues, toValues);
    }
  }

  /** The open hours' counts as hour cells (the fold job and verify; the store counts them directly). */
  openCells(): CellMap {
    const cells: CellMap = new Map();
    for (const c of this.open)
      countHour((app, hour) => RollupDeltas.cell(cells, GRAINS.hour, hour, app), c, this.slices);
    return cells;
  }

  /** Stores a whole open hour cell and adds it to the day and month cells that contain it (folding). */
  foldHour(app: string, hour: number, data: RollupData): void {
    for (const grain of this.grainsOf(hour)) mergeInto(this.folded(grain, bucketStart(hour, grain), app), data);
  }
}

/** Cells of stored slices with the cells of every repo and every platform they add up to (everySlice), for reads that list every slice. */
export function withEverySlice<C extends { slice: string; bucket: number; data: RollupData }>(
  cells: readonly C[],
  make: (slice: string, bucket: number, data: RollupData) => C,
): C[] {
  const sums = new Map<string, C>();
  for (const c of cells) {
    const slice = everySlice(c.slice);
    const id = `${c.bucket}|${slice}`;
    const sum = sums.get(id);
    if (sum) mergeInto(sum.data, c.data);
    else sums.set(id, make(slice, c.bucket, mergeInto(emptyData(), c.data)));
  }
  return [...cells, ...sums.values()];
}

/**
 * The parts a cell is stored in, so readers decode only what they need (rollup-codec.ts): every
 * dimension but nsapp, and the durations ("data"); the per-app counts of a cell of every app
 * ("apps"); the error signatures ("errors").
 */
export type RollupPart = "data" | "apps" | "errors";

/**
 * What a slice key selects: a kind, a repo class (null: every repo), a platform class (null: every
 * platform), an app (null: every app; "" for executions without one).
 */
export function parseSlice(slice: string): {
  kind: Kind;
  repo: string | null;
  platform: string | null;
  nsapp: string | null;
} {
  const { kind, repo, platform, app } = sliceParts(slice);
  return { kind, repo, platform, nsapp: app === ALL_APPS ? null : app.slice(1) };
}
