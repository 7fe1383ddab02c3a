import { REPLAYABLE, replayRejected, type ReplayableReason } from "../maintenance/replay.ts";
import { UsageError, countFlag, openDatabaseOf, type Command } from "./command.ts";

export const replay: Command = {
  name: "replay",
  summary: "run refused bodies of the rejected-reports log through the current parser; store those that now pass",
  settings: ["db", "dbPasswordFile", "durability", "maxFieldLength", "maxErrorLength", "maskIps"],
  flags: {
    reason: {
      type: "string",
      help: `${REPLAYABLE.join(" | ")} (default both; repaired, already_final and payload_too_large are never replayed)`,
    },
    limit: { type: "string", help: "most entries to try (default all)" },
    "dry-run": { type: "boolean", help: "only say what would pass; write and mark nothing" },
  },
  async run(ctx) {
    const reason = ctx.flags.reason;
    if (reason !== undefined && (typeof reason !== "string" || !(REPLAYABLE as readonly string[]).includes(reason))) {
      throw new UsageError(
        `--reason must be one of ${REPLAYABLE.join(", ")} (repaired entries were applied already, already_final and payload_too_large cannot become valid)`,
      );
    }
    const limit = ctx.flags.limit === undefined ? undefined : countFlag(ctx, "limit", 1);
    if (ctx.positionals.length > 0) throw new UsageError("replay takes no arguments");
    const engine = await openDatabaseOf(ctx, { create: false });
    const { store } = engine;
    try {
      const summary = await replayRejected(
        { store, commit: (ops) => store.write(ops) },
        {
          normalize: ctx.config,
          reasons: reason === undefined ? undefined : [reason as ReplayableReason],
          limit,
          dryRun: ctx.flags["dry-run"] === true,
          onProgress: (n) => ctx.progress(`replaying: ${n.toLocaleString()} entries tried`),
        },
      );
      ctx.progress("");
      ctx.out(`${JSON.stringify(summary)}\n`);
      return 0;
    } finally {
      await engine.close();
    }
  },
};
