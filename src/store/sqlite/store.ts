// The SQLite Store: one connection, reads and writes over one cell cache, open hours in memory.
// bun:sqlite is synchronous, so the engine works synchronously inside (a batch runs start to
// COMMIT without yielding) and fulfils the asynchronous contract at this one door.
import type { Database } from "bun:sqlite";
import { DAY } from "../../domain/time.ts";
import { GRAINS } from "../../domain/rollup.ts";
import { StorageUnavailableError, type Store, type WriteOp, type WriteResult } from "../contract.ts";
import { CellCache } from "./cell-cache.ts";
import type { Db } from "./database.ts";
import { createMaintenanceReads } from "./maintenance-reads.ts";
import { OpenHours } from "./open-hours.ts";
import { createSqliteReads } from "./reads.ts";
import { createSqliteWrites } from "./writes.ts";

/** Parsed cells kept: a year of day cells for the busiest apps, and the hours around them. */
const CACHED_CELLS = 8192;

/** The Store, with the synchronous write the engine's serving commit calls directly. */
export interface SqliteStore extends Store {
  writeNow(ops: readonly WriteOp[]): WriteResult[];
  rebuildNow(onDay?: (day: number, end: number) => void): void;
}

export function createSqliteStore(sqlite: Database, db: Db): SqliteStore {
  const cells = new CellCache(CACHED_CELLS);
  const open = new OpenHours();
  const reads = createSqliteReads(sqlite, db, cells);
  const maintenance = createMaintenanceReads(db);
  const writes = createSqliteWrites(sqlite, db, reads, cells, open);

  // PRAGMA data_version moves when another connection commits (a CLI command beside the server):
  // then neither the cached cells nor the open hours can be vouched for.
  const dataVersion = sqlite.query<{ data_version: number }, []>("PRAGMA data_version");
  let seenVersion = -1;
  const recount = () => {
    cells.clear();
    const foldedUntil = reads.storedFoldedUntil();
    open.recount(foldedUntil, reads.iterateExecutions({ from: foldedUntil }));
  };
  /** Recounts what this connection can no longer vouch for; cheap when nothing changed. */
  const checkState = () => {
    const { data_version } = dataVersion.get()!;
    if (data_version !== seenVersion || reads.storedFoldedUntil() !== open.foldedUntil) recount();
    seenVersion = data_version;
  };
  recount();
  seenVersion = dataVersion.get()!.data_version;

  function writeNow(ops: readonly WriteOp[]): WriteResult[] {
    try {
      checkState();
      return writes.write(ops);
    } catch (e) {
      // SQLite's own errors mean the storage refused the write; anything else is a bug and stays as it is.
      throw e instanceof Error && e.name === "SQLiteError" ? new StorageUnavailableError(e.message) : e;
    }
  }

  return {
    getExecutions: async (randomId) => reads.getExecutions(randomId),
    listExecutions: async (filter, page) => reads.listExecutions(filter, page),
    // Each chunk is its own query, run to completion before it is handed over.
    async *executionChunks(filter, page) {
      yield* reads.executionChunks(filter, page);
    },
    async *iterateExecutions(filter) {
      for (const chunk of reads.executionChunks(filter)) yield* chunk;
    },
    errorTextCounts: async () => reads.errorTextCounts(),
    changeMarker: async () => reads.changeMarker(),
    signatures: async (ids) => reads.signatures(ids),
    recordSpan: async () => reads.recordSpan(),

    async readRollups(selection) {
      checkState();
      const { grain, slice, from, to } = selection;
      const foldedUntil = open.foldedUntil;
      if (grain !== GRAINS.hour || to <= foldedUntil) return reads.storedRollups(selection);
      const stored = from < foldedUntil ? reads.storedRollups({ ...selection, to: foldedUntil }) : [];
      return [...stored, ...open.cellsOf(slice, Math.max(from, foldedUntil), to)];
    },

    async rollupCells(grain, from, to) {
      checkState();
      const stored = reads.storedCells(grain, from, to);
      return grain === GRAINS.hour ? [...stored, ...open.cellsOf(null, Math.max(from, open.foldedUntil), to)] : stored;
    },

    async foldedUntil() {
      checkState();
      return open.foldedUntil;
    },

    stuckExecutions: async (from, before, limit) => maintenance.stuckExecutions(from, before, limit),
    stuckCheckedUntil: async () => maintenance.stuckCheckedUntil(),
    countBefore: async (cutoff) => maintenance.countBefore(cutoff),
    heldBefore: async (cutoff, limit) => maintenance.heldBefore(cutoff, limit),
    listRejected: async (opts) => maintenance.listRejected(opts),
    replayCandidates: async (opts) => maintenance.replayCandidates(opts),
    countReplayed: async (reasons, retryPrefix) => maintenance.countReplayed(reasons, retryPrefix),

    write: async (ops) => writeNow(ops),

    rebuildRollups: async (onDay) => rebuildNow(onDay),
    close: async () => sqlite.close(),
    writeNow,
    rebuildNow,
  };

  function rebuildNow(onDay?: (day: number, end: number) => void): void {
    const span = reads.recordSpan();
    sqlite.transaction(() => sqlite.run("DELETE FROM rollups"))();
    recount();
    if (!span) return;
    const foldedUntil = open.foldedUntil;
    const end = Math.min(span.last - (span.last % DAY) + DAY, foldedUntil);
    for (let day = span.first - (span.first % DAY); day < end; day += DAY) {
      onDay?.(day, end);
      writes.rebuildDay.immediate(day, Math.min(day + DAY, foldedUntil));
    }
  }
}
