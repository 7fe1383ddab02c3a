// Reports and write ops as the wire protocols make them: built from request bodies through the
// service's own normalization, so tests write what a real client would cause to be written.
import { defaults } from "../../src/config.ts";
import { UNDESCRIBED, type Execution, type Report } from "../../src/domain/execution.ts";
import type { JsonObject } from "../../src/domain/json.ts";
import { normalizeStart, normalizeUpdate, type Checked } from "../../src/domain/normalize.ts";
import type { Endpoint } from "../../src/domain/rejection.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";

const NORMALIZE = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };

function ok(c: Checked<Report>): Report {
  if (!c.ok) throw new Error(`${c.field}: ${c.message}`);
  return c.value;
}

/** An /upload start report of a container, as the old client sends it. */
export const uploadStart = (randomId: string, body: JsonObject = {}): Report =>
  ok(
    normalizeStart(
      {
        random_id: randomId,
        type: "lxc",
        ct_type: 1,
        disk_size: 8,
        core_count: 2,
        ram_size: 2048,
        os_type: "debian",
        os_version: "12",
        disableip6: "yes",
        nsapp: "adguard",
        method: "default",
        pve_version: "8.2.2",
        status: "installing",
        ...body,
      },
      NORMALIZE,
    ),
  );

/** An /upload/updatestatus report. */
export const uploadUpdate = (randomId: string, status: string, error: string | null = null): Report =>
  ok(normalizeUpdate({ random_id: randomId, status, error }, NORMALIZE));

/** The write op ingestion makes of a report received at `at`. */
export const reportOp = (
  report: Report,
  at: number,
  endpoint: Endpoint = report.payloadVersion === null ? (report.fields ? "upload" : "updatestatus") : "telemetry",
): Extract<WriteOp, { kind: "report" }> => ({
  kind: "report",
  report,
  at,
  endpoint,
  raw: new Uint8Array(),
  repairs: [],
});

/** A whole execution as a store holds it (for `load`, and for pure functions over rows). */
export const execution = (randomId: string, over: Partial<Execution> = {}): Execution => ({
  executionId: randomId,
  randomId,
  attempt: 1,
  kind: "install",
  payloadVersion: null,
  ...UNDESCRIBED,
  type: "lxc",
  ctType: 1,
  diskSize: 4,
  coreCount: 2,
  ramSize: 2048,
  osType: "debian",
  osVersion: "12",
  nsapp: "adguard",
  method: "default",
  pveVersion: "8.2.4",
  status: "installing",
  outcome: "in_progress",
  error: null,
  exitCode: null,
  errorCategory: null,
  failedCommand: null,
  failedLine: null,
  installDuration: null,
  createdAt: 0,
  updatedAt: 0,
  durationMs: null,
  installingAt: null,
  validationAt: null,
  configuringAt: null,
  finishedAt: null,
  repaired: false,
  ...over,
});

/** A finished run as the `load` op writes it, half a second long (`over`: its outcome and fields). */
export const finishedLoad = (randomId: string, createdAt: number, over: Partial<Execution> = {}) => ({
  kind: "load" as const,
  at: createdAt,
  execution: execution(randomId, {
    createdAt,
    updatedAt: createdAt + 500,
    finishedAt: createdAt + 500,
    durationMs: 500,
    ...over,
  }),
});
