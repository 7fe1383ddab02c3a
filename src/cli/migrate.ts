import { displayLocation } from "../store/open.ts";
import { openDatabaseOf, type Command } from "./command.ts";

export const migrate: Command = {
  name: "migrate",
  summary: "apply pending database migrations and exit (serve does this at start-up too)",
  settings: ["db", "dbPasswordFile", "durability"],
  async run(ctx) {
    await (await openDatabaseOf(ctx, { create: true })).close();
    ctx.out(`${displayLocation(ctx.config.db)}: migrations applied\n`);
    return 0;
  },
};
