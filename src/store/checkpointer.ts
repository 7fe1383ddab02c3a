// The checkpoint thread (a Worker, started by `serve`): copies WAL pages into the database file
// and syncs it, beside the HTTP thread. Left to SQLite, each checkpoint runs inside whichever
// commit crosses the threshold, and every request waiting for that batch waits for it too.
import { Database } from "bun:sqlite";

declare const self: Worker;

export interface CheckpointerStart {
  path: string;
  everyMs: number;
  /** Past this many WAL frames, a RESTART checkpoint (see below). */
  maxFrames: number;
}

export interface CheckpointerError {
  error: string;
}

self.onmessage = (event: MessageEvent<CheckpointerStart>) => {
  const { path, everyMs, maxFrames } = event.data;
  const sqlite = new Database(path, { readwrite: true, create: false, strict: true });
  sqlite.run("PRAGMA busy_timeout = 5000");
  // PASSIVE never waits for, or blocks, the writer or readers: it copies what is there. The WAL
  // starts over only when a commit finds every frame copied, which a steady stream of commits can
  // keep from happening; past maxFrames a RESTART checkpoint makes the writer wait for the rest.
  const passive = sqlite.query<{ busy: number; log: number; checkpointed: number }, []>("PRAGMA wal_checkpoint(PASSIVE)");
  const restart = sqlite.query("PRAGMA wal_checkpoint(RESTART)");
  setInterval(() => {
    try {
      if (passive.get()!.log > maxFrames) restart.get();
    } catch (e) {
      self.postMessage({ error: e instanceof Error ? e.message : String(e) } satisfies CheckpointerError);
    }
  }, everyMs);
};
