import { BackupError } from "../store/engine.ts";
import { restoreEngine } from "../store/open.ts";
import { UsageError, type Command } from "./command.ts";

export const restore: Command = {
  name: "restore",
  summary: "replace the database with a backup (checked first; refused while the database is in use)",
  settings: ["db", "durability"],
  args: "<file>",
  flags: {
    force: { type: "boolean", help: "replace an existing database (required when --db exists)" },
  },
  run(ctx) {
    const [file, ...extra] = ctx.positionals;
    if (file === undefined || extra.length > 0)
      throw new UsageError("restore takes one argument, the backup file: installstats restore <file> --db <database>");
    try {
      const result = restoreEngine(file, ctx.config.db, {
        force: ctx.flags.force === true,
        durability: ctx.config.durability,
      });
      for (const warning of result.warnings) ctx.err(`installstats: warning: ${warning}\n`);
      ctx.out(
        `${JSON.stringify({ restored: result.path, from: result.from, bytes: result.bytes, installs: result.installs, migrations_applied: result.migrationsApplied })}\n`,
      );
      return 0;
    } catch (e) {
      if (e instanceof BackupError) throw new UsageError(e.message);
      throw e; // DatabaseOpenError (a corrupt or foreign backup, a foreign target): exit 3
    }
  },
};
