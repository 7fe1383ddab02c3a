// Dumps of the community telemetry service's ClickHouse table, made from its schema (its
// clickhouse.go: CREATE TABLE telemetry_db.telemetry, then the ALTERs that added columns) and
// written as clickhouse-client writes them (FORMAT JSONEachRow, FORMAT CSVWithNames).

/** The table as first created (rows of this era hold no v2 columns). */
export const V1_COLUMNS = [
  "id", "nsapp", "type", "status", "method", "created", "core_count", "ct_type", "disk_size", "ram_size", "exit_code", "error", "error_category",
  "os_type", "os_version", "pve_version", "random_id", "execution_id", "repo_source", "repo_slug", "cpu_vendor", "cpu_model", "gpu_vendor",
  "gpu_model", "gpu_passthrough", "ram_speed", "install_duration", "has_arm",
] as const;

/** The table today: the columns added since, at the end, in the order they were added. */
export const V2_COLUMNS = [...V1_COLUMNS, "platform", "payload_version", "arch", "failed_command", "failed_line", "kernel_version", "app_version"] as const;

type Column = (typeof V2_COLUMNS)[number];

/** UInt8..UInt32 and Int16 columns; `created` is DateTime64(3); every other column is String. */
const NUMBERS = new Set<Column>(["core_count", "ct_type", "disk_size", "ram_size", "exit_code", "install_duration", "has_arm", "payload_version", "failed_line"]);

/** A row as the service stores it: `created` in epoch ms (a string is written as it is); strings may be raw bytes (CSV keeps invalid UTF-8 as it is). */
export type ServiceRow = Partial<Record<Exclude<Column, "created">, string | number | Uint8Array>> & { created: number | string };

let ids = 0;
/** A row with every column the service did not get at its default ('' and 0), and a random-looking id, as its INSERT writes. */
export function serviceRow(fields: ServiceRow): ServiceRow {
  return { id: (++ids).toString(16).padStart(30, "0"), ...fields };
}

export interface DumpOptions {
  columns?: readonly Column[];
  /** ClickHouse's date_time_output_format: simple (its default, the server's zone) or iso (UTC, with Z). */
  timeFormat?: "simple" | "iso";
  /** The server's time zone for "simple" times. */
  zone?: string;
  /** Numbers written as JSON strings (as output_format_json_quote_64bit_integers does for 64-bit columns). */
  quoteNumbers?: boolean;
}

function wallTime(ms: number, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}.${String(ms % 1000).padStart(3, "0")}`;
}

const timeText = (t: number | string, opts: DumpOptions) => (typeof t === "string" ? t : opts.timeFormat === "iso" ? new Date(t).toISOString() : wallTime(t, opts.zone ?? "UTC"));

const valueOf = (row: ServiceRow, column: Column): string | number | Uint8Array => {
  if (column === "created") return row.created;
  return row[column] ?? (NUMBERS.has(column) ? 0 : "");
};

/** A JSON string as ClickHouse writes one: \" \\ \/, \b \f \n \r \t, \u00XX for other control characters, \u2028 \u2029; invalid UTF-8 as U+FFFD. */
function chJsonString(value: string | Uint8Array): string {
  const text = typeof value === "string" ? value : new TextDecoder().decode(value);
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "/") out += "\\/";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || c === 0x2028 || c === 0x2029) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** `SELECT * ... FORMAT JSONEachRow`: one object per line, columns in table order. */
export function jsonEachRow(rows: readonly ServiceRow[], opts: DumpOptions = {}): string {
  const columns = opts.columns ?? V2_COLUMNS;
  return rows
    .map((row) => {
      const fields = columns.map((column) => {
        const v = valueOf(row, column);
        const text = column === "created" ? chJsonString(timeText(v as number | string, opts)) : NUMBERS.has(column) ? (opts.quoteNumbers ? `"${v}"` : String(v)) : chJsonString(v as string | Uint8Array);
        return `"${column}":${text}`;
      });
      return `{${fields.join(",")}}\n`;
    })
    .join("");
}

const encoder = new TextEncoder();

/** `SELECT * ... FORMAT CSVWithNames`: a header of quoted names, strings always quoted (a quote doubled, nothing else escaped: line breaks stay), numbers bare, raw bytes as they are. */
export function csvWithNames(rows: readonly ServiceRow[], opts: DumpOptions = {}): Uint8Array {
  const columns = opts.columns ?? V2_COLUMNS;
  const parts: Uint8Array[] = [encoder.encode(`${columns.map((c) => `"${c}"`).join(",")}\n`)];
  const quoted = (v: string | Uint8Array): Uint8Array => {
    const bytes = typeof v === "string" ? encoder.encode(v) : v;
    const out: number[] = [0x22];
    for (const b of bytes) {
      if (b === 0x22) out.push(0x22);
      out.push(b);
    }
    out.push(0x22);
    return new Uint8Array(out);
  };
  for (const row of rows) {
    columns.forEach((column, i) => {
      if (i > 0) parts.push(encoder.encode(","));
      const v = valueOf(row, column);
      parts.push(column === "created" ? quoted(timeText(v as number | string, opts)) : NUMBERS.has(column) ? encoder.encode(String(v)) : quoted(v as string | Uint8Array));
    });
    parts.push(encoder.encode("\n"));
  }
  return Buffer.concat(parts);
}
