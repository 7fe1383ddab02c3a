// Starts the write thread and gives the group-commit writer a Commit that runs there.
import type { Durability } from "../config.ts";
import { StorageUnavailableError, type Commit } from "../ingest/writer.ts";
import type { WriteResult } from "./store.ts";
import type { FromWorker, ToWorker } from "./worker-protocol.ts";
import { DatabaseOpenError } from "./database.ts";

export interface WriteThread {
  commit: Commit;
  /** Closes the write connection; call after the writer has drained. */
  close(): Promise<void>;
}

/**
 * `workerUrl` is write-worker.ts as the entry module sees it (inside the compiled binary the code is
 * bundled, so only the entry module's import.meta.url is meaningful). `onCrash` runs if the thread
 * dies; the batches it held are rejected as storage errors.
 */
export async function startWriteThread(workerUrl: URL, path: string, durability: Durability, onCrash: (e: ErrorEvent) => void): Promise<WriteThread> {
  const worker = new Worker(workerUrl.href);
  const pending = new Map<number, { resolve: (r: WriteResult[]) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let onReady: ((m: FromWorker) => void) | null = null;
  const send = (m: ToWorker) => worker.postMessage(m);

  worker.onmessage = (event: MessageEvent<FromWorker>) => {
    const m = event.data;
    if (m.type === "done" || m.type === "failed") {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (m.type === "done") p?.resolve(m.results);
      else p?.reject(m.storage ? new StorageUnavailableError(m.message) : new Error(m.message));
      return;
    }
    onReady?.(m);
  };
  worker.onerror = (e) => {
    for (const p of pending.values()) p.reject(new StorageUnavailableError(`write thread crashed: ${e.message}`));
    pending.clear();
    onCrash(e);
  };

  const answer = () => new Promise<FromWorker>((resolve) => (onReady = resolve));
  const opened = answer();
  send({ type: "open", path, durability });
  const first = await opened;
  if (first.type === "open-failed") {
    worker.terminate();
    throw new DatabaseOpenError(first.message);
  }

  return {
    commit: (ops) =>
      new Promise<WriteResult[]>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        send({ type: "batch", id, ops });
      }),
    async close() {
      const closed = answer();
      send({ type: "close" });
      await closed;
      worker.terminate();
    },
  };
}
