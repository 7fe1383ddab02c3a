// Hour cells of hours older than the stored ones (domain/rollup.ts hoursFrom): counted from the
// records of that day when a read needs them (the ragged edge of a window longer than the hour
// cells reach), the same way a write counts them, so they equal a recount. Both engines count them
// here; each keeps the days it counted until a write changes that day.
import { failureSignatureId } from "../../domain/error-signature.ts";
import type { Execution } from "../../domain/execution.ts";
import {
  GRAINS,
  addRecord,
  bucketStart,
  emptyData,
  isAllApps,
  parseSlice,
  platformClass,
  repoClass,
  settle,
  type RollupData,
} from "../../domain/rollup.ts";
import { DAY } from "../../domain/time.ts";
import type { ExecutionFilter } from "../contract/executions.ts";

/** The executions of a slice in [from, to), as far as a filter can say (a repo class "external" is checked per record). */
export function sliceFilter(slice: string, from: number, to: number): ExecutionFilter {
  const { kind, repo, platform, nsapp } = parseSlice(slice);
  const f: ExecutionFilter = { kind, from, to };
  if (nsapp !== null) f.nsapp = nsapp;
  if (platform !== null) f.platformClass = platform;
  if (repo !== null && repo !== "external") f.repoSource = repo;
  return f;
}

/** The days whose hours [from, to) lies in: a range of day cells to look for. */
export const daysOf = (from: number, to: number): { from: number; to: number } => ({
  from: Math.floor(from / DAY) * DAY,
  to: Math.ceil(to / DAY) * DAY,
});

/** Hour cells of `slice` counted from its executions (`chunks`: those of sliceFilter), oldest first; hours without any left out. */
export async function countHours(
  chunks: AsyncIterable<readonly Execution[]> | Iterable<readonly Execution[]>,
  slice: string,
): Promise<{ bucket: number; data: RollupData }[]> {
  const { kind, repo, platform, nsapp } = parseSlice(slice);
  const allApps = isAllApps(slice);
  const cells = new Map<number, RollupData>();
  for await (const chunk of chunks) {
    for (const r of chunk) {
      if (repo !== null && repoClass(r.repoSource) !== repo) continue;
      if (platform !== null && platformClass(r) !== platform) continue;
      if (r.kind !== kind || (nsapp !== null && (r.nsapp ?? "") !== nsapp)) continue;
      const hour = bucketStart(r.createdAt, GRAINS.hour);
      let cell = cells.get(hour);
      if (!cell) cells.set(hour, (cell = emptyData()));
      addRecord(cell, r, r.outcome, 1, allApps, failureSignatureId(r.outcome, r.error));
    }
  }
  return [...cells].sort((a, b) => a[0] - b[0]).map(([bucket, data]) => ({ bucket, data }));
}

/**
 * Days of counted hour cells, per slice, most recently used kept. A day is counted whole (a window
 * that moves by an hour needs the next hour of the same day) and forgotten when a write changes
 * anything counted that day (its day cells change then) or, for every day, when the engine can no
 * longer vouch for what it read.
 */
export class OldHours {
  private readonly days = new Map<
    string,
    { day: number; version: string; cells: { bucket: number; data: RollupData }[] }
  >();

  constructor(private readonly limit = 512) {}

  /**
   * Hour cells of `slice` in [from, to) (every hour before the hour cells), from the days kept or
   * counted now by `count` (the cells of one day). `days` are the days in the range that have a
   * day cell (the others have no records to count). With `version`, a day is kept only while the
   * version of what it counts stays (PostgreSQL: its day cells' row versions, which another node's
   * write moves).
   */
  async read(
    slice: string,
    from: number,
    to: number,
    days: readonly number[],
    count: (slice: string, day: number) => Promise<{ bucket: number; data: RollupData }[]>,
    version?: (slice: string, day: number) => Promise<string>,
  ): Promise<{ bucket: number; data: RollupData }[]> {
    const out: { bucket: number; data: RollupData }[] = [];
    for (const day of [...new Set(days)].sort((a, b) => a - b)) {
      if (day + DAY <= from || day >= to) continue;
      const key = `${day}|${slice}`;
      const now = version ? await version(slice, day) : "";
      let kept = this.days.get(key);
      if (kept?.version === now) {
        this.days.delete(key); // re-inserted: a Map's order is least recently used first
      } else {
        // Never changed once counted (a write that changes the day makes it count again): settled.
        kept = { day, version: now, cells: (await count(slice, day)).map((c) => ({ ...c, data: settle(c.data) })) };
        for (const oldest of this.days.keys()) {
          if (this.days.size < this.limit) break;
          this.days.delete(oldest);
        }
      }
      this.days.set(key, kept);
      for (const c of kept.cells) if (c.bucket >= from && c.bucket < to) out.push(c);
    }
    return out;
  }

  /** A write changed what day `day` counts. */
  forgetDay(day: number): void {
    for (const [key, kept] of this.days) if (kept.day === day) this.days.delete(key);
  }

  clear(): void {
    this.days.clear();
  }
}
