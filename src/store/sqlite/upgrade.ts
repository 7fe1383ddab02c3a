// Upgrades what SQL migrations cannot: the data whose rules are code. Migration 0007 turned every
// install into an execution; the exit codes its error texts state and the error categories are
// derived here, and the rollup cells are rebuilt whenever ROLLUP_VERSION says they count
// something else than the stored ones do.
import type { Database } from "bun:sqlite";
import { byExitCode, categoryFor } from "../../domain/error-category.ts";
import type { Report } from "../../domain/execution.ts";
import { parseExitCode } from "../../domain/exit-codes.ts";
import { OUTCOMES, type Outcome } from "../../domain/outcome.ts";
import { ROLLUP_VERSION } from "../../domain/rollup.ts";
import { LEGACY_HELD_COST } from "./held.ts";
import { codeColumn, wordEncoder } from "./codes.ts";

/** Rows updated per transaction, so a large database upgrades without one huge transaction. */
const CHUNK = 5000;

/** Whether the stored rollups count what this code counts (ROLLUP_VERSION); older ones are rebuilt (and the data they need derived first). */
export function rollupsCurrent(sqlite: Database): boolean {
  const state = sqlite.query<{ version: number }, []>("SELECT version FROM rollup_state WHERE id = 1").get();
  return state === null || state.version >= ROLLUP_VERSION;
}

/** Derives exit code and category for /upload executions that ended without them; returns how many changed. */
export function deriveEndings(sqlite: Database): number {
  const select = sqlite.query<{ rowid: number; status: string; outcome: Outcome; error: string | null }, [number]>(
    `SELECT rowid, status, outcome, error FROM executions
     WHERE rowid > ? AND payload_version IS NULL AND outcome NOT IN ('success', 'in_progress') AND error_category IS NULL
     ORDER BY rowid LIMIT ${CHUNK}`,
  );
  const update = sqlite.query<never, [number | null, string | number | null, number, number]>(
    // The category is stored as its code (codes.ts); error_category is the virtual column over it.
    `UPDATE executions SET exit_code = ?, "${codeColumn("error_category")}" = ?, outcome_code = ? WHERE rowid = ?`,
  );
  const category = wordEncoder("error_category");
  let changed = 0;
  let after = 0;
  for (;;) {
    const rows = select.all(after);
    if (rows.length === 0) break;
    sqlite.transaction(() => {
      for (const r of rows) {
        const exitCode = parseExitCode(r.error);
        // The code now known may reclassify the failure (a user's abort, blocked by the host).
        const ending = byExitCode({
          outcome: r.outcome,
          exitCode,
          errorCategory: categoryFor({ clientCategory: null, exitCode, error: r.error, outcome: r.outcome }),
        });
        update.run(ending.exitCode, category(ending.errorCategory), OUTCOMES.indexOf(ending.outcome), r.rowid);
        changed++;
      }
    })();
    after = rows.at(-1)!.rowid;
  }
  // Held /upload status updates, kept as reports by the migration: the same derivation. (Reports
  // held since migration 0009 may be compressed; they were derived when they arrived.)
  const held = sqlite
    .query<{ id: string; report: string }, []>(
      "SELECT execution_id AS id, report FROM held_reports WHERE codec IS NULL",
    )
    .all();
  const put = sqlite.query<never, [string, string]>("UPDATE held_reports SET report = ? WHERE execution_id = ?");
  sqlite.transaction(() => {
    for (const h of held) {
      const report = JSON.parse(h.report) as Report;
      if (report.payloadVersion !== null || report.errorCategory !== null) continue;
      const exitCode =
        report.outcome === "success" || report.outcome === "in_progress" ? null : parseExitCode(report.error);
      put.run(
        JSON.stringify({
          ...report,
          exitCode,
          errorCategory: categoryFor({ clientCategory: null, exitCode, error: report.error, outcome: report.outcome }),
        }),
        h.id,
      );
    }
    // Longer JSON, larger rows: the held budget's total follows (budgets.ts).
    sqlite.run(
      `UPDATE budget_counters SET value = (SELECT coalesce(sum(coalesce(cost, ${LEGACY_HELD_COST})), 0) FROM held_reports) WHERE name = 'held.bytes'`,
    );
  })();
  return changed;
}

export const markRollupVersion = (sqlite: Database): void => {
  sqlite.run(`UPDATE rollup_state SET version = ${ROLLUP_VERSION} WHERE id = 1`);
};
