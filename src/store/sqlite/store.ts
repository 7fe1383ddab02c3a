// The SQLite Store: one connection, reads and writes over one cell cache, open hours in memory.
import type { Database } from "bun:sqlite";
import { DAY } from "../../domain/time.ts";
import { GRAINS } from "../../domain/rollup.ts";
import { StorageUnavailableError, type Store } from "../contract.ts";
import { CellCache } from "./cell-cache.ts";
import type { Db } from "./database.ts";
import { createMaintenanceReads } from "./maintenance-reads.ts";
import { OpenHours } from "./open-hours.ts";
import { createSqliteReads } from "./reads.ts";
import { createSqliteWrites } from "./writes.ts";

/** Parsed cells kept: a year of day cells for the busiest apps, and the hours around them. */
const CACHED_CELLS = 8192;

export function createSqliteStore(sqlite: Database, db: Db): Store {
  const cells = new CellCache(CACHED_CELLS);
  const open = new OpenHours();
  const reads = createSqliteReads(sqlite, db, cells);
  const writes = createSqliteWrites(sqlite, db, reads, cells, open);

  // PRAGMA data_version moves when another connection commits (a CLI command beside the server):
  // then neither the cached cells nor the open hours can be vouched for.
  const dataVersion = sqlite.query<{ data_version: number }, []>("PRAGMA data_version");
  let seenVersion = -1;
  const recount = () => {
    cells.clear();
    const foldedUntil = reads.storedFoldedUntil();
    open.recount(foldedUntil, reads.iterateInstalls({ from: foldedUntil }));
  };
  /** Recounts what this connection can no longer vouch for; cheap when nothing changed. */
  const checkState = () => {
    const { data_version } = dataVersion.get()!;
    if (data_version !== seenVersion || reads.storedFoldedUntil() !== open.foldedUntil) recount();
    seenVersion = data_version;
  };
  recount();
  seenVersion = dataVersion.get()!.data_version;

  return {
    ...reads,
    ...createMaintenanceReads(db),

    readRollups(selection) {
      checkState();
      const { grain, app, from, to } = selection;
      const foldedUntil = open.foldedUntil;
      if (grain !== GRAINS.hour || to <= foldedUntil) return reads.storedRollups(selection);
      const stored = from < foldedUntil ? reads.storedRollups({ ...selection, to: foldedUntil }) : [];
      return [...stored, ...open.cellsOf(app, Math.max(from, foldedUntil), to)];
    },

    rollupCells(grain, from, to) {
      checkState();
      const stored = reads.storedCells(grain, from, to);
      return grain === GRAINS.hour ? [...stored, ...open.cellsOf(null, Math.max(from, open.foldedUntil), to)] : stored;
    },

    foldedUntil() {
      checkState();
      return open.foldedUntil;
    },

    write(ops) {
      try {
        checkState();
        return writes.write(ops);
      } catch (e) {
        // SQLite's own errors mean the storage refused the write; anything else is a bug and stays as it is.
        throw e instanceof Error && e.name === "SQLiteError" ? new StorageUnavailableError(e.message) : e;
      }
    },

    rebuildRollups(onDay) {
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
    },

    close: () => sqlite.close(),
  };
}
