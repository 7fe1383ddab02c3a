// Storage schema. Times are integer milliseconds since the epoch (compact, index-friendly);
// the read API turns them into ISO 8601.
import { sql } from "drizzle-orm";
import {
  sqliteTable,
  text,
  integer,
  real,
  blob,
  customType,
  index,
  primaryKey,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";
import { decodeId, encodeId } from "./ids.ts";
import { CODED, codeColumn, decodeSql, wordDecoder, wordEncoder, type CodedColumn } from "./codes.ts";
import { KINDS, type Execution } from "../../domain/execution.ts";
import { OUTCOMES } from "../../domain/outcome.ts";
import { ENDPOINTS, LOGGED_AT, REJECT_REASONS } from "../../domain/rejection.ts";
import { LATE_MS } from "../common/heard.ts";

/**
 * Ids as stored: a canonical UUID (lowercase, as clients make them) as its 16 bytes, anything
 * else as the text it is; the same id is always stored the same way, so lookups and uniqueness
 * hold. Read back as text.
 */
const storedId = customType<{ data: string; driverData: string | Uint8Array }>({
  dataType: () => "text",
  toDriver: (value) => encodeId(value),
  fromDriver: (value) => decodeId(value),
});

/**
 * The stored column of coded label `name` (codes.ts), read as the word and written or compared as
 * the code: Drizzle selects decode it in TypeScript, and a filter's bound value is encoded. No type
 * (BLOB affinity), so SQLite keeps each value as it is given: a word that looks like a number stays text.
 */
function codedColumn(name: CodedColumn) {
  const encode = wordEncoder(name);
  const decode = wordDecoder(name);
  return customType<{ data: string; driverData: string | number }>({
    dataType: () => "blob",
    toDriver: (word) => encode(word)!,
    fromDriver: (stored) => decode(stored),
  })(codeColumn(name));
}
/** The virtual column of coded label `name`: the word, for SQL that must see it (a sort by the word). */
const wordColumn = (name: CodedColumn) => text(name).generatedAlwaysAs(sql.raw(decodeSql(name)), { mode: "virtual" });
/** The type codes of a kind (domain/execution.ts kindOfType): tools are pve and tool, addons addon. */
const typeCodes = (...words: (typeof CODED.type)[number][]) => words.map((w) => CODED.type.indexOf(w)).join(", ");

const outcomeCase = `CASE "outcome_code" ${OUTCOMES.map((o, i) => `WHEN ${i} THEN '${o}'`).join(" ")} END`;
/** An instant kept as milliseconds after created_at (fewer bytes: 0 costs none), read as epoch ms. */
const after = (stored: string) => sql.raw(`"created_at" + "${stored}"`);

/**
 * Executions (docs/protocol.md#the-record): one row per attempt; an install is the rows sharing a random_id.
 * Stored compactly (docs/decisions/2026-11-27-execution-rows.md): ids as 16 bytes; random_id only
 * when it differs from execution_id (`rid`: a retry's); kind and outcome as what they are derived
 * from (type) or as a small code; the timeline's instants as offsets from created_at; the labels
 * of a few known words (status, type, method, vendors, repo, ...) as codes (codes.ts), read and
 * filtered through their code columns. The columns the rest of the engine reads and filters on
 * (random_id, kind, outcome, updated_at, ...) are virtual columns over them: computed when read,
 * never stored.
 */
export const executions = sqliteTable(
  "executions",
  {
    executionId: storedId("execution_id").primaryKey(),
    /** random_id when it differs from execution_id (a retry, a client that gives its own), else null. */
    rid: storedId("rid"),
    randomId: storedId("random_id")
      .notNull()
      .generatedAlwaysAs(sql`coalesce("rid", "execution_id")`, { mode: "virtual" }),
    attempt: integer("attempt").notNull(),
    kind: text("kind", { enum: KINDS })
      .notNull()
      .generatedAlwaysAs(
        // Over the stored code (known words are always coded), not over the virtual type.
        sql.raw(
          `CASE WHEN "${codeColumn("type")}" IN (${typeCodes("pve", "tool")}) THEN 'tool' WHEN "${codeColumn("type")}" = ${typeCodes("addon")} THEN 'addon' ELSE 'install' END`,
        ),
        { mode: "virtual" },
      ),
    payloadVersion: integer("payload_version"),
    typeCode: codedColumn("type").notNull(),
    type: wordColumn("type").notNull(),
    ctType: integer("ct_type"),
    diskSize: real("disk_size"),
    coreCount: integer("core_count"),
    ramSize: integer("ram_size"),
    osTypeCode: codedColumn("os_type"),
    osType: wordColumn("os_type"),
    osVersion: text("os_version"),
    disableip6Code: codedColumn("disableip6"),
    disableip6: wordColumn("disableip6"),
    nsapp: text("nsapp"),
    methodCode: codedColumn("method"),
    method: wordColumn("method"),
    pveVersion: text("pve_version"),
    cpuVendorCode: codedColumn("cpu_vendor"),
    cpuVendor: wordColumn("cpu_vendor"),
    cpuModel: text("cpu_model"),
    gpuVendorCode: codedColumn("gpu_vendor"),
    gpuVendor: wordColumn("gpu_vendor"),
    gpuModel: text("gpu_model"),
    ramSpeedCode: codedColumn("ram_speed"),
    ramSpeed: wordColumn("ram_speed"),
    gpuPassthroughCode: codedColumn("gpu_passthrough"),
    gpuPassthrough: wordColumn("gpu_passthrough"),
    hostGpuCode: codedColumn("host_gpu"),
    hostGpu: wordColumn("host_gpu"),
    archCode: codedColumn("arch"),
    arch: wordColumn("arch"),
    platformCode: codedColumn("platform"),
    platform: wordColumn("platform"),
    hasArm: integer("has_arm", { mode: "boolean" }),
    repoSourceCode: codedColumn("repo_source"),
    repoSource: wordColumn("repo_source"),
    repoSlugCode: codedColumn("repo_slug"),
    repoSlug: wordColumn("repo_slug"),
    kernelVersion: text("kernel_version"),
    appVersion: text("app_version"),
    extra: text("extra"),
    statusCode: codedColumn("status").notNull(),
    status: wordColumn("status").notNull(),
    /** The outcome's index in OUTCOMES. */
    outcomeCode: integer("outcome_code").notNull(),
    outcome: text("outcome", { enum: OUTCOMES }).notNull().generatedAlwaysAs(sql.raw(outcomeCase), { mode: "virtual" }),
    /** The error text, or its head when it is long; the rest is in `error_rest` (error-text.ts). */
    error: text("error"),
    /** Null, or the rest of a long error text after `error`, zstd-compressed. */
    errorRest: blob("error_rest", { mode: "buffer" }),
    exitCode: integer("exit_code"),
    errorCategoryCode: codedColumn("error_category"),
    errorCategory: wordColumn("error_category"),
    failedCommand: text("failed_command"),
    failedLine: integer("failed_line"),
    installDuration: integer("install_duration"),
    createdAt: integer("created_at").notNull(),
    updatedIn: integer("updated_in").notNull(),
    updatedAt: integer("updated_at").notNull().generatedAlwaysAs(after("updated_in"), { mode: "virtual" }),
    // Null while in progress, and when the final status arrived before its start report.
    durationMs: integer("duration_ms"),
    installingIn: integer("installing_in"),
    installingAt: integer("installing_at").generatedAlwaysAs(after("installing_in"), { mode: "virtual" }),
    validationIn: integer("validation_in"),
    validationAt: integer("validation_at").generatedAlwaysAs(after("validation_in"), { mode: "virtual" }),
    configuringIn: integer("configuring_in"),
    configuringAt: integer("configuring_at").generatedAlwaysAs(after("configuring_in"), { mode: "virtual" }),
    finishedIn: integer("finished_in"),
    finishedAt: integer("finished_at").generatedAlwaysAs(after("finished_in"), { mode: "virtual" }),
    repaired: integer("repaired", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    index("executions_created_at").on(t.createdAt),
    // Per-app listings and scans stay fast however rare the app.
    index("executions_nsapp_created_at").on(t.nsapp, t.createdAt),
    // An install's later executions (retries); its first is found by its execution_id (rows.ts).
    index("executions_rid").on(t.rid).where(sql`"rid" IS NOT NULL`),
    // Failed runs by time: lists of failures (the newest of /api/errors) read these rows, not every
    // run they pass. Used when a statement names the code itself (reads.ts outcomeIs).
    index("executions_failed")
      .on(t.createdAt)
      .where(sql.raw(`"outcome_code" = ${OUTCOMES.indexOf("failed")}`)),
    // Runs that reported long after they started, for "heard from since" (store/common/heard.ts).
    index("executions_heard_late")
      .on(t.updatedAt)
      .where(sql.raw(`"updated_in" > ${LATE_MS}`)),
  ],
);

/**
 * Final reports that arrived before their start report (normalized, as JSON); applied when it
 * comes, or on their own when they have waited too long or held reports exceed their budget
 * (budgets.ts). Rows since migration 0009 keep the JSON compressed in `data` when that is smaller
 * (`codec` "zstd"; `report` is then empty); older rows and small reports keep it in `report`.
 */
export const heldReports = sqliteTable(
  "held_reports",
  {
    executionId: text("execution_id").primaryKey(),
    randomId: text("random_id").notNull(),
    report: text("report").notNull(),
    receivedAt: integer("received_at").notNull(),
    repaired: integer("repaired", { mode: "boolean" }).notNull().default(false),
    /** Null: the JSON is in `report`; "zstd": it is in `data`, compressed. */
    codec: text("codec", { enum: ["zstd"] }),
    data: blob("data", { mode: "buffer" }),
    /** What the row counts against the held-reports budget; null for rows older than the budget. */
    cost: integer("cost"),
  },
  (t) => [index("held_reports_random_id").on(t.randomId), index("held_reports_received_at").on(t.receivedAt)],
);

/** Where a log entry's body is kept (rejectedReports.bodyStore). */
export const BODY_STORES = ["inline", "shared", "head"] as const;

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
    /**
     * The raw body where `bodyStore` is "inline"; its first HEAD_BYTES bytes where it is "head"
     * (the body was not kept: past the log's budget); empty where it is "shared".
     */
    body: blob("body", { mode: "buffer" }).notNull(),
    /** When `installstats replay` last ran this body through the parser, and what came of it. */
    replayedAt: integer("replayed_at"),
    replayResult: text("replay_result"),
    /** Where the body is: "inline" (whole, in `body`), "shared" (whole, in `bodies` under `bodyHash`), "head" (only its head). */
    bodyStore: text("body_store", { enum: BODY_STORES }).notNull().default("inline"),
    /** Bytes of the raw body as received; null for entries older than migration 0009 (then length(body)). */
    bodySize: integer("body_size"),
    /** SHA-256 of the raw body (hex); null for entries older than migration 0009. */
    bodyHash: text("body_hash"),
    /** What the entry counts against the log's budget besides its share of `bodies`; null before migration 0009. */
    cost: integer("cost"),
  },
  (t) => [
    index("rejected_reports_received_at").on(t.receivedAt),
    // The oldest head-only entries go first when the log is past its budget (budgets.ts).
    index("rejected_reports_head").on(t.id).where(sql`${t.bodyStore} = 'head'`),
  ],
);

/**
 * Bodies of the rejected-reports log, each stored once however many entries share it (an
 * attacker repeating one body costs one copy), compressed with zstd when that is smaller.
 */
export const bodies = sqliteTable("bodies", {
  /** SHA-256 of the raw body (hex). */
  hash: text("hash").primaryKey(),
  /** Raw bytes. */
  size: integer("size").notNull(),
  /** "zstd" or "none". */
  codec: text("codec", { enum: ["zstd", "none"] }).notNull(),
  data: blob("data", { mode: "buffer" }).notNull(),
  /** Log entries that point here; the row goes when the last one does. */
  refs: integer("refs").notNull(),
});

/**
 * The budgets' running totals and counters (budgets.ts), kept in the same transaction as every
 * change to the log and the held reports, so every connection sees exact figures without a scan.
 */
export const budgetCounters = sqliteTable("budget_counters", {
  name: text("name").primaryKey(),
  value: integer("value").notNull(),
});

/** What a row stores besides the domain's Execution (rows.ts), and the long error text's rest (error-text.ts). */
export type StoredOnly = {
  rid: string | null;
  outcomeCode: number;
  updatedIn: number;
  installingIn: number | null;
  validationIn: number | null;
  configuringIn: number | null;
  finishedIn: number | null;
  errorRest: Buffer | null;
} & { [K in CodedKey]: K extends "typeCode" | "statusCode" ? string : string | null };
/** The stored columns of coded labels (codes.ts), by key. */
export type CodedKey =
  | "typeCode"
  | "osTypeCode"
  | "disableip6Code"
  | "methodCode"
  | "cpuVendorCode"
  | "gpuVendorCode"
  | "ramSpeedCode"
  | "gpuPassthroughCode"
  | "hostGpuCode"
  | "archCode"
  | "platformCode"
  | "repoSourceCode"
  | "repoSlugCode"
  | "statusCode"
  | "errorCategoryCode";
/** The row is the domain's Execution, column for column (read, virtual or stored), with what it stores instead. */
export type ExecutionRow = Execution & StoredOnly;
/** Fails to compile when the table and the domain's Execution drift. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
true satisfies Same<typeof executions.$inferSelect, ExecutionRow>;

/**
 * Rollup cells (src/domain/rollup.ts): one row per grain (0 hour, 1 day, 2 month) x time bucket x
 * stored slice (a label: "install|=ProxmoxVE|*" every app of a repo class, "...|=<nsapp>" one app),
 * kept in the same transaction as every write to `executions` (hour cells for the last
 * HOUR_CELL_DAYS days; day and month cells once the hour is folded, see `rollupState`). The cell is
 * stored in three binary parts (domain/rollup-codec.ts) so a query decodes only what it needs: the
 * per-app counts (large on cells of every app) and the error counts are apart from the rest.
 */
export const rollups = sqliteTable(
  "rollups",
  {
    id: integer("id").primaryKey(),
    grain: integer("grain").notNull(),
    /** The slice key's label (rollupLabels). */
    slice: integer("slice").notNull(),
    bucket: integer("bucket").notNull(),
    /** Every dimension but nsapp, and the duration histograms. */
    data: blob("data", { mode: "buffer" }).notNull(),
    /** The nsapp dimension (cells of every app only). */
    apps: blob("apps", { mode: "buffer" }),
    /** Error signature id -> failed installs; null when none. */
    errors: blob("errors", { mode: "buffer" }),
  },
  (t) => [
    uniqueIndex("rollups_cell").on(t.grain, t.slice, t.bucket),
    // Every slice of a time range: the fold job, the hours leaving the hour cells, verify.
    index("rollups_grain_bucket").on(t.grain, t.bucket),
  ],
);

/** The texts rollup cells are made of (slices, dimensions, values, signature ids), each stored once: cells hold their ids. */
export const rollupLabels = sqliteTable(
  "rollup_labels",
  {
    id: integer("id").primaryKey(),
    label: text("label").notNull(),
  },
  (t) => [uniqueIndex("rollup_labels_label").on(t.label)],
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
  /**
   * Month cells from this month on are not kept up to date (a bulk load left them to be summed
   * from their day cells); reads sum the day cells meanwhile, the next fold stores the sums and
   * clears it. Null: every month cell is current.
   */
  monthsFrom: integer("months_from"),
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

// ------------------------------------------------------------------ alerts (src/alerts/)

/** A rule's own marks: its silence, and what its last evaluation found. */
export const alertRules = sqliteTable("alert_rules", {
  rule: text("rule").primaryKey(),
  silencedUntil: integer("silenced_until"),
  evaluatedAt: integer("evaluated_at"),
  summary: text("summary"),
});

/** Where each alert (a rule about one subject: the rule as a whole, an app, an app's error) stands. */
export const alertStates = sqliteTable(
  "alert_states",
  {
    rule: text("rule").notNull(),
    subject: text("subject").notNull(),
    status: text("status", { enum: ["firing", "ok"] }).notNull(),
    since: integer("since").notNull(),
    eventId: integer("event_id").notNull(),
    notified: integer("notified", { mode: "boolean" }).notNull(),
    lastSentAt: integer("last_sent_at"),
  },
  (t) => [primaryKey({ columns: [t.rule, t.subject] })],
);

/** The alert history: every time an alert began or stopped firing, with its message. */
export const alertEvents = sqliteTable(
  "alert_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    rule: text("rule").notNull(),
    subject: text("subject").notNull(),
    status: text("status", { enum: ["firing", "resolved"] }).notNull(),
    at: integer("at").notNull(),
    message: text("message").notNull(),
    notifiedAt: integer("notified_at"),
    heldBack: text("held_back", { enum: ["cooldown", "silenced", "unsent"] }),
  },
  (t) => [index("alert_events_at").on(t.at), index("alert_events_rule").on(t.rule, t.id)],
);

/** Messages queued per channel, kept until sent or given up (a restart loses none). */
export const alertOutbox = sqliteTable(
  "alert_outbox",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    eventId: integer("event_id").notNull(),
    channel: text("channel").notNull(),
    message: text("message").notNull(),
    createdAt: integer("created_at").notNull(),
    nextAt: integer("next_at").notNull(),
    attempts: integer("attempts").notNull(),
    state: text("state", { enum: ["pending", "sent", "failed"] }).notNull(),
    lastError: text("last_error"),
    sentAt: integer("sent_at"),
  },
  (t) => [index("alert_outbox_due").on(t.state, t.nextAt), index("alert_outbox_event").on(t.eventId)],
);

/** States of a relay outbox entry: sent when claimed; held back until its start report; refused upstream. */
export const RELAY_STATES = ["ready", "waiting", "refused"] as const;

/**
 * The relay's outbox (Store.setRelay): accepted reports waiting to be sent upstream, each written in
 * the transaction that stored its report. Sent in `id` order per execution; a sent entry is deleted.
 * Its totals (entries, bytes) and counters are in `budget_counters` (relay.*).
 */
export const relayOutbox = sqliteTable(
  "relay_outbox",
  {
    // Never reused: a sender settles by id, and an id handed out again (after a discard) would
    // settle another report.
    id: integer("id").primaryKey({ autoIncrement: true }),
    executionId: text("execution_id").notNull(),
    randomId: text("random_id").notNull(),
    endpoint: text("endpoint", { enum: ENDPOINTS }).notNull(),
    body: text("body").notNull(),
    /** UTF-8 bytes of the body: what counts against the bound. */
    bytes: integer("bytes").notNull(),
    queuedAt: integer("queued_at").notNull(),
    state: text("state", { enum: RELAY_STATES }).notNull(),
    attempts: integer("attempts").notNull().default(0),
    leaseOwner: text("lease_owner"),
    /** Epoch ms until which a sender has it in flight (the bound does not drop it meanwhile); 0 when none. */
    leaseUntil: integer("lease_until").notNull().default(0),
    /** Epoch ms before which it is not tried again (a failed attempt's backoff); 0: at once. */
    nextAt: integer("next_at").notNull().default(0),
    lastError: text("last_error"),
  },
  (t) => [
    // An execution's earlier entries (sending order), its held entry, an install's entries when it
    // is deleted. The only index every entry costs (the rowid orders an execution's entries).
    index("relay_outbox_execution").on(t.executionId),
    // Waiting and refused entries are few: counted without a scan.
    index("relay_outbox_not_ready").on(t.state).where(sql`${t.state} <> 'ready'`),
  ],
);

/**
 * How far `installstats copy` got with another store's rejected-reports log: the id of the last
 * entry loaded from `source` (a file's absolute path, a server URL without its password), moved in
 * the same transaction as the entries, so a copy run again adds only what is missing.
 */
export const copyMarks = sqliteTable("copy_marks", {
  source: text("source").primaryKey(),
  rejectedId: integer("rejected_id").notNull(),
});

// ------------------------------------------------------------------ issue links (src/issues/)

/**
 * Error signatures linked to an issue in the script collection's tracker; a row without a url is a
 * claim: an admin's send under way, so that no second issue is opened meanwhile.
 */
export const issueLinks = sqliteTable("issue_links", {
  signature: text("signature").primaryKey(),
  tracker: text("tracker"),
  repo: text("repo"),
  number: integer("number"),
  url: text("url"),
  title: text("title"),
  how: text("how", { enum: ["created", "found"] }),
  linkedAt: integer("linked_at"),
  claimedBy: text("claimed_by"),
  claimedUntil: integer("claimed_until"),
});
