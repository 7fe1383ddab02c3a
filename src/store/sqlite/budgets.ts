// Budgets of what is stored besides executions, on SQLite: the running totals in
// `budget_counters` and the log's rows around the rules both engines share (../common/budgets.ts).
// Without budgets one anonymous client filled the disk: 200 KB junk bodies added 5.4 GB in 30 s,
// one repeated 409 update 0.7 GB in 15 s (issue 15).
//
// The running totals live in `budget_counters`, changed in the same transaction as the rows they
// count: exact for every connection, and no scan per write.
import type { Database } from "bun:sqlite";
import type { Rejection } from "../../domain/rejection.ts";
import {
  COUNTERS as BUDGET_COUNTERS,
  EVICT_CHUNK,
  ROW_BYTES,
  countBodyOut,
  countDropped,
  countIn,
  countOut,
  headOf,
  newEntry,
  planWhole,
  type BudgetCounters,
  type LeavingEntry,
  type StoredBody,
} from "../common/budgets.ts";
import type { StoreLimits } from "../contract/maintenance.ts";

/** What a row without a cost (logged before migration 0009) counts: the same estimate, in SQL. */
export const LEGACY_LOG_COST = `${ROW_BYTES} + length("body") + length("message") + coalesce(length("field"), 0) + coalesce(length("random_id"), 0)`;

/** The budgets' counters (../common/budgets.ts), and the relay outbox's (relay.ts): totals, counters, the pause switch (1 = paused). */
const COUNTERS = [
  ...BUDGET_COUNTERS,
  "relay.entries",
  "relay.bytes",
  "relay.sent_total",
  "relay.failed_total",
  "relay.refused_total",
  "relay.dropped_bound_total",
  "relay.discarded_total",
  "relay.paused",
] as const;
export type CounterName = (typeof COUNTERS)[number];

/**
 * The counters as one transaction sees them: read on first use, written back by flush() before
 * COMMIT. A batch that touches neither the log nor held reports never reads them.
 */
export class Counters implements BudgetCounters {
  private values = new Map<CounterName, number>();
  private changed = new Set<CounterName>();
  private readonly get1;
  private readonly put;

  constructor(sqlite: Database) {
    this.get1 = sqlite.query<{ value: number }, [string]>("SELECT value FROM budget_counters WHERE name = ?");
    this.put = sqlite.query<never, [string, number]>(
      "INSERT INTO budget_counters (name, value) VALUES (?, ?) ON CONFLICT DO UPDATE SET value = excluded.value",
    );
  }

  get(name: CounterName): number {
    let v = this.values.get(name);
    if (v === undefined) {
      v = this.get1.get(name)?.value ?? 0;
      this.values.set(name, v);
    }
    return v;
  }

  add(name: CounterName, delta: number): void {
    if (delta === 0) return;
    this.values.set(name, this.get(name) + delta);
    this.changed.add(name);
  }

  /** Writes what changed (inside the transaction); then forgets everything, so the next one reads afresh. */
  flush(): void {
    for (const name of this.changed) this.put.run(name, this.values.get(name)!);
    this.reset();
  }

  /** After a rollback: nothing read or changed is true any more. */
  reset(): void {
    this.values.clear();
    this.changed.clear();
  }

  /** Every counter as committed (outside a transaction). */
  all(): Record<CounterName, number> {
    this.reset();
    return Object.fromEntries(COUNTERS.map((n) => [n, this.get(n)])) as Record<CounterName, number>;
  }
}

export function createLogBudget(sqlite: Database, counters: Counters, limits: { current: StoreLimits }) {
  const findBody = sqlite.query<{ size: number }, [string]>("SELECT size FROM bodies WHERE hash = ?");
  const addRef = sqlite.query<never, [string]>("UPDATE bodies SET refs = refs + 1 WHERE hash = ?");
  const insertBody = sqlite.query<never, [string, number, string, Buffer]>(
    "INSERT INTO bodies (hash, size, codec, data, refs) VALUES (?, ?, ?, ?, 1)",
  );
  const dropRef = sqlite.query<{ refs: number; stored: number; size: number }, [string]>(
    "UPDATE bodies SET refs = refs - 1 WHERE hash = ? RETURNING refs, length(data) AS stored, size",
  );
  const deleteBody = sqlite.query<never, [string]>("DELETE FROM bodies WHERE hash = ?");
  const evictHeads = sqlite.query<LeavingEntry, [number]>(
    `DELETE FROM rejected_reports WHERE id IN (SELECT id FROM rejected_reports WHERE body_store = 'head' ORDER BY id LIMIT ?)
     RETURNING body_store AS bodyStore, body_hash AS bodyHash, coalesce(cost, ${LEGACY_LOG_COST}) AS cost`,
  );

  /** Counts entries that left (deleted, forgotten, evicted) out of the totals; shared bodies lose a reference. */
  function release(entries: readonly LeavingEntry[]): void {
    for (const e of entries) {
      countOut(counters, e);
      if (e.bodyStore !== "shared" || e.bodyHash === null) continue;
      const left = dropRef.get(e.bodyHash);
      if (!left || left.refs > 0) continue;
      deleteBody.run(e.bodyHash);
      countBodyOut(counters, left);
    }
  }

  /** Removes the oldest head-only entries until `need` more bytes fit; false when they cannot. */
  function makeRoom(need: number): boolean {
    const limit = limits.current.logBytes;
    while (counters.get("log.bytes") + need > limit) {
      if (counters.get("log.head_entries") <= 0) return false;
      const gone = evictHeads.all(EVICT_CHUNK);
      if (gone.length === 0) return false;
      release(gone);
      counters.add("log.evicted_total", gone.length);
    }
    return true;
  }

  return {
    release,

    /**
     * Where the body of a new entry goes, and what the entry costs; counted in. Null: the entry
     * does not fit at all and is only counted. `headOf`: `r.body` is only the head of a body of
     * that size and hash (a head-only entry copied from another store), kept as such.
     */
    place(r: Rejection, head: { size: number; hash: string | null } | null = null): StoredBody | null {
      const entry = newEntry(r, head);
      const whole = planWhole(entry, counters, limits.current.logBytes, (hash) => Boolean(findBody.get(hash)));
      if (whole?.kind === "known") addRef.run(entry.hash);
      if (whole?.kind === "new") insertBody.run(entry.hash, whole.placed.bodySize, whole.codec, whole.data);
      if (whole) {
        countIn(counters, entry, whole.placed, whole);
        return whole.placed;
      }
      // Past the share for whole bodies: the head only, in the ring of head-only entries.
      const placed = headOf(entry);
      if (!makeRoom(placed.cost)) {
        countDropped(counters, entry);
        return null;
      }
      countIn(counters, entry, placed, { kind: "head" });
      return placed;
    },
  };
}
