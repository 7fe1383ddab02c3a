// The one cache of parsed rollup cells, shared by reads and writes of a connection. Stored cells
// change only when an hour is folded or a record of a folded hour changes, so dashboards read the
// same ones again and again, and write batches often merge into the same ones: parsing them again
// was a third of the write cost. A cell is parsed part by part (readers need one column), and
// whole before a write merges into it. The store clears it when a transaction fails (it may hold
// uncommitted merges) and when another connection wrote (PRAGMA data_version moved).
import { RecentlyUsed } from "../../domain/recently-used.ts";
import { emptyData, type Grain, type RollupData, type RollupPart } from "../../domain/rollup.ts";

export interface CachedCell {
  /** The parts parsed into `data` so far. */
  have: Set<RollupPart>;
  data: RollupData;
}

export const ALL_PARTS: readonly RollupPart[] = ["data", "apps", "errors"];

export const cellKey = (grain: Grain, bucket: number, app: string): string => `${grain}|${bucket}|${app}`;

export class CellCache extends RecentlyUsed<CachedCell> {
  /** The cached cell, or a new empty one (nothing parsed yet) put in its place. */
  entry(key: string): CachedCell {
    let cell = this.get(key);
    if (!cell) this.set(key, (cell = { have: new Set(), data: emptyData() }));
    return cell;
  }
}
