// Open hours: hours at or after the fold mark. Their hour cells (stored slices) live only here, in
// memory, slice -> bucket -> cell, and are stored when the fold job closes them
// (docs/decisions/2026-11-21-open-hours-in-memory.md).
// They are a function of the raw records, so the store recounts them whenever it cannot vouch for
// them: at open, and after another connection wrote or moved the fold mark.
import { failureSignatureId } from "../../domain/error-signature.ts";
import type { Execution } from "../../domain/execution.ts";
import { GRAINS, bucketStart, countHour, emptyData, isEmpty, storedSlicesOf, type OpenCount, type RollupData } from "../../domain/rollup.ts";
import type { RollupCell } from "../contract.ts";

export class OpenHours {
  private readonly cells = new Map<string, Map<number, RollupData>>();
  /** The fold mark these cells start at. */
  foldedUntil = 0;

  private readonly cellOf = (app: string, hour: number): RollupData => {
    let byBucket = this.cells.get(app);
    if (!byBucket) this.cells.set(app, (byBucket = new Map()));
    let cell = byBucket.get(hour);
    if (!cell) byBucket.set(hour, (cell = emptyData()));
    return cell;
  };

  /** Forgets everything and counts `rows` (those created from `foldedUntil` on) afresh. */
  recount(foldedUntil: number, rows: Iterable<Execution>): void {
    this.cells.clear();
    this.foldedUntil = foldedUntil;
    for (const r of rows) countHour(this.cellOf, { r, outcome: r.outcome, sign: 1, errorSig: failureSignatureId(r.outcome, r.error) }, storedSlicesOf);
  }

  /** Counts committed changes in; cells a removal emptied go, as a recount would not have them. */
  apply(counts: readonly OpenCount[]): void {
    for (const c of counts) {
      if (c.r.createdAt < this.foldedUntil) continue; // folded in the same batch
      countHour(this.cellOf, c, storedSlicesOf);
      if (c.sign < 0) for (const slice of storedSlicesOf(c.r)) this.dropIfEmpty(slice, bucketStart(c.r.createdAt, GRAINS.hour));
    }
  }

  /** The fold mark moved to `until`: the hours before it are stored now. */
  folded(until: number): void {
    this.foldedUntil = until;
    for (const [app, byBucket] of this.cells) {
      for (const bucket of byBucket.keys()) if (bucket < until) byBucket.delete(bucket);
      if (byBucket.size === 0) this.cells.delete(app);
    }
  }

  /** Cells of one app slice (or of every slice, `null`) with bucket in [from, to), oldest first. */
  cellsOf(app: string | null, from: number, to: number): RollupCell[] {
    const out: RollupCell[] = [];
    for (const [slice, byBucket] of app === null ? this.cells : [[app, this.cells.get(app)] as const]) {
      for (const [bucket, data] of byBucket ?? []) if (bucket >= from && bucket < to) out.push({ slice, bucket, data });
    }
    return out.sort((a, b) => a.bucket - b.bucket);
  }

  private dropIfEmpty(app: string, hour: number): void {
    const byBucket = this.cells.get(app);
    const cell = byBucket?.get(hour);
    if (!byBucket || !cell || !isEmpty(cell)) return;
    byBucket.delete(hour);
    if (byBucket.size === 0) this.cells.delete(app);
  }
}
