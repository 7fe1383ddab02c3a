// Retention: deletes installs created before a cutoff, status updates held since before it, and
// rejected-log entries received before it, all through write ops (rollups stay exact).
import { count, lt } from "drizzle-orm";
import type { Commit } from "../store/writer.ts";
import type { Db } from "../store/sqlite/database.ts";
import { heldUpdates, installs, rejectedReports } from "../store/sqlite/schema.ts";
import type { StoreReads, WriteOp } from "../store/contract.ts";

export interface PruneDeps {
  reads: StoreReads;
  /** Read access for the counts and held updates (the same database as `reads`). */
  db: Db;
  /**
   * Where the write ops go: `inProcessCommit(store.write)` in a command, the write thread's
   * commit (or `ops => Promise.all(ops.map(writer.submit))`) inside serve.
   */
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
}

export interface PruneResult {
  cutoff: string;
  dry_run: boolean;
  /** Install records deleted (or that would be). */
  installs: number;
  /** Status updates held since before the cutoff, their start report never came. */
  held: number;
  /** Rejected-log entries received before the cutoff. */
  rejected: number;
}

export async function pruneOlderThan(deps: PruneDeps, opts: PruneOptions): Promise<PruneResult> {
  const { reads, db, commit } = deps;
  const { cutoff, dryRun = false, batchSize = 2000 } = opts;
  const now = opts.now ?? Date.now();
  if (!Number.isFinite(cutoff)) throw new RangeError(`cutoff must be a time, got ${cutoff}`);
  const result: PruneResult = { cutoff: new Date(cutoff).toISOString(), dry_run: dryRun, installs: 0, held: 0, rejected: 0 };

  if (dryRun) {
    result.installs = db.select({ n: count() }).from(installs).where(lt(installs.createdAt, cutoff)).get()?.n ?? 0;
    result.held = db.select({ n: count() }).from(heldUpdates).where(lt(heldUpdates.receivedAt, cutoff)).get()?.n ?? 0;
    result.rejected = db.select({ n: count() }).from(rejectedReports).where(lt(rejectedReports.receivedAt, cutoff)).get()?.n ?? 0;
    return result;
  }

  // Entries of deleted installs go with them (delete op), the rest with forget-rejected: count them up front.
  const rejectedBefore = db.select({ n: count() }).from(rejectedReports).where(lt(rejectedReports.receivedAt, cutoff)).get()?.n ?? 0;
  const remove = async (ids: string[]): Promise<number> => {
    const ops: WriteOp[] = ids.map((randomId) => ({ kind: "delete", randomId, at: now }));
    const results = await commit(ops);
    return results.filter((r) => r.kind === "deleted" && r.found).length;
  };

  // Oldest first, one chunk at a time; the keyset continues after the rows just deleted.
  for (const chunk of reads.installChunks({ to: cutoff }, { chunkRows: batchSize })) {
    result.installs += await remove(chunk.map((r) => r.randomId));
    opts.onProgress?.(result.installs);
  }
  for (;;) {
    const ids = db.select({ id: heldUpdates.randomId }).from(heldUpdates).where(lt(heldUpdates.receivedAt, cutoff)).limit(batchSize).all();
    if (ids.length === 0) break;
    result.held += ids.length;
    await remove(ids.map((r) => r.id));
    if (ids.length < batchSize) break;
  }
  const [forgotten] = await commit([{ kind: "forget-rejected", before: cutoff, at: now }]);
  result.rejected = Math.max(rejectedBefore, forgotten?.kind === "forgotten" ? forgotten.count : 0);
  return result;
}
