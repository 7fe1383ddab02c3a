// How a batch counts an execution into the rollups and the error signatures, the same on both
// engines: what changes is only where the batch keeps its deltas until COMMIT.
import { SignatureSightings, failureSignature, failureSignatureId } from "../../domain/error-signature.ts";
import type { Execution } from "../../domain/execution.ts";
import type { RollupDeltas } from "../../domain/rollup.ts";

/** What a batch has counted so far. */
export interface Counted {
  deltas: RollupDeltas;
  sightings: SignatureSightings;
}

/** Counts `row` into the rollups with `sign`; a failure's error text is also a sighting. */
export function count(fx: Counted, row: Execution, sign: 1 | -1, at: number): void {
  const sig = failureSignature(row.outcome, row.error);
  fx.deltas.add(row, row.outcome, sign, sig?.id ?? null);
  if (sign === 1 && sig) fx.sightings.see(sig, row.error!, row.nsapp, at);
}

/** A counted execution became `after`: the rollups follow (only what changed moves). */
export function recount(fx: Counted, before: Execution, after: Execution, at: number): void {
  const sig = failureSignature(after.outcome, after.error);
  fx.deltas.change(before, after, failureSignatureId(before.outcome, before.error), sig?.id ?? null);
  if (sig) fx.sightings.see(sig, after.error!, after.nsapp, at);
}
