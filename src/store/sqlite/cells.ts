// The rollup cells and error signatures a SQLite batch writes (writes.ts): counts go straight
// into the cells the batch touches, which are written back once before COMMIT; a fold moves open
// hours into the day cells.
import { failureSignatureId, type SignatureSightings } from "../../domain/error-signature.ts";
import {
  GRAINS,
  RollupDeltas,
  bucketStart,
  cellId,
  emptyData,
  hoursFrom,
  isAllApps,
  isEmpty,
  monthCeil,
  storedSlicesOf,
  type RollupData,
  type RollupKey,
} from "../../domain/rollup.ts";
import { encodeCell } from "../../domain/rollup-codec.ts";
import { DAY } from "../../domain/time.ts";
import type { ResultFor, WriteOp } from "../contract/store.ts";
import { withApps } from "../common/signature-apps.ts";
import type { BatchEffects, WriteContext } from "./write-context.ts";

/**
 * The cell `key` as the batch counts into it: read and decoded the first time the batch touches
 * it. Not kept between batches: a kept cell saved a read of a few microseconds and cost the
 * collections of a bulk load more than that (a seed of 100,000 over 4 days: 18 % more time and
 * 12 MB more peak with 512 cells kept; docs/decisions/2026-11-29-cells-not-kept-between-batches.md).
 */
function touch(ctx: WriteContext, key: RollupKey): RollupData {
  const id = cellId(key.grain, key.bucket, key.app);
  let t = ctx.touched.get(id);
  if (!t) ctx.touched.set(id, (t = { key, data: ctx.reads.storedCell(key.grain, key.app, key.bucket) ?? emptyData() }));
  return t.data;
}

/** Deltas counted straight into the touched cells; month cells only before the month mark (none when deferred). */
export const deltasFrom = (ctx: WriteContext, foldedUntil: number): RollupDeltas =>
  new RollupDeltas(
    foldedUntil,
    storedSlicesOf,
    (key) => touch(ctx, key),
    ctx.months.defer ? Number.NEGATIVE_INFINITY : ctx.months.from,
  );

/** Stores one cell, or removes it when nothing is counted in it. */
function putCell({ hot, labels }: WriteContext, key: RollupKey, data: RollupData): void {
  const row = { grain: key.grain, slice: labels.id(key.app), bucket: key.bucket };
  if (isEmpty(data)) hot.deleteRollup.run(row);
  else hot.putRollup.run({ ...row, ...encodeCell(data, isAllApps(key.app), labels) });
}

/**
 * Writes back every cell the batch touched (or removes it, when nothing is counted in it any
 * more); the earliest day it wrote a cell of (Infinity: none).
 */
export function storeTouched(ctx: WriteContext): number {
  const { months } = ctx;
  let firstDay = Number.POSITIVE_INFINITY;
  for (const { key, data } of ctx.touched.values()) {
    if (key.grain === GRAINS.day) {
      // Hours counted from this day's records (old-hours.ts) no longer hold.
      ctx.oldHours.forgetDay(key.bucket);
      firstDay = Math.min(firstDay, key.bucket);
    }
    putCell(ctx, key, data);
  }
  ctx.touched.clear();
  // Deferred: the months of the days counted in are summed later; until then they are read as sums.
  if (months.defer && firstDay < months.from) moveMonthMark(ctx, bucketStart(firstDay, GRAINS.month));
  return firstDay;
}

/**
 * A bulk load's months that ended a day or more before the earliest day its batch wrote, summed:
 * a load in time order has passed them (late writes, such as expiries 12 hours on, fall in the
 * day after), so memory holds one month's summing at a time, not the whole load's at its end. A
 * write into a summed month later moves the mark back again.
 */
export function sumPassedMonths(ctx: WriteContext, firstDay: number): void {
  if (ctx.months.defer && Number.isFinite(firstDay)) sumMonths(ctx, bucketStart(firstDay - DAY, GRAINS.month));
}

function moveMonthMark(ctx: WriteContext, from: number): void {
  ctx.q.setMonthsFrom.run({ from: Number.isFinite(from) ? from : null });
  ctx.months.from = from;
}

/**
 * A full collection after every this many bytes of stored day cells summed into months: what a
 * summing leaves is garbage at once, and the slices of every app come first and hold most of it.
 * Summing the month of 600,000 installs over 22 days alone raised the high-water mark by 17 MiB so
 * (3.7 s of CPU), by 32 MiB with no collections (1.5 s); decoded, merged and collected every 100
 * slices, as before: 76 MiB, 5.5-6.0 s (docs/performance.md, 2026-11-29).
 */
const COLLECT_EVERY_BYTES = 64 * 1024;

/**
 * Month cells from the month mark to `until` (a month's start; Infinity: every month), summed from
 * their day cells and stored; the mark moved to `until`. A slice's month at a time, its day cells
 * read one by one and summed as stored, by label id (StoredSum): decoded and merged, a dense
 * month's sum held ~70,000 labels, more than a bulk load's dictionary keeps, and encoding it looked
 * each up again (docs/performance.md, 2026-11-29).
 */
function sumMonths(ctx: WriteContext, until: number): void {
  storeTouched(ctx); // the day cells as this batch counted them
  const from = ctx.months.from;
  if (until <= from) return;
  const to = Math.min(until, Number.MAX_SAFE_INTEGER);
  ctx.hot.dropMonths.run({ from, to });
  let read = 0;
  const collect = (bytes: number) => {
    read += bytes;
    if (read < COLLECT_EVERY_BYTES) return;
    read = 0;
    Bun.gc(true);
  };
  for (const { slice, first, last } of ctx.reads.sliceSpans(GRAINS.day, from, to)) {
    for (let month = bucketStart(first, GRAINS.month); month <= last; month = monthCeil(month + 1)) {
      const parts = ctx.reads.sliceSum(GRAINS.day, slice, month, monthCeil(month + 1), collect);
      if (parts !== null)
        ctx.hot.putRollup.run({ grain: GRAINS.month, slice: ctx.labels.id(slice), bucket: month, ...parts });
    }
  }
  moveMonthMark(ctx, until);
}

export function mergeSightings(ctx: WriteContext, sightings: SignatureSightings): void {
  const { q } = ctx;
  for (const [id, seen] of sightings.seen) {
    const stored = q.getSignature.get({ id });
    if (stored === undefined) {
      q.putSignature.run({ id, ...seen, apps: JSON.stringify([...seen.apps].sort()) });
      continue;
    }
    const apps = withApps(stored.apps, seen.apps);
    if (apps !== null || seen.firstSeen < stored.firstSeen || seen.lastSeen > stored.lastSeen)
      q.seeSignature.run({ id, firstSeen: seen.firstSeen, lastSeen: seen.lastSeen, apps });
  }
}

/**
 * The open hours before `op.until` folded into their day cells (the hour cells of hours no longer
 * kept go); then the month cells from the month mark on, if a bulk load left one, summed.
 */
export function fold(
  ctx: WriteContext,
  op: Extract<WriteOp, { kind: "fold" }>,
  fx: BatchEffects,
): ResultFor<typeof op> {
  const hours = foldHours(ctx, op.until, fx);
  if (Number.isFinite(ctx.months.from)) {
    sumMonths(ctx, Number.POSITIVE_INFINITY);
    // The batch's later writes count in every month again; its open hours' counts so far join memory after COMMIT.
    fx.open.push(fx.deltas);
    fx.deltas = deltasFrom(ctx, fx.deltas.foldedUntil);
  }
  return { kind: "folded", hours };
}

/** The open hours before `until` into their day and month cells; how many hours had cells. */
function foldHours(ctx: WriteContext, until: number, fx: BatchEffects): number {
  const from = fx.deltas.foldedUntil;
  if (until <= from) return 0;
  storeTouched(ctx);
  fx.open.push(fx.deltas);
  // The hours' cells as they stand with this batch's writes so far (memory changes only after COMMIT).
  const pending = fx.open.flatMap((d) =>
    [...d.openCells().values()].map(({ key, data }) => ({ slice: key.app, bucket: key.bucket, data })),
  );
  const folding = deltasFrom(ctx, until);
  const hours = new Set<number>();
  for (const { slice, bucket, data } of [...ctx.openHours.cellsOf(null, from, until), ...pending]) {
    if (bucket < from || bucket >= until) continue;
    folding.foldHour(slice, bucket, data);
    hours.add(bucket);
  }
  storeTouched(ctx);
  ctx.q.setFoldedUntil.run({ until });
  // Hours that leave the hour cells: their days' cells hold them.
  ctx.hot.dropOldHours.run({ before: hoursFrom(until) });
  fx.deltas = deltasFrom(ctx, until);
  fx.foldedTo = until;
  return hours.size;
}

/** Recounts the folded part of one day from its records into the stored cells (inside the caller's transaction). */
export function recountDay(ctx: WriteContext, day: number, end: number): void {
  ctx.touched.clear();
  const deltas = deltasFrom(ctx, ctx.openHours.foldedUntil);
  for (const r of ctx.reads.iterateExecutions({ from: day, to: end }))
    deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
  storeTouched(ctx); // month cells add up across the days, as they do when written live
}
