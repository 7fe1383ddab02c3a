// Storage schema. Times are integer milliseconds since the epoch (compact, index-friendly);
// the read API turns them into ISO 8601.
import { sqliteTable, text, integer, real, blob, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import { KINDS, type Execution } from "../../domain/execution.ts";
import { OUTCOMES } from "../../domain/outcome.ts";
import { LOGGED_AT, REJECT_REASONS } from "../../domain/rejection.ts";

/** Executions (DESIGN.md 3b): one row per attempt; an install is the rows sharing a random_id. */
export const executions = sqliteTable(
  "executions",
  {
    executionId: text("execution_id").primaryKey(),
    randomId: text("random_id").notNull(),
    attempt: integer("attempt").notNull(),
    kind: text("kind", { enum: KINDS }).notNull(),
    payloadVersion: integer("payload_version"),
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
    cpuVendor: text("cpu_vendor"),
    cpuModel: text("cpu_model"),
    gpuVendor: text("gpu_vendor"),
    gpuModel: text("gpu_model"),
    ramSpeed: text("ram_speed"),
    gpuPassthrough: text("gpu_passthrough"),
    hostGpu: text("host_gpu"),
    arch: text("arch"),
    platform: text("platform"),
    hasArm: integer("has_arm", { mode: "boolean" }),
    repoSource: text("repo_source"),
    repoSlug: text("repo_slug"),
    kernelVersion: text("kernel_version"),
    appVersion: text("app_version"),
    extra: text("extra"),
    status: text("status").notNull(),
    outcome: text("outcome", { enum: OUTCOMES }).notNull(),
    error: text("error"),
    exitCode: integer("exit_code"),
    errorCategory: text("error_category"),
    failedCommand: text("failed_command"),
    failedLine: integer("failed_line"),
    installDuration: integer("install_duration"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    // Null while in progress, and when the final status arrived before its start report.
    durationMs: integer("duration_ms"),
    installingAt: integer("installing_at"),
    validationAt: integer("validation_at"),
    configuringAt: integer("configuring_at"),
    finishedAt: integer("finished_at"),
    repaired: integer("repaired", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    index("executions_created_at").on(t.createdAt),
    // Per-app listings and scans stay fast however rare the app.
    index("executions_nsapp_created_at").on(t.nsapp, t.createdAt),
    // An install's executions: its details, attempt numbers, deletion.
    index("executions_random_id").on(t.randomId),
  ],
);

/** Final reports that arrived before their start report (normalized, as JSON); applied when it comes. */
export const heldReports = sqliteTable(
  "held_reports",
  {
    executionId: text("execution_id").primaryKey(),
    randomId: text("random_id").notNull(),
    report: text("report").notNull(),
    receivedAt: integer("received_at").notNull(),
    repaired: integer("repaired", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [index("held_reports_random_id").on(t.randomId), index("held_reports_received_at").on(t.receivedAt)],
);

/** Every request not applied exactly as sent, raw, with the reason: the "nothing is lost" log. */
export const rejectedReports = sqliteTable(
  "rejected_reports",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    receivedAt: integer("received_at").notNull(),
    endpoint: text("endpoint", { enum: LOGGED_AT }).notNull(),
    reason: text("reason", { enum: REJECT_REASONS }).notNull(),
    /** What the write of a repaired report came to (created, duplicate, updated, held); null otherwise. */
    result: text("result"),
    field: text("field"),
    message: text("message").notNull(),
    randomId: text("random_id"),
    body: blob("body", { mode: "buffer" }).notNull(),
    /** When `installstats replay` last ran this body through the parser, and what came of it. */
    replayedAt: integer("replayed_at"),
    replayResult: text("replay_result"),
  },
  (t) => [index("rejected_reports_received_at").on(t.receivedAt)],
);

/** The row is the domain's Execution, column for column: this fails to compile when they drift. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
true satisfies Same<typeof executions.$inferSelect, Execution>;

/**
 * Rollup cells (src/domain/rollup.ts): one row per grain (0 hour, 1 day, 2 month) x time bucket x
 * app slice ("*" every app, "=<nsapp>" one app), kept in the same transaction as every write to
 * `executions` (hour cells; day and month cells once the hour is folded, see `rollupState`).
 * The RollupData is split in three JSON columns so a query parses only what it needs: the
 * per-app counts (large on "*" rows) and the error counts are apart from the rest.
 */
export const rollups = sqliteTable(
  "rollups",
  {
    id: integer("id").primaryKey(),
    grain: integer("grain").notNull(),
    app: text("app").notNull(),
    bucket: integer("bucket").notNull(),
    /** Every dimension but nsapp, and the duration histograms. */
    data: text("data").notNull(),
    /** The nsapp dimension ("*" rows only). */
    apps: text("apps").notNull(),
    /** Error signature id -> failed installs. */
    errors: text("errors").notNull(),
  },
  (t) => [
    uniqueIndex("rollups_cell").on(t.grain, t.app, t.bucket),
    // Every app slice of a time range: the fold job and verify.
    index("rollups_grain_bucket").on(t.grain, t.bucket),
  ],
);

/**
 * One row: hours before `folded_until` are in day and month cells too; later hours in hour cells
 * only, until the fold job adds them (src/domain/rollup.ts).
 */
export const rollupState = sqliteTable("rollup_state", {
  id: integer("id").primaryKey(),
  foldedUntil: integer("folded_until").notNull(),
  /** What the stored cells count (ROLLUP_VERSION); an older version is rebuilt at start-up. */
  version: integer("version").notNull().default(0),
});

/**
 * One row: every install created before `checked_until` has a final outcome or was expired. The
 * stuck-install job scans only the created_at range after it, so no index of in-progress installs
 * is needed (it cost 17 bytes and a page write per report).
 */
export const expiryState = sqliteTable("expiry_state", {
  id: integer("id").primaryKey(),
  checkedUntil: integer("checked_until").notNull(),
});

/** What is known of each error signature across all time: an example and where it was seen. */
export const errorSignatures = sqliteTable("error_signatures", {
  id: text("id").primaryKey(),
  signature: text("signature").notNull(),
  example: text("example").notNull(),
  firstSeen: integer("first_seen").notNull(),
  lastSeen: integer("last_seen").notNull(),
  /** JSON array of the apps that have failed with this signature. */
  apps: text("apps").notNull(),
});

