// The SQLite Store: one connection, reads and writes over one cell cache, open hours in memory.
// bun:sqlite is synchronous, so the engine works synchronously inside (a batch runs start to
// COMMIT without yielding) and fulfils the asynchronous contract at this one door.
import type { Database } from "bun:sqlite";
import { DAY } from "../../domain/time.ts";
import type { RelayPolicy } from "../../domain/relay.ts";
import { GRAINS, emptyData, hoursFrom, storedSlicesIn, withEverySlice, type RollupData } from "../../domain/rollup.ts";
import { decodePart } from "../../domain/rollup-codec.ts";
import { LabelCache } from "../common/labels.ts";
import { StorageDamagedError, StorageUnavailableError } from "../contract/errors.ts";
import type { RollupSelection } from "../contract/executions.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import { READS, type AllReads, type Store, type WriteOp, type WriteResult } from "../contract/store.ts";
import { DEFAULT_LIMITS, budgetStatus } from "../common/budgets.ts";
import { guardReads, type EngineReads } from "../common/door.ts";
import { rebuildDays } from "../common/rebuild.ts";
import { CellCache } from "./cell-cache.ts";
import type { Db } from "./database.ts";
import type { FileGuard } from "./file-guard.ts";
import { asDamage, isCorruption } from "./integrity.ts";
import { createMaintenanceReads } from "./maintenance-reads.ts";
import { OpenHours } from "./open-hours.ts";
import { createSqliteReads } from "./reads.ts";
import { createSqliteWrites } from "./writes.ts";
import { createAlertReads } from "./alerts.ts";
import { createIssueReads } from "./issues.ts";
import type { Scans } from "./scan-threads.ts";
import { OldHours, countHours, daysOf, sliceFilter } from "../common/old-hours.ts";
import { SumCache, only, sumByBucket } from "../common/sum-cells.ts";

/**
 * Parsed cells kept between batches and reads. Cells are small binary rows now, decoded in
 * microseconds, so the cache saves less than it costs in memory: with 8192 cells a bulk load
 * (seed) peaked at 229 MB of RSS at 1M installs, with 512 at ~175 MB (test/e2e/seed-runs-in-constant-memory.test.ts).
 */
const CACHED_CELLS = 512;

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
}

export function createSqliteStore(sqlite: Database, db: Db, opts: SqliteStoreOptions = {}): SqliteStore {
  const cells = new CellCache(CACHED_CELLS);
  const open = new OpenHours();
  const old = new OldHours();
  /**
   * Sums of the stored slices a slice of every repo or platform adds up, while those cells stand:
   * of a few dimensions (small), and of every dimension (large, fewer kept). A year's daily series
   * alone is 3 kinds x 365 day sums: in one cache of 1024, one /api/new over 365 days pushed out
   * its own sums of every dimension and made them again on every computation.
   */
  const sums = new SumCache(8192);
  const wholeSums = new SumCache(1024);
  const reads = createSqliteReads(sqlite, db);
  const maintenance = createMaintenanceReads(db);
  const alerts = createAlertReads(db);
  const issues = createIssueReads(db);
  const limits = { current: opts.limits ?? DEFAULT_LIMITS };
  const relayPolicy: { current: RelayPolicy | null } = { current: null };
  const writes = createSqliteWrites(sqlite, db, reads, cells, open, old, limits, relayPolicy);
  const guard = opts.guard;
  let damage: string | null = null;

  /** Damage met by a read becomes a clear error (and is remembered for health); anything else stays as it is. */
  const seen = (e: unknown): unknown => {
    const d = asDamage(e);
    if (d instanceof StorageDamagedError) damage = d.message;
    return d;
  };

  // PRAGMA data_version moves when another connection commits (a CLI command beside the server):
  // then neither the cached cells nor the open hours can be vouched for.
  const dataVersion = sqlite.query<{ data_version: number }, []>("PRAGMA data_version");
  let seenVersion = -1;
  const recount = () => {
    cells.clear();
    old.clear();
    sums.clear();
    wholeSums.clear();
    reads.loadLabels();
    const foldedUntil = reads.storedFoldedUntil();
    open.recount(foldedUntil, reads.iterateExecutions({ from: foldedUntil }));
  };
  /** When data_version was last asked (reads of one request ask dozens of times within a millisecond). */
  let checkedAt = Number.NEGATIVE_INFINITY;
  /** Recounts what this connection can no longer vouch for; cheap when nothing changed. */
  const checkState = (mark = false) => {
    const now = performance.now();
    if (!mark && now - checkedAt < 1) return;
    checkedAt = now;
    const { data_version } = dataVersion.get()!;
    // This connection's own writes keep the open hours and the fold mark in memory as they commit;
    // another connection's commit moves data_version. A batch also compares the stored fold mark
    // (SQL on this very connection, as tests and upgrades run, leaves data_version as it is);
    // reads, which run by the hundred per request, do not.
    if (data_version !== seenVersion || (mark && reads.storedFoldedUntil() !== open.foldedUntil)) recount();
    seenVersion = data_version;
  };
  recount();
  seenVersion = dataVersion.get()!.data_version;

  /**
   * The files must be the ones opened: looked at after COMMIT, before anything is acknowledged
   * (a batch committed into a removed file is saved by the guard, and never acknowledged); once
   * they changed, no batch begins.
   */
  const refuseIf = (problem: string | null | undefined) => {
    if (problem) throw new StorageUnavailableError(problem);
  };

  function writeNow(ops: readonly WriteOp[]): WriteResult[] {
    try {
      refuseIf(guard?.problem);
      checkState(true);
      const results = writes.write(ops);
      refuseIf(guard?.check());
      return results;
    } catch (e) {
      // SQLite's own errors mean the storage refused the write; anything else is a bug and stays as it is.
      if (isCorruption(e)) throw seen(e);
      throw e instanceof Error && e.name === "SQLiteError" ? new StorageUnavailableError(e.message) : e;
    }
  }

  /** Read threads while serving: scans then never run on the thread that acknowledges reports. */
  let scans: Scans | null = null;
  // Synchronous inside; the door (shared/door.ts) makes each read the contract's, damage met by
  // one (here or on a read thread) a clear error, remembered for health.
  const inner: EngineReads<AllReads> = {
    getExecutions: (randomId) => reads.getExecutions(randomId),
    listExecutions: (filter, page) => (scans ? scans.listExecutions(filter, page) : reads.listExecutions(filter, page)),
    newestOfApps: (apps) => (scans ? scans.newestOfApps(apps) : reads.newestOfApps(apps)),
    pageExecutions: (filter, page) => (scans ? scans.pageExecutions(filter, page) : reads.pageExecutions(filter, page)),
    // Each chunk is its own query, run to completion before it is handed over.
    executionChunks: (filter, page) =>
      scans ? scans.executionChunks(filter, page) : reads.executionChunks(filter, page),
    async *iterateExecutions(filter) {
      for await (const chunk of inner.executionChunks(filter)) yield* chunk;
    },
    errorTextCounts: () => (scans ? scans.errorTextCounts() : reads.errorTextCounts()),
    // On the main thread: asked with a window of hours (the live counts), a short index range.
    countUpdatedSince: (filter, since) => reads.countUpdatedSince(filter, since),
    changeMarker: () => reads.changeMarker(),
    signatures: (ids) => reads.signatures(ids),
    recordSpan: () => reads.recordSpan(),

    async readRollups(selection) {
      checkState();
      const { grain, slice, from, to, parts } = selection;
      const out: { bucket: number; data: RollupData }[] = [];
      // Hours before the hour cells: counted from their days' records (old-hours.ts).
      const first = grain === GRAINS.hour ? hoursFrom(open.foldedUntil) : Number.NEGATIVE_INFINITY;
      if (from < first) {
        const end = Math.min(to, first);
        const days = [
          ...reads
            .storedRollups({ grain: GRAINS.day, ...daysOf(from, end), parts: [] }, storedSlicesIn(slice))
            .values(),
        ]
          .flat()
          .map((c) => c.bucket);
        const counted = await old.read(slice, from, end, days, (s, day) => countDay(s, day));
        for (const c of counted) out.push({ bucket: c.bucket, data: only(c.data, parts) });
      }
      const start = Math.max(from, first);
      if (start < to) out.push(...storedAndOpen({ ...selection, from: start }, storedSlicesIn(slice)));
      return out;
    },

    rollupCells: (grain, from, to) => {
      checkState();
      const stored = reads.storedCells(grain, from, to);
      const cells =
        grain === GRAINS.hour ? [...stored, ...open.cellsOf(null, Math.max(from, open.foldedUntil), to)] : stored;
      return withEverySlice(cells, (slice, bucket, data) => ({ slice, bucket, data }));
    },

    foldedUntil: () => {
      checkState();
      return open.foldedUntil;
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

  return {
    ...guardReads<AllReads>(inner, READS, { translate: seen }),
    offload(next) {
      scans = next;
    },
    write: async (ops) => writeNow(ops),

    async rebuildRollups(onDay) {
      try {
        rebuildNow(onDay);
      } catch (e) {
        throw seen(e);
      }
    },
    setLimits(next) {
      limits.current = { ...next };
    },
    setRelay(policy) {
      relayPolicy.current = policy;
    },
    // One server per file (the serve lock): nobody else runs its jobs.
    leaseJob: (_name, _everyMs, _at, fn) => fn(),
    close: async () => sqlite.close(),
    writeNow,
    rebuildNow,
    damage: () => damage,
  };

  /** Hour cells of one day of a slice, counted from its executions (on a read thread while serving). */
  async function countDay(slice: string, day: number): Promise<{ bucket: number; data: RollupData }[]> {
    const filter = sliceFilter(slice, day, day + DAY);
    if (!scans) return countHours(reads.executionChunks(filter), slice);
    const counted = await scans.hourCells(filter, slice);
    const labels = new LabelCache();
    labels.learn(counted.labels);
    return counted.cells.map(({ bucket, ...parts }) => {
      const data = emptyData();
      for (const part of ["data", "apps", "errors"] as const) decodePart(data, part, parts[part], labels);
      return { bucket, data };
    });
  }

  /** Cells of stored slices (those a slice of every repo or platform adds up), summed per bucket: stored, and (hour grain) the open hours from memory. */
  function storedAndOpen(
    selection: RollupSelection,
    slices: readonly string[],
  ): { bucket: number; data: RollupData }[] {
    const { grain, from, to, parts } = selection;
    const foldedUntil = open.foldedUntil;
    const storedTo = grain === GRAINS.hour ? Math.min(to, foldedUntil) : to;
    const lists = reads.storedRollups({ ...selection, to: storedTo }, slices);
    let openHours = false;
    if (grain === GRAINS.hour && to > foldedUntil) {
      for (const slice of slices) {
        const hours = open.cellsOf(slice, Math.max(from, foldedUntil), to);
        if (hours.length === 0) continue;
        openHours = true;
        const list = lists.get(slice) ?? [];
        list.push(...hours.map(({ bucket, data }) => ({ bucket, data: only(data, parts) })));
        lists.set(slice, list);
      }
    }
    // Stored cells are decoded afresh when their bytes change, never changed in place: their sums
    // can be kept by their identity. Open hours are counted into in place: summed every time.
    const kept = openHours
      ? undefined
      : {
          cache: selection.dims === undefined ? wholeSums : sums,
          key: `${grain}|${parts.join(",")}|${selection.dims?.join(",") ?? "*"}|${slices.join(",")}`,
        };
    return sumByBucket([...lists.values()], kept);
  }

  function rebuildNow(onDay?: (day: number, end: number) => void): void {
    const span = reads.recordSpan();
    sqlite.transaction(() => sqlite.run("DELETE FROM rollups"))();
    recount();
    if (!span) return;
    // Hours from the fold mark on are open hours, recounted into memory above.
    const foldedUntil = open.foldedUntil;
    for (const day of rebuildDays(span, onDay, foldedUntil)) writes.rebuildDay(day, Math.min(day + DAY, foldedUntil));
  }
}
