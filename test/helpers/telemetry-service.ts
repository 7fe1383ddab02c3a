// Dumps of the community telemetry service's ClickHouse table, made from its schema (its
// clickhouse.go: CREATE TABLE telemetry_db.telemetry, then the ALTERs that added columns) and
// written as clickhouse-client writes them (FORMAT JSONEachRow, FORMAT CSVWithNames).

/** The table as first created (rows of this era hold no v2 columns). */
export const V1_COLUMNS = [
  "id",
  "nsapp",
  "type",
  "status",
  "method",
  "created",
  "core_count",
  "ct_type",
  "disk_size",
  "ram_size",
  "exit_code",
  "error",
  "error_category",
  "os_type",
  "os_version",
  "pve_version",
  "random_id",
  "execution_id",
  "repo_source",
  "repo_slug",
  "cpu_vendor",
  "cpu_model",
  "gpu_vendor",
  "gpu_model",
  "gpu_passthrough",
  "ram_speed",
  "install_duration",
  "has_arm",
] as const;

/** The table today: the columns added since, at the end, in the order they were added. */
const V2_COLUMNS = [
  ...V1_COLUMNS,
  "platform",
  "payload_version",
  "arch",
  "failed_command",
  "failed_line",
  "kernel_version",
  "app_version",
] as const;

type Column = (typeof V2_COLUMNS)[number];

/** UInt8..UInt32 and Int16 columns; `created` is DateTime64(3); every other column is String. */
const NUMBERS = new Set<Column>([
  "core_count",
  "ct_type",
  "disk_size",
  "ram_size",
  "exit_code",
  "install_duration",
  "has_arm",
  "payload_version",
  "failed_line",
]);

/** A row as the service stores it: `created` in epoch ms (a string is written as it is); strings may be raw bytes (CSV keeps invalid UTF-8 as it is). */
export type ServiceRow = Partial<Record<Exclude<Column, "created">, string | number | Uint8Array>> & {
  created: number | string;
};

let ids = 0;
/** A row with every column the service did not get at its default ('' and 0), and a random-looking id, as its INSERT writes. */
function serviceRow(fields: ServiceRow): ServiceRow {
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
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}.${String(ms % 1000).padStart(3, "0")}`;
}

const timeText = (t: number | string, opts: DumpOptions) =>
  typeof t === "string" ? t : opts.timeFormat === "iso" ? new Date(t).toISOString() : wallTime(t, opts.zone ?? "UTC");

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
        const text =
          column === "created"
            ? chJsonString(timeText(v as number | string, opts))
            : NUMBERS.has(column)
              ? opts.quoteNumbers
                ? `"${v}"`
                : String(v)
              : chJsonString(v as string | Uint8Array);
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
      parts.push(
        column === "created"
          ? quoted(timeText(v as number | string, opts))
          : NUMBERS.has(column)
            ? encoder.encode(String(v))
            : quoted(v as string | Uint8Array),
      );
    });
    parts.push(encoder.encode("\n"));
  }
  return Buffer.concat(parts);
}

// ------------------------------------------------------------------ one dump of every case

const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;

/** Every field a current (v2) client sends with each report, as the service stores them. */
export const full = (over: Partial<ServiceRow> & { created: number | string }): ServiceRow =>
  serviceRow({
    nsapp: "jellyfin",
    type: "lxc",
    method: "default",
    core_count: 2,
    ct_type: 1,
    disk_size: 8,
    ram_size: 2048,
    os_type: "debian",
    os_version: "12",
    pve_version: "8.4.1",
    repo_source: "ProxmoxVE",
    repo_slug: "community-scripts/ProxmoxVE",
    cpu_vendor: "amd",
    cpu_model: "AMD Ryzen 7 5800X",
    gpu_vendor: "intel",
    gpu_model: "Intel UHD Graphics 770",
    gpu_passthrough: "yes",
    ram_speed: "3200",
    platform: "pve",
    payload_version: 2,
    arch: "amd64",
    kernel_version: "6.8.12-4-pve",
    ...over,
  });

/** The minimal ping from inside the container: only these fields; the service stores the rest at their defaults, vendors as "unknown". */
const ping = (over: Partial<ServiceRow> & { created: number }): ServiceRow =>
  serviceRow({
    type: "lxc",
    nsapp: "jellyfin",
    platform: "pve",
    repo_source: "ProxmoxVE",
    repo_slug: "community-scripts/ProxmoxVE",
    payload_version: 2,
    cpu_vendor: "unknown",
    gpu_vendor: "unknown",
    gpu_passthrough: "unknown",
    ...over,
  });

/** A long error text with everything bash interpolation and log tails put there. */
const NASTY_HEAD = 'exit_code=100 | APT failed | at line 57: apt-get install -y "jellyfin" \\\n---\n';
const NASTY_LOG = [
  "E: Unable to locate package \"jellyfin-ffmpeg7\" 'quoted' \\backslash\\ /slashes/",
  "tabs\there\tand\r\nCRLF line",
  "unicode: 🚀 日本語 عربى Ünïcödé \u2028line separator\u2029",
  "control: \u0001\u0007bell \u001b[31mred\u001b[0m ansi \u0000nul",
  '{"json": [1, 2, {"a": null}]}, a,comma,"quoted,comma"',
].join("\n");
export const NASTY = NASTY_HEAD + `${NASTY_LOG}\n`.repeat(400); // ~100 KB, under the 128 KiB both services keep

/** What ingestion keeps of an error text: no colour codes, no control characters but line breaks and tabs, CRLF as LF, trimmed. */
export const kept = (text: string) =>
  text
    .replace(/\u001b\[[0-9;]*m/g, "")
    .replace(/\r\n/g, "\n")
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "")
    .trim();

export const R = (name: string) => `00000000-0000-4000-8000-${name.padStart(12, "0")}`;

/** One dump of every case the importer must handle (see test/postgres/telemetry-service-dumps-imported-on-both-engines.test.ts), its times from `T0`. */
export function scenario(T0: number): ServiceRow[] {
  const ret = R("a1"),
    retry = R("a2"),
    vm = R("b1"),
    old = R("c1"),
    stuck = R("d1"),
    tool = R("e1"),
    addon = R("f1"),
    unk = R("a7");
  const legacy = R("a8"),
    two = R("a9"),
    late = R("aa"),
    going = R("ab");
  return [
    // A retried install: validation, the minimal configuring ping, a failure with the whole log; then a new execution that succeeds.
    full({ random_id: ret, execution_id: ret, status: "installing", created: T0 }),
    full({ random_id: ret, execution_id: ret, status: "validation", created: T0 + 10 * S }),
    ping({ random_id: ret, execution_id: ret, status: "configuring", created: T0 + MIN }),
    full({
      random_id: ret,
      execution_id: ret,
      status: "failed",
      exit_code: 100,
      error: NASTY,
      error_category: "dependency",
      failed_command: "apt-get install -y jellyfin",
      failed_line: 57,
      install_duration: 300,
      created: T0 + 5 * MIN,
    }),
    full({ random_id: ret, execution_id: retry, status: "installing", created: T0 + 7 * MIN }),
    full({
      random_id: ret,
      execution_id: retry,
      status: "success",
      exit_code: 0,
      install_duration: 290,
      app_version: "10.10.3",
      created: T0 + 12 * MIN,
    }),
    // A VM the user aborted.
    full({
      random_id: vm,
      execution_id: vm,
      type: "vm",
      nsapp: "haos-vm",
      ct_type: 2,
      os_type: "",
      os_version: "",
      status: "installing",
      created: T0 + 20 * MIN,
    }),
    full({
      random_id: vm,
      execution_id: vm,
      type: "vm",
      nsapp: "haos-vm",
      ct_type: 2,
      os_type: "",
      os_version: "",
      status: "aborted",
      exit_code: 130,
      error: "exit_code=130 | Interrupted by user (SIGINT)",
      error_category: "user_aborted",
      created: T0 + 21 * MIN,
    }),
    // A v1 client: no payload_version (0), gpu_passthrough is the host's GPU kind, has_arm never sent.
    full({
      random_id: old,
      execution_id: old,
      payload_version: 0,
      gpu_passthrough: "igpu",
      platform: "",
      arch: "",
      kernel_version: "",
      status: "installing",
      created: T0 + 30 * MIN,
    }),
    full({
      random_id: old,
      execution_id: old,
      payload_version: 0,
      gpu_passthrough: "igpu",
      platform: "",
      arch: "",
      kernel_version: "",
      status: "success",
      created: T0 + 33 * MIN,
    }),
    // Stuck at configuring: the cleanup's row (type, nsapp, ids and repo_source copied; everything else at its default).
    full({ random_id: stuck, execution_id: stuck, nsapp: "nextcloud", status: "installing", created: T0 + 40 * MIN }),
    ping({ random_id: stuck, execution_id: stuck, nsapp: "nextcloud", status: "configuring", created: T0 + 42 * MIN }),
    serviceRow({
      random_id: stuck,
      execution_id: stuck,
      nsapp: "nextcloud",
      type: "lxc",
      repo_source: "ProxmoxVE",
      status: "unknown",
      error: "Installation timed out - no completion status received after 1h",
      error_category: "timeout",
      created: T0 + 3 * HOUR,
    }),
    // A host tool and an addon: one report each, final.
    full({
      random_id: tool,
      execution_id: tool,
      type: "pve",
      nsapp: "post-pve-install",
      ct_type: 0,
      disk_size: 0,
      core_count: 0,
      ram_size: 0,
      os_type: "",
      os_version: "",
      status: "success",
      exit_code: 0,
      created: T0 + 50 * MIN,
    }),
    full({
      random_id: addon,
      execution_id: addon,
      type: "addon",
      nsapp: "netdata",
      ct_type: 0,
      disk_size: 0,
      core_count: 0,
      ram_size: 0,
      status: "success",
      exit_code: 0,
      created: T0 + 51 * MIN,
    }),
    // The client's own unknown final.
    full({ random_id: unk, execution_id: unk, nsapp: "gitea", status: "installing", created: T0 + 60 * MIN }),
    full({
      random_id: unk,
      execution_id: unk,
      nsapp: "gitea",
      status: "unknown",
      exit_code: 1,
      error: "exit_code=1 | General error",
      error_category: "unknown",
      created: T0 + 62 * MIN,
    }),
    // Before execution ids: '' there; the run is its random_id.
    full({
      random_id: legacy,
      execution_id: "",
      payload_version: 0,
      nsapp: "adguard",
      status: "installing",
      created: T0 + 70 * MIN,
    }),
    full({
      random_id: legacy,
      execution_id: "",
      payload_version: 0,
      nsapp: "adguard",
      status: "failed",
      exit_code: 1,
      error: "exit code 1",
      error_category: "shell",
      created: T0 + 71 * MIN,
    }),
    // Written before the service kept one final row per execution: the first stands, the second is refused (kept in the log).
    full({ random_id: two, execution_id: two, nsapp: "docker", status: "installing", created: T0 + 80 * MIN }),
    full({
      random_id: two,
      execution_id: two,
      nsapp: "docker",
      status: "failed",
      exit_code: 1,
      error: "exit_code=1 | x",
      error_category: "shell",
      created: T0 + 81 * MIN,
    }),
    full({
      random_id: two,
      execution_id: two,
      nsapp: "docker",
      status: "success",
      exit_code: 0,
      created: T0 + 81 * MIN + 5,
    }),
    // The start row written after the final row (its write was retried): the final waits for it, as ingestion holds one; no duration.
    full({
      random_id: late,
      execution_id: late,
      nsapp: "pihole",
      status: "failed",
      exit_code: 6,
      error: "exit_code=6 | Could not resolve host",
      error_category: "network",
      created: T0 + 90 * MIN,
    }),
    full({
      random_id: late,
      execution_id: late,
      nsapp: "pihole",
      status: "installing",
      created: T0 + 90 * MIN + 3 * S,
    }),
    // Still going when the dump was taken.
    full({ random_id: going, execution_id: going, nsapp: "immich", status: "installing", created: T0 + 4 * HOUR }),
    // Refused: an unknown type, no random_id, a time that is none.
    full({ random_id: R("b2"), execution_id: R("b2"), type: "bogus", status: "installing", created: T0 + 95 * MIN }),
    full({ random_id: "", execution_id: "", status: "installing", created: T0 + 96 * MIN }),
    full({ random_id: R("b3"), execution_id: R("b3"), status: "installing", created: "yesterday" }),
  ];
}
