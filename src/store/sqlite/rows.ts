// An execution as the SQLite engine stores it and reads it back (schema.ts executions): the
// stored columns an INSERT or UPDATE writes, and the columns a read selects (the virtual ones in
// place of what they are computed from), decoded into the domain's Execution.
import { getTableColumns, getTableName } from "drizzle-orm";
import type { Execution } from "../../domain/execution.ts";
import { OUTCOMES, type Outcome } from "../../domain/outcome.ts";
import { joinError, splitError } from "./error-text.ts";
import { decodeId, encodeId } from "./ids.ts";
import { executions, type StoredOnly } from "./schema.ts";

const OUTCOME_CODE = Object.fromEntries(OUTCOMES.map((o, i) => [o, i])) as Record<Outcome, number>;

const columns = getTableColumns(executions);
type Key = keyof typeof columns;

/** Columns stored in place of a virtual one: never selected by a read. */
const STORED_ONLY: ReadonlySet<Key> = new Set<keyof StoredOnly>([
  "rid",
  "outcomeCode",
  "updatedIn",
  "installingIn",
  "validationIn",
  "configuringIn",
  "finishedIn",
]);
/** Columns an INSERT writes (every column but the virtual ones). */
export const STORED_KEYS = (Object.keys(columns) as Key[]).filter((k) => !columns[k].generated);
/** Columns a read selects: the domain's Execution (with its error text's rest). */
export const READ_KEYS = (Object.keys(columns) as Key[]).filter((k) => !STORED_ONLY.has(k));
/** The read columns, for Drizzle's select: ids and booleans are decoded by their column types. */
export const readColumns = Object.fromEntries(READ_KEYS.map((k) => [k, columns[k]])) as {
  [K in Exclude<Key, keyof StoredOnly> | "errorRest"]: (typeof columns)[K];
};

/** What a row stores for `e`: bind parameters by column key. */
export type StoredRow = { [K in keyof typeof executions.$inferInsert]-?: string | number | Uint8Array | null };

const offset = (t: number | null, createdAt: number): number | null => (t === null ? null : t - createdAt);

export function storedRow(e: Execution): StoredRow {
  const split = splitError(e.error);
  return {
    executionId: encodeId(e.executionId),
    rid: e.randomId === e.executionId ? null : encodeId(e.randomId),
    attempt: e.attempt,
    payloadVersion: e.payloadVersion,
    type: e.type,
    ctType: e.ctType,
    diskSize: e.diskSize,
    coreCount: e.coreCount,
    ramSize: e.ramSize,
    osType: e.osType,
    osVersion: e.osVersion,
    disableip6: e.disableip6,
    nsapp: e.nsapp,
    method: e.method,
    pveVersion: e.pveVersion,
    cpuVendor: e.cpuVendor,
    cpuModel: e.cpuModel,
    gpuVendor: e.gpuVendor,
    gpuModel: e.gpuModel,
    ramSpeed: e.ramSpeed,
    gpuPassthrough: e.gpuPassthrough,
    hostGpu: e.hostGpu,
    arch: e.arch,
    platform: e.platform,
    hasArm: e.hasArm === null ? null : e.hasArm ? 1 : 0,
    repoSource: e.repoSource,
    repoSlug: e.repoSlug,
    kernelVersion: e.kernelVersion,
    appVersion: e.appVersion,
    extra: e.extra,
    status: e.status,
    outcomeCode: OUTCOME_CODE[e.outcome],
    error: split.error,
    errorRest: split.errorRest,
    exitCode: e.exitCode,
    errorCategory: e.errorCategory,
    failedCommand: e.failedCommand,
    failedLine: e.failedLine,
    installDuration: e.installDuration,
    createdAt: e.createdAt,
    updatedIn: e.updatedAt - e.createdAt,
    durationMs: e.durationMs,
    installingIn: offset(e.installingAt, e.createdAt),
    validationIn: offset(e.validationAt, e.createdAt),
    configuringIn: offset(e.configuringAt, e.createdAt),
    finishedIn: offset(e.finishedAt, e.createdAt),
    repaired: e.repaired ? 1 : 0,
  };
}

const table = `"${getTableName(executions)}"`;
const name = (k: Key) => `"${columns[k].name}"`;

/** `SELECT <read columns> FROM executions`: rows for decodeExecution, in READ_KEYS order. */
export const SELECT_READ = `SELECT ${READ_KEYS.map(name).join(", ")} FROM ${table}`;
/** An INSERT of every stored column, each bound by its key, followed by `tail`. */
export const insertStored = (tail: string): string =>
  `INSERT INTO ${table} (${STORED_KEYS.map(name).join(", ")}) VALUES (${STORED_KEYS.map((k) => `$${k}`).join(", ")}) ${tail}`;
/** `col = $key` for every stored column but those in `except`. */
export const setStored = (except: ReadonlySet<string>): string =>
  STORED_KEYS.filter((k) => !except.has(columns[k].name))
    .map((k) => `${name(k)} = $${k}`)
    .join(", ");

/**
 * The executions of install `?1`: its first (execution_id = random_id, no rid) through the primary
 * key, its later ones through the rid index. (The virtual random_id has no index.)
 */
export const OF_INSTALL = `((${name("executionId")} = ?1 AND ${name("rid")} IS NULL) OR ${name("rid")} = ?1)`;

const ID_KEYS = new Set<Key>(["executionId", "randomId"]);
const BOOLEAN = READ_KEYS.map((k) => columns[k].columnType === "SQLiteBoolean");
const IS_ID = READ_KEYS.map((k) => ID_KEYS.has(k));
const ERROR = READ_KEYS.indexOf("error");
const ERROR_REST = READ_KEYS.indexOf("errorRest");

/** A row of SELECT_READ (values in column order) as the domain's Execution. */
export function decodeExecution(values: unknown[]): Execution {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < READ_KEYS.length; i++) {
    if (i === ERROR_REST) continue;
    const value = values[i] ?? null;
    row[READ_KEYS[i]!] =
      value === null ? null : IS_ID[i] ? decodeId(value as string | Uint8Array) : BOOLEAN[i] ? value === 1 : value;
  }
  // Joined in place: this runs for every report (the write path reads the execution first).
  const rest = (values[ERROR_REST] ?? null) as Uint8Array | null;
  if (rest !== null) row.error = joinError(values[ERROR] as string | null, rest);
  return row as unknown as Execution;
}
