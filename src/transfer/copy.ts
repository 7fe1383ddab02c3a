// Copies every execution of one store into another (installstats copy): oldest first, one chunk
// in memory at a time, each chunk written as `load` ops in one transaction. A load of an
// execution already there is a duplicate, so a copy cut short is finished by running it again.
import type { StoreReads, WriteOp, WriteResult } from "../store/contract.ts";

export interface CopySummary {
  read: number;
  copied: number;
  duplicates: number;
}

/** Rows per chunk: one read and one transaction each. */
const CHUNK_ROWS = 1000;

export async function copyExecutions(
  from: Pick<StoreReads, "executionChunks">,
  to: { write(ops: readonly WriteOp[]): Promise<WriteResult[]> },
  opts: { at: number; onProgress?: (s: CopySummary) => void },
): Promise<CopySummary> {
  const summary: CopySummary = { read: 0, copied: 0, duplicates: 0 };
  for await (const chunk of from.executionChunks({}, { chunkRows: CHUNK_ROWS })) {
    const results = await to.write(chunk.map((execution) => ({ kind: "load", execution, at: opts.at })));
    summary.read += chunk.length;
    for (const r of results) {
      if (r.kind === "created") summary.copied++;
      else summary.duplicates++;
    }
    opts.onProgress?.(summary);
  }
  return summary;
}
