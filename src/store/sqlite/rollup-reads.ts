// The rollup reads of the SQLite Store: stored cells, the open hours from memory, and the hours
// older than the hour cells counted from their days' records (common/old-hours.ts), on a read
// thread while serving.
import { LabelCache } from "../common/labels.ts";
import { countHours, daysOf, sliceFilter } from "../common/old-hours.ts";
import { only, onlyKept, sumByBucket, sumOfLists } from "../common/sum-cells.ts";
import type { RollupSelection } from "../contract/executions.ts";
import { decodePart } from "../../domain/rollup-codec.ts";
import {
  GRAINS,
  bucketStart,
  emptyData,
  hoursFrom,
  mergeInto,
  monthCeil,
  storedSlicesIn,
  withEverySlice,
  type Grain,
  type RollupData,
} from "../../domain/rollup.ts";
import { DAY } from "../../domain/time.ts";
import { checkState, type StoreState } from "./store-state.ts";

type Cell = { bucket: number; data: RollupData };
type Window = { from: number; to: number };

/** The cells of a selection, summed per bucket over its slice's stored slices (every repo's and platform's classes). */
export async function readRollups(state: StoreState, selection: RollupSelection): Promise<Cell[]> {
  checkState(state);
  const { reads, open, old } = state;
  const { grain, slice, from, to, parts } = selection;
  const out: Cell[] = [];
  // Hours before the hour cells: counted from their days' records (old-hours.ts).
  const first = grain === GRAINS.hour ? hoursFrom(open.foldedUntil) : Number.NEGATIVE_INFINITY;
  if (from < first) {
    const end = Math.min(to, first);
    const days = [
      ...reads.storedRollups({ grain: GRAINS.day, ...daysOf(from, end), parts: [] }, storedSlicesIn(slice)).values(),
    ]
      .flat()
      .map((c) => c.bucket);
    const counted = await old.read(slice, from, end, days, (s, day) => countDay(state, s, day));
    for (const c of counted) out.push({ bucket: c.bucket, data: onlyKept(c.data, parts) });
  }
  const start = Math.max(from, first);
  if (start < to) out.push(...storedAndOpen(state, { ...selection, from: start }, storedSlicesIn(slice)));
  return out;
}

/**
 * The days whose cells make the month cells of [from, to) at or after the month mark (a bulk load
 * left them to be summed: write-context.ts MonthMark); null when there are none, or the grain is not months.
 */
function unsummedMonths(state: StoreState, grain: Grain, from: number, to: number): Window | null {
  if (grain !== GRAINS.month || !Number.isFinite(state.months.from)) return null;
  const start = monthCeil(Math.max(from, state.months.from));
  // Dates end at 8.64e15 ms; readers ask "to the end" with larger numbers.
  const end = monthCeil(Math.min(to, LAST_MONTH));
  return start < end ? { from: start, to: end } : null;
}

const LAST_MONTH = Date.UTC(275_760, 8, 1);

/** Where stored cells of a grain end in [from, to): open hours after them, unsummed months (unsummedMonths) too. */
function storedTo(state: StoreState, grain: Grain, to: number): number {
  if (grain === GRAINS.hour) return Math.min(to, state.open.foldedUntil);
  return grain === GRAINS.month ? Math.min(to, state.months.from) : to;
}

/** Every cell of a grain in [from, to), each stored slice and the slices of every repo and platform. */
export function rollupCells(state: StoreState, grain: Grain, from: number, to: number) {
  checkState(state);
  const { reads, open } = state;
  const cells = reads.storedCells(grain, from, storedTo(state, grain, to));
  if (grain === GRAINS.hour) cells.push(...open.cellsOf(null, Math.max(from, open.foldedUntil), to));
  const days = unsummedMonths(state, grain, from, to);
  if (days) {
    const months = new Map<string, (typeof cells)[number]>();
    for (const c of reads.storedCells(GRAINS.day, days.from, days.to)) {
      const bucket = bucketStart(c.bucket, GRAINS.month);
      const id = `${c.slice}|${bucket}`;
      const month = months.get(id);
      if (month) mergeInto(month.data, c.data);
      else months.set(id, { slice: c.slice, bucket, data: c.data });
    }
    cells.push(...months.values());
  }
  return withEverySlice(cells, (slice, bucket, data) => ({ slice, bucket, data }));
}

/** Hour cells of one day of a slice, counted from its executions (on a read thread while serving). */
async function countDay(state: StoreState, slice: string, day: number): Promise<Cell[]> {
  const filter = sliceFilter(slice, day, day + DAY);
  if (!state.scans) return countHours(state.reads.executionChunks(filter), slice);
  const counted = await state.scans.hourCells(filter, slice);
  const labels = new LabelCache();
  labels.learn(counted.labels);
  return counted.cells.map(({ bucket, ...parts }) => {
    const data = emptyData();
    for (const part of ["data", "apps", "errors"] as const) decodePart(data, part, parts[part], labels);
    return { bucket, data };
  });
}

/** Cells of stored slices (those a slice of every repo or platform adds up), summed per bucket: stored, and (hour grain) the open hours from memory. */
function storedAndOpen(state: StoreState, selection: RollupSelection, slices: readonly string[]): readonly Cell[] {
  const { reads, open, sums, wholeSums } = state;
  const { grain, from, to, parts } = selection;
  const foldedUntil = open.foldedUntil;
  // Stored cells are decoded afresh when their bytes change, never changed in place: their sums
  // can be kept by their identity. Open hours (all after the stored ones) keep their own sums.
  const cache = selection.dims === undefined ? wholeSums : sums;
  const key = `${grain}|${parts.join(",")}|${selection.dims?.join(",") ?? "*"}|${slices.join(",")}`;
  const stored = sumOfLists(reads.storedRollups({ ...selection, to: storedTo(state, grain, to) }, slices), {
    cache,
    key,
  });
  const days = unsummedMonths(state, grain, from, to);
  if (days) {
    // Each day cell a list of its own, bucketed by its month: summed per month.
    const lists = [...reads.storedRollups({ ...selection, grain: GRAINS.day, ...days }, slices).values()];
    const months = lists.flatMap((l) => l.map(({ bucket, data }) => [{ bucket: bucketStart(bucket, grain), data }]));
    return [...stored, ...sumByBucket(months, { cache, key: `days|${key}` })];
  }
  if (grain !== GRAINS.hour || to <= foldedUntil) return stored;
  const hours = open.summedOf(slices, Math.max(from, foldedUntil), to);
  return [...stored, ...hours.map(({ bucket, data }) => ({ bucket, data: only(data, parts) }))];
}
