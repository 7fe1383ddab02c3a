import { SEED_DEFAULTS, seedDatabase, seedOptions } from "../seed/seed.ts";
import { UsageError, countFlag, openDatabaseOf, type Command } from "./command.ts";

export const seed: Command = {
  name: "seed",
  summary: "fill the database with realistic generated installs (for trying things out and benchmarks)",
  flags: {
    records: { type: "string", help: "how many installs (required)" },
    days: { type: "string", help: `spread over the last N days (default ${SEED_DEFAULTS.days})` },
    seed: { type: "string", help: `random seed; the same seed gives the same data (default ${SEED_DEFAULTS.seed})` },
  },
  async run(ctx) {
    if (ctx.flags.records === undefined) throw new UsageError("--records is required, e.g. installstats seed --records 100000");
    const records = countFlag(ctx, "records", 1);
    const options = seedOptions({ records, days: countFlag(ctx, "days", SEED_DEFAULTS.days), seed: countFlag(ctx, "seed", SEED_DEFAULTS.seed) });
    // Generated data needs no power-loss durability while it is written.
    const engine = await openDatabaseOf(ctx, { create: true, durability: "normal" });
    try {
      const result = await seedDatabase(engine.store, options, (p) => ctx.progress(`seeding ${p.written.toLocaleString()} / ${p.total.toLocaleString()}`));
      ctx.progress("");
      ctx.out(`${ctx.config.db}: ${result.records} installs in ${result.seconds.toFixed(1)} s (${Math.round(result.records / result.seconds)}/s)\n`);
      return 0;
    } finally {
      await engine.close();
    }
  },
};
