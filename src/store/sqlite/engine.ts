// The SQLite engine: one database file (WAL beside it), the default and the appliance's.
import { statSync } from "node:fs";
import { availableParallelism } from "node:os";
import type { Database } from "bun:sqlite";
import { StorageDamagedError } from "../contract/errors.ts";
import { DatabaseOpenError, type Engine, type OpenOptions, type StorageHealth } from "../engine.ts";
import { startCheckpointThread } from "./checkpoint-thread.ts";
import { startScanThreads } from "./scan-threads.ts";
import { openDatabase, type Db } from "./database.ts";
import { createFileGuard } from "./file-guard.ts";
import { asDamage, checkFile } from "./integrity.ts";
import { createSqliteStore, type SqliteStore } from "./store.ts";
import { deriveEndings, markRollupVersion, rollupsCurrent } from "./upgrade.ts";

const fileSize = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/**
 * Read threads of a serving engine: one per core beyond the first, at most 4. Measured on 2 cores
 * (scripts/bench-read-isolation.ts, 300k records, 4 clients looping heavy reads): with 2 read
 * threads start reports waited p50 29 ms / p99 162 ms, with 1 thread 3 ms / 63 ms: a second busy
 * thread takes the core that acknowledges reports. Reads queue behind each other instead.
 */
const SCAN_THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));

/** How often a serving engine looks at its files between writes (file-guard.ts). */
const GUARD_EVERY_MS = 1000;

/** The engine, and its connection for tests that look underneath (faults, damaged cells). */
export interface SqliteEngine extends Engine {
  readonly sqlite: Database;
  readonly db: Db;
  readonly store: SqliteStore;
}

export function openSqliteEngine(path: string, opts: OpenOptions): SqliteEngine {
  const { sqlite, db } = openDatabase(path, opts);
  const guard = createFileGuard(sqlite, path);
  let store: SqliteStore;
  try {
    store = createSqliteStore(sqlite, db, { guard, labelLimit: opts.labelLimit, deferMonths: opts.deferMonths });
    // Data whose rules are code: derived after the SQL migrations, before anything reads or writes.
    if (opts.migrate && !rollupsCurrent(sqlite)) {
      deriveEndings(sqlite);
      store.rebuildNow();
      markRollupVersion(sqlite);
    }
  } catch (e) {
    // Damage met while reading what the store needs to start (recent records, rollup state): say
    // what SQLite's check finds, rather than the first error alone.
    if (!(asDamage(e) instanceof StorageDamagedError)) {
      sqlite.close();
      throw e;
    }
    const found = checkFile(sqlite, "quick");
    sqlite.close();
    throw new DatabaseOpenError(`${path} is damaged: ${(e as Error).message}; SQLite's check: ${found.join("; ")}`);
  }
  let integrity: StorageHealth["integrity"] = null;
  let closed = false;

  return {
    store,
    location: path,
    sqlite,
    db,

    serve({ log, workers, onHold, readBudgetMs }) {
      guard.onFault = (problem) => log.error("database files changed under the server", { problem });
      const timer = setInterval(() => {
        if (!closed) guard.check();
      }, GUARD_EVERY_MS);
      timer.unref?.();
      const checkpoints = startCheckpointThread(workers.checkpointer, sqlite, path, log, {
        onHold,
        onIntegrity(result) {
          integrity = result;
          if (result.ok) log.info("integrity check passed", { ms: result.ms });
          else log.error("integrity check found damage; run installstats verify", { problems: result.problems });
        },
      });
      // Scans need a file a second connection can open (not ":memory:").
      const scans =
        path === ":memory:"
          ? null
          : startScanThreads(workers.scanner, path, { threads: SCAN_THREADS, budgetMs: readBudgetMs, log });
      store.offload(scans);
      return {
        commit(ops) {
          checkpoints.beforeWrite();
          return store.writeNow(ops);
        },
        stop: async () => {
          clearInterval(timer);
          store.offload(null);
          scans?.stop();
          checkpoints.stop();
        },
      };
    },

    sizes: async () => [
      { file: "db", bytes: fileSize(path) },
      { file: "wal", bytes: fileSize(`${path}-wal`) },
    ],

    checkIntegrity: async (kind = "full") => checkFile(sqlite, kind),

    async health() {
      const fileProblem = closed ? null : guard.check();
      const problems: string[] = [];
      if (fileProblem !== null) problems.push(fileProblem);
      const damage = store.damage();
      if (damage !== null) problems.push(damage);
      if (integrity && !integrity.ok)
        problems.push(
          `SQLite's integrity check found damage: ${integrity.problems.slice(0, 3).join("; ")}; run installstats verify`,
        );
      const budgets = await store.budgets().catch(() => null);
      return {
        writable: fileProblem === null,
        problems,
        integrity,
        budgets,
        database: { engine: "sqlite", location: path, replica: null },
      };
    },

    close: () => {
      closed = true;
      return store.close();
    },
  };
}
