// Replay of the rejected-reports log: bodies that were refused (invalid_json, invalid_field) are
// run again through the current parser and field rules; those that now pass are written as they
// would have been when they arrived (`at` = received_at), and every entry tried is marked with
// what came of it.
//
// Not replayed: `repaired` entries were applied when they arrived (applying them again would
// count a status update twice); `already_final` updates stay refused (the record is final);
// `payload_too_large` entries keep no body.
import type { NormalizeOptions } from "../domain/normalize.ts";
import { isEndpoint, type RejectReason } from "../domain/rejection.ts";
import { intake } from "../ingest/pipeline.ts";
import type { RejectedReads } from "../store/contract/rejected.ts";
import type { WriteOp, WriteResult } from "../store/contract/store.ts";
import type { Commit } from "../store/writer.ts";

export const REPLAYABLE = ["invalid_json", "invalid_field"] as const satisfies readonly RejectReason[];
export type ReplayableReason = (typeof REPLAYABLE)[number];

/** Marks that begin so are tried again; any other mark means the entry was replayed (for good). */
const STILL_INVALID = "still invalid";

export interface ReplayOptions {
  normalize: NormalizeOptions;
  /** Reasons to replay (default both). */
  reasons?: readonly ReplayableReason[];
  /** Most entries to try. */
  limit?: number;
  /** Parse and check only: write nothing, mark nothing. */
  dryRun?: boolean;
  /** `at` of the replay marks (default Date.now()). */
  now?: number;
  /** Entries per pair of transactions (default 500). */
  batchSize?: number;
  onProgress?: (tried: number) => void;
}

export interface ReplaySummary {
  dry_run: boolean;
  /** Entries run through the parser. */
  tried: number;
  /** What came of them: created, duplicate, updated, held, conflict, still invalid (dry run: valid, still invalid). */
  results: Record<string, number>;
  /** Entries of the chosen reasons already replayed with a result other than "still invalid": not tried again. */
  skipped: number;
}

const resultName = (r: WriteResult | undefined): string => r?.kind ?? "unknown";

export async function replayRejected(
  deps: { store: RejectedReads; commit: Commit },
  opts: ReplayOptions,
): Promise<ReplaySummary> {
  const { store, commit } = deps;
  const reasons = opts.reasons ?? REPLAYABLE;
  const dryRun = opts.dryRun ?? false;
  const batchSize = opts.batchSize ?? 500;
  let remaining = opts.limit ?? Number.POSITIVE_INFINITY;
  const now = opts.now ?? Date.now();
  const summary: ReplaySummary = { dry_run: dryRun, tried: 0, results: {}, skipped: 0 };
  const tally = (result: string) => {
    const key = result.startsWith(STILL_INVALID) ? STILL_INVALID : result;
    summary.results[key] = (summary.results[key] ?? 0) + 1;
  };

  summary.skipped = await store.countReplayed(reasons, STILL_INVALID);

  // Oldest first (ids grow with arrival), so a start report is replayed before its status update.
  let after = 0;
  while (remaining > 0) {
    const entries = await store.replayCandidates({
      reasons,
      retryPrefix: STILL_INVALID,
      afterId: after,
      limit: Math.min(batchSize, remaining),
    });
    if (entries.length === 0) break;
    after = entries.at(-1)!.id;
    remaining -= entries.length;

    const marks = new Map<number, string>();
    const writes: { id: number; op: WriteOp }[] = [];
    for (const entry of entries) {
      // As the report would have been taken when it arrived: same pipeline, its own time.
      if (!isEndpoint(entry.endpoint)) {
        marks.set(entry.id, `${STILL_INVALID}: not sent to an ingestion endpoint`);
        continue;
      }
      const taken = intake(entry.endpoint, entry.body, entry.receivedAt, opts.normalize);
      if (taken.ok) writes.push({ id: entry.id, op: taken.op });
      else marks.set(entry.id, `${STILL_INVALID}: ${taken.rejection.message}`);
    }
    if (dryRun) {
      for (const { id } of writes) marks.set(id, "valid");
    } else {
      // The reports first (one transaction), then the marks (another): the marks need the results.
      const results = writes.length > 0 ? await commit(writes.map((w) => w.op)) : [];
      writes.forEach((w, i) => marks.set(w.id, resultName(results[i])));
      await commit(
        entries.map((e) => ({ kind: "mark-replayed", rejectedId: e.id, result: marks.get(e.id)!, at: now })),
      );
    }
    for (const entry of entries) tally(marks.get(entry.id)!);
    summary.tried += entries.length;
    opts.onProgress?.(summary.tried);
  }
  return summary;
}
