// Budgets of what is stored besides executions, the part both engines share: what the
// rejected-reports log and held reports may cost, where a new log entry's body goes, how held
// reports are kept, and the running totals' names (docs/decisions/2026-11-24-budgets-and-faults.md). Each engine reads and writes its own rows and counters around these rules; their
// totals are kept in the same transaction as the rows they count.
//
// The log, within `logBytes`:
// - every body is hashed (SHA-256); a body already stored is shared, never stored again;
// - a new body is stored zstd-compressed (level 3: 5-15x on log-like text, ~0.2 ms for 200 KB of
//   random text, 15x faster than gzip there) while the log uses less than WHOLE_SHARE of its budget;
// - past that, an entry keeps reason, size, hash and the first HEAD_BYTES bytes of its body; such
//   head-only entries form a ring in the rest of the budget: the oldest go first to make room;
// - when not even that fits (older whole entries fill the budget: they are never evicted, only
//   retention, prune or delete remove them) the entry is counted, not stored.
// Held reports, within `heldBytes`: compressed too; past it, the oldest are applied on their own,
// as expire-held does after they waited too long. Nothing acknowledged is dropped.
import { byExitCode } from "../../domain/error-category.ts";
import type { Report } from "../../domain/execution.ts";
import type { Rejection } from "../../domain/rejection.ts";
import type { BudgetStatus, StoreLimits } from "../contract/maintenance.ts";

/** Bytes of a body kept when the body itself is not: enough to see what it was. */
export const HEAD_BYTES = 256;
/** Whole bodies are kept while the log uses less than this share of its budget; head-only entries fill the rest. */
const WHOLE_SHARE = 0.75;
/** A row's bytes besides its texts and body: key, times, index entries (an estimate). */
export const ROW_BYTES = 64;
/** Head-only entries removed per statement while making room; held reports applied per statement past their budget. */
export const EVICT_CHUNK = 64;

export const DEFAULT_LIMITS: StoreLimits = { logBytes: 64 * 1024 * 1024, heldBytes: 16 * 1024 * 1024 };

export const COUNTERS = [
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
] as const;
export type CounterName = (typeof COUNTERS)[number];

/** The running totals as one transaction sees them (each engine keeps them in a table of its own). */
export interface BudgetCounters {
  get(name: CounterName): number;
  add(name: CounterName, delta: number): void;
}

const sha256 = (bytes: Uint8Array): string => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const asBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** The columns of a log entry that say where its body is. */
export interface StoredBody {
  body: Buffer;
  bodyStore: "inline" | "shared" | "head";
  bodySize: number;
  bodyHash: string;
  cost: number;
}

/** What a leaving entry says about its body (RETURNING of a DELETE). */
export interface LeavingEntry {
  bodyStore: string;
  bodyHash: string | null;
  cost: number;
}

/**
 * A new entry of the log: its rejection, its body's SHA-256, and with `headOf`, that its body is
 * only the head of a body of that size (a head-only entry copied as it was).
 */
export interface NewEntry {
  rejection: Rejection;
  hash: string;
  headOf: { size: number } | null;
}

export const newEntry = (
  rejection: Rejection,
  headOf: { size: number; hash: string | null } | null = null,
): NewEntry => ({
  rejection,
  hash: headOf?.hash ?? sha256(rejection.body),
  headOf: headOf && { size: headOf.size },
});

/**
 * Where a new entry's whole body goes while whole bodies have room: "inline" (short), "known" (a
 * body stored already: one more reference), "new" (stored once, compressed when smaller); null
 * when it does not fit whole, or only its head exists. `known` is asked only for long bodies.
 */
export function planWhole(
  entry: NewEntry,
  c: BudgetCounters,
  logBytes: number,
  known: (hash: string) => boolean,
):
  | { kind: "inline" | "known"; placed: StoredBody }
  | { kind: "new"; placed: StoredBody; codec: "zstd" | "none"; data: Buffer }
  | null {
  if (entry.headOf !== null) return null;
  const raw = entry.rejection.body;
  const size = raw.byteLength;
  const { hash } = entry;
  const rowCost = costOf(entry.rejection);
  const wholeLimit = logBytes * WHOLE_SHARE;
  const used = c.get("log.bytes");
  const shared = { body: Buffer.alloc(0), bodyStore: "shared", bodySize: size, bodyHash: hash, cost: rowCost } as const;
  if (size <= HEAD_BYTES) {
    return used + rowCost + size <= wholeLimit
      ? {
          kind: "inline",
          placed: { body: asBuffer(raw), bodyStore: "inline", bodySize: size, bodyHash: hash, cost: rowCost + size },
        }
      : null;
  }
  if (known(hash)) return used + rowCost <= wholeLimit ? { kind: "known", placed: shared } : null;
  if (used + rowCost >= wholeLimit) return null;
  const packed = Bun.zstdCompressSync(raw, { level: 3 });
  const [codec, data] =
    packed.byteLength < size ? (["zstd", asBuffer(packed)] as const) : (["none", asBuffer(raw)] as const);
  return used + rowCost + data.byteLength <= wholeLimit ? { kind: "new", placed: shared, codec, data } : null;
}

/** What an entry costs besides a shared body: its row and texts. */
const costOf = (r: Rejection): number =>
  ROW_BYTES + r.message.length + (r.field?.length ?? 0) + (r.randomId?.length ?? 0);

/** The head-only form of a new entry, and what it costs. */
export function headOf(entry: NewEntry): StoredBody {
  const raw = entry.rejection.body;
  const head = asBuffer(raw.subarray(0, HEAD_BYTES));
  return {
    body: head,
    bodyStore: "head",
    bodySize: entry.headOf?.size ?? raw.byteLength,
    bodyHash: entry.hash,
    cost: costOf(entry.rejection) + head.byteLength,
  };
}

/** Counts a placed entry in: a whole body stored, shared, or cut to its head (unless it came so). */
export function countIn(
  c: BudgetCounters,
  entry: NewEntry,
  placed: StoredBody,
  stored: { kind: "inline" | "known" | "new" | "head"; data?: Buffer },
): void {
  if (stored.kind === "known") c.add("log.deduplicated_total", 1);
  if (stored.kind === "new" && stored.data) {
    c.add("log.bytes", stored.data.byteLength);
    c.add("log.body_bytes", stored.data.byteLength);
    c.add("log.body_raw_bytes", placed.bodySize);
  }
  if (stored.kind === "head") {
    c.add("log.head_entries", 1);
    // A head copied as it was is no body cut here.
    if (entry.headOf === null && placed.bodySize > placed.body.byteLength) {
      c.add("log.truncated_total", 1);
      c.add("log.dropped_bytes_total", placed.bodySize - placed.body.byteLength);
    }
  }
  c.add("log.entries", 1);
  c.add("log.bytes", placed.cost);
}

/** An entry the log had no room for: counted, not stored. */
export function countDropped(c: BudgetCounters, entry: NewEntry): void {
  c.add("log.dropped_total", 1);
  c.add("log.dropped_bytes_total", entry.headOf?.size ?? entry.rejection.body.byteLength);
}

/** An entry gone (deleted, forgotten, evicted), out of the totals (its shared body: countBodyOut). */
export function countOut(c: BudgetCounters, e: LeavingEntry): void {
  c.add("log.entries", -1);
  c.add("log.bytes", -e.cost);
  if (e.bodyStore === "head") c.add("log.head_entries", -1);
}

/** A shared body removed with the last entry that pointed to it. */
export function countBodyOut(c: BudgetCounters, body: { stored: number; size: number }): void {
  c.add("log.bytes", -body.stored);
  c.add("log.body_bytes", -body.stored);
  c.add("log.body_raw_bytes", -body.size);
}

/** Whether the body a row shows is the whole body (a head-only entry of a short body is whole too). */
export function entryBody(row: {
  bodyStore: string;
  body: Uint8Array;
  bodySize: number | null;
  sharedCodec: string | null;
  sharedData: Uint8Array | null;
}): {
  body: Uint8Array;
  bodySize: number;
  bodyKept: boolean;
} {
  const whole =
    row.bodyStore === "shared" && row.sharedData !== null
      ? row.sharedCodec === "zstd"
        ? Bun.zstdDecompressSync(row.sharedData)
        : row.sharedData
      : null;
  const bytes = whole ?? row.body;
  const size = row.bodySize ?? bytes.byteLength;
  return {
    body: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    bodySize: size,
    bodyKept: row.bodyStore === "shared" ? whole !== null : bytes.byteLength >= size,
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

// ------------------------------------------------------------------ held reports

/** JSON shorter than this is kept as it is: compressing it saves nothing worth the call. */
const COMPRESS_FROM = 256;

export interface HeldColumns {
  report: string;
  codec: "zstd" | null;
  data: Buffer | null;
  cost: number;
}

/** The columns that keep `report`: zstd-compressed when that is smaller (log-like error texts: 5-15x). */
export function encodeHeld(report: Report): HeldColumns {
  const json = JSON.stringify(report);
  const overhead = ROW_BYTES + report.executionId.length + report.randomId.length;
  if (json.length >= COMPRESS_FROM) {
    const packed = Bun.zstdCompressSync(Buffer.from(json));
    if (packed.byteLength < json.length)
      return { report: "", codec: "zstd", data: asBuffer(packed), cost: overhead + packed.byteLength };
  }
  return { report: json, codec: null, data: null, cost: overhead + json.length };
}

/** A held report as stored; one held since before the exit-code rule is read with it (domain byExitCode), so no held report needs rewriting. */
export function decodeHeld(row: { report: string; codec: string | null; data: Uint8Array | null }): Report {
  const json =
    row.codec === "zstd" && row.data ? Buffer.from(Bun.zstdDecompressSync(row.data)).toString("utf8") : row.report;
  return byExitCode(JSON.parse(json) as Report);
}
