import { REJECT_REASONS, type RejectReason } from "../domain/rejection.ts";
import { toRejectedJson } from "../maintenance/rejected-log.ts";
import { UsageError, countFlag, openDatabaseOf, type Command } from "./command.ts";

const isReason = (text: string): text is RejectReason => (REJECT_REASONS as readonly string[]).includes(text);

export const rejected: Command = {
  name: "rejected",
  summary: "list the rejected-reports log as NDJSON, newest first",
  settings: ["db", "dbPasswordFile"],
  flags: {
    limit: { type: "string", help: "most entries to list (default 100)" },
    reason: { type: "string", help: REJECT_REASONS.join(" | ") },
  },
  async run(ctx) {
    const limit = countFlag(ctx, "limit", 100);
    const reason = ctx.flags.reason;
    if (reason !== undefined && (typeof reason !== "string" || !isReason(reason)))
      throw new UsageError(`--reason must be one of ${REJECT_REASONS.join(", ")}`);
    const engine = await openDatabaseOf(ctx, { create: false });
    try {
      for (const entry of await engine.store.listRejected({ limit, reason }))
        ctx.out(`${JSON.stringify(toRejectedJson(entry))}\n`);
    } finally {
      await engine.close();
    }
    return 0;
  },
};
