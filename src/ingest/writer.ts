// Group commit: every write waits in a queue; once per event-loop turn the queue is written in
// one transaction, and each caller is resolved only after COMMIT. Under load the batch grows by
// itself (everything that arrived while the last commit ran), so batch size follows the load.
import type { Store, WriteOp, WriteResult } from "../store/store.ts";

/** The database could not take the write (disk full, read-only, I/O error): answer 503, retry later. */
export class StorageUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`storage cannot accept writes: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

interface Pending {
  op: WriteOp;
  resolve: (r: WriteResult) => void;
  reject: (e: Error) => void;
}

export interface WriterStats {
  batches: number;
  writes: number;
  failedBatches: number;
  lastBatchSize: number;
  largestBatch: number;
  /** Set while the last attempt to write failed; cleared by the next successful commit. */
  lastError: string | null;
}

export interface GroupCommitWriter {
  submit(op: WriteOp): Promise<WriteResult>;
  /** Resolves once everything submitted so far is committed (or failed). */
  drain(): Promise<void>;
  readonly stats: Readonly<WriterStats>;
}

const isStorageError = (e: unknown): boolean => e instanceof Error && e.name === "SQLiteError";

export function createWriter(store: Pick<Store, "write">, maxBatch: number): GroupCommitWriter {
  let queue: Pending[] = [];
  let scheduled = false;
  let idle: (() => void)[] = [];
  const stats: WriterStats = { batches: 0, writes: 0, failedBatches: 0, lastBatchSize: 0, largestBatch: 0, lastError: null };

  function commit(batch: Pending[]): void {
    const results = store.write(batch.map((p) => p.op));
    stats.batches++;
    stats.writes += batch.length;
    stats.lastBatchSize = batch.length;
    stats.largestBatch = Math.max(stats.largestBatch, batch.length);
    stats.lastError = null;
    batch.forEach((p, i) => p.resolve(results[i] as WriteResult));
  }

  function fail(p: Pending, e: unknown): void {
    p.reject(isStorageError(e) ? new StorageUnavailableError(e) : (e as Error));
  }

  function flush(): void {
    scheduled = false;
    const batch = queue.splice(0, maxBatch);
    try {
      commit(batch);
    } catch (e) {
      stats.failedBatches++;
      stats.lastError = e instanceof Error ? e.message : String(e);
      // The transaction rolled back. Retry one by one so a single bad write cannot fail its
      // neighbours; when storage itself is down these fail fast too.
      for (const p of batch) {
        try {
          if (batch.length === 1) throw e;
          commit([p]);
        } catch (single) {
          fail(p, single);
        }
      }
    }
    if (queue.length > 0) schedule();
    else {
      const waiting = idle;
      idle = [];
      waiting.forEach((done) => done());
    }
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  }

  return {
    submit(op) {
      return new Promise<WriteResult>((resolve, reject) => {
        queue.push({ op, resolve, reject });
        schedule();
      });
    },
    drain() {
      if (queue.length === 0 && !scheduled) return Promise.resolve();
      return new Promise<void>((done) => idle.push(done));
    },
    stats,
  };
}
