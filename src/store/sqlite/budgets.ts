// Budgets of what is stored besides executions: the rejected-reports log (refused, repaired and
// unknown-path bodies) and held reports. Without them one anonymous client filled the disk:
// 200 KB junk bodies added 5.4 GB in 30 s, one repeated 409 update 0.7 GB in 15 s (issue 15).
//
// The log, within `logBytes`:
// - every body is hashed (SHA-256); a body already stored is shared, never stored again;
// - a new body is stored zstd-compressed (level 3: 5-15x on log-like text, ~0.2 ms for 200 KB of
//   random text, 15x faster than gzip there) while the log uses less than WHOLE_SHARE of its budget;
// - past that, an entry keeps reason, size, hash and the first HEAD_BYTES bytes of its body; such
//   head-only entries form a ring in the rest of the budget: the oldest go first to make room;
// - when not even that fits (older whole entries fill the budget: they are never evicted, only
//   retention, prune or delete remove them) the entry is counted, not stored.
// Held reports, within `heldBytes`: compressed too; past it, the oldest are applied on their own
// (writes.ts), as expire-held does after they waited too long. Nothing acknowledged is dropped.
//
// The running totals live in `budget_counters`, changed in the same transaction as the rows they
// count: exact for every connection, and no scan per write.
import type { Database } from "bun:sqlite";
import type { Rejection } from "../../domain/rejection.ts";
import type { BudgetStatus, StoreLimits } from "../contract.ts";

/** Bytes of a body kept when the body itself is not: enough to see what it was. */
export const HEAD_BYTES = 256;
/** Whole bodies are kept while the log uses less than this share of its budget; head-only entries fill the rest. */
const WHOLE_SHARE = 0.75;
/** A log row's bytes besides its texts and body: key, times, index entries (an estimate). */
const ROW_BYTES = 64;
/** Head-only entries removed per statement while making room. */
const EVICT_CHUNK = 64;

export const DEFAULT_LIMITS: StoreLimits = { logBytes: 64 * 1024 * 1024, heldBytes: 16 * 1024 * 1024 };

/** What a row without a cost (logged before migration 0009) counts: the same estimate, in SQL. */
export const LEGACY_LOG_COST = `${ROW_BYTES} + length("body") + length("message") + coalesce(length("field"), 0) + coalesce(length("random_id"), 0)`;

const COUNTERS = [
  "log.bytes",
  "log.entries",
  "log.body_bytes",
  "log.body_raw_bytes",
  "log.head_entries",
  "log.deduplicated_total",
  "log.truncated_total",
  "log.evicted_total",
  "log.dropped_total",
  "log.dropped_bytes_total",
  "held.bytes",
  "held.count",
  "held.expired_total",
  "held.overflowed_total",
  // The relay's outbox (relay.ts): running totals, counters, and the pause switch (1 = paused).
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
export class Counters {
  private values = new Map<CounterName, number>();
  private changed = new Set<CounterName>();
  private readonly get1;
  private readonly put;

  constructor(sqlite: Database) {
    this.get1 = sqlite.query<{ value: number }, [string]>("SELECT value FROM budget_counters WHERE name = ?");
    this.put = sqlite.query<never, [string, number]>("INSERT INTO budget_counters (name, value) VALUES (?, ?) ON CONFLICT DO UPDATE SET value = excluded.value");
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

/** The columns of a log entry that say where its body is. */
export interface StoredBody {
  body: Buffer;
  bodyStore: "inline" | "shared" | "head";
  bodySize: number;
  bodyHash: string;
  cost: number;
}

/** What leaving entries said about their bodies (RETURNING of a DELETE). */
export interface LeavingEntry {
  bodyStore: string;
  bodyHash: string | null;
  cost: number;
}

const sha256 = (bytes: Uint8Array): string => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const asBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

export function createLogBudget(sqlite: Database, counters: Counters, limits: { current: StoreLimits }) {
  const findBody = sqlite.query<{ size: number }, [string]>("SELECT size FROM bodies WHERE hash = ?");
  const addRef = sqlite.query<never, [string]>("UPDATE bodies SET refs = refs + 1 WHERE hash = ?");
  const insertBody = sqlite.query<never, [string, number, string, Buffer]>("INSERT INTO bodies (hash, size, codec, data, refs) VALUES (?, ?, ?, ?, 1)");
  const dropRef = sqlite.query<{ refs: number; stored: number; size: number }, [string]>("UPDATE bodies SET refs = refs - 1 WHERE hash = ? RETURNING refs, length(data) AS stored, size");
  const deleteBody = sqlite.query<never, [string]>("DELETE FROM bodies WHERE hash = ?");
  const evictHeads = sqlite.query<LeavingEntry, [number]>(
    `DELETE FROM rejected_reports WHERE id IN (SELECT id FROM rejected_reports WHERE body_store = 'head' ORDER BY id LIMIT ?)
     RETURNING body_store AS bodyStore, body_hash AS bodyHash, coalesce(cost, ${LEGACY_LOG_COST}) AS cost`,
  );

  /** Counts entries that left (deleted, forgotten, evicted) out of the totals; shared bodies lose a reference. */
  function release(entries: readonly LeavingEntry[]): void {
    for (const e of entries) {
      counters.add("log.entries", -1);
      counters.add("log.bytes", -e.cost);
      if (e.bodyStore === "head") counters.add("log.head_entries", -1);
      if (e.bodyStore !== "shared" || e.bodyHash === null) continue;
      const left = dropRef.get(e.bodyHash);
      if (!left || left.refs > 0) continue;
      deleteBody.run(e.bodyHash);
      counters.add("log.bytes", -left.stored);
      counters.add("log.body_bytes", -left.stored);
      counters.add("log.body_raw_bytes", -left.size);
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
     * does not fit at all and is only counted.
     */
    place(r: Rejection): StoredBody | null {
      const raw = r.body;
      const size = raw.byteLength;
      const hash = sha256(raw);
      const rowCost = ROW_BYTES + r.message.length + (r.field?.length ?? 0) + (r.randomId?.length ?? 0);
      const wholeLimit = limits.current.logBytes * WHOLE_SHARE;
      const used = counters.get("log.bytes");
      let placed: StoredBody | null = null;
      if (size <= HEAD_BYTES) {
        if (used + rowCost + size <= wholeLimit) placed = { body: asBuffer(raw), bodyStore: "inline", bodySize: size, bodyHash: hash, cost: rowCost + size };
      } else if (findBody.get(hash)) {
        if (used + rowCost <= wholeLimit) {
          addRef.run(hash);
          counters.add("log.deduplicated_total", 1);
          placed = { body: Buffer.alloc(0), bodyStore: "shared", bodySize: size, bodyHash: hash, cost: rowCost };
        }
      } else if (used + rowCost < wholeLimit) {
        const packed = Bun.zstdCompressSync(raw, { level: 3 });
        const [codec, data] = packed.byteLength < size ? (["zstd", asBuffer(packed)] as const) : (["none", asBuffer(raw)] as const);
        if (used + rowCost + data.byteLength <= wholeLimit) {
          insertBody.run(hash, size, codec, data);
          counters.add("log.bytes", data.byteLength);
          counters.add("log.body_bytes", data.byteLength);
          counters.add("log.body_raw_bytes", size);
          placed = { body: Buffer.alloc(0), bodyStore: "shared", bodySize: size, bodyHash: hash, cost: rowCost };
        }
      }
      if (placed === null) {
        // Past the share for whole bodies: the head only, in the ring of head-only entries.
        const head = asBuffer(raw.subarray(0, HEAD_BYTES));
        const cost = rowCost + head.byteLength;
        if (!makeRoom(cost)) {
          counters.add("log.dropped_total", 1);
          counters.add("log.dropped_bytes_total", size);
          return null;
        }
        placed = { body: head, bodyStore: "head", bodySize: size, bodyHash: hash, cost };
        counters.add("log.head_entries", 1);
        if (size > head.byteLength) {
          counters.add("log.truncated_total", 1);
          counters.add("log.dropped_bytes_total", size - head.byteLength);
        }
      }
      counters.add("log.entries", 1);
      counters.add("log.bytes", placed.cost);
      return placed;
    },
  };
}

/** The budgets as the contract reports them, from committed counters. */
export function budgetStatus(c: Record<CounterName, number>, limits: StoreLimits): BudgetStatus {
  return {
    log: {
      limitBytes: limits.logBytes,
      usedBytes: c["log.bytes"],
      entries: c["log.entries"],
      bodyBytes: c["log.body_bytes"],
      bodyRawBytes: c["log.body_raw_bytes"],
      headOnly: c["log.head_entries"],
      deduplicated: c["log.deduplicated_total"],
      truncated: c["log.truncated_total"],
      evicted: c["log.evicted_total"],
      dropped: c["log.dropped_total"],
      droppedBytes: c["log.dropped_bytes_total"],
    },
    held: {
      limitBytes: limits.heldBytes,
      usedBytes: c["held.bytes"],
      count: c["held.count"],
      expired: c["held.expired_total"],
      overflowed: c["held.overflowed_total"],
    },
  };
}
