// Held reports (final reports that came before their start report): how a row keeps one, and
// what one becomes when it is applied without its start report (it waited too long, or held
// reports went past their budget). Nothing acknowledged is dropped: such a report becomes the
// execution it describes, as far as it is known.
import type { Report } from "../../domain/execution.ts";

/** JSON shorter than this is kept as it is: compressing it saves nothing worth the call. */
const COMPRESS_FROM = 256;
/** A row's bytes besides its JSON: key, ids, times, index entries (an estimate, as for the log). */
const ROW_BYTES = 64;

export interface HeldColumns {
  report: string;
  codec: "zstd" | null;
  data: Buffer | null;
  cost: number;
}

/** The columns that keep `report`: zstd-compressed when that is smaller (log-like error texts: 5-15x). */
export function encodeHeld(report: Report): HeldColumns {
  const json = JSON.stringify(report);
  const overhead = ROW_BYTES + report.executionId.length + report.randomId.length;
  if (json.length >= COMPRESS_FROM) {
    const packed = Bun.zstdCompressSync(Buffer.from(json));
    if (packed.byteLength < json.length) return { report: "", codec: "zstd", data: Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength), cost: overhead + packed.byteLength };
  }
  return { report: json, codec: null, data: null, cost: overhead + json.length };
}

export function decodeHeld(row: { report: string; codec: string | null; data: Uint8Array | null }): Report {
  const json = row.codec === "zstd" && row.data ? Buffer.from(Bun.zstdDecompressSync(row.data)).toString("utf8") : row.report;
  return JSON.parse(json) as Report;
}

/** What a row without a cost (older than the budgets) counts: the same estimate, in SQL. */
export const LEGACY_HELD_COST = `${ROW_BYTES} + length("report") + length("execution_id") + length("random_id")`;
