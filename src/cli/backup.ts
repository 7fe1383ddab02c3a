import { existsSync } from "node:fs";
import { BackupError, backupDatabase } from "../store/sqlite/backup.ts";
import { openDatabase } from "../store/sqlite/database.ts";
import { UsageError, type Command } from "./command.ts";

export const backup: Command = {
  name: "backup",
  summary: "write a consistent snapshot of the database to <file>, also while the server runs",
  args: "<file>",
  flags: {
    force: { type: "boolean", help: "overwrite <file> if it exists" },
  },
  run(ctx) {
    const [target, ...extra] = ctx.positionals;
    if (target === undefined || extra.length > 0) throw new UsageError("backup takes one argument, the file to write: installstats backup <file>");
    if (!existsSync(ctx.config.db)) throw new UsageError(`no database at ${ctx.config.db} (see --db)`);
    // A connection of its own: VACUUM INTO reads one snapshot while the server keeps writing.
    // No migrations: a backup copies the database as it is; restore migrates.
    const { sqlite } = openDatabase(ctx.config.db, { durability: ctx.config.durability, migrate: false });
    try {
      const result = backupDatabase(sqlite, target, { force: ctx.flags.force === true });
      ctx.out(`${JSON.stringify({ backup: result.path, bytes: result.bytes, installs: result.installs, integrity: "ok" })}\n`);
      return 0;
    } catch (e) {
      if (e instanceof BackupError) throw new UsageError(e.message);
      throw e;
    } finally {
      sqlite.close();
    }
  },
};
