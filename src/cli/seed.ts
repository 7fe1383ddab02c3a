import { displayLocation } from "../store/open.ts";
import { SEED_DEFAULTS, SEED_PROFILES, seedDatabase, seedOptions, type SeedProfile } from "../seed/seed.ts";
import { BULK_LOAD } from "../store/bulk-load.ts";
import type { Store } from "../store/contract/store.ts";
import { UsageError, countFlag, openDatabaseOf, type Command } from "./command.ts";

const day = (t: number) => new Date(t).toISOString().slice(0, 10);

/** What the database holds already, for the refusal; null when it is empty. */
async function heldData(store: Store): Promise<string | null> {
  const span = await store.recordSpan();
  if (span) return `installs (created ${day(span.first)} to ${day(span.last)})`;
  const rejected = await store.listRejected({ limit: 1 });
  return rejected.length > 0 ? "rejected reports (it has received real traffic)" : null;
}

export const seed: Command = {
  name: "seed",
  summary: "fill the database with realistic generated installs (for trying things out and benchmarks)",
  settings: ["db", "dbPasswordFile"],
  flags: {
    records: { type: "string", help: "how many installs (required)" },
    days: { type: "string", help: `spread over the last N days (default ${SEED_DEFAULTS.days})` },
    seed: { type: "string", help: `random seed; the same seed gives the same data (default ${SEED_DEFAULTS.seed})` },
    profile: {
      type: "string",
      help: "today (default): /upload installs in the older part of the window, the current /telemetry v1 and v2 clients in the newer (pings, retries, hardware, repos); upload: /upload installs only, as earlier releases seeded",
    },
    force: {
      type: "boolean",
      help: "add generated installs to a database that already holds installs (they cannot be told apart afterwards)",
    },
  },
  async run(ctx) {
    if (ctx.flags.records === undefined)
      throw new UsageError("--records is required, e.g. installstats seed --records 100000");
    const records = countFlag(ctx, "records", 1);
    const profile = ctx.flags.profile ?? "today";
    if (typeof profile !== "string" || !(SEED_PROFILES as readonly string[]).includes(profile))
      throw new UsageError(`--profile must be one of ${SEED_PROFILES.join(", ")}`);
    const options = seedOptions({
      records,
      days: countFlag(ctx, "days", SEED_DEFAULTS.days),
      seed: countFlag(ctx, "seed", SEED_DEFAULTS.seed),
      profile: profile as SeedProfile,
    });
    // Generated data needs no power-loss durability while it is written.
    const engine = await openDatabaseOf(ctx, {
      create: true,
      durability: "normal",
      ...BULK_LOAD,
    });
    try {
      // Generated installs look like real ones and are stored like them: once mixed, nothing tells
      // them apart. So seed fills an empty database, and anything else only when told to.
      const held = await heldData(engine.store);
      if (held !== null && ctx.flags.force !== true) {
        throw new UsageError(
          `${displayLocation(ctx.config.db)} already holds ${held}; seed would mix generated installs into them for good. Seed a database of its own (--db demo.db), or add --force`,
        );
      }
      const result = await seedDatabase(engine.store, options, (p) =>
        ctx.progress(`seeding ${p.written.toLocaleString()} / ${p.total.toLocaleString()}`),
      );
      ctx.progress("");
      const writes = options.profile === "today" ? ` (${result.writes} writes)` : "";
      ctx.out(
        `${displayLocation(ctx.config.db)}: ${result.records} installs${writes} in ${result.seconds.toFixed(1)} s (${Math.round(result.records / result.seconds)}/s)\n`,
      );
      return 0;
    } finally {
      await engine.close();
    }
  },
};
