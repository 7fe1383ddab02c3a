// The SQLite Store: one connection, reads and writes, open hours in memory.
// bun:sqlite is synchronous, so the engine works synchronously inside (a batch runs start to
// COMMIT without yielding) and fulfils the asynchronous contract at this one door. The steps are
// module functions over the connection's StoreState (store-state.ts): what a read or a batch
// checks first there, the rollup reads in rollup-reads.ts.
import type { Database } from "bun:sqlite";
import { DAY } from "../../domain/time.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import { READS, type AllReads, type Store, type WriteOp, type WriteResult } from "../contract/store.ts";
import { budgetStatus } from "../common/budgets.ts";
import { guardReads, type EngineReads } from "../common/door.ts";
import { rebuildDays } from "../common/rebuild.ts";
import type { Db } from "./database.ts";
import type { FileGuard } from "./file-guard.ts";
import { readRollups, rollupCells } from "./rollup-reads.ts";
import type { Scans } from "./scan-threads.ts";
import { checkState, createStoreState, recount, storeFailure, seen, refuseIf, type StoreState } from "./store-state.ts";

/** The Store, with the synchronous write the engine's serving commit calls directly. */
export interface SqliteStore extends Store {
  writeNow(ops: readonly WriteOp[]): WriteResult[];
  /** While serving, the scans of executions run on read threads (scan-threads.ts); null: here again. */
  offload(scans: Scans | null): void;
  rebuildNow(onDay?: (day: number, end: number) => void): void;
  /** The last damage a read or write met (this process), or null. */
  damage(): string | null;
}

export interface SqliteStoreOptions {
  /** Watches the files under the connection (engine.ts); none for a store over a bare connection. */
  guard?: FileGuard;
  limits?: StoreLimits;
  /** Rollup labels held in memory (OpenOptions.labelLimit); every one met by default. */
  labelLimit?: number | null;
  /** Month cells summed from the day cells once a load has passed them, not counted as records come (OpenOptions.deferMonths). */
  deferMonths?: boolean;
}

export function createSqliteStore(sqlite: Database, db: Db, opts: SqliteStoreOptions = {}): SqliteStore {
  const state = createStoreState(sqlite, db, opts.limits, opts.labelLimit, opts.deferMonths);
  const { guard } = opts;
  return {
    ...guardReads<AllReads>(engineReads(state), READS, { translate: (e) => seen(state, e) }),
    offload(next) {
      state.scans = next;
    },
    write: async (ops) => writeNow(state, ops, guard),
    async rebuildRollups(onDay) {
      try {
        rebuildNow(state, onDay);
      } catch (e) {
        throw seen(state, e);
      }
    },
    setLimits(next) {
      state.limits.current = { ...next };
    },
    setRelay(policy) {
      state.relayPolicy.current = policy;
    },
    // One server per file (the serve lock): nobody else runs its jobs.
    leaseJob: (_name, _everyMs, _at, fn) => fn(),
    close: async () => sqlite.close(),
    writeNow: (ops) => writeNow(state, ops, guard),
    rebuildNow: (onDay) => rebuildNow(state, onDay),
    damage: () => state.damage,
  };
}

/**
 * One batch, start to COMMIT. The files must be the ones opened: looked at after COMMIT, before
 * anything is acknowledged (a batch committed into a removed file is saved by the guard, and never
 * acknowledged); once they changed, no batch begins.
 */
export function writeNow(state: StoreState, ops: readonly WriteOp[], guard?: FileGuard): WriteResult[] {
  try {
    refuseIf(guard?.problem);
    checkState(state, true);
    const results = state.writes.write(ops);
    refuseIf(guard?.check());
    return results;
  } catch (e) {
    throw storeFailure(state, e);
  }
}

/** Every rollup cell counted again from the records: stored days here, open hours into memory. */
function rebuildNow(state: StoreState, onDay?: (day: number, end: number) => void): void {
  const { sqlite, reads, open, writes } = state;
  const span = reads.recordSpan();
  // Every cell is counted again, months with their days: no month is left to sum.
  sqlite.transaction(() => {
    sqlite.run("DELETE FROM rollups");
    sqlite.run("UPDATE rollup_state SET months_from = NULL");
  })();
  recount(state);
  if (!span) return;
  // Hours from the fold mark on are open hours, recounted into memory above.
  const foldedUntil = open.foldedUntil;
  for (const day of rebuildDays(span, onDay, foldedUntil)) writes.rebuildDay(day, Math.min(day + DAY, foldedUntil));
}

/**
 * The engine's reads, synchronous inside; the door (common/door.ts) makes each read the
 * contract's, damage met by one (here or on a read thread) a clear error, remembered for health.
 * While serving, the scans of executions run on read threads (`state.scans`), never on the thread
 * that acknowledges reports.
 */
function engineReads(state: StoreState): EngineReads<AllReads> {
  const { reads, maintenance, alerts, issues, writes, limits } = state;
  const inner: EngineReads<AllReads> = {
    getExecutions: (randomId) => reads.getExecutions(randomId),
    listExecutions: (filter, page) => (state.scans ?? reads).listExecutions(filter, page),
    typesOfApps: (apps) => (state.scans ?? reads).typesOfApps(apps),
    pageExecutions: (filter, page) => (state.scans ?? reads).pageExecutions(filter, page),
    // Each chunk is its own query, run to completion before it is handed over.
    executionChunks: (filter, page) => (state.scans ?? reads).executionChunks(filter, page),
    async *iterateExecutions(filter) {
      for await (const chunk of inner.executionChunks(filter)) yield* chunk;
    },
    errorTextCounts: () => (state.scans ?? reads).errorTextCounts(),
    // On the main thread: short index ranges (store/common/heard.ts).
    countUpdatedSince: (filter, since) => reads.countUpdatedSince(filter, since),
    listUpdatedSince: (filter, since, limit) => reads.listUpdatedSince(filter, since, limit),
    changeMarker: () => reads.changeMarker(),
    signatures: (ids) => reads.signatures(ids),
    recordSpan: () => reads.recordSpan(),
    readRollups: (selection) => readRollups(state, selection),
    rollupCells: (grain, from, to) => rollupCells(state, grain, from, to),
    foldedUntil: () => {
      checkState(state);
      return state.open.foldedUntil;
    },
    stuckExecutions: (from, before, limit) => maintenance.stuckExecutions(from, before, limit),
    stuckCheckedUntil: () => maintenance.stuckCheckedUntil(),
    importMark: (source) => maintenance.importMark(source),
    countBefore: (cutoff) => maintenance.countBefore(cutoff),
    heldBefore: (cutoff, limit) => maintenance.heldBefore(cutoff, limit),
    listRejected: (opts) => maintenance.listRejected(opts),
    replayCandidates: (opts) => maintenance.replayCandidates(opts),
    countReplayed: (reasons, retryPrefix) => maintenance.countReplayed(reasons, retryPrefix),
    budgets: () => budgetStatus(writes.counters(), limits.current),
    heldChunks: (opts) => maintenance.heldChunks(opts),
    rejectedChunks: (opts) => maintenance.rejectedChunks(opts),
    alertStates: () => alerts.alertStates(),
    alertRuleMarks: () => alerts.alertRuleMarks(),
    alertHistory: (opts) => alerts.alertHistory(opts),
    alertDue: (dueBy, limit) => alerts.alertDue(dueBy, limit),
    alertQueue: () => alerts.alertQueue(),
    rejectedCounts: (from, to) => alerts.rejectedCounts(from, to),
    issueLinks: (ids) => issues.issueLinks(ids),
    relayStatus: () => writes.relayStatus(),
  };
  return inner;
}
