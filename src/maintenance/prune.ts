// Retention: deletes installs created before a cutoff (with all their executions), reports held since before it, and
// rejected-log entries received before it, all through write ops (rollups stay exact). Where the engine keeps
// executions by period (PostgreSQL: a partition per month), the periods wholly before the cutoff go at once.
import type { StoreReads } from "../store/contract/executions.ts";
import type { MaintenanceReads } from "../store/contract/maintenance.ts";
import type { WriteOp } from "../store/contract/store.ts";
import type { Commit } from "../store/writer.ts";

export interface PruneDeps {
  store: StoreReads & MaintenanceReads;
  /** Where the write ops go: `store.write` in a command, the group-commit writer inside serve. */
  commit: Commit;
}

export interface PruneOptions {
  /** Epoch ms: what was created / received before this goes. */
  cutoff: number;
  /** Count what would go, change nothing. */
  dryRun?: boolean;
  /** `at` of the write ops (default Date.now()). */
  now?: number;
  /** Deletes per transaction (default 2000). */
  batchSize?: number;
  onProgress?: (deleted: number) => void;
  /**
   * Whole periods only, where the engine has them: executions created between the start of the
   * cutoff's period and the cutoff stay until their period is past, instead of being deleted one
   * by one (the retention job on PostgreSQL: a month dropped at once, no row deleted). An engine
   * without periods deletes to the cutoff as always.
   */
  wholePeriods?: boolean;
}

export interface PruneResult {
  cutoff: string;
  dry_run: boolean;
  /** Executions deleted (or that would be). */
  executions: number;
  /** Reports held since before the cutoff, their start report never came. */
  held: number;
  /** Rejected-log entries received before the cutoff. */
  rejected: number;
}

export async function pruneOlderThan(deps: PruneDeps, opts: PruneOptions): Promise<PruneResult> {
  const { store, commit } = deps;
  const { cutoff, dryRun = false, batchSize = 2000 } = opts;
  const now = opts.now ?? Date.now();
  if (!Number.isFinite(cutoff)) throw new RangeError(`cutoff must be a time, got ${cutoff}`);
  const result: PruneResult = {
    cutoff: new Date(cutoff).toISOString(),
    dry_run: dryRun,
    executions: 0,
    held: 0,
    rejected: 0,
  };

  const before = await store.countBefore(cutoff);
  if (dryRun) return { ...result, ...before };

  // Entries of deleted installs go with them (delete op), the rest with forget-rejected: counted up front.
  const remove = async (ids: string[]): Promise<number> => {
    const ops: WriteOp[] = ids.map((randomId) => ({ kind: "delete", randomId, at: now }));
    const results = await commit(ops);
    return results.reduce((n, r) => n + (r.kind === "deleted" ? r.executions : 0), 0);
  };

  const [dropped] = await commit([{ kind: "drop-before", before: cutoff, at: now }]);
  const months = dropped?.kind === "dropped" && "until" in dropped ? dropped : null;
  const until = months?.until ?? null;
  result.executions += months?.executions ?? 0;
  // Oldest first, one chunk at a time; the keyset continues after the rows just deleted.
  for await (const chunk of store.executionChunks(
    { to: opts.wholePeriods && until !== null ? until : cutoff },
    { chunkRows: batchSize },
  )) {
    result.executions += await remove([...new Set(chunk.map((r) => r.randomId))]);
    opts.onProgress?.(result.executions);
  }
  for (;;) {
    const ids = await store.heldBefore(cutoff, batchSize);
    if (ids.length === 0) break;
    result.held += ids.length;
    result.executions += await remove(ids);
    if (ids.length < batchSize) break;
  }
  const [forgotten] = await commit([{ kind: "forget-rejected", before: cutoff, at: now }]);
  result.rejected = Math.max(before.rejected, forgotten?.kind === "forgotten" ? forgotten.count : 0);
  return result;
}
