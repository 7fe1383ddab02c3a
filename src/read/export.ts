// Export of execution records as CSV or NDJSON: pure formatting, and a pull-based stream that
// reads the rows chunk by chunk, so an export of any size runs in constant memory.
import { toRecord, type ExecutionRecord } from "./record.ts";
import type { Execution } from "../domain/execution.ts";
import { FIELDS, type Field } from "../domain/fields.ts";

export type ExportFormat = "csv" | "ndjson";

/** Rows read and formatted per pull: large enough to amortize per-chunk costs, small enough to keep the event loop responsive (a few ms). */
export const EXPORT_CHUNK_ROWS = 2000;

export const CONTENT_TYPES = {
  csv: "text/csv; charset=utf-8",
  ndjson: "application/x-ndjson",
} as const satisfies Record<ExportFormat, string>;

type Kind = "text" | "number" | "boolean";
const csvKind = (f: Field): Kind =>
  f.kind === "bool" ? "boolean" : f.kind === "integer" || f.kind === "size" || f.kind === "ms" ? "number" : "text";

/**
 * The columns, in the order docs/api.md#export lists them: the fields every release has exported,
 * then the executions' (domain/fields.ts `csv`), each group in the record's order.
 */
const COLUMNS = [...FIELDS.filter((f) => f.csv === 1), ...FIELDS.filter((f) => f.csv === 2)];
export const EXPORT_COLUMNS = COLUMNS.map((f) => f.name);

const CRLF = "\r\n";
const HEADER = EXPORT_COLUMNS.join(",") + CRLF;
const NEEDS_QUOTES = /[",\r\n]/;

/** The CSV header row (the record's field names), CRLF-terminated as RFC 4180 has it. */
export function csvHeader(): string {
  return HEADER;
}

/**
 * One text cell. Formula-injection guard (OWASP "CSV injection"): a spreadsheet app runs a
 * cell starting with `=`, `+`, `-`, `@`, tab or CR as a formula (`=HYPERLINK(...)`,
 * `@SUM(...)`, DDE payloads), so such a cell gets a leading `'`, which makes the app show it as
 * text. The guard applies to text columns only: numeric columns are written as numbers, so a
 * genuine negative number is never mangled (ours are never negative anyway). The price is
 * that CSV does not round-trip such strings exactly; NDJSON is the lossless format.
 * Then RFC 4180 quoting: a cell with `"`, `,`, CR or LF is quoted with its quotes doubled;
 * newlines inside (multi-line error texts) stay as they are, inside the quotes.
 */
function text(value: string | null): string {
  if (value === null) return "";
  if (value === "") return '""'; // distinguishable from null (an empty cell) for importers that care
  return csvCell(value);
}

/** A text cell's guard and quoting (see text()); "" stays an empty cell. */
export function csvCell(value: string): string {
  const first = value.charCodeAt(0);
  // = + - @ TAB CR
  if (first === 0x3d || first === 0x2b || first === 0x2d || first === 0x40 || first === 0x09 || first === 0x0d)
    value = `'${value}`;
  return NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** A numeric cell: the number as JavaScript writes it (never guarded, see text()). */
const num = (value: number | null): string => (value === null ? "" : `${value}`);

const bool = (value: boolean | null): string => (value === null ? "" : value ? "true" : "false");
const CELL: Record<Kind, (value: never) => string> = { text, number: num, boolean: bool };

/** A column's cell of a record: the timeline's times flattened into columns, `extra` as JSON text. */
function cellOf(f: Field): (r: ExecutionRecord) => string {
  if ("timeline" in f) return (r) => text(r.timeline[f.timeline]);
  if (f.kind === "json") return (r) => text(r.extra === null ? null : JSON.stringify(r.extra));
  const cell = CELL[csvKind(f)];
  const name = f.name as Exclude<keyof ExecutionRecord, "timeline">;
  return (r) => cell(r[name] as never);
}
const CELLS = COLUMNS.map(cellOf);

/** One CSV row, CRLF-terminated: null is an empty cell, booleans true/false, numbers as is; cells in EXPORT_COLUMNS order. */
export function csvRow(r: ExecutionRecord): string {
  let out = "";
  for (let i = 0; i < CELLS.length; i++) out += (i === 0 ? "" : ",") + CELLS[i]!(r);
  return out + CRLF;
}

/** One NDJSON line: the record exactly as the JSON read API returns it, `\n`-terminated. */
export function ndjsonLine(record: ExecutionRecord): string {
  return JSON.stringify(record) + "\n";
}

/**
 * The export body. Pull-based: each pull formats the next chunk of rows from the store (one
 * query each, run to completion) and enqueues it as one UTF-8 chunk, so a chunk or two is held
 * (the one being sent and one queued) whatever the export's size, and a slow client slows the
 * reading down. The chunk size (EXPORT_CHUNK_ROWS) bounds how long one pull holds the event
 * loop (2000 rows: ~10-15 ms). The iterator is closed (`return()`) when it ends, when formatting
 * throws, or when the consumer cancels (the HTTP client went away).
 */
export function exportStream(
  chunks: AsyncIterable<readonly Execution[]>,
  format: ExportFormat,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const line = format === "csv" ? csvRow : ndjsonLine;
  let iterator: AsyncIterator<readonly Execution[]> | undefined;
  let started = false;

  const release = async () => {
    const it = iterator;
    iterator = undefined;
    await it?.return?.();
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let out = "";
      let done = false;
      try {
        if (!started) {
          started = true;
          iterator = chunks[Symbol.asyncIterator]();
          if (format === "csv") out = HEADER;
        }
        const it = iterator;
        if (it === undefined) return; // released: cancelled meanwhile
        const next = await it.next();
        if (next.done) {
          done = true;
          iterator = undefined; // exhausted: the iterator has closed itself
        } else {
          for (const row of next.value) out += line(toRecord(row));
        }
      } catch (e) {
        await release();
        controller.error(e);
        return;
      }
      if (out !== "") controller.enqueue(encoder.encode(out));
      if (done) controller.close();
    },
    async cancel() {
      await release();
    },
  });
}

/** `installstats-20260601T120000Z.csv`: UTC, without colons (not allowed in Windows file names). */
export function exportFilename(now: number, format: ExportFormat): string {
  const stamp = new Date(now)
    .toISOString()
    .replace(/\.\d{3}Z$/, "Z")
    .replace(/[-:]/g, "");
  return `installstats-${stamp}.${format}`;
}
