// An execution as the SQLite engine stores it and reads it back (schema.ts executions): the
// stored columns an INSERT or UPDATE writes, and the columns a read selects (the virtual ones in
// place of what they are computed from), decoded into the domain's Execution.
import { getTableColumns, getTableName } from "drizzle-orm";
import type { Execution } from "../../domain/execution.ts";
import { OUTCOMES, type Outcome } from "../../domain/outcome.ts";
import { joinError, splitError } from "./error-text.ts";
import { decodeId, encodeId } from "./ids.ts";
import { executions, type CodedKey, type StoredOnly } from "./schema.ts";
import { CODED, wordEncoder, type CodedColumn, type WordEncoder } from "./codes.ts";

const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
/** The coded labels (codes.ts) by their names: the word's key and the stored code's (`<name>_code` is `<camelName>Code`). */
const CODED_LABELS = (Object.keys(CODED) as CodedColumn[]).map((name) => ({
  name,
  key: camel(name) as Key,
  code: `${camel(name)}Code` as CodedKey,
}));
const CODED_KEYS = CODED_LABELS.map((c) => c.code);

const OUTCOME_CODE = Object.fromEntries(OUTCOMES.map((o, i) => [o, i])) as Record<Outcome, number>;

const columns = getTableColumns(executions);
type Key = keyof typeof columns;

/** Columns stored in place of a virtual one: never selected by a read. */
const STORED_ONLY: ReadonlySet<Key> = new Set<keyof StoredOnly>([
  ...CODED_KEYS,
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
/**
 * A coded label's key (`status`) -> its stored code column's (`statusCode`): reads select the code
 * and decode it in TypeScript, filters compare codes; the virtual word column would make SQLite
 * evaluate a CASE per row (10-14 % slower full-row reads, docs/decisions/2026-11-27-label-codes-read-in-typescript.md).
 */
const CODE_OF = new Map<Key, Key>(CODED_LABELS.map((c) => [c.key, c.code]));
const readColumn = (k: Key) => columns[CODE_OF.get(k) ?? k];
/** The read columns, for Drizzle's select: ids, booleans and coded labels are decoded by their column types. */
export const readColumns = Object.fromEntries(READ_KEYS.map((k) => [k, readColumn(k)])) as {
  [K in Exclude<Key, keyof StoredOnly> | "errorRest"]: (typeof columns)[K];
};
/** The columns filters compare (store/common/filter.ts): a coded label's code column, its bound value encoded. */
export const filterColumns = Object.fromEntries(
  (Object.keys(columns) as Key[]).map((k) => [k, readColumn(k)]),
) as unknown as typeof columns;

/** What a row stores for `e`: bind parameters by column key. */
export type StoredRow = { [K in keyof typeof executions.$inferInsert]-?: string | number | Uint8Array | null };

/** The coded columns' encoders (codes.ts). */
const CODE = Object.fromEntries(Object.keys(CODED).map((n) => [n, wordEncoder(n as CodedColumn)])) as Record<
  CodedColumn,
  WordEncoder
>;

const offset = (t: number | null, createdAt: number): number | null => (t === null ? null : t - createdAt);

export function storedRow(e: Execution): StoredRow {
  const split = splitError(e.error);
  return {
    executionId: encodeId(e.executionId),
    rid: e.randomId === e.executionId ? null : encodeId(e.randomId),
    attempt: e.attempt,
    payloadVersion: e.payloadVersion,
    typeCode: CODE.type(e.type),
    ctType: e.ctType,
    diskSize: e.diskSize,
    coreCount: e.coreCount,
    ramSize: e.ramSize,
    osTypeCode: CODE.os_type(e.osType),
    osVersion: e.osVersion,
    disableip6Code: CODE.disableip6(e.disableip6),
    nsapp: e.nsapp,
    methodCode: CODE.method(e.method),
    pveVersion: e.pveVersion,
    cpuVendorCode: CODE.cpu_vendor(e.cpuVendor),
    cpuModel: e.cpuModel,
    gpuVendorCode: CODE.gpu_vendor(e.gpuVendor),
    gpuModel: e.gpuModel,
    ramSpeedCode: CODE.ram_speed(e.ramSpeed),
    gpuPassthroughCode: CODE.gpu_passthrough(e.gpuPassthrough),
    hostGpuCode: CODE.host_gpu(e.hostGpu),
    archCode: CODE.arch(e.arch),
    platformCode: CODE.platform(e.platform),
    hasArm: e.hasArm === null ? null : e.hasArm ? 1 : 0,
    repoSourceCode: CODE.repo_source(e.repoSource),
    repoSlugCode: CODE.repo_slug(e.repoSlug),
    kernelVersion: e.kernelVersion,
    appVersion: e.appVersion,
    extra: e.extra,
    statusCode: CODE.status(e.status),
    outcomeCode: OUTCOME_CODE[e.outcome],
    error: split.error,
    errorRest: split.errorRest,
    exitCode: e.exitCode,
    errorCategoryCode: CODE.error_category(e.errorCategory),
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
export const SELECT_READ = `SELECT ${READ_KEYS.map((k) => name(CODE_OF.get(k) ?? k)).join(", ")} FROM ${table}`;
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
/** Each read column's words when it is a coded label (codes.ts): a stored number is an index into them. */
const WORDS: (readonly string[] | null)[] = READ_KEYS.map((k) => {
  const coded = CODED_LABELS.find((c) => c.key === k);
  return coded === undefined ? null : CODED[coded.name];
});
const ERROR = READ_KEYS.indexOf("error");
const ERROR_REST = READ_KEYS.indexOf("errorRest");

/** A row of SELECT_READ (values in column order) as the domain's Execution. */
export function decodeExecution(values: unknown[]): Execution {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < READ_KEYS.length; i++) {
    if (i === ERROR_REST) continue;
    const value = values[i] ?? null;
    const words = WORDS[i]!;
    row[READ_KEYS[i]!] =
      value === null
        ? null
        : words !== null
          ? typeof value === "number"
            ? words[value]
            : value
          : IS_ID[i]
            ? decodeId(value as string | Uint8Array)
            : BOOLEAN[i]
              ? value === 1
              : value;
  }
  // Joined in place: this runs for every report (the write path reads the execution first).
  const rest = (values[ERROR_REST] ?? null) as Uint8Array | null;
  if (rest !== null) row.error = joinError(values[ERROR] as string | null, rest);
  return row as unknown as Execution;
}
