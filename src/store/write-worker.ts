// The write thread: owns the only write connection, so commits (and their fsyncs) run beside
// the HTTP thread instead of blocking it. Driven by worker-commit.ts.
import { openDatabase } from "./database.ts";
import { createSqliteStore } from "./sqlite-store.ts";
import type { Store } from "./store.ts";
import type { FromWorker, ToWorker } from "./worker-protocol.ts";

declare const self: Worker;
let store: Store | null = null;
const reply = (m: FromWorker) => self.postMessage(m);

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  switch (m.type) {
    case "open":
      try {
        const { sqlite, db } = openDatabase(m.path, { durability: m.durability, migrate: false });
        store = createSqliteStore(sqlite, db);
        reply({ type: "ready" });
      } catch (e) {
        reply({ type: "open-failed", message: (e as Error).message });
      }
      return;
    case "batch":
      try {
        reply({ type: "done", id: m.id, results: store!.write(m.ops) });
      } catch (e) {
        const err = e as Error;
        reply({ type: "failed", id: m.id, storage: err.name === "SQLiteError", message: err.message });
      }
      return;
    case "close":
      store?.close();
      store = null;
      reply({ type: "closed" });
      return;
  }
};
