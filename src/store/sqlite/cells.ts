// The rollup cells and error signatures a SQLite batch writes (writes.ts): counts go straight
// into the cells the batch touches, which are written back once before COMMIT; a fold moves open
// hours into the day cells.
import { failureSignatureId, type SignatureSightings } from "../../domain/error-signature.ts";
import {
  GRAINS,
  RollupDeltas,
  emptyData,
  hoursFrom,
  isAllApps,
  isEmpty,
  storedSlicesOf,
  type RollupData,
  type RollupKey,
} from "../../domain/rollup.ts";
import { encodeCell } from "../../domain/rollup-codec.ts";
import type { ResultFor, WriteOp } from "../contract/store.ts";
import { ALL_PARTS, cellKey, type CachedCell } from "./cell-cache.ts";
import type { BatchEffects, WriteContext } from "./write-context.ts";

/** A cell a write can merge into: every part parsed (a reader may have parsed only one). */
const whole = (cell: CachedCell): boolean => cell.have.size === ALL_PARTS.length;

/**
 * The cell `key` as the batch counts into it: parsed whole (from the cache, or read) the first
 * time the batch touches it. A failed transaction clears the cache, so nothing counted in a
 * rolled-back batch outlives it.
 */
function touch(ctx: WriteContext, key: RollupKey): RollupData {
  const id = cellKey(key.grain, key.bucket, key.app);
  let t = ctx.touched.get(id);
  if (!t) {
    let cell = ctx.cells.get(id);
    if (!cell || !whole(cell)) {
      cell = { have: new Set(ALL_PARTS), data: ctx.reads.storedCell(key.grain, key.app, key.bucket) ?? emptyData() };
      ctx.cells.set(id, cell);
    }
    ctx.touched.set(id, (t = { key, cell }));
  }
  return t.cell.data;
}

/** Deltas counted straight into the touched cells. */
export const deltasFrom = (ctx: WriteContext, foldedUntil: number): RollupDeltas =>
  new RollupDeltas(foldedUntil, storedSlicesOf, (key) => touch(ctx, key));

/** Writes back every cell the batch touched (or removes it, when nothing is counted in it any more). */
export function storeTouched(ctx: WriteContext): void {
  const { hot, cells, labels } = ctx;
  for (const [id, { key, cell }] of ctx.touched) {
    // Hours counted from this day's records (old-hours.ts) no longer hold.
    if (key.grain === GRAINS.day) ctx.oldHours.forgetDay(key.bucket);
    const row = { grain: key.grain, slice: labels.id(key.app), bucket: key.bucket };
    if (isEmpty(cell.data)) {
      hot.deleteRollup.run(row);
      cells.delete(id);
      continue;
    }
    hot.putRollup.run({ ...row, ...encodeCell(cell.data, isAllApps(key.app), labels) });
    cells.set(id, cell);
  }
  ctx.touched.clear();
}

export function mergeSightings(ctx: WriteContext, sightings: SignatureSightings): void {
  const { q } = ctx;
  for (const [id, seen] of sightings.seen) {
    const stored = q.getSignature.get({ id });
    const apps = new Set<string>(stored ? (JSON.parse(stored.apps) as string[]) : []);
    for (const app of seen.apps) apps.add(app);
    q.putSignature.run({
      id,
      signature: seen.signature,
      example: stored?.example ?? seen.example,
      firstSeen: Math.min(stored?.firstSeen ?? seen.firstSeen, seen.firstSeen),
      lastSeen: Math.max(stored?.lastSeen ?? seen.lastSeen, seen.lastSeen),
      apps: JSON.stringify([...apps].sort()),
    });
  }
}

/** The open hours before `op.until` folded into their day cells (the hour cells of hours no longer kept go). */
export function fold(
  ctx: WriteContext,
  op: Extract<WriteOp, { kind: "fold" }>,
  fx: BatchEffects,
): ResultFor<typeof op> {
  const from = fx.deltas.foldedUntil;
  if (op.until <= from) return { kind: "folded", hours: 0 };
  storeTouched(ctx);
  fx.open.push(fx.deltas);
  // The hours' cells as they stand with this batch's writes so far (memory changes only after COMMIT).
  const pending = fx.open.flatMap((d) =>
    [...d.openCells().values()].map(({ key, data }) => ({ slice: key.app, bucket: key.bucket, data })),
  );
  const folding = deltasFrom(ctx, op.until);
  const hours = new Set<number>();
  for (const { slice, bucket, data } of [...ctx.openHours.cellsOf(null, from, op.until), ...pending]) {
    if (bucket < from || bucket >= op.until) continue;
    folding.foldHour(slice, bucket, data);
    hours.add(bucket);
  }
  storeTouched(ctx);
  ctx.q.setFoldedUntil.run({ until: op.until });
  // Hours that leave the hour cells: their days' cells hold them.
  ctx.hot.dropOldHours.run({ before: hoursFrom(op.until) });
  fx.deltas = deltasFrom(ctx, op.until);
  fx.foldedTo = op.until;
  return { kind: "folded", hours: hours.size };
}

/** Recounts the folded part of one day from its records into the stored cells (inside the caller's transaction). */
export function recountDay(ctx: WriteContext, day: number, end: number): void {
  ctx.touched.clear();
  const deltas = deltasFrom(ctx, ctx.openHours.foldedUntil);
  for (const r of ctx.reads.iterateExecutions({ from: day, to: end }))
    deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
  storeTouched(ctx); // month cells add up across the days, as they do when written live
}
