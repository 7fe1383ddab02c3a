// Whole data sets into and out of a store (seed, copy, import): complete records loaded as they
// stand, the held reports and the rejected-reports log read out in chunks, an import's position.
import type { Execution } from "../../domain/execution.ts";
import type { HeldReport } from "../../domain/lifecycle.ts";
import type { Outcome } from "../../domain/outcome.ts";
import type { RejectedEntry } from "./rejected.ts";
import type { ReadTable } from "./reads.ts";

/** What seed, copy and import write. */
export type TransferWrite =
  /**
   * A complete execution as it stands (seed, copy): stored and counted once, where a start report
   * and its final report would be counted three times (+1 in progress, -1, +1 final).
   */
  | { kind: "load"; execution: Execution; at: number }
  /**
   * A held report as another store keeps it (copy): held here as it was, unless this store has
   * its execution or a held report of it already (then a duplicate, so a copy run again adds nothing).
   */
  | { kind: "load-held"; held: HeldReport; at: number }
  /**
   * An entry of another store's rejected-reports log (copy), kept within this log's budget as a
   * new entry would be; a head-only entry stays head-only. `source` names that store: entries are
   * loaded in increasing id order, and one whose id is not above the last loaded from `source`
   * is a duplicate, so a copy run again (after an interruption) adds only what is missing.
   */
  | { kind: "load-rejected"; entry: RejectedEntry; source: string; at: number }
  /**
   * How far `installstats import --url` got with `source` (the listing it reads, named by its URL):
   * a position of the importer's own, kept in the transaction of the records it took, so an
   * import cut short resumes where its last commit left it.
   */
  | { kind: "import-mark"; source: string; position: number; at: number };

export interface TransferResults {
  load: { kind: "created"; outcome: Outcome } | { kind: "duplicate" };
  "load-held": { kind: "created" } | { kind: "duplicate" };
  /** "created" with `bodyKept` false: only the head of the body fitted; "dropped": not kept at all (the log is full), counted. */
  "load-rejected": { kind: "created"; bodyKept: boolean } | { kind: "duplicate" } | { kind: "dropped" };
  "import-mark": { kind: "marked" };
}

/** What copy and import read. */
export interface TransferReads {
  /** The position an import-mark op last kept for `source`; 0 when none. */
  importMark(source: string): Promise<number>;
  /** Every held report, oldest first, in chunks of `chunkRows`; each chunk one query run to completion (copy, in constant memory). */
  heldChunks(opts?: { chunkRows?: number }): AsyncGenerator<HeldReport[], void>;
  /** Log entries with an id above `afterId`, oldest first, in chunks of `chunkRows` (as heldChunks). */
  rejectedChunks(opts?: { afterId?: number; chunkRows?: number }): AsyncGenerator<RejectedEntry[], void>;
}

export const TRANSFER_READS = {
  importMark: "once",
  heldChunks: "stream",
  rejectedChunks: "stream",
} as const satisfies ReadTable<TransferReads>;
