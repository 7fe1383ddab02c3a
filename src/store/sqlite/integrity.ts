// Damage, seen and named: SQLite's own checks turned into lines that say which table or index is
// hurt, and SQLite's errors told apart (a damaged file is not a bug of ours, nor the client's).
import type { Database } from "bun:sqlite";
import { StorageDamagedError } from "../contract/errors.ts";
import { CellFormatError } from "../../domain/rollup-codec.ts";

/** Lines of a check kept in a report; the rest are counted. */
const MAX_LINES = 20;

const CORRUPT_CODES = new Set(["SQLITE_CORRUPT", "SQLITE_NOTADB"]);

/** An error SQLite raised because the file is damaged (not a busy database, a full disk or a bug). */
export function isCorruption(e: unknown): boolean {
  if (!(e instanceof Error) || e.name !== "SQLiteError") return false;
  const code = (e as { code?: unknown }).code;
  return typeof code === "string" && [...CORRUPT_CODES].some((c) => code.startsWith(c));
}

/**
 * What an error met while reading stored data means: damage (SQLite says the file is damaged; a
 * stored JSON value, rollup cell or compressed body does not parse) becomes a StorageDamagedError; anything
 * else stays as it is (a bug, shown as one).
 */
export function asDamage(e: unknown, where: string | null = null): unknown {
  if (e instanceof StorageDamagedError) return e;
  if (isCorruption(e)) return new StorageDamagedError((e as Error).message, where);
  if (e instanceof SyntaxError || e instanceof CellFormatError)
    return new StorageDamagedError(`a stored value does not parse (${e.message})`, where);
  return e;
}

/** "Tree 17 page 10131 cell 3: ..." -> "executions: page 10131 cell 3: ..." (root pages named from the schema). */
function nameTrees(sqlite: Database, lines: string[]): string[] {
  let roots: Map<number, string>;
  try {
    roots = new Map(
      sqlite
        .query<{ rootpage: number; name: string }, []>("SELECT rootpage, name FROM sqlite_schema WHERE rootpage > 0")
        .all()
        .map((r) => [r.rootpage, r.name]),
    );
  } catch {
    roots = new Map();
  }
  return lines.map((line) =>
    line.replace(/^Tree (\d+) /, (all, n: string) => (roots.has(Number(n)) ? `${roots.get(Number(n))}: ` : all)),
  );
}

/**
 * SQLite's check of the file (quick_check: every page and record; integrity_check also that every
 * index matches its table, about 3x slower). ["ok"] when sound; else what is damaged, at most
 * MAX_LINES lines; never throws. The check reads every row for its NOT NULL and type checks, and a
 * row it cannot read stops the whole check with SQLITE_CORRUPT (about 1 damaged page in 4 in
 * test/hostile); then each table is checked on its own, so the answer still names what is hurt.
 */
export function checkFile(sqlite: Database, kind: "quick" | "full"): string[] {
  const pragma = kind === "quick" ? "quick_check" : "integrity_check";
  let lines: string[];
  try {
    lines = runCheck(sqlite, `PRAGMA ${pragma}`);
  } catch (e) {
    lines = checkTableByTable(sqlite, pragma, e);
  }
  if (lines.length === 0) return ["ok"];
  const named = nameTrees(sqlite, lines);
  return named.length > MAX_LINES ? [...named.slice(0, MAX_LINES), `... and ${named.length - MAX_LINES} more`] : named;
}

function runCheck(sqlite: Database, sql: string): string[] {
  return sqlite
    .query<Record<string, string>, []>(sql)
    .all()
    .flatMap((row) => String(Object.values(row)[0]).split("\n"))
    .filter((line) => line !== "" && line !== "ok" && !line.startsWith("*** in database"));
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** Each table's own check; a table whose check stops is named with SQLite's reason. */
function checkTableByTable(sqlite: Database, pragma: string, whole: unknown): string[] {
  let tables: string[];
  try {
    tables = sqlite
      .query<{ name: string }, []>("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
      .all()
      .map((r) => r.name);
  } catch {
    return [`the check itself failed: ${messageOf(whole)}`];
  }
  const lines = tables.flatMap((table) => {
    try {
      return runCheck(sqlite, `PRAGMA ${pragma}("${table.replaceAll('"', '""')}")`);
    } catch (e) {
      return [`${table}: ${messageOf(e)} (SQLite's check stopped in this table)`];
    }
  });
  return lines.length > 0 ? lines : [`the check itself failed: ${messageOf(whole)}`];
}
