import { openDatabase } from "../store/sqlite/database.ts";
import type { Command } from "./command.ts";

export const migrate: Command = {
  name: "migrate",
  summary: "apply pending database migrations and exit (serve does this at start-up too)",
  run({ config, out }) {
    openDatabase(config.db, { durability: config.durability, migrate: true }).sqlite.close();
    out(`${config.db}: migrations applied\n`);
    return 0;
  },
};
