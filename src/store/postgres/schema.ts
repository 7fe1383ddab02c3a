// Storage schema of the PostgreSQL engine (docs/decisions.md, "The PostgreSQL engine: design").
// The same data as the SQLite schema, in PostgreSQL's types: times are bigint milliseconds since
// the epoch, long texts are kept whole (TOAST compresses them); executions are partitioned by
// month ("Large tables on PostgreSQL"), rollup cells are merged under their row locks by whichever
// node writes them ("Rollup cells on PostgreSQL").
import { sql } from "drizzle-orm";
import { bigint, boolean, customType, doublePrecision, index, integer, pgTable, primaryKey, smallint, text } from "drizzle-orm/pg-core";
import { KINDS, type Execution } from "../../domain/execution.ts";
import { OUTCOMES } from "../../domain/outcome.ts";
import { LOGGED_AT, REJECT_REASONS } from "../../domain/rejection.ts";

const ms = (name: string) => bigint(name, { mode: "number" });
const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => "bytea" });

/**
 * Executions (DESIGN.md 3b): one row per attempt; an install is the rows sharing a random_id.
 * Partitioned by month of created_at (PARTITION BY RANGE, which Drizzle cannot express: the
 * migration that made it, 0002, is written by hand; partitions are named executions_pYYYYMM and
 * made by the engine as months come, src/store/postgres/partitions.ts). A unique index of a
 * partitioned table must hold the partition key, so execution ids are kept unique across months by
 * `executionIds`, which also finds an execution's or an install's rows (docs/decisions.md,
 * "Large tables on PostgreSQL").
 */
export const executions = pgTable(
  "executions",
  {
    executionId: text("execution_id").notNull(),
    randomId: text("random_id").notNull(),
    attempt: integer("attempt").notNull(),
    kind: text("kind", { enum: KINDS }).notNull(),
    payloadVersion: integer("payload_version"),
    type: text("type").notNull(),
    ctType: integer("ct_type"),
    diskSize: doublePrecision("disk_size"),
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
    hasArm: boolean("has_arm"),
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
    createdAt: ms("created_at").notNull(),
    updatedAt: ms("updated_at").notNull(),
    durationMs: ms("duration_ms"),
    installingAt: ms("installing_at"),
    validationAt: ms("validation_at"),
    configuringAt: ms("configuring_at"),
    finishedAt: ms("finished_at"),
    repaired: boolean("repaired").notNull().default(false),
    /** Insertion order, across nodes: the tie-breaker of rows created in the same millisecond. */
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
  },
  (t) => [index("executions_created_at").on(t.createdAt, t.seq), index("executions_nsapp_created_at").on(t.nsapp, t.createdAt, t.seq)],
);

/**
 * Every execution's id, install and creation time (its month, so its partition): the primary key
 * keeps execution ids unique across months; an install's executions are found by random_id; the
 * rows of a month that retention drops go by the BRIN index on created_at.
 */
export const executionIds = pgTable(
  "execution_ids",
  {
    executionId: text("execution_id").primaryKey(),
    randomId: text("random_id").notNull(),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [index("execution_ids_random_id").on(t.randomId), index("execution_ids_created_at").using("brin", t.createdAt)],
);

/** The row is the domain's Execution, column for column, and its insertion order. */
export type ExecutionRow = Execution & { seq: number };
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
true satisfies Same<typeof executions.$inferSelect, ExecutionRow>;

/** Final reports that arrived before their start report (normalized, as JSON), applied when it comes. */
export const heldReports = pgTable(
  "held_reports",
  {
    executionId: text("execution_id").primaryKey(),
    randomId: text("random_id").notNull(),
    report: text("report").notNull(),
    receivedAt: ms("received_at").notNull(),
    repaired: boolean("repaired").notNull().default(false),
    /** What the row counts against the held-reports budget. */
    cost: integer("cost").notNull(),
  },
  (t) => [index("held_reports_random_id").on(t.randomId), index("held_reports_received_at").on(t.receivedAt)],
);

/** Where a log entry's body is kept (as in the SQLite schema). */
export const BODY_STORES = ["inline", "shared", "head"] as const;

/** Every request not applied exactly as sent, raw, with the reason: the "nothing is lost" log. */
export const rejectedReports = pgTable(
  "rejected_reports",
  {
    id: bigint("id", { mode: "number" }).generatedAlwaysAsIdentity().primaryKey(),
    receivedAt: ms("received_at").notNull(),
    endpoint: text("endpoint", { enum: LOGGED_AT }).notNull(),
    reason: text("reason", { enum: REJECT_REASONS }).notNull(),
    result: text("result"),
    field: text("field"),
    message: text("message").notNull(),
    randomId: text("random_id"),
    body: bytea("body").notNull(),
    replayedAt: ms("replayed_at"),
    replayResult: text("replay_result"),
    bodyStore: text("body_store", { enum: BODY_STORES }).notNull().default("inline"),
    bodySize: integer("body_size").notNull(),
    bodyHash: text("body_hash"),
    cost: integer("cost").notNull(),
  },
  (t) => [
    index("rejected_reports_received_at").on(t.receivedAt),
    index("rejected_reports_head").on(t.id).where(sql`${t.bodyStore} = 'head'`),
  ],
);

/** Bodies of the rejected-reports log, each stored once however many entries share it. */
export const bodies = pgTable("bodies", {
  hash: text("hash").primaryKey(),
  size: integer("size").notNull(),
  codec: text("codec", { enum: ["zstd", "none"] }).notNull(),
  data: bytea("data").notNull(),
  refs: integer("refs").notNull(),
});

/** The budgets' running totals and counters, kept in the same transaction as every change they count. */
export const budgetCounters = pgTable("budget_counters", {
  name: text("name").primaryKey(),
  value: bigint("value", { mode: "number" }).notNull(),
});

/**
 * Rollup cells: one row per grain (0 hour, 1 day, 2 month) x slice x bucket, its counts in the three
 * JSON columns of domain/rollup.ts toColumns (as the SQLite engine's `rollups`): every dimension
 * but nsapp and the durations; the nsapp dimension; the error signatures. A batch merges its deltas
 * into the cells it touches under their row locks (cells.ts); a cell that comes to nothing goes.
 * Stored with fillfactor 70 (migration 0004, by hand: Drizzle has no table storage parameters), so
 * a cell written back usually stays on its page (a HOT update, no index entry).
 */
export const rollupCells = pgTable(
  "rollup_cells",
  {
    grain: smallint("grain").notNull(),
    slice: text("slice").notNull(),
    bucket: ms("bucket").notNull(),
    data: text("data").notNull(),
    apps: text("apps").notNull(),
    errors: text("errors").notNull(),
  },
  (t) => [primaryKey({ columns: [t.grain, t.slice, t.bucket] }), index("rollup_cells_bucket").on(t.grain, t.bucket)],
);

/** One row each: the fold mark and the rollups' version; the stuck-install scan's mark. */
export const marks = pgTable("marks", {
  name: text("name").primaryKey(),
  value: bigint("value", { mode: "number" }).notNull(),
});

/** What is known of each error signature across all time: an example and where it was seen. */
export const errorSignatures = pgTable("error_signatures", {
  id: text("id").primaryKey(),
  signature: text("signature").notNull(),
  example: text("example").notNull(),
  firstSeen: ms("first_seen").notNull(),
  lastSeen: ms("last_seen").notNull(),
  /** JSON array of the apps that have failed with this signature. */
  apps: text("apps").notNull(),
});
