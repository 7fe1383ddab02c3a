// `installstats seed`: fills a database with realistic synthetic installs (src/seed/seed-data.ts)
// through the one write path, Store.write, so rows, rollups and error signatures are exactly what
// ingestion would have produced. Installs are generated hour by hour in time order and written in
// batches that cover few hours, so each batch touches few rollup cells; memory holds only the runs
// still going (a few hours' worth), whatever the number of installs.
//
// Two profiles. "today" (the command's default): the community's clients as they are now, each
// report written as ingestion writes it (a `report` op: start, pings, final, retries as new
// executions; runs that never end expired as the stuck-install job does), /upload installs in the
// older part of the window and /telemetry v1 and v2 in the newer (today.ts). "upload": the
// /upload-only data of earlier releases, each install loaded as the execution its two reports
// make (a `load` op), kept so that sizes and speeds compare with theirs.
import { normalizeStart, normalizeUpdate } from "../domain/normalize.ts";
import type { ResultOf, Store, WriteOp } from "../store/contract/store.ts";
import { bulkWriter, collections } from "../store/bulk-load.ts";
import { DAY_OF_WEEK, HOUR_OF_DAY, Rng, buildCatalogue, growth, hashString, uuid4 } from "./seed-data.ts";
import { DAY, HOUR } from "../domain/time.ts";
import { HOUR_CELL_DAYS, storedSlicesOf } from "../domain/rollup.ts";
import type { Descriptive, Execution, Report } from "../domain/execution.ts";
import { decide } from "../domain/lifecycle.ts";
import { NORMALIZE, dayTables, normalized, startBody, updateBody, type DayTables } from "./upload.ts";
import { STUCK_AFTER, clientAt, telemetryInstall, type SeedReport } from "./today.ts";

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
  /** What the installs look like (default "upload": the library's callers compare with earlier data; the command's default is "today"). */
  profile?: SeedProfile;
}

export const SEED_PROFILES = ["today", "upload"] as const;
export type SeedProfile = (typeof SEED_PROFILES)[number];

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
    profile: given.profile ?? "upload",
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

function checkOptions(o: SeedOptions): void {
  if (!Number.isSafeInteger(o.records) || o.records < 0) throw new RangeError("records must be a whole number >= 0");
  if (!(o.days > 0) || !Number.isFinite(o.days)) throw new RangeError("days must be a positive number");
  if (!Number.isSafeInteger(o.end)) throw new RangeError("end must be a whole number of epoch milliseconds");
  if (!Number.isFinite(o.seed)) throw new RangeError("seed must be a number");
  if (o.batchSize !== undefined && (!Number.isSafeInteger(o.batchSize) || o.batchSize < 2))
    throw new RangeError("batchSize must be a whole number >= 2");
  if (o.profile !== undefined && !SEED_PROFILES.includes(o.profile))
    throw new RangeError(`profile must be one of ${SEED_PROFILES.join(", ")}`);
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

// ---------------------------------------------------------------- generators

/** Each hour of the window with its installs' start times, in time order, and that day's tables. */
function* hours(
  options: SeedOptions,
  rng: Rng,
): Generator<{ times: Float64Array; t: DayTables; start: number; span: number; slotEnd: number }> {
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
    const times = new Float64Array(slot.count);
    for (let i = 0; i < times.length; i++) times[i] = slot.from + Math.floor(rng.next() * (slot.to - slot.from));
    times.sort();
    yield { times, t: tables!, start, span, slotEnd: slot.to };
  }
}

/**
 * Ids come from their own stream, keyed by the seed and the window: the same seed and window give
 * the same ids (so a repeated run is recognised and refused), another window or seed gives
 * unrelated ones (so it can be added to the same database without collisions).
 */
const idStream = (o: SeedOptions): Rng => new Rng(hashString(`${o.seed}|${o.end}|${o.days}`));

/** An /upload install starting at `at`: its normalized start report and, when it ends by `end`, its status update. */
function uploadInstall(rng: Rng, ids: Rng, t: DayTables, at: number, frac: number, end: number): SeedInstall {
  const app = t.apps.pick(rng);
  const id = uuid4(ids);
  const sb = startBody(rng, app, t, id);
  const report = normalized(normalizeStart(sb, NORMALIZE), sb);
  const u = updateBody(rng, app, at, frac, id);
  if (u === null || at + u.ms > end) return { at, report, update: null, updateAt: null };
  return { at, report, update: normalized(normalizeUpdate(u.body, NORMALIZE), u.body), updateAt: at + u.ms };
}

/**
 * The /upload profile's installs, one array per UTC hour (the rollup bucket), in time order. Start
 * reports are normalized by the service's own normalizers, so they are exactly what ingestion
 * would store. A status update whose time falls after `end` is left out (that install is still running).
 */
function* generateHourly(options: SeedOptions): Generator<SeedInstall[]> {
  checkOptions(options);
  const rng = new Rng(options.seed);
  const ids = idStream(options);
  for (const { times, t, start, span } of hours(options, rng)) {
    const out: SeedInstall[] = new Array(times.length);
    for (let i = 0; i < times.length; i++)
      out[i] = uploadInstall(rng, ids, t, times[i]!, (times[i]! - start) / span, options.end);
    yield out;
  }
}

/** The /upload profile's installs one by one, in order of their start time. */
export function* generateInstalls(options: SeedOptions): Generator<SeedInstall> {
  for (const hour of generateHourly(options)) yield* hour;
}

/** The execution as it stands once its start report and (if any) status update have been applied, by the service's own rules. */
function finishedRow(i: SeedInstall): Execution {
  const circumstances = { attempt: 1, held: null, repaired: false };
  const started = decide(undefined, i.report, { ...circumstances, at: i.at });
  if (started.kind !== "insert")
    throw new Error(`seed: the start report of ${i.report.randomId} was not a new execution`);
  if (i.update === null || i.updateAt === null) return started.row;
  const ended = decide(started.row, i.update, { ...circumstances, at: i.updateAt });
  return ended.kind === "update" ? ended.row : started.row;
}

/** The /upload profile's installs as the executions they end as, one by one, oldest first (benchmarks load them in bulk). */
export function* generateExecutions(options: SeedOptions): Generator<Execution> {
  for (const install of generateInstalls(options)) yield finishedRow(install);
}

/** One write of the today profile, when it happens, and what it must come to. */
interface Planned {
  at: number;
  /** Order among writes at the same time: the order they were planned in. */
  seq: number;
  op: WriteOp;
  expect: ResultOf["report"]["kind"] | ResultOf["expire"]["kind"];
  /** A start of a new install (counted as written when it is). */
  install: boolean;
}

/** A binary min-heap of planned writes by (at, seq). */
class Timeline {
  private readonly heap: Planned[] = [];

  get size(): number {
    return this.heap.length;
  }

  private less(a: Planned, b: Planned): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  push(p: Planned): void {
    const h = this.heap;
    h.push(p);
    for (let i = h.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  /** The earliest write if it happens before `before`. */
  popBefore(before: number): Planned | undefined {
    const h = this.heap;
    if (h.length === 0 || h[0]!.at >= before) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

const NO_BYTES = new Uint8Array(0);
const reportOp = (r: Report, endpoint: "upload" | "updatestatus" | "telemetry", at: number): WriteOp => ({
  kind: "report",
  report: r,
  endpoint,
  raw: NO_BYTES,
  repairs: [],
  at,
});

/**
 * The today profile's writes, in time order: every install's reports as its client sends them,
 * and the expiry of runs that never end (the stuck-install job's, STUCK_AFTER after their start).
 * Reports after `end` are left out: those runs are still going.
 */
function* generateToday(options: SeedOptions): Generator<Planned> {
  checkOptions(options);
  const rng = new Rng(options.seed);
  const ids = idStream(options);
  const timeline = new Timeline();
  let seq = 0;
  const plan = (at: number, op: WriteOp, expect: Planned["expect"], install = false) => {
    if (at <= options.end) timeline.push({ at, seq: seq++, op, expect, install });
  };
  for (const { times, t, start, span, slotEnd } of hours(options, rng)) {
    for (const at of times) {
      const frac = (at - start) / span;
      const client = clientAt(rng, options.end - at);
      if (client === "upload") {
        const i = uploadInstall(rng, ids, t, at, frac, options.end);
        plan(at, reportOp(i.report, "upload", at), "created", true);
        if (i.update) plan(i.updateAt!, reportOp(i.update, "updatestatus", i.updateAt!), "updated");
        else
          plan(
            at + STUCK_AFTER,
            { kind: "expire", executionId: i.report.executionId, at: at + STUCK_AFTER },
            "expired",
          );
        continue;
      }
      const app = t.apps.pick(rng);
      const run = telemetryInstall(rng, ids, app, t, at, frac, client);
      run.reports.forEach((r: SeedReport, k) => plan(r.at, reportOp(r.report, "telemetry", r.at), r.expect, k === 0));
      for (const s of run.stuck)
        plan(s.at + STUCK_AFTER, { kind: "expire", executionId: s.executionId, at: s.at + STUCK_AFTER }, "expired");
    }
    // Every install of a later hour starts after this one's end: what happens before it is complete.
    for (let p = timeline.popBefore(slotEnd); p; p = timeline.popBefore(slotEnd)) yield p;
  }
  for (let p = timeline.popBefore(options.end + 1); p; p = timeline.popBefore(options.end + 1)) yield p;
}

// ---------------------------------------------------------------- writing

/** What seedDatabase comes to: installs written, and for the today profile what they made. */
export interface SeedResult {
  records: number;
  seconds: number;
  /** Writes made (reports, loads, expiries). */
  writes: number;
}

/**
 * Most stored app slices' hours (in the days that have hour cells, domain/rollup.ts
 * HOUR_CELL_DAYS) or days (before them) one batch writes to; a stored app slice is an app of one
 * repo class and one platform class (domain/rollup.ts storedSlicesOf). A batch parses every rollup
 * cell it touches (RollupDeltas' target), and the sparser the data, the more cells a batch of 4000
 * writes touches: 275 MB of RSS for 20k installs over a year, 229 MB at 1M, where the hour cells
 * start. Bounded by what it touches, a batch stays whole where the data are dense and short where
 * they are sparse. 1000 since the cells hold 28 dimensions (1500 with 23 peaked at 190-230 MB for
 * 300k installs).
 */
const MAX_BATCH_CELLS = 1000;

/**
 * Writes `options.records` generated installs through `store.write` as a bulk load
 * (store/bulk-load.ts), in batches of at most `batchSize` operations in time order (the upload
 * profile keeps an hour whole in one batch when it fits). Refuses a database that already holds
 * this seed's records.
 */
export async function seedDatabase(
  store: Store,
  options: SeedOptions,
  onProgress?: (p: SeedProgress) => void,
): Promise<SeedResult> {
  checkOptions(options);
  const began = performance.now();
  const batchSize = options.batchSize ?? SEED_DEFAULTS.batchSize;
  const total = options.records;
  let ops: WriteOp[] = [];
  let expected: Planned["expect"][] = [];
  let installs: boolean[] = [];
  let written = 0;
  let writes = 0;
  const writer = bulkWriter(store);
  // Collected once its batch is let go (bulkWriter.write collects with the batch still held: +4-5 MB).
  const collect = collections();
  let checked = false;
  /** The stored app slices' hours or days the batch writes to (MAX_BATCH_CELLS). */
  const touched = new Set<string>();
  /** Writes from here on have hour cells (give or take the fold mark's day). */
  const hourly = options.end - (HOUR_CELL_DAYS + 1) * DAY;
  /**
   * Flushes the batch first when a write described by `fields` at `at` would take it past
   * MAX_BATCH_CELLS (`null`: a status update, counted in its start's cells).
   */
  const admit = async (fields: Descriptive | null, at: number) => {
    if (fields === null) return;
    // The app's stored slice (its kind, repo class and platform class): the cells it counts in.
    const cell = `${storedSlicesOf(fields)[1]}|${at >= hourly ? Math.floor(at / HOUR) : -Math.floor(at / DAY)}`;
    if (touched.has(cell)) return;
    if (touched.size >= MAX_BATCH_CELLS) await flush();
    touched.add(cell);
  };

  const refuseRepeat = async (randomId: string) => {
    if (checked) return;
    checked = true;
    if ((await store.getExecutions(randomId)).length > 0) {
      throw new Error(
        `seed: the database already holds the records of seed ${options.seed} for this window (install ${randomId}); choose another seed`,
      );
    }
  };

  const flush = async () => {
    if (ops.length === 0) return;
    const results = await store.write(ops);
    results.forEach((result, i) => {
      const op = ops[i]!;
      if (result.kind !== expected[i]) {
        const what =
          op.kind === "load"
            ? op.execution.randomId
            : op.kind === "report"
              ? `${op.report.executionId} (${op.report.status})`
              : op.kind;
        throw new Error(`seed: ${what} was ${result.kind}, expected ${expected[i]}`);
      }
      if (installs[i]) written++;
    });
    writes += ops.length;
    touched.clear();
    ops = [];
    expected = [];
    installs = [];
    collect(results.length); // the results' count: a small array, the batch itself let go above
    onProgress?.({ written, total });
  };
  const add = (op: WriteOp, expect: Planned["expect"], install: boolean) => {
    ops.push(op);
    expected.push(expect);
    installs.push(install);
  };

  if (options.profile === "today") {
    for (const p of generateToday(options)) {
      if (p.install && p.op.kind === "report") await refuseRepeat(p.op.report.randomId);
      await admit(p.op.kind === "report" ? p.op.report.fields : null, p.at);
      add(p.op, p.expect, p.install);
      if (ops.length >= batchSize) await flush();
    }
  } else {
    for (const hour of generateHourly(options)) {
      if (hour.length > 0) await refuseRepeat(hour[0]!.report.randomId);
      // Keep an hour whole in one batch when it fits; an hour larger than a batch is split.
      if (ops.length > 0 && ops.length + hour.length > batchSize) await flush();
      for (const install of hour) {
        // The finished record is loaded as it stands: counted once, as the start and update would end up.
        const execution = finishedRow(install);
        await admit(execution, install.at);
        add({ kind: "load", execution, at: install.at }, "created", true);
        if (ops.length >= batchSize) await flush();
      }
    }
  }
  await flush();
  await writer.finish(options.end);
  return { records: written, seconds: (performance.now() - began) / 1000, writes };
}
