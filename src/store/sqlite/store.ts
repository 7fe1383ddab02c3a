// The SQLite Store: one connection, reads and writes over one cell cache, open hours in memory.
// bun:sqlite is synchronous, so the engine works synchronously inside (a batch runs start to
// COMMIT without yielding) and fulfils the asynchronous contract at this one door.
import type { Database } from "bun:sqlite";
import { DAY } from "../../domain/time.ts";
import type { RelayPolicy } from "../../domain/relay.ts";
import type { Execution } from "../../domain/execution.ts";
import { GRAINS, emptyData, hoursFrom, repoClasses, withEveryRepo, type RollupData } from "../../domain/rollup.ts";
import { decodePart } from "../../domain/rollup-codec.ts";
import { LabelCache } from "../shared/labels.ts";
import { StorageDamagedError, StorageUnavailableError } from "../contract/errors.ts";
import type { RollupSelection } from "../contract/executions.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import type { Store, WriteOp, WriteResult } from "../contract/store.ts";
import { DEFAULT_LIMITS, budgetStatus } from "../shared/budgets.ts";
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
import { OldHours, countHours, daysOf, sliceFilter } from "../shared/old-hours.ts";
import { only, sumByBucket } from "../shared/sum-cells.ts";



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
  /** A read of the contract: synchronous inside, damage turned into StorageDamagedError. */
  const read =
    <A extends unknown[], R>(f: (...args: A) => R) =>
    async (...args: A): Promise<R> => {
      try {
        return f(...args);
      } catch (e) {
        throw seen(e);
      }
    };

  // PRAGMA data_version moves when another connection commits (a CLI command beside the server):
  // then neither the cached cells nor the open hours can be vouched for.
  const dataVersion = sqlite.query<{ data_version: number }, []>("PRAGMA data_version");
  let seenVersion = -1;
  const recount = () => {
    cells.clear();
    old.clear();
    reads.loadLabels();
    const foldedUntil = reads.storedFoldedUntil();
    open.recount(foldedUntil, reads.iterateExecutions({ from: foldedUntil }));
  };
  /** Recounts what this connection can no longer vouch for; cheap when nothing changed. */
  /** When data_version was last asked (reads of one request ask dozens of times within a millisecond). */
  let checkedAt = Number.NEGATIVE_INFINITY;
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

  /** Chunks of a read, each run to completion before it is handed over; damage met midway is a clear error. */
  async function* chunksOf<T>(chunks: Iterable<T>): AsyncGenerator<T, void> {
    const it = chunks[Symbol.iterator]();
    for (;;) {
      let next: IteratorResult<T>;
      try {
        next = it.next();
      } catch (e) {
        throw seen(e);
      }
      if (next.done) return;
      yield next.value;
    }
  }

  /** Read threads while serving: scans then never run on the thread that acknowledges reports. */
  let scans: Scans | null = null;
  /** A scan on a read thread; what it meets is judged as here (damage remembered for health). */
  const remote = async <T>(p: Promise<T>): Promise<T> => {
    try {
      return await p;
    } catch (e) {
      throw seen(e);
    }
  };
  async function* remoteChunks(chunks: AsyncGenerator<Execution[], void>): AsyncGenerator<Execution[], void> {
    for (;;) {
      let next: IteratorResult<Execution[], void>;
      try {
        next = await chunks.next();
      } catch (e) {
        throw seen(e);
      }
      if (next.done) return;
      try {
        yield next.value;
      } catch (e) {
        await chunks.return();
        throw e;
      }
    }
  }
  // Each chunk is its own query, run to completion before it is handed over.
  const executionChunks: Store["executionChunks"] = (filter, page) =>
    scans ? remoteChunks(scans.executionChunks(filter, page)) : chunksOf(reads.executionChunks(filter, page));

  return {
    getExecutions: read((randomId) => reads.getExecutions(randomId)),
    listExecutions: (filter, page) => (scans ? remote(scans.listExecutions(filter, page)) : read(() => reads.listExecutions(filter, page))()),
    newestOfApps: (apps) => (scans ? remote(scans.newestOfApps(apps)) : read(() => reads.newestOfApps(apps))()),
    pageExecutions: (filter, page) => (scans ? remote(scans.pageExecutions(filter, page)) : read(() => reads.pageExecutions(filter, page))()),
    executionChunks,
    async *iterateExecutions(filter) {
      for await (const chunk of executionChunks(filter)) yield* chunk;
    },
    errorTextCounts: () => (scans ? remote(scans.errorTextCounts()) : read(() => reads.errorTextCounts())()),
    // On the main thread: asked with a window of hours (the live counts), a short index range.
    countUpdatedSince: read((filter, since) => reads.countUpdatedSince(filter, since)),
    offload(next) {
      scans = next;
    },
    changeMarker: read(() => reads.changeMarker()),
    signatures: read((ids) => reads.signatures(ids)),
    recordSpan: read(() => reads.recordSpan()),

    async readRollups(selection) {
      try {
        checkState();
        const { grain, slice, from, to, parts } = selection;
        const out: { bucket: number; data: RollupData }[] = [];
        // Hours before the hour cells: counted from their days' records (old-hours.ts).
        const first = grain === GRAINS.hour ? hoursFrom(open.foldedUntil) : Number.NEGATIVE_INFINITY;
        if (from < first) {
          const end = Math.min(to, first);
          const days = [...reads.storedRollups({ grain: GRAINS.day, ...daysOf(from, end), parts: [] }, repoClasses(slice)).values()].flat().map((c) => c.bucket);
          const counted = await old.read(slice, from, end, days, (s, day) => countDay(s, day));
          for (const c of counted) out.push({ bucket: c.bucket, data: only(c.data, parts) });
        }
        const start = Math.max(from, first);
        if (start < to) out.push(...storedAndOpen({ ...selection, from: start }, repoClasses(slice)));
        return out;
      } catch (e) {
        throw seen(e);
      }
    },

    rollupCells: read((grain, from, to) => {
      checkState();
      const stored = reads.storedCells(grain, from, to);
      const cells = grain === GRAINS.hour ? [...stored, ...open.cellsOf(null, Math.max(from, open.foldedUntil), to)] : stored;
      return withEveryRepo(cells, (slice, bucket, data) => ({ slice, bucket, data }));
    }),

    foldedUntil: read(() => {
      checkState();
      return open.foldedUntil;
    }),

    stuckExecutions: read((from, before, limit) => maintenance.stuckExecutions(from, before, limit)),
    stuckCheckedUntil: read(() => maintenance.stuckCheckedUntil()),
    importMark: read((source) => maintenance.importMark(source)),
    countBefore: read((cutoff) => maintenance.countBefore(cutoff)),
    heldBefore: read((cutoff, limit) => maintenance.heldBefore(cutoff, limit)),
    listRejected: read((opts) => maintenance.listRejected(opts)),
    replayCandidates: read((opts) => maintenance.replayCandidates(opts)),
    countReplayed: read((reasons, retryPrefix) => maintenance.countReplayed(reasons, retryPrefix)),
    budgets: read(() => budgetStatus(writes.counters(), limits.current)),
    heldChunks: (opts) => chunksOf(maintenance.heldChunks(opts)),
    rejectedChunks: (opts) => chunksOf(maintenance.rejectedChunks(opts)),
    alertStates: read(() => alerts.alertStates()),
    alertRuleMarks: read(() => alerts.alertRuleMarks()),
    alertHistory: read((opts) => alerts.alertHistory(opts)),
    alertDue: read((dueBy, limit) => alerts.alertDue(dueBy, limit)),
    alertQueue: read(() => alerts.alertQueue()),
    rejectedCounts: read((from, to) => alerts.rejectedCounts(from, to)),
    issueLinks: read((ids) => issues.issueLinks(ids)),
    relayStatus: read(() => writes.relayStatus()),

    write: async (ops) => writeNow(ops),

    rebuildRollups: read((onDay) => rebuildNow(onDay)),
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
    const counted = await remote(scans.hourCells(filter, slice));
    const labels = new LabelCache();
    labels.learn(counted.labels);
    return counted.cells.map(({ bucket, ...parts }) => {
      const data = emptyData();
      for (const part of ["data", "apps", "errors"] as const) decodePart(data, part, parts[part], labels);
      return { bucket, data };
    });
  }

  /** Cells of stored slices (a slice of every repo's classes), summed per bucket: stored, and (hour grain) the open hours from memory. */
  function storedAndOpen(selection: RollupSelection, slices: readonly string[]): { bucket: number; data: RollupData }[] {
    const { grain, from, to, parts } = selection;
    const foldedUntil = open.foldedUntil;
    const storedTo = grain === GRAINS.hour ? Math.min(to, foldedUntil) : to;
    const lists = reads.storedRollups({ ...selection, to: storedTo }, slices);
    if (grain === GRAINS.hour && to > foldedUntil) {
      for (const slice of slices) {
        const hours = open.cellsOf(slice, Math.max(from, foldedUntil), to);
        if (hours.length === 0) continue;
        const list = lists.get(slice) ?? [];
        list.push(...hours.map(({ bucket, data }) => ({ bucket, data: only(data, parts) })));
        lists.set(slice, list);
      }
    }
    return sumByBucket([...lists.values()]);
  }

  function rebuildNow(onDay?: (day: number, end: number) => void): void {
    const span = reads.recordSpan();
    sqlite.transaction(() => sqlite.run("DELETE FROM rollups"))();
    recount();
    if (!span) return;
    const foldedUntil = open.foldedUntil;
    const end = Math.min(span.last - (span.last % DAY) + DAY, foldedUntil);
    for (let day = span.first - (span.first % DAY); day < end; day += DAY) {
      onDay?.(day, end);
      writes.rebuildDay(day, Math.min(day + DAY, foldedUntil));
    }
  }
}
