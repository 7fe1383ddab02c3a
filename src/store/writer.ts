// Group commit: every write waits in a queue and goes to the database in the next batch, one
// transaction per batch; each caller is resolved only after its batch has committed. One batch
// is in flight at a time, and whatever arrives while it commits forms the next one, so the batch
// size follows the load by itself, with no timer and no added latency when idle.
//
// A write may carry its request's AbortSignal: when the request is aborted before the write's
// batch is formed, the write is dropped (never stored) and its promise rejects with
// RequestAbortedError (when the batch is formed: looked at then, with no listener per write). Bun closes a connection on which a request is pipelined behind a pending
// answer (scripts/repro/pipelining.ts), aborting the request: without this, its report would be
// stored and never acknowledged. Once a batch is handed to `commit`, its writes go through.
import { StorageUnreachableError } from "./contract/errors.ts";
import type { ResultFor, WriteOp, WriteResult } from "./contract/store.ts";

/** The request a write belonged to was aborted (client gone, or its connection closed) before the write was stored. */
export class RequestAbortedError extends Error {
  constructor() {
    super("the request was aborted before its write was stored; nothing was stored");
    this.name = "RequestAbortedError";
  }
}

/** Writes a batch in one transaction; returns (or resolves) after COMMIT, throws (with nothing written) otherwise. */
export type Commit = (ops: readonly WriteOp[]) => WriteResult[] | Promise<WriteResult[]>;

interface Pending {
  op: WriteOp;
  resolve: (r: WriteResult) => void;
  reject: (e: Error) => void;
  signal: AbortSignal | undefined;
}

export interface WriterStats {
  batches: number;
  writes: number;
  failedBatches: number;
  lastBatchSize: number;
  largestBatch: number;
  /** Set while the last attempt to write failed; cleared by the next successful commit. */
  lastError: string | null;
  /** Writes dropped because their request was aborted before their batch was formed. */
  dropped: number;
}

export interface GroupCommitWriter {
  /** `signal`: the request's; a write whose request is aborted before its batch is formed is dropped (RequestAbortedError). */
  submit<Op extends WriteOp>(op: Op, signal?: AbortSignal): Promise<ResultFor<Op>>;
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
  const stats: WriterStats = {
    batches: 0,
    writes: 0,
    failedBatches: 0,
    lastBatchSize: 0,
    largestBatch: 0,
    lastError: null,
    dropped: 0,
  };

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

  /** The next batch: up to maxBatch writes whose requests are still there; from here on, none is dropped. */
  function nextBatch(): Pending[] {
    const batch: Pending[] = [];
    while (batch.length < maxBatch && queue.length > 0) {
      const taken = queue.splice(0, maxBatch - batch.length);
      for (const p of taken) {
        if (p.signal?.aborted) {
          stats.dropped++;
          p.reject(new RequestAbortedError());
        } else batch.push(p);
      }
    }
    return batch;
  }

  async function flush(): Promise<void> {
    busy = true;
    while (queue.length > 0) {
      const batch = nextBatch();
      if (batch.length === 0) continue;
      try {
        await write(batch);
      } catch (e) {
        stats.failedBatches++;
        stats.lastError = e instanceof Error ? e.message : String(e);
        // The transaction rolled back. Retry one by one so a single bad write cannot fail its
        // neighbours; not when the storage cannot be reached at all (each would wait to fail).
        for (const p of batch) {
          try {
            if (batch.length === 1 || e instanceof StorageUnreachableError) throw e;
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
    submit<Op extends WriteOp>(op: Op, signal?: AbortSignal) {
      if (signal?.aborted) {
        stats.dropped++;
        return Promise.reject(new RequestAbortedError());
      }
      return new Promise<ResultFor<Op>>((resolve, reject) => {
        // The store answers each op with a result of its own kind (the contract's ResultOf).
        queue.push({ op, resolve: resolve as (r: WriteResult) => void, reject, signal });
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
