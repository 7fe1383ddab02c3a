// Budgets of the rejected-reports log and held reports on PostgreSQL, with several nodes writing
// at once (docs/decisions/2026-11-26-postgresql-budgets.md): the rules are the SQLite engine's
// (../common/budgets.ts); what differs is who may decide.
//
// - Every decision that reads a total (where a log entry's body goes, which head-only entries
//   make room, whether held reports are past their budget) is made under one transaction-level
//   advisory lock, the budget lock, held until COMMIT: the totals it reads are exact and no other
//   node changes them meanwhile. Every change to the log's rows and bodies is made under it too.
// - A batch queues its new log entries and places them at its end, and keeps its counter changes
//   in memory until then: the lock is taken only by batches that log or hold something, for their
//   last statements; a batch that writes executions only never waits for it.
// - Counters are added to (value = value + delta, names in one order), never overwritten, so a
//   change made without the lock (a held report taken by its start report) is never lost.
// - What a batch locks comes in one order on every node (execution keys, the budget lock, counter
//   rows, the stuck mark, rollup rows, signatures), so two batches never wait on each other in a cycle.
import type { Sql } from "postgres";
import type { Rejection } from "../../domain/rejection.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import {
  COUNTERS,
  EVICT_CHUNK,
  HEAD_BYTES,
  countBodyOut,
  countDropped,
  countIn,
  countOut,
  headOf,
  newEntry,
  planWhole,
  type BudgetCounters,
  type CounterName,
  type LeavingEntry,
  type NewEntry,
  type StoredBody,
} from "../common/budgets.ts";

/** A connection inside a transaction (transaction.ts). */
type Tx = Sql;

/** The budget lock's advisory key ("budg"). */
const BUDGET_LOCK = 0x62756467;

/** What a log entry copied from another store keeps of it besides the rejection. */
export interface CopiedEntry {
  replayedAt: number | null;
  replayResult: string | null;
}

interface Queued {
  entry: NewEntry;
  at: number;
  result: string | null;
  copied: CopiedEntry | null;
}

export const RETURNING_LEAVING = 'body_store AS "bodyStore", body_hash AS "bodyHash", cost';

/** One batch's view of the budgets: counters (exact once locked), and the log entries it has yet to place. */
export class BatchBudget implements BudgetCounters {
  /** Totals as committed when the lock was taken; null before. */
  private stored: Map<string, number> | null = null;
  private readonly deltas = new Map<CounterName, number>();
  private readonly queue: Queued[] = [];

  constructor(
    private readonly tx: Tx,
    private readonly limits: StoreLimits,
  ) {}

  /** Takes the budget lock (once per transaction) and reads the totals. */
  async lock(): Promise<void> {
    if (this.stored) return;
    await this.tx`SELECT pg_advisory_xact_lock(${BUDGET_LOCK})`;
    this.stored = new Map(
      (await this.tx<{ name: string; value: number }[]>`SELECT name, value FROM budget_counters`).map((r) => [
        r.name,
        r.value,
      ]),
    );
  }

  get(name: CounterName): number {
    if (!this.stored) throw new Error(`budget counter ${name} read before the budget lock`);
    return (this.stored.get(name) ?? 0) + (this.deltas.get(name) ?? 0);
  }

  add(name: CounterName, delta: number): void {
    if (delta !== 0) this.deltas.set(name, (this.deltas.get(name) ?? 0) + delta);
  }

  /**
   * Queues `r` (a refusal or a repair) for the log, placed at the end of the batch (or before a
   * write that reads the log); `headOnly`: its body's head only, with the whole body's size and hash.
   */
  log(r: Rejection, at: number, result: string | null, headOnly = false): void {
    this.queue.push({
      entry: newEntry(r, headOnly ? { size: r.body.byteLength, hash: null } : null),
      at,
      result,
      copied: null,
    });
  }

  /** An entry of another store's log (copy), placed now: `headOf` when only its body's head exists. */
  async load(
    r: Rejection,
    at: number,
    result: string | null,
    copied: CopiedEntry,
    head: { size: number; hash: string | null } | null,
  ): Promise<StoredBody | null> {
    await this.flushLog();
    return this.insert({ entry: newEntry(r, head), at, result, copied });
  }

  /** Places every queued entry, under the lock: before a write that reads or removes log entries, and at the end. */
  async flushLog(): Promise<void> {
    await this.lock();
    for (const q of this.queue.splice(0)) await this.insert(q);
  }

  /** Entries that left (deleted, forgotten, evicted), out of the totals; a shared body goes with its last entry. */
  async release(entries: readonly LeavingEntry[]): Promise<void> {
    for (const e of entries) {
      countOut(this, e);
      if (e.bodyStore !== "shared" || e.bodyHash === null) continue;
      const [left] = await this.tx<{ refs: number; stored: number; size: number }[]>`
        UPDATE bodies SET refs = refs - 1 WHERE hash = ${e.bodyHash} RETURNING refs, octet_length(data) AS stored, size`;
      if (!left || left.refs > 0) continue;
      await this.tx`DELETE FROM bodies WHERE hash = ${e.bodyHash}`;
      countBodyOut(this, left);
    }
  }

  /** Adds the batch's counter changes (names in one order); the lock is taken only when held reports or the log changed. */
  async finish(): Promise<void> {
    if (this.queue.length > 0) await this.flushLog();
    const names = [...this.deltas.keys()].filter((n) => this.deltas.get(n) !== 0).sort();
    if (names.length === 0) return;
    await this.tx`
      INSERT INTO budget_counters (name, value) SELECT * FROM unnest(${names}::text[], ${names.map((n) => this.deltas.get(n)!)}::bigint[])
      ORDER BY 1 ON CONFLICT (name) DO UPDATE SET value = budget_counters.value + excluded.value`;
  }

  private async insert({ entry, at, result, copied }: Queued): Promise<StoredBody | null> {
    const placed = await this.place(entry);
    if (!placed) return null;
    const r = entry.rejection;
    await this.tx`INSERT INTO rejected_reports ${this.tx({
      received_at: at,
      endpoint: r.endpoint,
      reason: r.reason,
      result,
      field: r.field,
      message: r.message,
      random_id: r.randomId,
      body: placed.body,
      body_store: placed.bodyStore,
      body_size: placed.bodySize,
      body_hash: placed.bodyHash,
      cost: placed.cost,
      replayed_at: copied?.replayedAt ?? null,
      replay_result: copied?.replayResult ?? null,
    })}`;
    return placed;
  }

  /** Where the entry's body goes (a whole body kept once, or its head in the ring), counted in; null: not kept, counted. */
  private async place(entry: NewEntry): Promise<StoredBody | null> {
    const long = entry.headOf === null && entry.rejection.body.byteLength > HEAD_BYTES;
    const known = long && (await this.tx`SELECT 1 FROM bodies WHERE hash = ${entry.hash}`).length > 0;
    const whole = planWhole(entry, this, this.limits.logBytes, () => known);
    if (whole?.kind === "known") await this.tx`UPDATE bodies SET refs = refs + 1 WHERE hash = ${entry.hash}`;
    if (whole?.kind === "new") {
      await this
        .tx`INSERT INTO bodies (hash, size, codec, data, refs) VALUES (${entry.hash}, ${whole.placed.bodySize}, ${whole.codec}, ${whole.data}, 1)`;
    }
    if (whole) {
      countIn(this, entry, whole.placed, whole);
      return whole.placed;
    }
    const placed = headOf(entry);
    if (!(await this.makeRoom(placed.cost))) {
      countDropped(this, entry);
      return null;
    }
    countIn(this, entry, placed, { kind: "head" });
    return placed;
  }

  /** Removes the oldest head-only entries until `need` more bytes fit; false when they cannot. */
  private async makeRoom(need: number): Promise<boolean> {
    while (this.get("log.bytes") + need > this.limits.logBytes) {
      if (this.get("log.head_entries") <= 0) return false;
      const gone = await this.tx.unsafe<LeavingEntry[]>(
        `DELETE FROM rejected_reports WHERE id IN (SELECT id FROM rejected_reports WHERE body_store = 'head' ORDER BY id LIMIT ${EVICT_CHUNK}) RETURNING ${RETURNING_LEAVING}`,
      );
      if (gone.length === 0) return false;
      await this.release(gone);
      this.add("log.evicted_total", gone.length);
    }
    return true;
  }
}

/** Every counter as committed. */
export async function committedCounters(sql: Sql): Promise<Record<CounterName, number>> {
  const rows = await sql<{ name: string; value: number }[]>`SELECT name, value FROM budget_counters`;
  const values = new Map(rows.map((r) => [r.name, r.value]));
  return Object.fromEntries(COUNTERS.map((n) => [n, values.get(n) ?? 0])) as Record<CounterName, number>;
}
