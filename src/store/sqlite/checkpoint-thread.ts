// Starts the checkpoint thread (checkpointer.ts) for a serving connection and turns SQLite's
// automatic checkpoints off on that connection; if the thread dies, they are turned back on.
import type { Database } from "bun:sqlite";
import type { Logger } from "../../log.ts";
import { AUTO_CHECKPOINT_PAGES } from "./database.ts";
import { HoldState, type CheckpointerMessage, type CheckpointerStart, type IntegrityRequest } from "./checkpointer.ts";

/** How often the thread checkpoints: at full load about 2000 WAL pages (8 MB) each time. */
const EVERY_MS = 100;

/** A thread that has not copied the last frames within this lets the writer go on (the WAL just grows). */
const MAX_HOLD_MS = 1000;

export interface CheckpointOptions {
  /** Called after each hold of the writer with its length (metrics). */
  onHold?: (seconds: number) => void;
  /** WAL size in pages past which the WAL is started over. */
  maxFrames?: number;
  everyMs?: number;
  /**
   * Given, the thread runs SQLite's quick_check once at start (off the request thread: ~1-2 s for
   * a 1 GB database) and reports here.
   */
  onIntegrity?: (result: { ok: boolean; checkedAt: number; ms: number; problems: string[] }) => void;
}

export interface CheckpointThread {
  /**
   * Called by the writer before each batch, outside any transaction: when the thread asks, waits
   * (blocking, a few ms) while it copies the last WAL frames, so that this batch starts the WAL over.
   */
  beforeWrite(): void;
  /** After the last write: the thread ends, and the WAL is copied in and emptied here. */
  stop(): void;
}

/**
 * `workerUrl` is checkpointer.ts as the entry module sees it (inside the compiled binary only the
 * entry module's import.meta.url is meaningful, and the worker is a second entry point).
 */
export function startCheckpointThread(
  workerUrl: URL,
  sqlite: Database,
  path: string,
  log: Logger,
  opts: CheckpointOptions = {},
): CheckpointThread {
  const { journal_mode } = sqlite.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()!;
  if (journal_mode !== "wal") return { beforeWrite() {}, stop() {} }; // an in-memory database has no WAL
  const hold = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
  const state = new Int32Array(hold);
  const worker = new Worker(workerUrl.href);
  worker.onmessage = (event: MessageEvent<CheckpointerMessage>) => {
    const message = event.data;
    if ("error" in message) log.warn("checkpoint failed", { error: message.error });
    else {
      // SQLite answers a sound check with the single row "ok", which is not a problem.
      const ok = message.integrity.length === 1 && message.integrity[0] === "ok";
      opts.onIntegrity?.({ ok, checkedAt: Date.now(), ms: message.ms, problems: ok ? [] : message.integrity });
    }
  };
  worker.onerror = (event) => {
    log.error("checkpoint thread died; checkpoints run in commits again", { error: event.message });
    sqlite.run(`PRAGMA wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
  };
  sqlite.run("PRAGMA wal_autocheckpoint = 0");
  worker.postMessage({
    path,
    everyMs: opts.everyMs ?? EVERY_MS,
    maxFrames: opts.maxFrames ?? AUTO_CHECKPOINT_PAGES,
    hold,
  } satisfies CheckpointerStart);
  if (opts.onIntegrity) worker.postMessage({ check: "quick" } satisfies IntegrityRequest);
  return {
    beforeWrite() {
      if (Atomics.compareExchange(state, 0, HoldState.ASKED, HoldState.HELD) !== HoldState.ASKED) return;
      const began = performance.now();
      Atomics.notify(state, 0);
      if (
        Atomics.wait(state, 0, HoldState.HELD, MAX_HOLD_MS) === "timed-out" &&
        Atomics.compareExchange(state, 0, HoldState.HELD, HoldState.IDLE) === HoldState.HELD
      ) {
        log.warn("checkpoint thread kept the writer waiting; writes go on", { waitedMs: MAX_HOLD_MS });
      }
      opts.onHold?.((performance.now() - began) / 1000);
    },
    stop() {
      worker.terminate();
      sqlite.run(`PRAGMA wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
      // The thread may still be in a pass as it ends (terminate does not wait): retry while it is.
      const truncate = sqlite.query<{ busy: number }, []>("PRAGMA wal_checkpoint(TRUNCATE)");
      for (let tries = 0; truncate.get()!.busy !== 0 && tries < 100; tries++) Bun.sleepSync(10);
    },
  };
}
