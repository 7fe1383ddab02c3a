// Import of install records: our NDJSON export (one record per line, docs/api.md#export) and the
// JSON array of the original API's /data/json (src/read/original/data-shapes.ts), told apart by the first
// character. The input is streamed: NDJSON line by line, the array element by element (a small
// state machine finds where each top-level element ends), so a file of any size is read in
// constant memory. Each record goes through the field rules (normalizeStart / normalizeUpdate)
// and becomes the write ops that ingestion would have produced, written through the one write
// path in batches, so rollups and error signatures stay exact.
import type { Execution } from "../domain/execution.ts";
import { FIELDS, wireName } from "../domain/fields.ts";
import { decide } from "../domain/lifecycle.ts";
import { normalizeStart, normalizeTelemetry, normalizeUpdate, type NormalizeOptions } from "../domain/normalize.ts";
import { isFinal } from "../domain/outcome.ts";
import type { Commit } from "../store/writer.ts";
import type { StoreReads } from "../store/contract/executions.ts";
import type { WriteOp } from "../store/contract/store.ts";
import type { JsonObject } from "../domain/json.ts";
import { parseTimestamp } from "../domain/time.ts";
import { ImportFormatError, type InputFormat } from "./input-format.ts";

/** Our formats (input-format.ts tells them from the telemetry service's dumps). */
type RecordFormat = Extract<InputFormat, "ndjson" | "json-array">;

/** One record's text and where it was (`line 12`, `element 3`), or why there is none. */
export type Piece = { position: string; text: string } | { position: string; error: string };

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

class NdjsonSplitter {
  private rest = "";
  private line = 0;

  push(text: string, out: Piece[]): void {
    const data = this.rest + text;
    let start = 0;
    for (let nl = data.indexOf("\n"); nl >= 0; nl = data.indexOf("\n", start)) {
      this.emit(data.slice(start, nl), out);
      start = nl + 1;
    }
    this.rest = data.slice(start);
  }

  end(out: Piece[]): void {
    if (this.rest !== "") this.emit(this.rest, out);
    this.rest = "";
  }

  private emit(line: string, out: Piece[]): void {
    this.line++;
    const text = line.trim();
    if (text !== "") out.push({ position: `line ${this.line}`, text });
  }
}

/** Splits `[ elem, elem, ... ]` into the elements' texts, whatever the chunk boundaries. */
class ArraySplitter {
  private state: "before" | "between" | "in" | "after" = "before";
  private expectComma = false;
  private depth = 0;
  private inString = false;
  private escape = false;
  private scalar = false;
  private pending = "";
  private element = 0;

  push(text: string, out: Piece[]): void {
    let start = 0; // where the current element begins in `text` (state "in")
    let i = 0;
    const n = text.length;
    while (i < n) {
      const c = text.charCodeAt(i);
      switch (this.state) {
        case "before":
          if (c === 0x5b /* [ */) this.state = "between";
          else if (!isSpace(c) && c !== 0xfeff) throw new ImportFormatError("a JSON array must start with [");
          i++;
          break;
        case "between":
          if (isSpace(c)) {
            i++;
          } else if (c === 0x2c /* , */) {
            if (!this.expectComma)
              throw new ImportFormatError(`unexpected "," after element ${this.element} of the JSON array`);
            this.expectComma = false;
            i++;
          } else if (c === 0x5d /* ] */) {
            this.state = "after";
            i++;
          } else {
            if (this.expectComma)
              throw new ImportFormatError(`expected "," or "]" after element ${this.element} of the JSON array`);
            this.state = "in";
            this.element++;
            this.depth = 0;
            this.inString = false;
            this.escape = false;
            this.scalar = c !== 0x7b && c !== 0x5b && c !== 0x22; // not { [ "
            start = i;
          }
          break;
        case "in":
          if (this.scalar) {
            if (isSpace(c) || c === 0x2c || c === 0x5d) {
              this.complete(text.slice(start, i), out);
              continue; // the delimiter is read in state "between"
            }
          } else if (this.inString) {
            if (this.escape) this.escape = false;
            else if (c === 0x5c /* \ */) this.escape = true;
            else if (c === 0x22 /* " */) {
              this.inString = false;
              if (this.depth === 0) {
                this.complete(text.slice(start, i + 1), out);
                i++;
                continue;
              }
            }
          } else if (c === 0x22) {
            this.inString = true;
          } else if (c === 0x7b || c === 0x5b) {
            this.depth++;
          } else if (c === 0x7d || c === 0x5d) {
            if (--this.depth === 0) {
              this.complete(text.slice(start, i + 1), out);
              i++;
              continue;
            }
          }
          i++;
          break;
        case "after":
          if (!isSpace(c)) throw new ImportFormatError("unexpected text after the end of the JSON array");
          i++;
          break;
      }
    }
    if (this.state === "in") this.pending += text.slice(start);
  }

  end(out: Piece[]): void {
    if (this.state === "in") {
      out.push({ position: `element ${this.element}`, error: "the input ends inside this element (truncated file?)" });
    } else if (this.state === "between") {
      out.push({
        position: `after element ${this.element}`,
        error: "the input ends before the closing ] (truncated file?)",
      });
    }
  }

  private complete(text: string, out: Piece[]): void {
    out.push({ position: `element ${this.element}`, text: this.pending + text });
    this.pending = "";
    this.state = "between";
    this.expectComma = true;
  }
}

/**
 * The records of a stream, one piece per record. The format is decided by the first character
 * that is not white space: `[` is the original API's JSON array, `{` our NDJSON.
 */
export async function* splitRecords(
  input: AsyncIterable<Uint8Array | string>,
  onFormat?: (format: RecordFormat) => void,
): AsyncGenerator<Piece> {
  const decoder = new TextDecoder("utf-8"); // not fatal: invalid bytes become U+FFFD, as the ingest path does
  let splitter: NdjsonSplitter | ArraySplitter | null = null;
  let head = "";
  const out: Piece[] = [];
  const feed = (text: string) => {
    if (splitter === null) {
      head += text;
      const trimmed = head.replace(/^[\s\ufeff]+/, "");
      if (trimmed === "") return;
      if (trimmed[0] === "[") splitter = new ArraySplitter();
      else if (trimmed[0] === "{") splitter = new NdjsonSplitter();
      else
        throw new ImportFormatError(
          "the input is neither NDJSON (one JSON object per line, as our export writes) nor a JSON array (the original API's /data/json)",
        );
      onFormat?.(splitter instanceof ArraySplitter ? "json-array" : "ndjson");
      text = trimmed;
      head = "";
    }
    splitter.push(text, out);
  };
  for await (const chunk of input) {
    feed(typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true }));
    yield* out.splice(0);
  }
  feed(decoder.decode());
  (splitter as NdjsonSplitter | ArraySplitter | null)?.end(out);
  yield* out.splice(0);
}

/**
 * The fields a start report carries, as [record name, body key] (domain/fields.ts: every field the
 * clients send but how it ended; `id`, times and status are handled apart). A field the clients
 * send under another key (domain/fields.ts `wire`) goes back under it; an alias is taken as it is.
 */
const START_FIELDS: readonly (readonly [name: string, key: string])[] = FIELDS.flatMap((f) =>
  "sent" in f && (f.part === "head" || f.part === "fields")
    ? [[f.name, wireName(f)] as const, ...("alias" in f ? [[f.alias, f.alias] as const] : [])]
    : [],
);
/** How it ended, in our records (the original's have status and error only, which are handled apart). */
const ENDING_FIELDS = FIELDS.flatMap((f) =>
  "sent" in f && f.part === "ending" && f.name !== "status" && f.name !== "error" ? [f.name] : [],
);

type RecordRow = { ok: true; execution: Execution } | { ok: false; message: string };

const show = (value: unknown) =>
  value === undefined ? "nothing" : (JSON.stringify(value)?.slice(0, 60) ?? String(value));

/**
 * The original API is written in Go, whose records cannot say "absent": a missing text is "".
 * Its "" is read as absent (null), as the original's own readers do; our NDJSON keeps "" and null apart.
 */
function goZeroStringsAbsent(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const out: JsonObject = Object.create(null) as JsonObject;
  for (const [key, v] of Object.entries(value)) out[key] = v === "" ? null : v;
  return out;
}

/**
 * The execution one record stands for, built by the service's own rules (domain/lifecycle.ts)
 * from its reports as ingestion would have received them:
 * - a start report (status "installing") at created_at, by the record's protocol (payload_version
 *   set: /telemetry, else /upload), with every descriptive field;
 * - its final report at updated_at when the record moved on (status, error, or a later
 *   updated_at): a final status there gives duration_s = updated_at - created_at;
 * - a final status whose duration is unknown (duration_s null: it arrived before the start
 *   report; or a record of the original API, which has no updated_at) keeps duration null;
 * - outcome "unknown" on an in-progress status (timed out) stays so.
 * Not reproduced: `repaired` (imported records have repaired=false: marking them would log an
 * empty raw body in the rejected log), and the original's `id` (ours is derived).
 */
function recordRow(value: unknown, normalize: NormalizeOptions): RecordRow {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ok: false, message: "not a JSON object" };
  const r = value as JsonObject;
  const createdAt = parseTimestamp(r.created_at);
  if (createdAt === null)
    return { ok: false, message: `created_at must be an RFC 3339 time, got ${show(r.created_at)}` };

  const body: JsonObject = { status: "installing" };
  // A body key several fields come back to (one per payload version): the first one present.
  for (const [name, key] of START_FIELDS)
    if (r[name] !== undefined && r[name] !== null && body[key] === undefined) body[key] = r[name];
  if (r.extra !== null && typeof r.extra === "object" && !Array.isArray(r.extra)) Object.assign(body, r.extra);
  const telemetry = body.payload_version !== undefined;
  const start = (telemetry ? normalizeTelemetry : normalizeStart)(body, normalize);
  if (!start.ok) return { ok: false, message: start.message };
  const status = typeof r.status === "string" && r.status.trim() !== "" ? r.status : "installing";
  const endBody: JsonObject = { ...body, status, error: r.error ?? null };
  for (const key of ENDING_FIELDS) if (r[key] !== undefined && r[key] !== null) endBody[key] = r[key];
  const end = telemetry ? normalizeTelemetry(endBody, normalize) : normalizeUpdate(endBody, normalize);
  if (!end.ok) return { ok: false, message: end.message };

  let durationMs: number | null = null;
  if (r.duration_s !== undefined && r.duration_s !== null) {
    if (typeof r.duration_s !== "number" || !Number.isFinite(r.duration_s) || r.duration_s < 0) {
      return { ok: false, message: `duration_s must be a non-negative number or null, got ${show(r.duration_s)}` };
    }
    durationMs = Math.round(r.duration_s * 1000);
  }
  let updatedAt: number | null = null;
  if (r.updated_at !== undefined && r.updated_at !== null) {
    updatedAt = parseTimestamp(r.updated_at);
    if (updatedAt === null)
      return { ok: false, message: `updated_at must be an RFC 3339 time, got ${show(r.updated_at)}` };
  }
  // The record's own updated_at is kept as it is; it may precede created_at (a final report that
  // came before its start). The reports are applied in order, the final one no earlier than the start.
  const givenUpdatedAt = updatedAt;
  updatedAt = Math.max(createdAt, updatedAt ?? (durationMs !== null ? createdAt + durationMs : createdAt));

  const attempt = typeof r.attempt === "number" && Number.isSafeInteger(r.attempt) && r.attempt >= 1 ? r.attempt : 1;
  const circumstances = { attempt, held: null, repaired: false };
  // The start report is applied as such: a record that ended is rebuilt by its final report below.
  const started = decide(undefined, { ...start.value, ...NOT_ENDED }, { ...circumstances, at: createdAt });
  if (started.kind !== "insert") return { ok: false, message: "the record cannot be rebuilt" };
  let row = started.row;
  const report = end.value;
  if (report.status !== row.status || report.error !== null || updatedAt > createdAt) {
    const ended = decide(row, report, { ...circumstances, at: updatedAt });
    if (ended.kind === "update") row = ended.row;
  }
  if (isFinal(row.outcome) && durationMs === null) row = { ...row, durationMs: null };
  if (r.outcome === "unknown" && row.outcome === "in_progress") row = { ...row, outcome: "unknown", updatedAt };
  if (givenUpdatedAt !== null) row = { ...row, updatedAt: givenUpdatedAt };
  // Our records say when each status was first seen: that, rather than the two reports' times.
  if (typeof r.timeline === "object" && r.timeline !== null && !Array.isArray(r.timeline)) {
    const t = r.timeline as JsonObject;
    const time = (v: unknown) => (v === null || v === undefined ? null : parseTimestamp(v));
    row = {
      ...row,
      installingAt: time(t.installing),
      validationAt: time(t.validation),
      configuringAt: time(t.configuring),
      finishedAt: time(t.finished),
    };
  }
  return { ok: true, execution: row };
}

/** A start report's ending: in progress, whatever the record says of how it ended. */
const NOT_ENDED = {
  status: "installing",
  outcome: "in_progress",
  error: null,
  exitCode: null,
  errorCategory: null,
  failedCommand: null,
  failedLine: null,
} as const;

export interface ImportSummary {
  format: RecordFormat | null;
  /** Records read (pieces of the input, valid or not). */
  read: number;
  imported: number;
  /** Records whose execution was already stored (or came earlier in the input): skipped. */
  duplicates: number;
  invalid: number;
}

export interface ImportDeps {
  /** For the duplicate check (getExecutions); must see what `commit` committed. */
  reads: StoreReads;
  commit: Commit;
}

export interface ImportOptions {
  normalize: NormalizeOptions;
  /** Write ops per transaction (default 2000). */
  batchOps?: number;
  onProgress?: (summary: Readonly<ImportSummary>, bytes: number) => void;
  /** Each invalid record, with where it was and why. */
  onInvalid?: (position: string, message: string) => void;
}

/**
 * Imports every record of `input`. Invalid records are counted and reported (onInvalid), never
 * fatal; duplicates are skipped, so importing the same file twice adds nothing. A malformed
 * JSON array (ImportFormatError) stops the import after writing the records before the fault.
 */
export async function importRecords(
  deps: ImportDeps,
  input: AsyncIterable<Uint8Array | string>,
  opts: ImportOptions,
): Promise<ImportSummary> {
  const { reads, commit } = deps;
  const batchOps = opts.batchOps ?? 2000;
  const summary: ImportSummary = { format: null, read: 0, imported: 0, duplicates: 0, invalid: 0 };
  let bytes = 0;
  let batch: WriteOp[] = [];
  const inBatch = new Set<string>();

  async function* counted(): AsyncGenerator<Uint8Array | string> {
    for await (const chunk of input) {
      bytes += typeof chunk === "string" ? chunk.length : chunk.byteLength;
      yield chunk;
    }
  }
  const invalid = (position: string, message: string) => {
    summary.invalid++;
    opts.onInvalid?.(position, message);
  };
  const flush = async () => {
    if (batch.length === 0) return;
    // By time within the batch (a stable sort: a record's own ops keep their order, as their
    // times never decrease), so neighbouring ops share rollup cells.
    const ops = batch.sort((a, b) => a.at - b.at);
    batch = [];
    const results = await commit(ops);
    ops.forEach((op, i) => {
      if (op.kind !== "load") return;
      const result = results[i];
      if (result?.kind === "created") summary.imported++;
      else if (result?.kind === "duplicate") summary.duplicates++; // stored meanwhile by someone else
    });
    inBatch.clear();
    opts.onProgress?.(summary, bytes);
  };

  try {
    for await (const piece of splitRecords(counted(), (format) => (summary.format = format))) {
      summary.read++;
      if ("error" in piece) {
        invalid(piece.position, piece.error);
        continue;
      }
      let value: unknown;
      try {
        value = JSON.parse(piece.text);
      } catch (e) {
        invalid(piece.position, `not valid JSON: ${(e as Error).message}`);
        continue;
      }
      const record = recordRow(summary.format === "json-array" ? goZeroStringsAbsent(value) : value, opts.normalize);
      if (!record.ok) {
        invalid(piece.position, record.message);
        continue;
      }
      const { execution } = record;
      if (
        inBatch.has(execution.executionId) ||
        (await reads.getExecutions(execution.randomId)).some((e) => e.executionId === execution.executionId)
      ) {
        summary.duplicates++;
        continue;
      }
      inBatch.add(execution.executionId);
      batch.push({ kind: "load", execution, at: execution.updatedAt });
      if (batch.length >= batchOps) await flush();
      else if (summary.read % 1000 === 0) opts.onProgress?.(summary, bytes);
    }
  } finally {
    await flush(); // what was read before a format error is kept: importing again skips it
  }
  return summary;
}
