// Executions as rows of the PostgreSQL schema: the column list every statement selects (aliased
// to the domain's names, so a row is an Execution as it comes), and a row to insert.
import { getTableColumns } from "drizzle-orm";
import type { Execution } from "../../domain/execution.ts";
import { executions } from "./schema.ts";

const columns = getTableColumns(executions);
/** The domain's keys with their column names, insertion order (seq) left out. */
const EXECUTION_COLUMNS = (Object.keys(columns) as (keyof typeof columns)[])
  .filter((k) => k !== "seq")
  .map((key) => ({ key, name: columns[key].name }));

/** `"execution_id", "random_id", ...`: every column of an execution, for an INSERT's column list. */
export const INSERT_COLUMNS = EXECUTION_COLUMNS.map(({ name }) => `"${name}"`).join(", ");

/** `"execution_id" AS "executionId", ...`: every column of an execution under its domain name. */
export const SELECT_EXECUTION = EXECUTION_COLUMNS.map(({ key, name }) => `e."${name}" AS "${key}"`).join(", ");

/**
 * The columns of an execution keyed by column name, for json_populate_recordset: a null column is
 * left out (the record it fills starts as NULLs), which is nearly half of a row's JSON.
 */
export function rowOf(e: Execution): Record<string, string | number | boolean> {
  const row: Record<string, string | number | boolean> = {};
  for (const { key, name } of EXECUTION_COLUMNS) {
    const value = e[key];
    if (value !== null) row[name] = value;
  }
  return row;
}

/** The columns a row written back may change: all but its id, which finds it. */
export const UPDATABLE = EXECUTION_COLUMNS.filter(({ key }) => key !== "executionId").map(({ name }) => name);

/**
 * Where an execution is found by its id or its install: its row in execution_ids names its
 * creation time and insertion order, one entry of one month's index (`k` the ids, `e` the execution).
 */
export const FROM_IDS = "execution_ids k JOIN executions e ON e.created_at = k.created_at AND e.seq = k.seq";
