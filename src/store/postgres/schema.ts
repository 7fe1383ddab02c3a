// Storage schema of the PostgreSQL engine (docs/decisions/2026-11-25-postgresql-engine.md).
// The same data as the SQLite schema, in PostgreSQL's types: times are bigint milliseconds since
// the epoch, long texts are kept whole (TOAST compresses them); executions are partitioned by
// month ("Large tables on PostgreSQL"), rollup cells are merged under their row locks by whichever
// node writes them ("Rollup cells on PostgreSQL").
import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  customType,
  doublePrecision,
  index,
  integer,
  pgTable,
  primaryKey,
  smallint,
  text,
} from "drizzle-orm/pg-core";
import { KINDS, type Execution } from "../../domain/execution.ts";
import { OUTCOMES } from "../../domain/outcome.ts";
import { ENDPOINTS, LOGGED_AT, REJECT_REASONS } from "../../domain/rejection.ts";
import { LATE_MS } from "../common/heard.ts";

const ms = (name: string) => bigint(name, { mode: "number" });
const bytea = customType<{ data: Buffer; driverData: Buffer }>({
  dataType: () => "bytea",
});

/**
 * Executions (docs/protocol.md#the-record): one row per attempt; an install is the rows sharing a random_id.
 * Partitioned by month of created_at (PARTITION BY RANGE, which Drizzle cannot express: the
 * migration that made it, 0006, is written by hand; partitions are named executions_pYYYYMM and
 * made by the engine as months come, src/store/postgres/partitions.ts). A unique index of a
 * partitioned table must hold the partition key, so execution ids are kept unique across months by
 * `executionIds`, which also finds an execution's or an install's rows (docs/decisions/2026-11-26-postgresql-large-tables.md).
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
  (t) => [
    index("executions_created_at").on(t.createdAt, t.seq),
    index("executions_nsapp_created_at").on(t.nsapp, t.createdAt, t.seq),
    // Failed runs by time: lists of failures (the newest of /api/errors) read these rows, not every
    // run they pass. Used when a statement names the outcome itself (reads.ts outcomeIs).
    index("executions_failed").on(t.createdAt, t.seq).where(sql.raw(`"outcome" = 'failed'`)),
    // Runs that reported long after they started, for "heard from since" (store/common/heard.ts).
    index("executions_heard_late")
      .on(t.updatedAt)
      .where(sql.raw(`"updated_at" - "created_at" > ${LATE_MS}`)),
  ],
);

/**
 * Every execution's id, install, creation time (its month, so its partition) and insertion order:
 * the primary key keeps execution ids unique across months; an install's executions are found by
 * random_id; the rows of a month that retention drops go by the BRIN index on created_at.
 * (created_at, seq) is the execution's one entry in executions_created_at: under load dozens of
 * rows share a millisecond, and created_at alone had each of them read to find one.
 */
export const executionIds = pgTable(
  "execution_ids",
  {
    executionId: text("execution_id").primaryKey(),
    randomId: text("random_id").notNull(),
    createdAt: ms("created_at").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
  },
  (t) => [
    index("execution_ids_random_id").on(t.randomId),
    index("execution_ids_created_at").using("brin", t.createdAt),
  ],
);

/** The row is the domain's Execution, column for column, and its insertion order. */
export type ExecutionRow = Execution & { seq: number };
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
true satisfies Same<typeof executions.$inferSelect, ExecutionRow>;

/**
 * Final reports that arrived before their start report (normalized, as JSON), applied when it
 * comes, or on their own when they waited too long or held reports are past their budget. The
 * JSON is in `data`, zstd-compressed, when that is smaller (`codec` "zstd", `report` empty).
 */
export const heldReports = pgTable(
  "held_reports",
  {
    executionId: text("execution_id").primaryKey(),
    randomId: text("random_id").notNull(),
    report: text("report").notNull(),
    receivedAt: ms("received_at").notNull(),
    repaired: boolean("repaired").notNull().default(false),
    /** Null: the JSON is in `report`; "zstd": it is in `data`, compressed. */
    codec: text("codec", { enum: ["zstd"] }),
    data: bytea("data"),
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

/**
 * The budgets' running totals and counters (../common/budgets.ts COUNTERS), changed only under the
 * budget lock in the same transaction as the rows they count (writes.ts): exact on every node.
 */
export const budgetCounters = pgTable("budget_counters", {
  name: text("name").primaryKey(),
  value: bigint("value", { mode: "number" }).notNull(),
});

/** A rollup cell's key and parts: what rollup_cells stores and rollup_deltas adds to it. */
const cellParts = () => ({
  grain: smallint("grain").notNull(),
  slice: text("slice").notNull(),
  bucket: ms("bucket").notNull(),
  data: bytea("data").notNull(),
  apps: bytea("apps"),
  errors: bytea("errors"),
});

/**
 * Rollup cells: one row per grain (0 hour, 1 day, 2 month) x stored slice x bucket, its
 * counts in the three binary parts of domain/rollup-codec.ts (as the SQLite engine's `rollups`):
 * every dimension but nsapp and the durations; the nsapp dimension; the error signatures. Batches append
 * their deltas to rollup_deltas; the fold merges them into the cells (cells.ts); a cell that comes
 * to nothing goes. Stored with fillfactor 70 (migration 0011, by hand: Drizzle has no table storage
 * parameters), so a cell written back usually stays on its page (a HOT update, no index entry).
 */
export const rollupCells = pgTable("rollup_cells", cellParts(), (t) => [
  primaryKey({ columns: [t.grain, t.slice, t.bucket] }),
  index("rollup_cells_bucket").on(t.grain, t.bucket),
]);

/**
 * What batches added to the rollup cells and the fold has not merged yet (cells.ts): a batch
 * appends its deltas here instead of locking, reading and rewriting the cells it touches, so
 * writers never wait for each other on a cell; a background fold moves them into rollup_cells,
 * each delta exactly once (deleted in the transaction that merges it). Reads add the deltas of the
 * cells they read to what is stored. Parts as in rollup_cells (counts may be negative).
 */
export const rollupDeltas = pgTable("rollup_deltas", cellParts(), (t) => [
  index("rollup_deltas_bucket").on(t.grain, t.bucket),
]);

/**
 * The texts rollup cells are made of (dimensions, values, signature ids); cells hold their ids.
 * Never removed, so an id means one text forever. Not unique by text: a batch adds the labels it
 * needs in its own transaction without waiting for another node's (cells.ts PgLabels), so two
 * nodes may give one text an id each, which decodes the same.
 */
export const rollupLabels = pgTable(
  "rollup_labels",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    label: text("label").notNull(),
  },
  (t) => [index("rollup_labels_label").on(t.label)],
);

/** One row each: the fold mark and the rollups' layout (engine.ts); the stuck-install scan's mark; scheduled jobs' last runs. */
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

// ------------------------------------------------------------------ alerts (src/alerts/), as in the SQLite schema

export const alertRules = pgTable("alert_rules", {
  rule: text("rule").primaryKey(),
  silencedUntil: ms("silenced_until"),
  evaluatedAt: ms("evaluated_at"),
  summary: text("summary"),
});

export const alertStates = pgTable(
  "alert_states",
  {
    rule: text("rule").notNull(),
    subject: text("subject").notNull(),
    status: text("status", { enum: ["firing", "ok"] }).notNull(),
    since: ms("since").notNull(),
    eventId: bigint("event_id", { mode: "number" }).notNull(),
    notified: boolean("notified").notNull(),
    lastSentAt: ms("last_sent_at"),
  },
  (t) => [primaryKey({ columns: [t.rule, t.subject] })],
);

export const alertEvents = pgTable(
  "alert_events",
  {
    id: bigint("id", { mode: "number" }).generatedAlwaysAsIdentity().primaryKey(),
    rule: text("rule").notNull(),
    subject: text("subject").notNull(),
    status: text("status", { enum: ["firing", "resolved"] }).notNull(),
    at: ms("at").notNull(),
    message: text("message").notNull(),
    notifiedAt: ms("notified_at"),
    heldBack: text("held_back", { enum: ["cooldown", "silenced", "unsent"] }),
  },
  (t) => [index("alert_events_at").on(t.at), index("alert_events_rule").on(t.rule, t.id)],
);

export const alertOutbox = pgTable(
  "alert_outbox",
  {
    id: bigint("id", { mode: "number" }).generatedAlwaysAsIdentity().primaryKey(),
    eventId: bigint("event_id", { mode: "number" }).notNull(),
    channel: text("channel").notNull(),
    message: text("message").notNull(),
    createdAt: ms("created_at").notNull(),
    nextAt: ms("next_at").notNull(),
    attempts: integer("attempts").notNull(),
    state: text("state", { enum: ["pending", "sent", "failed"] }).notNull(),
    lastError: text("last_error"),
    sentAt: ms("sent_at"),
  },
  (t) => [index("alert_outbox_due").on(t.state, t.nextAt), index("alert_outbox_event").on(t.eventId)],
);

/** States of a relay outbox entry (as in the SQLite schema). */
export const RELAY_STATES = ["ready", "waiting", "refused"] as const;

/**
 * The relay's outbox (Store.setRelay), shared by every node: accepted reports waiting to be sent
 * upstream, each written in the transaction that stored its report. A sender claims entries with
 * a lease (FOR UPDATE SKIP LOCKED, then lease_owner/lease_until), so no two nodes send one at once.
 */
export const relayOutbox = pgTable(
  "relay_outbox",
  {
    id: bigint("id", { mode: "number" }).generatedAlwaysAsIdentity().primaryKey(),
    executionId: text("execution_id").notNull(),
    randomId: text("random_id").notNull(),
    endpoint: text("endpoint", { enum: ENDPOINTS }).notNull(),
    body: text("body").notNull(),
    bytes: integer("bytes").notNull(),
    queuedAt: ms("queued_at").notNull(),
    state: text("state", { enum: RELAY_STATES }).notNull(),
    attempts: integer("attempts").notNull().default(0),
    leaseOwner: text("lease_owner"),
    leaseUntil: ms("lease_until").notNull().default(0),
    /** Epoch ms before which it is not tried again (a failed attempt's backoff); 0: at once. */
    nextAt: ms("next_at").notNull().default(0),
    lastError: text("last_error"),
  },
  (t) => [
    index("relay_outbox_execution").on(t.executionId, t.id),
    index("relay_outbox_not_ready").on(t.state).where(sql`${t.state} <> 'ready'`),
  ],
);

/**
 * The outbox's totals and counters as sharded counters: each transaction adds its changes to one
 * of a few rows of a name (chosen at random), so the batches of many nodes rarely wait on one
 * row; a total is the sum of its rows. `paused` is one row (shard 0).
 */
export const relayCounters = pgTable(
  "relay_counters",
  {
    name: text("name").notNull(),
    shard: smallint("shard").notNull(),
    value: bigint("value", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.name, t.shard] })],
);

// ------------------------------------------------------------------ issue links (src/issues/), as in the SQLite schema

export const issueLinks = pgTable("issue_links", {
  signature: text("signature").primaryKey(),
  tracker: text("tracker"),
  repo: text("repo"),
  number: integer("number"),
  url: text("url"),
  title: text("title"),
  how: text("how", { enum: ["created", "found"] }),
  linkedAt: ms("linked_at"),
  claimedBy: text("claimed_by"),
  claimedUntil: ms("claimed_until"),
});
