// Rollup deltas on PostgreSQL: batches append their counts to rollup_deltas and a background fold
// merges them into rollup_cells (src/store/postgres/fold.ts). Reads answer the same whether the
// deltas are folded or not (a held fold lock keeps them unfolded); two nodes writing the same
// cells at once give exact sums; a database of the migrations before 0013 is upgraded in place.
// A throwaway server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { SignatureSightings, failureSignature, failureSignatureId } from "../../src/domain/error-signature.ts";
import { RollupDeltas, storedSlicesOf } from "../../src/domain/rollup.ts";
import { HOUR } from "../../src/domain/time.ts";
import { openEngine } from "../../src/store/open.ts";
import type { Store } from "../../src/store/contract/store.ts";
import { PgLabels, mergeCells } from "../../src/store/postgres/cells.ts";
import { DELTA_FOLD_LOCK } from "../../src/store/postgres/fold.ts";
import { MARKS } from "../../src/store/postgres/intake.ts";
import { Partitions } from "../../src/store/postgres/partitions.ts";
import { transaction } from "../../src/store/postgres/transaction.ts";
import { getMark, mergeSightings } from "../../src/store/postgres/writes.ts";
import { createDatabase, migrationsBefore, startPostgres, type PgServer } from "../helpers/postgres.ts";
import { insertRowsBefore0016 } from "../helpers/upgrade.ts";
import {
  ALL,
  MIN,
  appOf,
  expectVerified,
  hourTotals,
  mixedWorkload,
  openHour,
  outcomes,
  record,
  rollupSnapshot,
  startOp,
  updateOp,
} from "../contract/harness.ts";

setDefaultTimeout(120_000);

let server: PgServer;
let n = 0;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server?.stop());

const open = async (url: string): Promise<Store> =>
  (await openEngine(url, { durability: "normal", migrate: true, create: true })).store;

async function count(sql: postgres.Sql, table: "rollup_deltas" | "rollup_cells"): Promise<number> {
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ${sql(table)}`;
  return row!.n;
}

const APPS = ["nginx", "docker", "homeassistant", null];

describe("rollup deltas", () => {
  test("reads add the deltas the fold has not merged: every answer equals a recount, and stays the same once folded", async () => {
    const url = await createDatabase(server, `deltas_${++n}`);
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    // Held by this session: no node can fold, so every read below meets unfolded deltas.
    await admin`SELECT pg_advisory_lock(${DELTA_FOLD_LOCK})`;
    let store = await open(url);
    let snapshot: Awaited<ReturnType<typeof rollupSnapshot>>;
    const seen: Record<string, number> = {};
    try {
      const records = await mixedWorkload(store, async (step, records) => {
        seen[step] = await count(admin, "rollup_deltas");
        await expectVerified(store, records);
      });
      // Every step but the hour fold (it merges every delta itself, holding the fold lock alone) left deltas to read.
      expect(Object.entries(seen).filter(([, d]) => d === 0)).toEqual([["fold", 0]]);
      expect(await count(admin, "rollup_deltas")).toBeGreaterThan(0);
      snapshot = await rollupSnapshot(store, [ALL, appOf("nginx"), appOf("docker"), appOf(null)]);
      await admin`SELECT pg_advisory_unlock(${DELTA_FOLD_LOCK})`;
      await store.close(); // folds what it appended
      expect(await count(admin, "rollup_deltas")).toBe(0);
      expect(await count(admin, "rollup_cells")).toBeGreaterThan(0);
      store = await open(url);
      expect(await rollupSnapshot(store, [ALL, appOf("nginx"), appOf("docker"), appOf(null)])).toEqual(snapshot);
      await expectVerified(store, records);
    } finally {
      await store.close();
      await admin.end();
    }
  });

  test("two nodes writing the same cells at once: the sums are exact, folded or not", async () => {
    const url = await createDatabase(server, `deltas_${++n}`);
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    const [a, b] = await Promise.all([open(url), open(url)]);
    try {
      const H = await openHour(a!);
      const ROUNDS = 30;
      const PER = 12;
      // Each round both nodes start PER installs of the same four apps in the same hour, and
      // finish the installs the other node started the round before: every batch touches the
      // same cells (an app's, every app's, the hour's, day's and month's).
      const id = (node: string, round: number, i: number) => `${node}-${round}-${i}`;
      const batch = (node: string, other: string, round: number) => [
        ...Array.from({ length: PER }, (_, i) =>
          startOp(id(node, round, i), { nsapp: APPS[i % 4]! }, H + (round % 50) * MIN),
        ),
        ...(round === 0
          ? []
          : Array.from({ length: PER }, (_, i) =>
              updateOp(
                id(other, round - 1, i),
                i % 3 ? "done" : "failed",
                i % 3 ? null : "exit code 100: apt failed",
                H + 55 * MIN,
              ),
            )),
      ];
      // Over more than the fold's delay: both nodes' folds run while the other writes.
      for (let round = 0; round < ROUNDS; round++) {
        await Promise.all([a!.write(batch("a", "b", round)), b!.write(batch("b", "a", round)), Bun.sleep(100)]);
      }
      expect(await count(admin, "rollup_cells")).toBeGreaterThan(0);
      const installs = 2 * ROUNDS * PER;
      // Updates of the last round's starts were never sent: those stay in progress.
      const finished = 2 * (ROUNDS - 1) * PER;
      const failed = 2 * (ROUNDS - 1) * (PER / 3);
      const want = outcomes({
        success: finished - failed,
        failed,
        in_progress: installs - finished,
      });
      expect(await hourTotals(a!)).toEqual(want);
      expect(await hourTotals(b!, ALL)).toEqual(want);
      await expectVerified(a!, installs);
      await a!.close();
      await b!.close();
      expect(await count(admin, "rollup_deltas")).toBe(0);
      const c = await open(url);
      try {
        expect(await hourTotals(c)).toEqual(want);
        await expectVerified(c, installs);
      } finally {
        await c.close();
      }
    } finally {
      await a?.close();
      await b?.close();
      await admin.end();
    }
  });

  test("a database of the migrations before 0013 is upgraded in place: its cells answer as before, new counts go through deltas", async () => {
    const url = await createDatabase(server, `deltas_${++n}`);
    const old = postgres(url, {
      max: 2,
      onnotice: () => {},
      types: {
        bigint: {
          to: 20,
          from: [20],
          parse: (x: string) => Number(x),
          serialize: (x: number) => String(x),
        },
      },
    });
    try {
      await migrate(drizzle(old), {
        migrationsFolder: migrationsBefore("0013_rollup_deltas"),
      });
      // What the release before wrote: executions and the cells it merged them into.
      const H = Date.UTC(2026, 9, 14, 9);
      const records = Array.from({ length: 40 }, (_, i) =>
        record(`old-${i}`, {
          createdAt: H + i * 7 * MIN,
          nsapp: APPS[i % 4]!,
          status: i % 5 ? "done" : "failed",
          error: i % 5 ? null : "exit code 1: x",
        }),
      );
      await new Partitions(old).ensure(records.map((e) => e.createdAt));
      const labels = new PgLabels(old);
      const batch = labels.batch();
      await transaction(old, async (tx) => {
        await insertRowsBefore0016(tx, records);
        const deltas = new RollupDeltas(await getMark(tx, MARKS.foldedUntil), storedSlicesOf);
        const sightings = new SignatureSightings();
        for (const r of records) {
          deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
          const sig = failureSignature(r.outcome, r.error);
          if (sig) sightings.see(sig, r.error!, r.nsapp, r.updatedAt);
        }
        await mergeCells(tx, batch, [...deltas.cells.values(), ...deltas.openCells().values()]);
        await mergeSightings(tx, sightings);
      });
      const [table] = await old<{ t: string | null }[]>`SELECT to_regclass('rollup_deltas')::text AS t`;
      expect(table!.t).toBeNull();

      const store = await open(url); // applies 0013
      try {
        const [now] = await old<{ t: string | null }[]>`SELECT to_regclass('rollup_deltas')::text AS t`;
        expect(now!.t).toBe("rollup_deltas");
        expect(await hourTotals(store)).toEqual(outcomes({ success: 32, failed: 8 }));
        await store.write([
          startOp("new-1", { nsapp: "nginx" }, H + 3 * HOUR),
          startOp("new-2", { nsapp: "docker" }, H + 3 * HOUR),
        ]);
        await store.write([updateOp("new-2", "failed", "exit code 2: y", H + 4 * HOUR)]);
        expect(await hourTotals(store)).toEqual(outcomes({ success: 32, failed: 9, in_progress: 1 }));
        await expectVerified(store, 42);
      } finally {
        await store.close();
      }
      expect(await count(old, "rollup_deltas")).toBe(0);
    } finally {
      await old.end();
    }
  });
});
