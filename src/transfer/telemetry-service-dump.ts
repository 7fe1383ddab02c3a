// Import of a dump of the community telemetry service's table, as its operator takes it:
//   clickhouse-client --query "SELECT * FROM telemetry_db.telemetry FORMAT JSONEachRow"  (or CSVWithNames)
// The table keeps one row per event, in no useful order (parts of a MergeTree by time of write),
// so the rows are sorted by execution and time on disk (external-sort.ts: memory stays bounded
// whatever the dump's size), each execution's rows folded into one execution by the lifecycle's
// rules (domain/telemetry-service.ts), the executions sorted again by install and start, and
// loaded in batches with their attempt numbers (load-executions.ts).
//
// ClickHouse's output, as read here: JSONEachRow is one JSON object per line, its strings escaped
// (\n, \t, \uXXXX for other control characters, \/), invalid UTF-8 replaced by U+FFFD, 64-bit
// integers quoted by default; CSVWithNames is a header of quoted names, then RFC 4180 records:
// strings always quoted, a quote inside doubled, line breaks inside quoted fields kept as they
// are, numbers bare, NULL as a bare \N (this table has no Nullable column). Dates and times are
// "YYYY-MM-DD hh:mm:ss.fff" in the server's time zone unless date_time_output_format says otherwise.
import type { JsonObject } from "../domain/json.ts";
import type { NormalizeOptions } from "../domain/normalize.ts";
import { ExecutionFold, rowKey } from "../domain/telemetry-service.ts";
import type { Execution } from "../domain/execution.ts";
import { ExternalSort } from "./external-sort.ts";
import type { InputFormat } from "./input-format.ts";
import { ExecutionLoader, type LoadSummary, type Refused } from "./load-executions.ts";
import type { StoreReads } from "../store/contract/executions.ts";
import type { Commit } from "../store/writer.ts";

type DumpFormat = Extract<InputFormat, "clickhouse-jsoneachrow" | "clickhouse-csv">;

/** One row of the dump: where it was (a line, a CSV record's ordinal), its columns, its text as JSON; or why it could not be read. */
type Row = { position: number; row: JsonObject; json: string } | { position: number; error: string; json: string };

async function* jsonRows(text: AsyncIterable<string>): AsyncGenerator<Row> {
  let rest = "";
  let line = 0;
  const emit = (raw: string): Row | null => {
    line++;
    const t = raw.trim();
    if (t === "") return null;
    let value: unknown;
    try {
      value = JSON.parse(t);
    } catch (e) {
      return { position: line, error: `not valid JSON: ${(e as Error).message}`, json: t };
    }
    if (typeof value !== "object" || value === null || Array.isArray(value))
      return { position: line, error: "not a JSON object", json: t };
    return { position: line, row: value as JsonObject, json: t };
  };
  for await (const chunk of text) {
    const data = rest + chunk;
    let start = 0;
    for (let nl = data.indexOf("\n"); nl >= 0; nl = data.indexOf("\n", start)) {
      const row = emit(data.slice(start, nl));
      if (row) yield row;
      start = nl + 1;
    }
    rest = data.slice(start);
  }
  const last = rest === "" ? null : emit(rest);
  if (last) yield last;
}

/** A CSV record's fields, and its ordinal in the file (the header is record 1, as a spreadsheet shows it). */
interface CsvRecord {
  fields: (string | null)[];
  record: number;
}

/** RFC 4180 records (ClickHouse's CSV), whatever the chunk boundaries: fields as text, a bare \N as null. */
class CsvSplitter {
  private fields: (string | null)[] = [];
  private field = "";
  private quoted = false;
  private state: "start" | "bare" | "quoted" | "quote" = "start";
  private record = 0;

  push(text: string, out: CsvRecord[]): void {
    let i = 0;
    const n = text.length;
    while (i < n) {
      if (this.state === "quoted") {
        const q = text.indexOf('"', i);
        if (q < 0) {
          this.field += text.slice(i);
          return;
        }
        this.field += text.slice(i, q);
        this.state = "quote";
        i = q + 1;
        continue;
      }
      const c = text[i]!;
      if (this.state === "quote") {
        if (c === '"') {
          this.field += '"';
          this.state = "quoted";
          i++;
          continue;
        }
        this.state = "bare"; // the closing quote; what follows is a delimiter (or stray text, kept)
      }
      if (c === ",") this.endField();
      else if (c === "\n") this.endRecord(out);
      else if (c === "\r") {
        // before a line feed; kept inside a field otherwise
        if (text[i + 1] !== "\n" && i + 1 < n) this.field += c;
      } else if (this.state === "start" && c === '"') {
        this.quoted = true;
        this.state = "quoted";
      } else {
        this.field += c;
        this.state = "bare";
      }
      i++;
    }
  }

  end(out: CsvRecord[]): void {
    if (this.state === "quoted") this.state = "bare"; // an unclosed quote: the field is what was read
    if (this.fields.length > 0 || this.field !== "" || this.quoted) this.endRecord(out);
  }

  private endField(): void {
    this.fields.push(!this.quoted && this.field === "\\N" ? null : this.field);
    this.field = "";
    this.quoted = false;
    this.state = "start";
  }

  private endRecord(out: CsvRecord[]): void {
    this.endField();
    const fields = this.fields;
    this.fields = [];
    if (fields.length === 1 && fields[0] === "") return; // an empty line
    out.push({ fields, record: ++this.record });
  }
}

async function* csvRows(text: AsyncIterable<string>): AsyncGenerator<Row> {
  const splitter = new CsvSplitter();
  let header: string[] | null = null;
  let out: CsvRecord[] = [];
  const rows = function* (records: CsvRecord[]): Generator<Row> {
    for (const { fields, record } of records) {
      if (header === null) {
        header = fields.map((f) => (f ?? "").trim());
        continue;
      }
      const row: JsonObject = Object.create(null) as JsonObject;
      header.forEach((name, i) => (row[name] = fields[i] ?? null));
      const json = JSON.stringify(row);
      yield fields.length === header.length
        ? { position: record, row, json }
        : { position: record, error: `has ${fields.length} fields where the header names ${header.length}`, json };
    }
  };
  for await (const chunk of text) {
    splitter.push(chunk, out);
    yield* rows(out);
    out = [];
  }
  splitter.end(out);
  yield* rows(out);
}

export interface DumpSummary extends LoadSummary {
  format: DumpFormat;
  /** Rows read (the CSV header not counted). */
  rows: number;
  /** Rows identical to another row of the dump, column for column: counted once. */
  duplicateRows: number;
  /** Executions the rows describe. */
  executions: number;
  /** Rows refused, by reason and field ("invalid_field: type"). */
  refused: Record<string, number>;
}

export interface DumpOptions {
  normalize: NormalizeOptions;
  /** Time zone of times printed without an offset (the ClickHouse server's). */
  zone: string;
  /** When the import runs (rejected-log entries are received then). */
  at: number;
  /** Directory for the sort's temporary files (default: the system's). */
  tmp?: string;
  /** Lines sorted in memory before a run goes to disk (characters); tests make it small. */
  runChars?: number;
  onProgress?: (summary: Readonly<DumpSummary>, phase: "reading" | "folding" | "loading") => void;
  /** Each refused row: where it was and why. */
  onRefused?: (position: string, message: string) => void;
}

/**
 * Sort lines are "<key> <time>\t<JSON text>\t<position>": the key a JSON string (no tab in it,
 * and prefix-free, so equal keys group exactly and apart from every other), the time in epoch ms
 * padded to sort as text, the row's own text, and where it was in the input.
 */
const pad = (n: number) => String(n).padStart(15, "0");
const keyEnd = (line: string) => line.indexOf("\t");

/** What one import of a dump works with: its format and options, the loader, the counts, and its two sorts. */
interface DumpImport {
  format: DumpFormat;
  opts: DumpOptions;
  loader: ExecutionLoader;
  summary: DumpSummary;
  /** Rows by execution and time. */
  byExecution: ExternalSort;
  /** Executions by install and start. */
  byInstall: ExternalSort;
}

const synced = (imp: DumpImport) => Object.assign(imp.summary, imp.loader.summary);
const where = (imp: DumpImport, position: number) =>
  imp.format === "clickhouse-csv" ? `record ${position}` : `line ${position}`;

/** A row refused: counted by reason and field, told, and kept in the rejected-reports log. */
async function refuse(imp: DumpImport, position: number, r: Refused): Promise<void> {
  const key = r.field === null ? r.reason : `${r.reason}: ${r.field}`;
  imp.summary.refused[key] = (imp.summary.refused[key] ?? 0) + 1;
  imp.opts.onRefused?.(where(imp, position), r.message);
  await imp.loader.refuse({ ...r, message: `telemetry-service dump, ${where(imp, position)}: ${r.message}` });
}

/** 1. Every row under its execution and time. */
async function sortRows(imp: DumpImport, text: AsyncIterable<string>): Promise<void> {
  const { summary, opts } = imp;
  for await (const r of imp.format === "clickhouse-csv" ? csvRows(text) : jsonRows(text)) {
    summary.rows++;
    if ("error" in r) {
      await refuse(imp, r.position, {
        reason: "invalid_json",
        field: null,
        message: r.error,
        randomId: null,
        body: r.json,
      });
      continue;
    }
    const key = rowKey(r.row, opts.zone);
    if (!key.ok) {
      await refuse(imp, r.position, {
        reason: "invalid_field",
        field: key.field,
        message: key.message,
        randomId: key.randomId,
        body: r.json,
      });
      continue;
    }
    await imp.byExecution.add(`${JSON.stringify(key.executionKey)} ${pad(key.at)}\t${r.json}\t${r.position}`);
    if (summary.rows % 10_000 === 0) opts.onProgress?.(summary, "reading");
  }
}

/** An execution folded: sorted under its install and start. */
async function keepFolded(imp: DumpImport, fold: ExecutionFold | null): Promise<void> {
  const e = fold?.result();
  if (!e) return;
  imp.summary.executions++;
  await imp.byInstall.add(
    `${JSON.stringify(e.randomId)} ${pad(e.createdAt)} ${JSON.stringify(e.executionId)}\t${JSON.stringify(e)}`,
  );
}

/** 2. Each execution's rows, oldest first, folded into it. */
async function foldExecutions(imp: DumpImport): Promise<void> {
  const { summary, opts } = imp;
  let group: string | null = null;
  let fold: ExecutionFold | null = null;
  let previous = "";
  let folded = 0;
  for await (const line of imp.byExecution.sorted()) {
    const tab = keyEnd(line);
    const last = line.lastIndexOf("\t");
    const key = line.slice(0, tab);
    const executionKey = key.slice(0, key.lastIndexOf(" "));
    const at = Number(key.slice(key.lastIndexOf(" ") + 1));
    const json = line.slice(tab + 1, last);
    const position = Number(line.slice(last + 1));
    if (executionKey !== group) {
      await keepFolded(imp, fold);
      group = executionKey;
      fold = new ExecutionFold(opts.normalize);
      previous = "";
    }
    // Sorted by time and then text: a row repeated whole comes right after itself.
    const whole = `${at}\t${json}`;
    if (whole === previous) {
      summary.duplicateRows++;
      continue;
    }
    previous = whole;
    const result = fold!.add(JSON.parse(json) as JsonObject, at);
    if (result.kind === "refused") {
      const randomId = String((JSON.parse(json) as JsonObject).random_id ?? "").trim() || null;
      await refuse(imp, position, {
        reason: result.reason,
        field: result.field,
        message: result.message,
        randomId,
        body: json,
      });
    }
    if (++folded % 10_000 === 0) opts.onProgress?.(synced(imp), "folding");
  }
  await keepFolded(imp, fold);
}

/** 3. Each install's executions by start, loaded with their attempt numbers. */
async function loadInstalls(imp: DumpImport): Promise<void> {
  for await (const line of imp.byInstall.sorted()) {
    await imp.loader.add(JSON.parse(line.slice(keyEnd(line) + 1)) as Execution);
    if (imp.loader.pending === 0) imp.opts.onProgress?.(synced(imp), "loading");
  }
  await imp.loader.flush();
}

export async function importServiceDump(
  deps: { reads: StoreReads; commit: Commit },
  text: AsyncIterable<string>,
  format: DumpFormat,
  opts: DumpOptions,
): Promise<DumpSummary> {
  const loader = new ExecutionLoader(deps, { at: opts.at });
  const imp: DumpImport = {
    format,
    opts,
    loader,
    summary: { format, rows: 0, duplicateRows: 0, executions: 0, refused: {}, ...loader.summary },
    byExecution: new ExternalSort({ runChars: opts.runChars, tmp: opts.tmp }),
    byInstall: new ExternalSort({ runChars: opts.runChars, tmp: opts.tmp }),
  };
  try {
    await sortRows(imp, text);
    await foldExecutions(imp);
    imp.byExecution.close();
    await loadInstalls(imp);
    return synced(imp);
  } finally {
    // What was refused before a failure is kept, as the executions loaded before it are.
    await loader.flush().catch(() => {});
    imp.byExecution.close();
    imp.byInstall.close();
  }
}
