// What the SQLite Store works with (store.ts, rollup-reads.ts): the connection's reads and write
// side, the caches both share (open hours, counted old hours), the controls, and
// what tells this connection that another one committed. Built once per connection.
import type { Database, Statement } from "bun:sqlite";
import type { Execution } from "../../domain/execution.ts";
import { RecentlyUsed } from "../../domain/recently-used.ts";
import type { RelayPolicy } from "../../domain/relay.ts";
import { StorageDamagedError, StorageUnavailableError } from "../contract/errors.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import { DEFAULT_LIMITS } from "../common/budgets.ts";
import { OldHours } from "../common/old-hours.ts";
import { SumCache } from "../common/sum-cells.ts";
import { createAlertReads } from "./alerts.ts";
import type { Db } from "./database.ts";
import { asDamage, isCorruption } from "./integrity.ts";
import { createIssueReads } from "./issues.ts";
import { createMaintenanceReads } from "./maintenance-reads.ts";
import { OpenHours } from "./open-hours.ts";
import { createSqliteReads, sqliteLabels } from "./reads.ts";
import type { Scans } from "./scan-threads.ts";
import type { MonthMark } from "./write-context.ts";
import { createSqliteWrites } from "./writes.ts";

/** /telemetry runs in progress kept as written (~1 KB each): more than a busy server has in flight at once. */
const RUNS_IN_FLIGHT = 1024;

export interface StoreState {
  readonly sqlite: Database;
  readonly open: OpenHours;
  readonly old: OldHours;
  readonly months: MonthMark;
  /**
   * Sums of the stored slices a slice of every repo or platform adds up, while those cells stand:
   * of a few dimensions (small: a year's daily series is 3 kinds x 365 of them), and of every
   * dimension (large, fewer kept), apart so that the many small ones do not push out the large.
   */
  readonly sums: SumCache;
  readonly wholeSums: SumCache;
  /** /telemetry runs in progress as this connection last wrote them (write-context.ts inFlight). */
  readonly inFlight: RecentlyUsed<Execution>;
  readonly reads: ReturnType<typeof createSqliteReads>;
  readonly maintenance: ReturnType<typeof createMaintenanceReads>;
  readonly alerts: ReturnType<typeof createAlertReads>;
  readonly issues: ReturnType<typeof createIssueReads>;
  readonly writes: ReturnType<typeof createSqliteWrites>;
  readonly limits: { current: StoreLimits };
  readonly relayPolicy: { current: RelayPolicy | null };
  /** The last damage a read or write met (this process), or null. */
  damage: string | null;
  /** Read threads while serving: scans then never run on the thread that acknowledges reports. */
  scans: Scans | null;
  /** PRAGMA data_version moves when another connection commits (a CLI command beside the server). */
  readonly dataVersion: Statement<{ data_version: number }, []>;
  seenVersion: number;
  /** When data_version was last asked (reads of one request ask dozens of times within a millisecond). */
  checkedAt: number;
}

/** The state of a store over one connection, its caches counted from what is stored now. */
export function createStoreState(
  sqlite: Database,
  db: Db,
  limits: StoreLimits = DEFAULT_LIMITS,
  labelLimit: number | null = null,
  deferMonths = false,
  inFlightLimit = RUNS_IN_FLIGHT,
): StoreState {
  const open = new OpenHours();
  const old = new OldHours();
  const months: MonthMark = { from: Number.POSITIVE_INFINITY, defer: deferMonths };
  const reads = createSqliteReads(sqlite, db, sqliteLabels(sqlite, labelLimit));
  const limit = { current: limits };
  const relayPolicy: { current: RelayPolicy | null } = { current: null };
  const inFlight = new RecentlyUsed<Execution>(inFlightLimit);
  const state: StoreState = {
    sqlite,
    open,
    old,
    months,
    sums: new SumCache(8192),
    wholeSums: new SumCache(1024),
    reads,
    maintenance: createMaintenanceReads(db),
    alerts: createAlertReads(db),
    issues: createIssueReads(db),
    inFlight,
    writes: createSqliteWrites(sqlite, db, reads, open, old, months, limit, relayPolicy, inFlight),
    limits: limit,
    relayPolicy,
    damage: null,
    scans: null,
    dataVersion: sqlite.query<{ data_version: number }, []>("PRAGMA data_version"),
    seenVersion: -1,
    checkedAt: Number.NEGATIVE_INFINITY,
  };
  recount(state);
  state.seenVersion = state.dataVersion.get()!.data_version;
  return state;
}

/** Damage met by a read becomes a clear error (and is remembered for health); anything else stays as it is. */
export function seen(state: StoreState, e: unknown): unknown {
  const d = asDamage(e);
  if (d instanceof StorageDamagedError) state.damage = d.message;
  return d;
}

/** What a failed batch throws: SQLite's own errors mean the storage refused the write; anything else is a bug and stays as it is. */
export function storeFailure(state: StoreState, e: unknown): unknown {
  if (isCorruption(e)) return seen(state, e);
  return e instanceof Error && e.name === "SQLiteError" ? new StorageUnavailableError(e.message) : e;
}

/** A problem with the files under the connection (file-guard.ts) refuses the batch. */
export function refuseIf(problem: string | null | undefined): void {
  if (problem) throw new StorageUnavailableError(problem);
}

/** Neither the caches nor the open hours can be vouched for: counted again from what is stored. */
export function recount(state: StoreState): void {
  const { old, sums, wholeSums, reads, open } = state;
  state.inFlight.clear();
  old.clear();
  sums.clear();
  wholeSums.clear();
  reads.forgetFetched();
  reads.loadLabels();
  const foldedUntil = reads.storedFoldedUntil();
  open.recount(foldedUntil, reads.iterateExecutions({ from: foldedUntil }));
  state.months.from = reads.storedMonthsFrom();
}

/** Recounts what this connection can no longer vouch for; cheap when nothing changed. `mark`: a batch is about to begin. */
export function checkState(state: StoreState, mark = false): void {
  const now = performance.now();
  if (!mark && now - state.checkedAt < 1) return;
  state.checkedAt = now;
  const { data_version } = state.dataVersion.get()!;
  // This connection's own writes keep the open hours and the fold mark in memory as they commit;
  // another connection's commit moves data_version. A batch also compares the stored fold mark
  // (SQL on this very connection, as tests and upgrades run, leaves data_version as it is);
  // reads, which run by the hundred per request, do not.
  if (data_version !== state.seenVersion || (mark && state.reads.storedFoldedUntil() !== state.open.foldedUntil))
    recount(state);
  state.seenVersion = data_version;
}
