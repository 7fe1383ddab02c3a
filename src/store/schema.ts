// Storage schema. Times are integer milliseconds since the epoch (compact, index-friendly);
// the read API turns them into ISO 8601.
import { sqliteTable, text, integer, real, blob, index } from "drizzle-orm/sqlite-core";

export const installs = sqliteTable(
  "installs",
  {
    randomId: text("random_id").primaryKey(),
    type: text("type").notNull(),
    ctType: integer("ct_type"),
    diskSize: real("disk_size"),
    coreCount: integer("core_count"),
    ramSize: integer("ram_size"),
    osType: text("os_type"),
    osVersion: text("os_version"),
    disableip6: text("disableip6"),
    nsapp: text("nsapp"),
    method: text("method"),
    pveVersion: text("pve_version"),
    status: text("status").notNull(),
    outcome: text("outcome", { enum: ["success", "failed", "aborted", "in_progress", "unknown"] }).notNull(),
    error: text("error"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    // Null while in progress, and when the final status arrived before its start report.
    durationMs: integer("duration_ms"),
    repaired: integer("repaired", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [index("installs_created_at").on(t.createdAt)],
);

/** Status updates that arrived before their start report; applied when it comes. */
export const heldUpdates = sqliteTable("held_updates", {
  randomId: text("random_id").primaryKey(),
  status: text("status").notNull(),
  outcome: text("outcome", { enum: ["success", "failed", "aborted", "in_progress", "unknown"] }).notNull(),
  error: text("error"),
  receivedAt: integer("received_at").notNull(),
  repaired: integer("repaired", { mode: "boolean" }).notNull().default(false),
});

/** Every request not applied exactly as sent, raw, with the reason: the "nothing is lost" log. */
export const rejectedReports = sqliteTable(
  "rejected_reports",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    receivedAt: integer("received_at").notNull(),
    endpoint: text("endpoint", { enum: ["upload", "updatestatus"] }).notNull(),
    reason: text("reason", {
      enum: ["invalid_json", "invalid_field", "already_final", "repaired", "payload_too_large"],
    }).notNull(),
    httpStatus: integer("http_status").notNull(),
    field: text("field"),
    message: text("message").notNull(),
    randomId: text("random_id"),
    body: blob("body", { mode: "buffer" }).notNull(),
  },
  (t) => [index("rejected_reports_received_at").on(t.receivedAt)],
);

export type InstallRow = typeof installs.$inferSelect;
export type NewInstallRow = typeof installs.$inferInsert;
export type RejectedRow = typeof rejectedReports.$inferInsert;
export type RejectReason = RejectedRow["reason"];
export type Outcome = InstallRow["outcome"];
