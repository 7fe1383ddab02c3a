// What ingestion writes (reports, loads, refusals), a run of them at a time: the rows they touch
// are read in two statements, the domain decides op by op against those rows as the batch changes
// them, and the changes go back in a few set-wise statements. A batch's cost is then a handful of
// round trips to the server whatever its size, where a statement per op made every report wait
// for five (docs/performance.md#postgresql-2026-11-26-issue-17). The batch holds the advisory locks of every
// execution and install it names (writes.ts), so what it read stays true until it commits.
import type { Sql } from "postgres";
import type { SignatureSightings } from "../../domain/error-signature.ts";
import type { Execution, Report } from "../../domain/execution.ts";
import { decide, executionFromHeld, type HeldReport } from "../../domain/lifecycle.ts";
import type { RollupDeltas } from "../../domain/rollup.ts";
import type { ResultFor, WriteOp, WriteResult } from "../contract/store.ts";
import { decodeHeld, encodeHeld, type HeldColumns } from "../common/budgets.ts";
import { count, recount } from "../common/counting.ts";
import type { BatchBudget } from "./budgets.ts";
import type { BatchLabels } from "./cells.ts";
import type { relayBatch } from "./relay.ts";
import { FROM_IDS, INSERT_COLUMNS, SELECT_EXECUTION, UPDATABLE, rowOf } from "./rows.ts";

/** A connection inside a transaction (transaction.ts). */
export type Tx = Sql;

export interface BatchEffects {
  deltas: RollupDeltas;
  /** The rollup labels this batch may use (cells.ts). */
  labels: BatchLabels;
  sightings: SignatureSightings;
  /** The log entries to place and the counters to add at the end of the batch (budgets.ts). */
  budget: BatchBudget;
  /** A report was held: the held budget is checked at the end. */
  held: boolean;
  /**
   * Changes to the stuck-install mark, in order, made at the end: no batch holds the marks row
   * while it waits for the budget lock. Lowerings in a row are one (the lowest).
   */
  stuck: ({ lower: number } | { from: number; until: number })[];
  relay: ReturnType<typeof relayBatch>;
}

/** The mark names in the `marks` table. */
export const MARKS = {
  foldedUntil: "folded_until",
  stuckCheckedUntil: "stuck_checked_until",
  rollupVersion: "rollup_version",
} as const;

/** The ops this file writes. */
export type IntakeOp = Extract<WriteOp, { kind: "report" | "load" | "reject" }>;
export const isIntake = (op: WriteOp): op is IntakeOp =>
  op.kind === "report" || op.kind === "load" || op.kind === "reject";

/** An execution in progress created before the stuck mark lowers it, or the stuck job would never look at it again. */
export function lowerStuckMark(fx: BatchEffects, createdAt: number): void {
  const last = fx.stuck.at(-1);
  if (last && "lower" in last) last.lower = Math.min(last.lower, createdAt);
  else fx.stuck.push({ lower: createdAt });
}

export interface HeldRow {
  report: string;
  codec: string | null;
  data: Buffer | null;
  receivedAt: number;
  repaired: boolean;
}
export const heldOf = (row: HeldRow): HeldReport => ({
  report: decodeHeld(row),
  at: row.receivedAt,
  repaired: row.repaired,
});
export const SELECT_HELD = `report, codec, data, received_at AS "receivedAt", repaired`;

/** Held reports that left: their cost leaves the held budget. */
export function forgetHeld(fx: BatchEffects, gone: readonly { cost: number }[]): void {
  for (const { cost } of gone) {
    fx.budget.add("held.bytes", -cost);
    fx.budget.add("held.count", -1);
  }
}

/** Held reports as rows to insert, counted into the held budget. */
export function heldRows(
  fx: BatchEffects,
  held: Iterable<{ report: Report; at: number; repaired: boolean; columns: HeldColumns }>,
) {
  return [...held].map(({ report, at, repaired, columns }) => {
    fx.budget.add("held.bytes", columns.cost);
    fx.budget.add("held.count", 1);
    fx.held = true;
    return { execution_id: report.executionId, random_id: report.randomId, received_at: at, repaired, ...columns };
  });
}

/** Rows as JSON for json_populate_recordset: one parameter however many rows. */
const rowsJson = (rows: Iterable<Execution>): string => JSON.stringify([...rows].map(rowOf));

/** Stored rows changed, as JSON for json_populate_recordset, each with the insertion order that finds it. */
function storedRowsJson(rows: Iterable<Execution>, seqs: ReadonlyMap<string, number>): string {
  const out = [];
  for (const e of rows) {
    const row = rowOf(e);
    row.seq = seqs.get(e.executionId)!; // every stored row a run changes, it read
    out.push(row);
  }
  return JSON.stringify(out);
}

const SET_UPDATABLE = `(${UPDATABLE.map((n) => `"${n}"`).join(", ")}) = (${UPDATABLE.map((n) => `r."${n}"`).join(", ")})`;

/**
 * The stored state a run of ops sees, and what the run changes: rows as they were read, overlaid
 * with what earlier ops of the run did; the writes to make when the run ends.
 */
class Run {
  /** Stored (or created by this run) executions by id; undefined when there is none. */
  readonly executions = new Map<string, Execution | undefined>();
  /** The insertion order of each stored execution read: with its creation time, where its row is. */
  readonly seqs = new Map<string, number>();
  readonly held = new Map<string, HeldReport | null>();
  readonly attempts = new Map<string, number>();
  /** New rows in the order they were created (their seq follows it), in their final state. */
  readonly inserts = new Map<string, Execution>();
  readonly updates = new Map<string, Execution>();
  /** Executions whose stored held report goes (taken by its start report, or replaced). */
  readonly heldGone = new Set<string>();
  readonly heldSet = new Map<string, { report: Report; at: number; repaired: boolean; columns: HeldColumns }>();
  /** The relay's outbox changes, in the order of the reports: made once the rows are written. */
  readonly relay: ((tx: Tx) => Promise<void>)[] = [];
  /** The oldest creation time of an execution in progress this run created: the stuck mark must not be past it. */
  oldestOpen: number | null = null;

  insert(e: Execution): void {
    this.executions.set(e.executionId, e);
    this.inserts.set(e.executionId, e);
    this.attempts.set(e.randomId, (this.attempts.get(e.randomId) ?? 0) + 1);
    if (e.outcome === "in_progress") this.oldestOpen = Math.min(this.oldestOpen ?? e.createdAt, e.createdAt);
  }

  update(e: Execution): void {
    this.executions.set(e.executionId, e);
    (this.inserts.has(e.executionId) ? this.inserts : this.updates).set(e.executionId, e);
  }

  hold(report: Report, at: number, repaired: boolean): void {
    const columns = encodeHeld(report);
    this.heldGone.add(report.executionId);
    this.heldSet.set(report.executionId, { report, at, repaired, columns });
    this.held.set(report.executionId, { report: decodeHeld(columns), at, repaired });
  }

  unhold(executionId: string): void {
    this.heldSet.delete(executionId);
    this.heldGone.add(executionId);
    this.held.set(executionId, null);
  }
}

/** Reads the executions, held reports and attempt counts the ops name: two statements whatever the run's size. */
async function readFor(tx: Tx, ops: readonly IntakeOp[]): Promise<Run> {
  const ids = new Set<string>();
  const installs = new Set<string>();
  for (const op of ops) {
    if (op.kind === "report") {
      ids.add(op.report.executionId);
      installs.add(op.report.randomId);
    } else if (op.kind === "load") {
      ids.add(op.execution.executionId);
      installs.add(op.execution.randomId);
    }
  }
  const run = new Run();
  if (ids.size === 0) return run;
  const idList = [...ids];
  const installList = [...installs];
  // One after another, not pipelined: postgres.js 3.4 never settles a pipelined statement whose
  // prepared form a pooler lost (it sends it again, out of turn); a batch then hung for good.
  const rows = await tx<
    (Execution & { seq: number })[]
  >`SELECT ${tx.unsafe(SELECT_EXECUTION)}, k.seq FROM ${tx.unsafe(FROM_IDS)} WHERE k.execution_id = ANY(${idList}::text[])`;
  // Held reports and attempt counts in one statement (a round trip less): a held report's row has
  // its execution id, an install's count its random id.
  const side = await tx<(HeldRow & { executionId: string | null; randomId: string | null; n: number | null })[]>`
    SELECT execution_id AS "executionId", NULL::text AS "randomId", NULL::int AS n, ${tx.unsafe(SELECT_HELD)}
    FROM held_reports WHERE execution_id = ANY(${idList}::text[])
    UNION ALL
    SELECT NULL, random_id, count(*)::int, NULL, NULL, NULL, NULL, NULL
    FROM execution_ids WHERE random_id = ANY(${installList}::text[]) GROUP BY random_id`;
  for (const id of idList) run.executions.set(id, undefined);
  for (const row of rows) {
    // The row keeps its seq as it goes on as an Execution (nothing reads it there): a copy
    // without it cost ~1 % of a node's CPU under today's clients.
    run.executions.set(row.executionId, row);
    run.seqs.set(row.executionId, row.seq);
  }
  for (const row of side) {
    if (row.executionId !== null) run.held.set(row.executionId, heldOf(row));
    else run.attempts.set(row.randomId!, row.n!);
  }
  return run;
}

function applyReport(run: Run, op: Extract<IntakeOp, { kind: "report" }>, fx: BatchEffects): ResultFor<typeof op> {
  const { report } = op;
  const current = run.executions.get(report.executionId);
  const held = current === undefined ? (run.held.get(report.executionId) ?? null) : null;
  const repaired = op.repairs.length > 0;
  const attempt = current === undefined ? (run.attempts.get(report.randomId) ?? 0) + 1 : current.attempt;
  const decided = decide(current, report, { at: op.at, attempt, held, repaired });
  // Not held (its client's share is used up): applied on its own now, as it would be when it expired.
  const decision =
    decided.kind === "hold" && op.holdable === false
      ? { kind: "insert" as const, row: executionFromHeld({ report, at: op.at, repaired }, attempt) }
      : decided;
  let result: ResultFor<typeof op>;
  switch (decision.kind) {
    case "insert": {
      const row = decision.row;
      run.insert(row);
      count(fx, row, 1, op.at);
      run.relay.push((tx) => fx.relay.queue(tx, report, row, op.at));
      if (held) {
        run.unhold(report.executionId);
        run.relay.push((tx) => fx.relay.releaseAfterStart(tx, report.executionId, row));
      }
      result = { kind: "created", outcome: row.outcome };
      break;
    }
    case "update": {
      const row = decision.row;
      run.update(row);
      recount(fx, current!, row, op.at);
      run.relay.push((tx) => fx.relay.queue(tx, report, row, op.at));
      result = { kind: "updated", outcome: row.outcome };
      break;
    }
    case "duplicate": {
      const row = decision.row;
      if (row) {
        run.update(row);
        recount(fx, current!, row, op.at);
        run.relay.push((tx) => fx.relay.queue(tx, report, row, op.at));
      }
      if (decision.conflict) {
        fx.budget.log(
          {
            endpoint: op.endpoint,
            reason: "already_final",
            field: "status",
            message: decision.conflict,
            randomId: report.randomId,
            body: op.raw,
          },
          op.at,
          "duplicate",
          op.headOnly,
        );
      }
      result = { kind: "duplicate" };
      break;
    }
    case "hold":
      run.hold(report, op.at, repaired);
      run.relay.push((tx) => fx.relay.hold(tx, report, op.at));
      result = { kind: "held" };
      break;
    case "already-final": {
      const message = `install ${report.randomId} already has a final status (${decision.outcome}); update not applied`;
      fx.budget.log(
        {
          endpoint: op.endpoint,
          reason: "already_final",
          field: "status",
          message,
          randomId: report.randomId,
          body: op.raw,
        },
        op.at,
        null,
        op.headOnly,
      );
      return { kind: "already-final", outcome: decision.outcome };
    }
  }
  if (op.repairs.length > 0 && result.kind !== "duplicate") {
    const message = `body repaired (${op.repairs.join(", ")}) and ${result.kind}`;
    fx.budget.log(
      { endpoint: op.endpoint, reason: "repaired", field: null, message, randomId: report.randomId, body: op.raw },
      op.at,
      result.kind,
      op.headOnly,
    );
  }
  return result;
}

/**
 * Inserts new executions and their ids in one statement (the rows sent once): a second row for an
 * id already stored breaks the ids' primary key and fails the batch (the batch's locks and reads
 * make that a bug, never a race).
 */
export function insertRows(tx: Tx, rows: Iterable<Execution>): Promise<unknown> {
  return tx`
    WITH inserted AS (
      INSERT INTO executions (${tx.unsafe(INSERT_COLUMNS)}) SELECT ${tx.unsafe(INSERT_COLUMNS)} FROM json_populate_recordset(NULL::executions, ${rowsJson(rows)}::text::json)
      RETURNING execution_id, random_id, created_at, seq)
    INSERT INTO execution_ids (execution_id, random_id, created_at, seq) SELECT execution_id, random_id, created_at, seq FROM inserted`;
}

/** Writes what the run changed, each kind of change in one statement; then the relay's entries in order. */
async function flush(tx: Tx, run: Run, fx: BatchEffects): Promise<void> {
  if (run.inserts.size > 0) await insertRows(tx, run.inserts.values());
  if (run.updates.size > 0) {
    // The creation time and insertion order are the row's one index entry in its month's
    // partition (neither changes once stored). The creation times again as an array: a plan made
    // while the partition was small (a new month's) hash-joins json_populate_recordset's guessed
    // 100 rows to a scan of the whole partition, and keeps doing so as it grows; with the array
    // it reads only those times' index entries.
    const updates = [...run.updates.values()];
    const updated = await tx`
      UPDATE executions AS e SET ${tx.unsafe(SET_UPDATABLE)}
      FROM json_populate_recordset(NULL::executions, ${storedRowsJson(updates, run.seqs)}::text::json) AS r
      WHERE e.created_at = r.created_at AND e.seq = r.seq AND e.created_at = ANY(${updates.map((u) => u.createdAt)}::bigint[])`;
    // A row not found would leave its counts changed and its row not: the batch fails instead.
    if (updated.count !== run.updates.size)
      throw new Error(`updated ${updated.count} of ${run.updates.size} stored executions`);
  }
  if (run.oldestOpen !== null) lowerStuckMark(fx, run.oldestOpen);
  // Held reports replaced or taken leave the budget before the new ones come in (same execution: a new row).
  if (run.heldGone.size > 0) {
    forgetHeld(
      fx,
      await tx<
        { cost: number }[]
      >`DELETE FROM held_reports WHERE execution_id = ANY(${[...run.heldGone]}::text[]) RETURNING cost`,
    );
  }
  if (run.heldSet.size > 0) await tx`INSERT INTO held_reports ${tx(heldRows(fx, run.heldSet.values()))}`;
  for (const change of run.relay) await change(tx);
}

/** Applies a run of report, load and reject ops; their results in order. */
export async function applyIntake(tx: Tx, ops: readonly IntakeOp[], fx: BatchEffects): Promise<WriteResult[]> {
  const run = await readFor(tx, ops);
  const results: WriteResult[] = [];
  for (const op of ops) {
    if (op.kind === "report") results.push(applyReport(run, op, fx));
    else if (op.kind === "reject") {
      fx.budget.log(op.rejection, op.at, null, op.headOnly);
      results.push({ kind: "logged" });
    } else if (run.executions.get(op.execution.executionId) !== undefined) {
      results.push({ kind: "duplicate" });
    } else {
      run.insert(op.execution);
      count(fx, op.execution, 1, op.execution.updatedAt);
      results.push({ kind: "created", outcome: op.execution.outcome });
    }
  }
  await flush(tx, run, fx);
  return results;
}
