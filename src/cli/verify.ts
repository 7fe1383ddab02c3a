import { verifyRollups } from "../maintenance/verify.ts";
import { databaseExists, engineInUse } from "../store/open.ts";
import { UsageError, missingDatabase, openDatabaseOf, type Command } from "./command.ts";

export const verify: Command = {
  name: "verify",
  summary: "check database integrity and that every rollup equals a recount of the records (exit 1 if not)",
  settings: ["db", "dbPasswordFile", "durability"],
  flags: {
    repair: { type: "boolean", help: "first rebuild every rollup from the raw records (the server must be stopped)" },
  },
  async run(ctx) {
    const { config, flags, out, progress } = ctx;
    if (!databaseExists(config.db)) throw missingDatabase(config.db);
    if (flags.repair && engineInUse(config.db).inUse)
      throw new UsageError(`${config.db} is in use (a server is running?); stop it before --repair`);
    // The store, not bare reads: open hours' cells live in its memory (recounted from the records).
    const engine = await openDatabaseOf(ctx, { create: false });
    try {
      if (flags.repair) {
        await engine.store.rebuildRollups((d, end) =>
          progress(
            `rebuilding ${new Date(d).toISOString().slice(0, 10)} (until ${new Date(end).toISOString().slice(0, 10)})`,
          ),
        );
        progress("");
      }
      const integrity = await engine.checkIntegrity();
      const day = (t: number) => new Date(t).toISOString().slice(0, 10);
      const rollups = await verifyRollups(engine.store, (d, end) =>
        progress(`verifying ${day(d)} (until ${day(end)})`),
      );
      progress("");
      const ok = integrity.length === 1 && integrity[0] === "ok" && rollups.ok;
      out(`${JSON.stringify({ ok, integrity, rollups }, null, 2)}\n`);
      return ok ? 0 : 1;
    } finally {
      await engine.close();
    }
  },
};
