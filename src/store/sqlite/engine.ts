// The SQLite engine: one database file (WAL beside it), the default and the appliance's.
import { statSync } from "node:fs";
import type { Database } from "bun:sqlite";
import type { Engine, OpenOptions } from "../engine.ts";
import { startCheckpointThread } from "./checkpoint-thread.ts";
import { openDatabase, type Db } from "./database.ts";
import { createSqliteStore } from "./store.ts";
import { ROLLUP_VERSION } from "../../domain/rollup.ts";
import { deriveEndings, markRollupVersion, rollupVersion } from "./upgrade.ts";

const fileSize = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/** The engine, and its connection for tests that look underneath (faults, damaged cells). */
export interface SqliteEngine extends Engine {
  readonly sqlite: Database;
  readonly db: Db;
}

export function openSqliteEngine(path: string, opts: OpenOptions): SqliteEngine {
  const { sqlite, db } = openDatabase(path, opts);
  const store = createSqliteStore(sqlite, db);
  // Data whose rules are code: derived after the SQL migrations, before anything reads or writes.
  if (opts.migrate && rollupVersion(sqlite) < ROLLUP_VERSION) {
    deriveEndings(sqlite);
    store.rebuildNow();
    markRollupVersion(sqlite);
  }
  return {
    store,
    location: path,
    sqlite,
    db,

    serve({ log, workers, onHold }) {
      const checkpoints = startCheckpointThread(workers.checkpointer, sqlite, path, log, { onHold });
      return {
        commit(ops) {
          checkpoints.beforeWrite();
          return store.writeNow(ops);
        },
        stop: async () => checkpoints.stop(),
      };
    },

    sizes: async () => [
      { file: "db", bytes: fileSize(path) },
      { file: "wal", bytes: fileSize(`${path}-wal`) },
    ],

    checkIntegrity: async () => sqlite.query<{ integrity_check: string }, []>("PRAGMA integrity_check").all().map((r) => r.integrity_check),

    close: () => store.close(),
  };
}
