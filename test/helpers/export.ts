// The export format as docs/api.md#export states it, read back independently of src/read/export.ts:
// the columns in order, a strict CSV parser, and a record with every field set; shared by the
// export tests (test/unit/export-csv-and-ndjson-formatting.test.ts, test/http/export-streams-filtered-records-and-cancels.test.ts).
import type { Execution } from "../../src/domain/execution.ts";
import { execution } from "./reports.ts";

/** The fields every release has exported, in order (docs/api.md#export). */
const RECORD_FIELDS = [
  "random_id",
  "type",
  "ct_type",
  "disk_size",
  "core_count",
  "ram_size",
  "os_type",
  "os_version",
  "disableip6",
  "nsapp",
  "method",
  "pve_version",
  "status",
  "outcome",
  "error",
  "created_at",
  "updated_at",
  "duration_s",
  "repaired",
];

/** The columns (docs/api.md#export): those fields first, then the executions' fields, the timeline flattened, extra last. */
export const COLUMNS = [
  ...RECORD_FIELDS,
  "execution_id",
  "attempt",
  "kind",
  "payload_version",
  "exit_code",
  "error_category",
  "failed_command",
  "failed_line",
  "install_duration",
  "cpu_vendor",
  "cpu_model",
  "gpu_vendor",
  "gpu_model",
  "ram_speed",
  "gpu_passthrough",
  "host_gpu",
  "arch",
  "platform",
  "has_arm",
  "repo_source",
  "repo_slug",
  "kernel_version",
  "app_version",
  "installing_at",
  "validation_at",
  "configuring_at",
  "finished_at",
  "extra",
];
export const TIMELINE = {
  installing_at: "installing",
  validation_at: "validation",
  configuring_at: "configuring",
  finished_at: "finished",
} as const;

/** A strict RFC 4180 parser: CRLF record ends, quotes only around whole fields, every record terminated. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"' && field === "") {
      // A quoted field: up to the closing quote; "" inside is one quote.
      i++;
      for (;;) {
        if (i >= text.length) throw new Error("unterminated quoted field");
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
      if (text[i] !== "," && text.slice(i, i + 2) !== "\r\n") throw new Error(`text after a closing quote at ${i}`);
      if (field === "") field = '""'; // keep quoted-empty apart from an empty cell, for the null/"" check
      continue;
    }
    const c = text[i]!;
    if (c === ",") {
      row.push(field === '""' ? "" : field);
      field = "";
      i++;
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field === '""' ? "" : field);
      rows.push(row);
      row = [];
      field = "";
      i += 2;
    } else if (c === '"' || c === "\r" || c === "\n") {
      throw new Error(`bare ${JSON.stringify(c)} in an unquoted field at ${i}`);
    } else {
      field += c;
      i++;
    }
  }
  if (field !== "" || row.length > 0) throw new Error("the last record is not CRLF-terminated");
  return rows;
}

/** A record's fields as a CSV reader sees them (no injection-prone values): the timeline's times as columns. */
export const asCells = (r: Record<string, unknown>) =>
  COLUMNS.map((k) => {
    const v = k in TIMELINE ? (r.timeline as Record<string, unknown>)[TIMELINE[k as keyof typeof TIMELINE]] : r[k];
    return v === null || v === undefined ? "" : String(v);
  });

export function row(fields: Partial<Execution> = {}): Execution {
  const at = Date.parse("2026-06-01T12:00:00Z");
  return execution(fields.randomId ?? "r-1", {
    type: "lxc",
    ctType: 1,
    diskSize: 8,
    coreCount: 2,
    ramSize: 2048,
    osType: "debian",
    osVersion: "12",
    disableip6: "yes",
    nsapp: "adguard",
    method: "default",
    pveVersion: "8.2.2",
    status: "done",
    outcome: "success",
    error: null,
    createdAt: at,
    updatedAt: at + 90_000,
    durationMs: 90_000,
    installingAt: at,
    finishedAt: at + 90_000,
    repaired: false,
    ...fields,
  });
}
