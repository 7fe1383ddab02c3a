// A bulk load: one command writing many records of the past in batches (seed, import, copy).
// Left to itself, such a load grows the runtime's heap to several times what is alive and
// rewrites month cells every batch; opened and written this way it does neither.
import type { OpenOptions } from "./engine.ts";
import type { Store, WriteOp, WriteResult } from "./contract/store.ts";

/**
 * How a bulk load opens its store. Months deferred (OpenOptions.deferMonths): summed from their
 * day cells once the load has passed them, not rewritten every batch. Labels bounded
 * (OpenOptions.labelLimit): every distinct failure is a label (~125,000 at 1M installs of today's
 * traffic), and held all they grew the peak with the load (1M: 219-239 MB, 186-191 bounded; 4,096
 * took 7 % more CPU for no lower peak: docs/decisions/2026-11-27-seed-bounded-labels.md).
 */
export const BULK_LOAD = { deferMonths: true, labelLimit: 16_384 } as const satisfies Pick<
  OpenOptions,
  "deferMonths" | "labelLimit"
>;

/**
 * A full collection every this many records gone through: parsed cells and records come and go by
 * the hundred thousand, and the heap grew to several times what is alive (the seed: RSS 264 MB at
 * 100k installs; every 10k writes 166-208 MB for 300k /upload installs, every 2.5k 145-148 MB for
 * 3-7 % more time: docs/decisions/2026-11-27-seed-collections.md).
 */
const COLLECT_EVERY = 2_500;

export interface BulkWriter {
  /** store.write, with a full collection every COLLECT_EVERY writes (`collections`). */
  write(ops: readonly WriteOp[]): Promise<WriteResult[]>;
  /**
   * Sums the months the load left to sum (a fold to where the store is folded already: for a
   * store not opened with BULK_LOAD, nothing to do). A load that stops before this leaves them to
   * the next fold (a server's fold job, the next load); reads sum them meanwhile.
   */
  finish(at: number): Promise<void>;
}

/**
 * For a command that goes through a whole data set (a bulk load, `verify`): told how many records
 * it has just been through, it collects once COLLECT_EVERY have gone by since the last collection.
 */
export function collections(): (records: number) => void {
  let since = 0;
  return (records) => {
    since += records;
    if (since < COLLECT_EVERY) return;
    since = 0;
    Bun.gc(true);
  };
}

export function bulkWriter(store: Pick<Store, "write" | "foldedUntil">): BulkWriter {
  const collect = collections();
  return {
    async write(ops) {
      const results = await store.write(ops);
      collect(ops.length);
      return results;
    },
    async finish(at) {
      await store.write([{ kind: "fold", until: await store.foldedUntil(), at }]);
    },
  };
}
