// A PostgreSQL database of the layout before migration 0011 (rollup cells as JSON in every slice
// and every hour) is upgraded at start-up: the first node rebuilds the cells in the new layout
// while others wait, the new cells answer every question the old ones answered, verify is clean,
// and a node starting later finds nothing to do. A throwaway server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { SignatureSightings, failureSignature } from "../../src/domain/error-signature.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { GRAINS, hoursFrom } from "../../src/domain/rollup.ts";
import { DAY, HOUR, floorHour } from "../../src/domain/time.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { generateExecutions, seedOptions } from "../../src/seed/seed.ts";
import { openEngine } from "../../src/store/open.ts";
import { Partitions } from "../../src/store/postgres/partitions.ts";
import { transaction } from "../../src/store/postgres/transaction.ts";
import { mergeSightings } from "../../src/store/postgres/writes.ts";
import { answersOf, jsonColumns, oldLayoutCells } from "../helpers/cells.ts";
import { createDatabase, migrationsBefore, startPostgres, type PgServer } from "../helpers/postgres.ts";
import { insertRowsBefore0016 } from "../helpers/upgrade.ts";

setDefaultTimeout(120_000);

let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server?.stop());

const types = { bigint: { to: 20, from: [20], parse: (x: string) => Number(x), serialize: (x: number) => String(x) } };

const NOW = floorHour(Date.UTC(2026, 10, 20, 15));

describe("upgrade from the rollup layout before migration 0011", () => {
  test("cells rebuilt once, by the first node; they answer what the old ones did; verify clean", async () => {
    const url = await createDatabase(server, "layout");
    const old = postgres(url, { max: 2, onnotice: () => {}, types });
    const seeded = [...generateExecutions(seedOptions({ records: 1200, days: 90, end: NOW - 2 * HOUR, seed: 12 }))];
    const retry: Execution = {
      ...seeded[10]!,
      executionId: `${seeded[10]!.randomId}-retry`,
      attempt: 2,
      repoSource: "ProxmoxVED",
      createdAt: seeded[10]!.createdAt + HOUR,
      updatedAt: seeded[10]!.createdAt + 2 * HOUR,
    };
    const records = [...seeded, retry];
    const cells = oldLayoutCells(records, NOW);
    try {
      await migrate(drizzle(old), { migrationsFolder: migrationsBefore("0011_rollup_cells_binary") });
      await new Partitions(old).ensure(records.map((e) => e.createdAt));
      await transaction(old, async (tx) => {
        await insertRowsBefore0016(tx, records);
        for (let i = 0; i < cells.length; i += 1000) {
          const chunk = cells
            .slice(i, i + 1000)
            .map(({ key, data }) => ({ grain: key.grain, slice: key.app, bucket: key.bucket, ...jsonColumns(data) }));
          await tx`INSERT INTO rollup_cells (grain, slice, bucket, data, apps, errors)
            SELECT * FROM unnest(${chunk.map((c) => c.grain)}::smallint[], ${chunk.map((c) => c.slice)}::text[], ${chunk.map((c) => c.bucket)}::bigint[],
              ${chunk.map((c) => c.data)}::text[], ${chunk.map((c) => c.apps)}::text[], ${chunk.map((c) => c.errors)}::text[])`;
        }
        const sightings = new SignatureSightings();
        for (const e of records) {
          const sig = failureSignature(e.outcome, e.error);
          if (sig) sightings.see(sig, e.error!, e.nsapp, e.updatedAt);
        }
        await mergeSightings(tx, sightings);
        await tx`UPDATE marks SET value = ${NOW} WHERE name = 'folded_until'`;
      });
      expect(cells.filter((c) => c.key.grain === GRAINS.hour && c.key.bucket < hoursFrom(NOW)).length).toBeGreaterThan(
        500,
      );

      // Two nodes start together: one rebuilds, the other waits and finds the layout current.
      const [a, b] = await Promise.all(
        [1, 2].map(() => openEngine(url, { durability: "full", migrate: true, create: true })),
      );
      try {
        const answers = await answersOf(a!.store, cells, NOW + DAY);
        expect(answers.got).toEqual(answers.want);
        const [oldHours] = await old<
          { n: number }[]
        >`SELECT count(*)::int AS n FROM rollup_cells WHERE grain = 0 AND bucket < ${hoursFrom(NOW)}`;
        expect(oldHours!.n).toBe(0);
        const check = await verifyRollups(b!.store);
        expect({
          ok: check.ok,
          records: check.records,
          mismatches: check.mismatches,
          gaps: check.signatureGaps,
        }).toEqual({ ok: true, records: records.length, mismatches: [], gaps: 0 });
        expect((await a!.store.getExecutions(retry.randomId)).map((e) => e.attempt)).toEqual([1, 2]);
      } finally {
        await a?.close();
        await b?.close();
      }
      // A node started later rebuilds nothing: the cells stay the very rows they were.
      const rows = async () =>
        old<{ v: string }[]>`SELECT xmin::text || ctid::text AS v FROM rollup_cells ORDER BY grain, slice, bucket`;
      const before = await rows();
      const c = await openEngine(url, { durability: "full", migrate: true, create: true });
      await c.close();
      expect(await rows()).toEqual(before);
    } finally {
      await old.end();
    }
  });
});
