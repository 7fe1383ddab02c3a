import { verifyRollups } from "../maintenance/verify.ts";
import type { Store } from "../store/contract/store.ts";
import { BULK_LOAD, bulkWriter } from "../store/bulk-load.ts";
import { displayLocation, locationKey } from "../store/open.ts";
import { copyStore, type CopyPart, type CopySummary } from "../transfer/copy.ts";
import { UsageError, openLocation, type Command } from "./command.ts";

const PARTS: Record<CopyPart, string> = {
  executions: "executions",
  held: "held reports",
  rejected: "rejected-reports log entries",
};

/** What the target holds after the copy, beside what was read: the target must hold at least as much of each. */
async function counts(target: Store, summary: CopySummary, records: number) {
  const budgets = await target.budgets();
  const held = { source: summary.held.read, target: budgets.held.count };
  const rejected = { source: summary.rejected.read, target: budgets.log.entries };
  const executions = { source: summary.executions.read, target: records };
  const problems: string[] = [];
  for (const [name, c] of Object.entries({ executions, held, rejected }) as [
    CopyPart,
    { source: number; target: number },
  ][]) {
    if (c.target < c.source)
      problems.push(`the target holds ${c.target} ${PARTS[name]}, fewer than the ${c.source} read`);
  }
  const { cut, dropped } = summary.rejected;
  if (cut + dropped > 0)
    problems.push(
      `the target's rejected-reports log had no room for ${cut} whole bodies and ${dropped} entries: copy again into an empty database with a larger --log-budget`,
    );
  return { executions, held, rejected, problems };
}

export const copy: Command = {
  name: "copy",
  summary:
    "copy a whole data set (executions, held reports, the rejected-reports log) from one database to another, SQLite file or postgres:// URL, either way (run it again to finish a copy cut short)",
  settings: ["durability", "dbPasswordFile", "logBudget", "heldBudget"],
  flags: {
    from: { type: "string", help: "the database to copy from (a file or a postgres:// URL)" },
    to: {
      type: "string",
      help: "the database to copy into (made when it is a new file; a PostgreSQL database must exist)",
    },
  },
  async run(ctx) {
    const { flags, out, progress, config } = ctx;
    const from = typeof flags.from === "string" ? flags.from : undefined;
    const to = typeof flags.to === "string" ? flags.to : undefined;
    if (!from || !to || ctx.positionals.length > 0)
      throw new UsageError(
        "copy takes --from <db> and --to <db>: installstats copy --from installstats.db --to postgres://user@host/db",
      );
    if (locationKey(from) === locationKey(to))
      throw new UsageError(`--from and --to are the same database (${displayLocation(from)})`);
    const source = await openLocation(from, ctx, { create: false, flag: "--from" });
    try {
      const target = await openLocation(to, ctx, { create: true, flag: "--to", ...BULK_LOAD });
      try {
        // The target keeps what it is given within the budgets it will be served with.
        target.store.setLimits({ logBytes: config.logBudget, heldBytes: config.heldBudget });
        const writer = bulkWriter(target.store);
        const summary = await copyStore(source.store, writer, {
          at: Date.now(),
          source: locationKey(from),
          onProgress: (part, s) =>
            progress(
              `copying ${PARTS[part]}: ${s[part].read.toLocaleString()} read, ${s[part].copied.toLocaleString()} copied, ${s[part].duplicates.toLocaleString()} there already`,
            ),
        });
        await writer.finish(Date.now());
        // Checked: the target holds at least what was read of each part, and its rollups equal a recount.
        const day = (t: number) => new Date(t).toISOString().slice(0, 10);
        const check = await verifyRollups(target.store, (d, end) =>
          progress(`verifying ${day(d)} (until ${day(end)})`),
        );
        progress("");
        const { problems, ...compared } = await counts(target.store, summary, check.records);
        if (!check.ok)
          problems.push(
            `the target's rollups differ from a recount in ${check.mismatches.length} cells: run installstats verify --db on it`,
          );
        const verified = {
          ok: problems.length === 0,
          counts: compared,
          rollups: { ok: check.ok, records: check.records, mismatches: check.mismatches.length },
          problems,
        };
        out(`${JSON.stringify({ from: displayLocation(from), to: displayLocation(to), ...summary, verified })}\n`);
        return verified.ok ? 0 : 1;
      } finally {
        await target.close();
      }
    } finally {
      await source.close();
    }
  },
};
