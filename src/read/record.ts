// The install record as every read API returns it (DESIGN.md section 3).
import { t, type Static } from "elysia";
import type { Install } from "../domain/install.ts";
import { OutcomeSchema } from "../http/schemas.ts";

const text = t.Nullable(t.String());

export const InstallRecord = t.Object(
  {
    random_id: t.String(),
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
  },
  { title: "InstallRecord" },
);
export type InstallRecord = Static<typeof InstallRecord>;

export function toRecord(row: Install): InstallRecord {
  return {
    random_id: row.randomId,
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
  };
}
