import { BackupError } from "../store/engine.ts";
import { DatabaseMissingError, backupEngine } from "../store/open.ts";
import { UsageError, missingDatabase, type Command } from "./command.ts";

export const backup: Command = {
  name: "backup",
  summary: "write a consistent snapshot of the database to <file>, also while the server runs",
  settings: ["db", "durability"],
  args: "<file>",
  flags: {
    force: { type: "boolean", help: "overwrite <file> if it exists" },
  },
  run(ctx) {
    const [target, ...extra] = ctx.positionals;
    if (target === undefined || extra.length > 0)
      throw new UsageError("backup takes one argument, the file to write: installstats backup <file>");
    try {
      const result = backupEngine(ctx.config.db, target, {
        force: ctx.flags.force === true,
        durability: ctx.config.durability,
      });
      ctx.out(
        `${JSON.stringify({ backup: result.path, bytes: result.bytes, installs: result.installs, integrity: "ok" })}\n`,
      );
      return 0;
    } catch (e) {
      if (e instanceof DatabaseMissingError) throw missingDatabase(ctx.config.db);
      if (e instanceof BackupError) throw new UsageError(e.message);
      throw e;
    }
  },
};
