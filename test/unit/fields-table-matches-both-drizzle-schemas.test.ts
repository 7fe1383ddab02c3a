// The two engines' hand-written Drizzle schemas, and the migrations drizzle-kit made from them,
// hold every field of domain/fields.ts as a column of its name, type and nullability, and the
// executions tables hold no other column but each engine's own (listed here).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { getTableColumns, type Column } from "drizzle-orm";
import { FIELDS, type Field } from "../../src/domain/fields.ts";
import { executions as sqliteExecutions } from "../../src/store/sqlite/schema.ts";
import { executions as postgresExecutions } from "../../src/store/postgres/schema.ts";

/** The SQL type a field is stored as, by kind: Drizzle's column type in each engine, the type its migrations write. */
function sqlType(f: Field): { sqlite: [string, string]; postgres: [string, string] } {
  switch (f.kind) {
    case "integer":
      return { sqlite: ["SQLiteInteger", "integer"], postgres: ["PgInteger", "integer"] };
    case "size":
      return "whole" in f
        ? { sqlite: ["SQLiteInteger", "integer"], postgres: ["PgInteger", "integer"] }
        : { sqlite: ["SQLiteReal", "real"], postgres: ["PgDoublePrecision", "double precision"] };
    case "time":
    case "ms":
      return { sqlite: ["SQLiteInteger", "integer"], postgres: ["PgBigInt53", "bigint"] };
    case "bool":
      return { sqlite: ["SQLiteBoolean", "integer"], postgres: ["PgBoolean", "boolean"] };
    default:
      return { sqlite: ["SQLiteText", "text"], postgres: ["PgText", "text"] };
  }
}

/** The engines' own columns of executions, which no field stands for. */
const ENGINE_COLUMNS = {
  // The compact row (store/sqlite/schema.ts): rid only for retries, the outcome as a code, times as
  // offsets from created_at, the rest of a long error text compressed (store/sqlite/error-text.ts).
  sqlite: [
    "rid",
    // Labels of a few known words stored as codes (store/sqlite/codes.ts), read through virtual columns.
    "typeCode",
    "osTypeCode",
    "disableip6Code",
    "methodCode",
    "cpuVendorCode",
    "gpuVendorCode",
    "ramSpeedCode",
    "gpuPassthroughCode",
    "hostGpuCode",
    "archCode",
    "platformCode",
    "repoSourceCode",
    "repoSlugCode",
    "statusCode",
    "outcomeCode",
    "errorRest",
    "errorCategoryCode",
    "updatedIn",
    "installingIn",
    "validationIn",
    "configuringIn",
    "finishedIn",
  ],
  postgres: ["seq"], // insertion order across nodes
};

/** The executions table of the newest snapshot drizzle-kit keeps beside an engine's migrations. */
function newestSnapshot(
  engine: "sqlite" | "postgres",
): Record<string, { name: string; type: string; notNull: boolean }> {
  const journal = JSON.parse(readFileSync(`drizzle/${engine}/meta/_journal.json`, "utf8")) as {
    entries: { idx: number }[];
  };
  const idx = String(journal.entries.at(-1)!.idx).padStart(4, "0");
  const snapshot = JSON.parse(readFileSync(`drizzle/${engine}/meta/${idx}_snapshot.json`, "utf8")) as {
    tables: Record<string, { columns: Record<string, { name: string; type: string; notNull: boolean }> }>;
  };
  return snapshot.tables[engine === "sqlite" ? "executions" : "public.executions"]!.columns;
}

const ENGINES = [
  ["sqlite", getTableColumns(sqliteExecutions) as Record<string, Column>],
  ["postgres", getTableColumns(postgresExecutions) as Record<string, Column>],
] as const;

describe.each(ENGINES)("%s: executions", (engine, columns) => {
  test.each(FIELDS.map((f) => [f.name, f] as const))("%s has its column", (_, f) => {
    const column = columns[f.key];
    expect(column, `no column under ${f.key} in the ${engine} schema`).toBeDefined();
    expect(column!.name).toBe("column" in f ? f.column : f.name);
    // SQLite stores ids as 16 bytes when they are UUIDs (store/sqlite/ids.ts): a custom column.
    const custom = engine === "sqlite" && f.kind === "id";
    expect(column!.columnType).toBe(custom ? "SQLiteCustomColumn" : sqlType(f)[engine][0]);
    expect(column!.notNull).toBe("required" in f);
    if (f.kind === "enum") expect(column!.enumValues).toEqual([...f.values]);
  });

  test("no column without a field but the engine's own", () => {
    const keys: string[] = FIELDS.map((f) => f.key);
    expect(Object.keys(columns).filter((key) => !keys.includes(key))).toEqual(ENGINE_COLUMNS[engine]);
  });

  test("the newest migration's snapshot has the same columns", () => {
    const snapshot = newestSnapshot(engine);
    for (const f of FIELDS) {
      const name = "column" in f ? f.column : f.name;
      expect(
        snapshot[name],
        `${name} is not in the newest ${engine} snapshot: generate a migration (CONTRIBUTING.md, Commands)`,
      ).toBeDefined();
      expect(snapshot[name]!.type).toBe(sqlType(f)[engine][1]);
      expect(snapshot[name]!.notNull).toBe("required" in f);
    }
    expect(Object.keys(snapshot).sort()).toEqual(
      Object.values(columns)
        .map((c) => c.name)
        .sort(),
    );
  });
});
