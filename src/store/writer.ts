// Group commit: every write waits in a queue and goes to the database in the next batch, one
// transaction per batch; each caller is resolved only after its batch has committed. One batch
// is in flight at a time, and whatever arrives while it commits forms the next one, so the batch
// size follows the load by itself, with no timer and no added latency when idle.
import type { WriteOp, WriteResult } from "./contract.ts";

/** The database could not take the write (disk full, read-only, I/O error): answer 503, retry later. */
export class StorageUnavailableError extends Error {
  constructor(message: string) {
    super(`storage cannot accept writes: ${message}`);
  }
}

/** Writes a batch in one transaction; resolves after COMMIT, rejects (with nothing written) otherwise. */
export type Commit = (ops: readonly WriteOp[]) => Promise<WriteResult[]>;

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

/** Called after each committed batch (metrics). */
export type BatchObserver = (size: number, seconds: number) => void;

export function createWriter(commit: Commit, maxBatch: number, onBatch?: BatchObserver): GroupCommitWriter {
  let queue: Pending[] = [];
  let busy = false;
  let idle: (() => void)[] = [];
  const stats: WriterStats = { batches: 0, writes: 0, failedBatches: 0, lastBatchSize: 0, largestBatch: 0, lastError: null };

  async function write(batch: Pending[]): Promise<void> {
    const started = performance.now();
    const results = await commit(batch.map((p) => p.op));
    onBatch?.(batch.length, (performance.now() - started) / 1000);
    stats.batches++;
    stats.writes += batch.length;
    stats.lastBatchSize = batch.length;
    stats.largestBatch = Math.max(stats.largestBatch, batch.length);
    stats.lastError = null;
    batch.forEach((p, i) => p.resolve(results[i] as WriteResult));
  }

  async function flush(): Promise<void> {
    busy = true;
    while (queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      try {
        await write(batch);
      } catch (e) {
        stats.failedBatches++;
        stats.lastError = e instanceof Error ? e.message : String(e);
        // The transaction rolled back. Retry one by one so a single bad write cannot fail its
        // neighbours; when storage itself is down these fail fast too.
        for (const p of batch) {
          try {
            if (batch.length === 1) throw e;
            await write([p]);
          } catch (single) {
            p.reject(single instanceof Error ? single : new Error(String(single)));
          }
        }
      }
    }
    busy = false;
    const waiting = idle;
    idle = [];
    waiting.forEach((done) => done());
  }

  return {
    submit(op) {
      return new Promise<WriteResult>((resolve, reject) => {
        queue.push({ op, resolve, reject });
        // Start on the next turn, so everything arriving in this one joins the first batch.
        if (!busy) {
          busy = true;
          setImmediate(() => void flush());
        }
      });
    },
    drain() {
      if (queue.length === 0 && !busy) return Promise.resolve();
      return new Promise<void>((done) => idle.push(done));
    },
    stats,
  };
}

/** A Commit that writes in this thread (tests, CLI commands): SQLite errors become StorageUnavailableError. */
export function inProcessCommit(write: (ops: readonly WriteOp[]) => WriteResult[]): Commit {
  return async (ops) => {
    try {
      return write(ops);
    } catch (e) {
      throw asStorageError(e);
    }
  };
}

/** SQLite's own errors mean the storage refused the write; anything else is a bug and stays as it is. */
export function asStorageError(e: unknown): Error {
  if (e instanceof Error && e.name === "SQLiteError") return new StorageUnavailableError(e.message);
  return e instanceof Error ? e : new Error(String(e));
}
