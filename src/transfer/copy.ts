// Copies a whole data set from one store into another (installstats copy): the executions, the
// held reports (final reports still waiting for their start) and the rejected-reports log, each
// oldest first, one chunk in memory at a time, each chunk written in one transaction. What is
// there already is a duplicate (an execution or held report by its id, a log entry by the copy's
// mark of its source), so a copy cut short is finished by running it again, nothing doubled.
import type { ResultOf, Store, WriteOp, WriteResult } from "../store/contract/store.ts";

interface PartSummary {
  read: number;
  copied: number;
  duplicates: number;
}

export interface CopySummary {
  executions: PartSummary;
  held: PartSummary;
  rejected: PartSummary & {
    /** Entries whose whole body was in the source but only its head fitted the target's log budget. */
    cut: number;
    /** Entries the target's log had no room for at all. */
    dropped: number;
  };
}

export type CopyPart = keyof CopySummary;

/** Rows per chunk of executions: one read and one transaction each (held reports and log entries come in the source's own chunks). */
const CHUNK_ROWS = 1000;

const part = (): PartSummary => ({ read: 0, copied: 0, duplicates: 0 });

export async function copyStore(
  from: Pick<Store, "executionChunks" | "heldChunks" | "rejectedChunks">,
  to: { write(ops: readonly WriteOp[]): Promise<WriteResult[]> },
  opts: {
    at: number;
    /** The source as the target's copy mark names it (the same on every run of this copy). */
    source: string;
    onProgress?: (part: CopyPart, s: CopySummary) => void;
  },
): Promise<CopySummary> {
  const summary: CopySummary = { executions: part(), held: part(), rejected: { ...part(), cut: 0, dropped: 0 } };
  const count = (p: PartSummary, results: WriteResult[]) => {
    p.read += results.length;
    for (const r of results) {
      if (r.kind === "created") p.copied++;
      else if (r.kind === "duplicate") p.duplicates++;
    }
  };

  for await (const chunk of from.executionChunks({}, { chunkRows: CHUNK_ROWS })) {
    count(summary.executions, await to.write(chunk.map((execution) => ({ kind: "load", execution, at: opts.at }))));
    opts.onProgress?.("executions", summary);
  }
  // After the executions: a held report whose execution came meanwhile is not held again.
  for await (const chunk of from.heldChunks()) {
    count(summary.held, await to.write(chunk.map((held) => ({ kind: "load-held", held, at: opts.at }))));
    opts.onProgress?.("held", summary);
  }
  for await (const chunk of from.rejectedChunks()) {
    const results = (await to.write(
      chunk.map((entry) => ({ kind: "load-rejected", entry, source: opts.source, at: opts.at })),
    )) as ResultOf["load-rejected"][];
    count(summary.rejected, results);
    results.forEach((r, i) => {
      if (r.kind === "dropped") summary.rejected.dropped++;
      else if (r.kind === "created" && !r.bodyKept && chunk[i]!.bodyKept) summary.rejected.cut++;
    });
    opts.onProgress?.("rejected", summary);
  }
  return summary;
}
