// The export of GET /api/export outside HTTP (the `export` command): the same filters, window
// rules, row order and formatting (src/read/export.ts), written to any sink chunk by chunk.
import { EXPORT_CHUNK_ROWS, exportStream, type ExportFormat } from "../read/export.ts";
import { resolveWindow, toFilter, type FilterQuery } from "../read/query.ts";
import type { StoreReads } from "../store/contract/executions.ts";
import type { Execution } from "../domain/execution.ts";

/**
 * Streams every execution matching `query` (no window = all time, as the HTTP export) in `format`
 * to `write`, awaiting each chunk, so memory stays constant and a slow sink slows the reading.
 * Throws QueryError (before anything is written) when the filters are invalid.
 */
export async function exportExecutions(
  reads: StoreReads,
  query: FilterQuery,
  format: ExportFormat,
  write: (chunk: Uint8Array) => Promise<void> | void,
  opts: { now?: number; onRows?: (records: number) => void } = {},
): Promise<{ records: number }> {
  // An export is a copy of the data: every kind unless asked for.
  const filter = toFilter({ ...query, kind: query.kind ?? "all" }, resolveWindow(query, opts.now ?? Date.now(), null));
  let records = 0;
  async function* rows(): AsyncGenerator<Execution[]> {
    for await (const chunk of reads.executionChunks(filter, { chunkRows: EXPORT_CHUNK_ROWS })) {
      records += chunk.length;
      opts.onRows?.(records);
      yield chunk;
    }
  }
  const reader = exportStream(rows(), format).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      await write(value);
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e;
  }
  return { records };
}
