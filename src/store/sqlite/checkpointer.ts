// The checkpoint thread (a Worker, started by `serve`): copies WAL pages into the database file
// and syncs it, beside the HTTP thread. Left to SQLite, each checkpoint runs inside whichever
// commit crosses the threshold, and every request waiting for that batch waits for it too.
import { Database } from "bun:sqlite";
import { checkFile } from "./integrity.ts";

declare const self: Worker;

export interface CheckpointerStart {
  path: string;
  everyMs: number;
  /** WAL size in pages past which the WAL is started over (see tick). */
  maxFrames: number;
  /** One Int32 shared with the HTTP thread, holding a HoldState. */
  hold: SharedArrayBuffer;
}

/** Asks the thread to run SQLite's quick_check (between two passes: the writer is not held meanwhile). */
export interface IntegrityRequest {
  check: "quick";
}

export type CheckpointerMessage = { error: string } | { integrity: string[]; ms: number };

/**
 * The hand-over of a WAL restart. This thread asks (IDLE -> ASKED); the writer, before its next
 * batch, answers (ASKED -> HELD) and waits until the state leaves HELD: this thread then copies
 * the last frames and sets IDLE. Either side gives up on its own after a timeout.
 */
export const HoldState = { IDLE: 0, ASKED: 1, HELD: 2 } as const;

type Checkpoint = { busy: number; log: number; checkpointed: number };

// PASSIVE never waits for, or blocks, the writer or readers: it copies what is there. The WAL
// starts over only when a write transaction begins with every frame copied, which a steady stream
// of commits keeps from happening, so the WAL would grow without end. Past maxFrames the writer is
// asked to hold its next batch for a moment; the last frames are copied meanwhile, and that batch
// starts the WAL over. SQLite's RESTART checkpoint does the same through locks, but the writer
// then waits in SQLite's busy handler, which sleeps 1, 2, 5, 10... ms: measured, every restart
// stalled the writer 10-35 ms, and that set the p99 latency of ingestion.
/** After a hold that a reader kept from copying everything, this long without asking again. */
const READER_BACKOFF_MS = 1000;

/**
 * One checkpoint pass, and the hand-over when the WAL is past maxFrames and `mayHold`. Returns
 * false when the writer was held but frames stayed uncopied: another connection (a CLI command
 * reading meanwhile) still reads them, and asking again before it is done only stalls writes.
 */
function tick(
  passive: () => Checkpoint,
  state: Int32Array,
  maxFrames: number,
  waitMs: number,
  mayHold: boolean,
): boolean {
  const first = passive();
  if (first.log <= maxFrames || !mayHold) return true;
  // Copies what was committed during the first pass, so that a hold is short. `log` is the WAL's
  // end as a pass began: if it did not move, nothing was committed since the first pass began,
  // and with everything copied the next commit starts the WAL over by itself.
  const second = passive();
  if (second.log === first.log && second.busy === 0 && second.checkpointed === second.log) return true;
  Atomics.store(state, 0, HoldState.ASKED);
  // No batch within waitMs: the writer is idle, and the next pass will catch up anyway.
  if (
    Atomics.wait(state, 0, HoldState.ASKED, waitMs) === "timed-out" &&
    Atomics.compareExchange(state, 0, HoldState.ASKED, HoldState.IDLE) === HoldState.ASKED
  )
    return true;
  try {
    const last = passive();
    return last.checkpointed === last.log;
  } finally {
    Atomics.compareExchange(state, 0, HoldState.HELD, HoldState.IDLE);
    Atomics.notify(state, 0);
  }
}

let sqlite: Database | null = null;

self.onmessage = (event: MessageEvent<CheckpointerStart | IntegrityRequest>) => {
  if ("check" in event.data) {
    if (!sqlite) return;
    const began = performance.now();
    const integrity = checkFile(sqlite, "quick");
    self.postMessage({ integrity, ms: Math.round(performance.now() - began) } satisfies CheckpointerMessage);
    return;
  }
  const { path, everyMs, maxFrames, hold } = event.data;
  sqlite = new Database(path, { readwrite: true, create: false, strict: true });
  sqlite.run("PRAGMA busy_timeout = 5000");
  const query = sqlite.query<Checkpoint, []>("PRAGMA wal_checkpoint(PASSIVE)");
  const state = new Int32Array(hold);
  let holdAgainAt = 0;
  setInterval(() => {
    try {
      if (!tick(() => query.get()!, state, maxFrames, everyMs, performance.now() >= holdAgainAt))
        holdAgainAt = performance.now() + READER_BACKOFF_MS;
    } catch (e) {
      self.postMessage({ error: e instanceof Error ? e.message : String(e) } satisfies CheckpointerMessage);
    }
  }, everyMs);
};
