import { verifyRollups } from "../maintenance/verify.ts";
import { openDatabase } from "../store/sqlite/database.ts";
import { UsageError, type Command } from "./command.ts";
import { databaseInUse } from "../store/sqlite/backup.ts";
import { createSqliteStore } from "../store/sqlite/store.ts";

export const verify: Command = {
  name: "verify",
  summary: "check database integrity and that every rollup equals a recount of the records (exit 1 if not)",
  flags: { repair: { type: "boolean", help: "first rebuild every rollup from the raw records (the server must be stopped)" } },
  run({ config, flags, out, progress }) {
    if (flags.repair) {
      const use = databaseInUse(config.db);
      if (use.inUse) throw new UsageError(`${config.db} is in use (a server is running?); stop it before --repair`);
    }
    const { sqlite, db } = openDatabase(config.db, { durability: config.durability, migrate: true });
    // The store, not bare reads: open hours' cells live in its memory (recounted from the records).
    const store = createSqliteStore(sqlite, db);
    if (flags.repair) {
      store.rebuildRollups((d, end) => progress(`rebuilding ${new Date(d).toISOString().slice(0, 10)} (until ${new Date(end).toISOString().slice(0, 10)})`));
      progress("");
    }
    const integrity = (sqlite.query("PRAGMA integrity_check").all() as { integrity_check: string }[]).map((r) => r.integrity_check);
    const day = (t: number) => new Date(t).toISOString().slice(0, 10);
    const rollups = verifyRollups(store, (d, end) => progress(`verifying ${day(d)} (until ${day(end)})`));
    progress("");
    sqlite.close();
    const ok = integrity.length === 1 && integrity[0] === "ok" && rollups.ok;
    out(`${JSON.stringify({ ok, integrity, rollups }, null, 2)}\n`);
    return ok ? 0 : 1;
  },
};
