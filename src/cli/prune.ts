import { parseDuration } from "../config.ts";
import { pruneOlderThan } from "../maintenance/prune.ts";
import { UsageError, openDatabaseOf, type Command } from "./command.ts";

export const prune: Command = {
  name: "prune",
  summary: "delete installs created, and rejected-log entries received, before now minus a duration",
  settings: ["db", "dbPasswordFile", "durability"],
  flags: {
    "older-than": {
      type: "string",
      help: "age of what goes, e.g. 400d, 12w, 36h (s m h d w: m is minutes) (required)",
    },
    "dry-run": { type: "boolean", help: "count what would go, delete nothing" },
  },
  async run(ctx) {
    const raw = ctx.flags["older-than"];
    if (typeof raw !== "string")
      throw new UsageError("--older-than is required, e.g. installstats prune --older-than 400d");
    const age = parseDuration(raw);
    if (!Number.isFinite(age) || age <= 0)
      throw new UsageError(`--older-than must be a duration such as 400d, 12w or 36h, got ${JSON.stringify(raw)}`);
    if (ctx.positionals.length > 0) throw new UsageError("prune takes no arguments");
    const now = Date.now();
    const engine = await openDatabaseOf(ctx, { create: false });
    const { store } = engine;
    try {
      const result = await pruneOlderThan(
        { store, commit: (ops) => store.write(ops) },
        {
          cutoff: now - age,
          now,
          dryRun: ctx.flags["dry-run"] === true,
          onProgress: (n) => ctx.progress(`pruning: ${n.toLocaleString()} installs deleted`),
        },
      );
      ctx.progress("");
      ctx.out(`${JSON.stringify(result)}\n`);
      return 0;
    } finally {
      await engine.close();
    }
  },
};
