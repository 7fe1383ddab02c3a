import { verifyRollups } from "../maintenance/verify.ts";
import { displayLocation } from "../store/open.ts";
import { copyExecutions } from "../transfer/copy.ts";
import { UsageError, openLocation, type Command } from "./command.ts";

export const copy: Command = {
  name: "copy",
  summary: "copy every execution from one database to another, SQLite file or postgres:// URL, either way (run it again to finish a copy cut short)",
  settings: ["durability"],
  flags: {
    from: { type: "string", help: "the database to copy from (a file or a postgres:// URL)" },
    to: { type: "string", help: "the database to copy into (made when it is a new file; a PostgreSQL database must exist)" },
  },
  async run(ctx) {
    const { flags, out, progress } = ctx;
    const from = typeof flags.from === "string" ? flags.from : undefined;
    const to = typeof flags.to === "string" ? flags.to : undefined;
    if (!from || !to || ctx.positionals.length > 0) throw new UsageError("copy takes --from <db> and --to <db>: installstats copy --from installstats.db --to postgres://user@host/db");
    if (from === to) throw new UsageError(`--from and --to are the same database (${displayLocation(from)})`);
    const source = await openLocation(from, ctx, { create: false, flag: "--from" });
    try {
      const target = await openLocation(to, ctx, { create: true, flag: "--to" });
      try {
        const summary = await copyExecutions(source.store, target.store, {
          at: Date.now(),
          onProgress: (s) => progress(`copying: ${s.read.toLocaleString()} read, ${s.copied.toLocaleString()} copied, ${s.duplicates.toLocaleString()} there already`),
        });
        progress("");
        // Checked: the target holds at least what was read, and its rollups equal a recount.
        const day = (t: number) => new Date(t).toISOString().slice(0, 10);
        const check = await verifyRollups(target.store, (d, end) => progress(`verifying ${day(d)} (until ${day(end)})`));
        progress("");
        const ok = check.ok && check.records >= summary.read;
        out(`${JSON.stringify({ from: displayLocation(from), to: displayLocation(to), ...summary, verified: { ok, records: check.records, mismatches: check.mismatches.length } })}\n`);
        return ok ? 0 : 1;
      } finally {
        await target.close();
      }
    } finally {
      await source.close();
    }
  },
};
