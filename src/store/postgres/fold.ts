// The deltas' fold: batches append their rollup deltas (cells.ts appendDeltas); a node that wrote
// folds them into the cells a moment later, in the background, in transactions of a bounded
// number of deltas. One node folds at a time (an advisory lock; the others skip, their deltas are
// folded by the one that holds it, or at their next try). Reads add what is not folded yet, so
// when the fold runs changes the cost of reads and writes, never an answer
// (docs/decisions/2026-11-27-postgresql-rollup-deltas.md).
import type { Sql } from "postgres";
import type { Logger } from "../../log.ts";
import { FOLD_CHUNK, foldDeltas, type PgLabels } from "./cells.ts";
import { transaction } from "./transaction.ts";
import { FOLD_LOCK } from "./writes.ts";

/** Advisory lock of the node folding the deltas now. */
export const DELTA_FOLD_LOCK = 0x64656c74; // "delt"

/**
 * How long after a write the fold runs: what batches append meanwhile is folded together, so a
 * cell many batches touch (a cell of every app, a day, a month) is rewritten once per fold, not
 * once per batch. Reads merge what is not folded yet (up to this long's deltas). Shorter folds hold
 * requests back less: at 64 connections 1,000 ms gave a p99 of 43-54 ms, 250 ms 40-54, 100 ms 37-38
 * (main without deltas 26-30), for the same CPU and fewer WAL bytes per report than without deltas
 * (docs/performance.md, "PostgreSQL: rollup deltas").
 */
const FOLD_DELAY_MS = 100;

/**
 * Folds up to `limit` deltas in one transaction; the number folded, or null when another node is
 * folding. It shares the fold lock with writers: a batch that holds it alone (the hour fold, a
 * month's drop, a seed's) folds or drops what it needs itself.
 */
async function foldPending(sql: Sql, labels: PgLabels, limit = FOLD_CHUNK): Promise<number | null> {
  const batch = labels.batch();
  const folded = await transaction(sql, async (tx) => {
    const [got] = await tx<{ ok: boolean }[]>`
      SELECT pg_advisory_xact_lock_shared(${FOLD_LOCK}) IS NOT NULL AND pg_try_advisory_xact_lock(${DELTA_FOLD_LOCK}) AS ok`;
    return got?.ok ? foldDeltas(tx, batch, limit) : null;
  });
  batch.commit();
  return folded;
}

/** Runs the fold FOLD_DELAY_MS after this node's writes, one fold at a time. */
export class DeltaFolder {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<void> | null = null;
  /** Deltas were appended (or left by a fold that could not take them all) since the fold began. */
  private due = false;
  private closed = false;
  /** Where a failed fold is told (while serving; a command's own writes are folded at close). */
  private log: Logger | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly labels: PgLabels,
    private readonly delayMs = FOLD_DELAY_MS,
  ) {}

  /** Serving: a failed fold is logged, and what another node left is folded now. */
  serve(log: Logger): void {
    this.log = log;
    this.poke();
  }

  /** Deltas were appended: a fold runs within delayMs. */
  poke(): void {
    this.due = true;
    if (this.closed || this.timer !== null || this.running !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.run().finally(() => {
        this.running = null;
        if (this.due) this.poke();
      });
    }, this.delayMs);
  }

  private async run(): Promise<void> {
    this.due = false;
    try {
      for (;;) {
        const folded = await foldPending(this.sql, this.labels);
        if (folded === null) this.due = true; // another node folds now; what it leaves, at the next try
        if (folded !== FOLD_CHUNK) return;
      }
    } catch (e) {
      // The deltas stay (reads add them) until the next write pokes again; nothing is lost or
      // counted twice (a fold is one transaction).
      this.log?.warn("rollup deltas not folded; reads add them until a fold succeeds", {
        error: (e as Error).message,
      });
    }
  }

  /** Stops; what this node appended is folded first, so a command that wrote leaves no deltas behind. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    if (this.due) await this.run();
  }
}
