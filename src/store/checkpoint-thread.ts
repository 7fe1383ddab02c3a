// Starts the checkpoint thread (checkpointer.ts) for a serving connection and turns SQLite's
// automatic checkpoints off on that connection; if the thread dies, they are turned back on.
import type { Database } from "bun:sqlite";
import type { Logger } from "../ops/log.ts";
import { AUTO_CHECKPOINT_PAGES } from "./database.ts";
import type { CheckpointerError, CheckpointerStart } from "./checkpointer.ts";

/** How often the thread checkpoints: at full load about 2000 WAL pages (8 MB) each time. */
const EVERY_MS = 100;

/**
 * `workerUrl` is checkpointer.ts as the entry module sees it (inside the compiled binary only the
 * entry module's import.meta.url is meaningful, and the worker is a second entry point).
 */
export function startCheckpointThread(workerUrl: URL, sqlite: Database, path: string, log: Logger): { stop(): void } {
  const { journal_mode } = sqlite.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()!;
  if (journal_mode !== "wal") return { stop() {} }; // an in-memory database has no WAL
  const worker = new Worker(workerUrl.href);
  worker.onmessage = (event: MessageEvent<CheckpointerError>) => log.warn("checkpoint failed", { error: event.data.error });
  worker.onerror = (event) => {
    log.error("checkpoint thread died; checkpoints run in commits again", { error: event.message });
    sqlite.run(`PRAGMA wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
  };
  sqlite.run("PRAGMA wal_autocheckpoint = 0");
  worker.postMessage({ path, everyMs: EVERY_MS, maxFrames: AUTO_CHECKPOINT_PAGES } satisfies CheckpointerStart);
  return {
    /** After the last write: the thread ends, and the WAL is copied in and emptied here. */
    stop() {
      worker.terminate();
      sqlite.run(`PRAGMA wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
      sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
    },
  };
}
