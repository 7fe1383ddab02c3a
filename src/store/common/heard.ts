// "Heard from since t" (updated_at >= t, whenever a run started) answered from bounded ranges
// instead of a scan of every recent row: a run heard from since t either started after t - LATE_MS
// (found by created_at), or reported more than LATE_MS after it started (long runs, late final
// reports, expiry: about one run in a hundred), found by a partial index on updated_at that holds
// only those. Both engines index the same runs (their schema.ts: executions_heard_late).
import { HOUR } from "../../domain/time.ts";

/** How long after its start a run's report makes it "late": kept in the partial index. */
export const LATE_MS = HOUR;

/** Where a read of runs heard from since `t` looks: the run's start, after this time, or the late index. */
export const nearFrom = (t: number): number => t - LATE_MS;
