// The record as every read API returns it (docs/protocol.md#the-record): one execution, with the
// fields of section 3 first and what the current clients add after them.
import { t, type Static } from "elysia";
import type { Execution } from "../domain/execution.ts";
import { OutcomeSchema } from "../http/schemas.ts";

const text = t.Nullable(t.String());
const time = t.Nullable(t.String({ format: "date-time" }));
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export const ExecutionRecord = t.Object(
  {
    random_id: t.String(),
    execution_id: t.String({ description: "one attempt of the install; = random_id for /upload reports and first runs" }),
    attempt: t.Integer({ description: "1 for the install's first execution, n for its n-th (retries)" }),
    kind: t.Union([t.Literal("install"), t.Literal("tool"), t.Literal("addon")], { description: "tools (type pve) and addons are kept out of install rates unless asked for" }),
    payload_version: t.Nullable(t.Integer({ description: "/telemetry payload version (1 when absent); null for /upload reports" })),
    type: t.String(),
    ct_type: t.Nullable(t.Integer()),
    disk_size: t.Nullable(t.Number({ description: "GiB" })),
    core_count: t.Nullable(t.Integer()),
    ram_size: t.Nullable(t.Integer({ description: "MiB" })),
    os_type: text,
    os_version: text,
    disableip6: text,
    nsapp: text,
    method: text,
    pve_version: text,
    status: t.String(),
    outcome: OutcomeSchema,
    error: text,
    created_at: t.String({ format: "date-time" }),
    updated_at: t.String({ format: "date-time" }),
    duration_s: t.Nullable(t.Number({ description: "start report to final status; null while in progress or when the final status arrived first" })),
    repaired: t.Boolean(),
    exit_code: t.Nullable(t.Integer()),
    error_category: t.Nullable(t.String({ description: "the client's, else derived from exit code and error text" })),
    failed_command: text,
    failed_line: t.Nullable(t.Integer()),
    install_duration: t.Nullable(t.Integer({ description: "seconds, as the client measured them" })),
    cpu_vendor: text,
    cpu_model: text,
    gpu_vendor: text,
    gpu_model: text,
    ram_speed: text,
    gpu_passthrough: t.Nullable(t.String({ description: "v2: yes/no, a GPU was passed to the guest" })),
    host_gpu: t.Nullable(t.String({ description: "v1's gpu_passthrough: what the host has (igpu, dgpu, unknown)" })),
    arch: text,
    platform: text,
    has_arm: t.Nullable(t.Boolean()),
    repo_source: text,
    repo_slug: text,
    kernel_version: text,
    app_version: text,
    timeline: t.Object(
      { installing: time, validation: time, configuring: time, finished: time },
      { description: "when each status was first seen" },
    ),
    extra: t.Nullable(t.Record(t.String(), t.Unknown(), { description: "fields this server does not know, as sent" })),
  },
  { title: "ExecutionRecord" },
);
export type ExecutionRecord = Static<typeof ExecutionRecord>;

/** One install: its latest execution's record, and every execution first to last. */
export const InstallDetail = t.Composite([ExecutionRecord, t.Object({ executions: t.Array(ExecutionRecord) })], { title: "InstallDetail" });

export function toRecord(row: Execution): ExecutionRecord {
  return {
    random_id: row.randomId,
    execution_id: row.executionId,
    attempt: row.attempt,
    kind: row.kind,
    payload_version: row.payloadVersion,
    type: row.type,
    ct_type: row.ctType,
    disk_size: row.diskSize,
    core_count: row.coreCount,
    ram_size: row.ramSize,
    os_type: row.osType,
    os_version: row.osVersion,
    disableip6: row.disableip6,
    nsapp: row.nsapp,
    method: row.method,
    pve_version: row.pveVersion,
    status: row.status,
    outcome: row.outcome,
    error: row.error,
    created_at: new Date(row.createdAt).toISOString(),
    updated_at: new Date(row.updatedAt).toISOString(),
    duration_s: row.durationMs === null ? null : row.durationMs / 1000,
    repaired: row.repaired,
    exit_code: row.exitCode,
    error_category: row.errorCategory,
    failed_command: row.failedCommand,
    failed_line: row.failedLine,
    install_duration: row.installDuration,
    cpu_vendor: row.cpuVendor,
    cpu_model: row.cpuModel,
    gpu_vendor: row.gpuVendor,
    gpu_model: row.gpuModel,
    ram_speed: row.ramSpeed,
    gpu_passthrough: row.gpuPassthrough,
    host_gpu: row.hostGpu,
    arch: row.arch,
    platform: row.platform,
    has_arm: row.hasArm,
    repo_source: row.repoSource,
    repo_slug: row.repoSlug,
    kernel_version: row.kernelVersion,
    app_version: row.appVersion,
    timeline: { installing: iso(row.installingAt), validation: iso(row.validationAt), configuring: iso(row.configuringAt), finished: iso(row.finishedAt) },
    extra: row.extra === null ? null : (JSON.parse(row.extra) as Record<string, unknown>),
  };
}
export type InstallDetail = Static<typeof InstallDetail>;
