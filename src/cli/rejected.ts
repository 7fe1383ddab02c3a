import { openDatabase } from "../store/sqlite/database.ts";
import { createSqliteReads } from "../store/sqlite/reads.ts";
import { rejectedReports, type RejectReason } from "../store/sqlite/schema.ts";
import { UsageError, countFlag, type Command } from "./command.ts";

const REASONS: readonly string[] = rejectedReports.reason.enumValues;

export const rejected: Command = {
  name: "rejected",
  summary: "list the rejected-reports log as NDJSON, newest first",
  flags: {
    limit: { type: "string", help: "most entries to list (default 100)" },
    reason: { type: "string", help: REASONS.join(" | ") },
  },
  run(ctx) {
    const limit = countFlag(ctx, "limit", 100);
    const reason = ctx.flags.reason;
    if (reason !== undefined && (typeof reason !== "string" || !REASONS.includes(reason))) {
      throw new UsageError(`--reason must be one of ${REASONS.join(", ")}`);
    }
    const { sqlite, db } = openDatabase(ctx.config.db, { durability: ctx.config.durability, migrate: true });
    for (const entry of createSqliteReads(sqlite, db).listRejected({ limit, reason: reason as RejectReason | undefined })) ctx.out(`${JSON.stringify(entry)}\n`);
    sqlite.close();
    return 0;
  },
};
