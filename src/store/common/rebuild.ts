// Rebuilding rollups, day by day, the same on both engines: what differs is how an engine clears
// its cells and recounts one day (SQLite keeps its open hours in memory, PostgreSQL counts them
// into cells), not which days there are or when progress is told.
import { DAY } from "../../domain/time.ts";

/**
 * The days a rebuild recounts, oldest first: from the day of the oldest record to the day of the
 * newest, or up to `bound` (a day's start: the engine recounts what lies after it otherwise).
 * Each is told to `onDay` before it is recounted, with where the rebuild ends.
 */
export function* rebuildDays(
  span: { first: number; last: number },
  onDay?: (day: number, end: number) => void,
  bound = Number.POSITIVE_INFINITY,
): Generator<number, void> {
  const end = Math.min(span.last - (span.last % DAY) + DAY, bound);
  for (let day = span.first - (span.first % DAY); day < end; day += DAY) {
    onDay?.(day, end);
    yield day;
  }
}
