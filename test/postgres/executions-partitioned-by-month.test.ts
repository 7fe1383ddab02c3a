// Executions partitioned by month (drizzle/postgres/0006, docs/decisions/2026-11-26-postgresql-large-tables.md): a database made by the releases before, with data, upgraded at start-up with
// nothing lost and rollups equal to a recount; partitions made as months come. A throwaway server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { SignatureSightings, failureSignature } from "../../src/domain/error-signature.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { RollupDeltas, type RollupData, type RollupKey } from "../../src/domain/rollup.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { generateExecutions, seedOptions } from "../../src/seed/seed.ts";
import { openEngine } from "../../src/store/open.ts";
import { missingMonth, monthOf, partitionName } from "../../src/store/postgres/partitions.ts";
import { INSERT_COLUMNS, rowOf } from "../../src/store/postgres/rows.ts";
import { transaction } from "../../src/store/postgres/transaction.ts";
import { mergeSightings } from "../../src/store/postgres/writes.ts";
import { createDatabase, migrationsBefore, startPostgres, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(60_000);

let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server?.stop());

const types = { bigint: { to: 20, from: [20], parse: (x: string) => Number(x), serialize: (x: number) => String(x) } };

/** Rollups as the releases before 0008 kept them: a counter row per (grain, slice, bucket, dimension, value), durations and errors alike. */
async function writeCounters(tx: postgres.Sql, cells: Iterable<{ key: RollupKey; data: RollupData }>): Promise<void> {
  const counts: (string | number)[][] = [];
  const durations: (string | number)[][] = [];
  const errors: (string | number)[][] = [];
  for (const { key, data } of cells) {
    const at = [key.grain, key.app, key.bucket];
    for (const [dim, values] of Object.entries(data.dims))
      for (const [value, c] of Object.entries(values)) counts.push([...at, dim, value, ...c]);
    for (const [outcome, bins] of Object.entries(data.dur))
      for (const [bin, n] of Object.entries(bins)) durations.push([...at, outcome, Number(bin), n]);
    for (const [signature, n] of Object.entries(data.err)) errors.push([...at, signature, n]);
  }
  const col = (rows: (string | number)[][], i: number) => rows.map((r) => r[i]!) as never;
  await tx`INSERT INTO rollup_counts SELECT * FROM unnest(${col(counts, 0)}::smallint[], ${col(counts, 1)}::text[], ${col(counts, 2)}::bigint[], ${col(counts, 3)}::text[],
    ${col(counts, 4)}::text[], ${col(counts, 5)}::bigint[], ${col(counts, 6)}::bigint[], ${col(counts, 7)}::bigint[], ${col(counts, 8)}::bigint[], ${col(counts, 9)}::bigint[])`;
  await tx`INSERT INTO rollup_durations SELECT * FROM unnest(${col(durations, 0)}::smallint[], ${col(durations, 1)}::text[], ${col(durations, 2)}::bigint[],
    ${col(durations, 3)}::text[], ${col(durations, 4)}::smallint[], ${col(durations, 5)}::bigint[])`;
  await tx`INSERT INTO rollup_errors SELECT * FROM unnest(${col(errors, 0)}::smallint[], ${col(errors, 1)}::text[], ${col(errors, 2)}::bigint[], ${col(errors, 3)}::text[], ${col(errors, 4)}::bigint[])`;
}

/** Executions over four months: the seed's installs, and retries of some of them a month later (attempt 2). */
function executionsOverMonths(): Execution[] {
  const seeded = [
    ...generateExecutions(seedOptions({ records: 2000, days: 100, end: Date.UTC(2026, 2, 10), seed: 5 })),
  ];
  const retries = seeded
    .filter((_, i) => i % 97 === 0)
    .map((e) => ({
      ...e,
      executionId: `${e.randomId}-retry`,
      attempt: 2,
      createdAt: e.createdAt + 31 * 86_400_000,
      updatedAt: e.updatedAt + 31 * 86_400_000,
      installingAt: null,
      finishedAt: null,
      outcome: "in_progress" as const,
      status: "installing",
      error: null,
      durationMs: null,
    }));
  return [...seeded, ...retries];
}

describe("executions partitioned by month", () => {
  test("months are UTC calendar months; names as the migration gives them; a missing month read from the server's error", () => {
    expect(monthOf(Date.UTC(2026, 0, 31, 23, 59, 59, 999))).toEqual({
      from: Date.UTC(2026, 0, 1),
      to: Date.UTC(2026, 1, 1),
    });
    expect(monthOf(Date.UTC(2026, 11, 1))).toEqual({ from: Date.UTC(2026, 11, 1), to: Date.UTC(2027, 0, 1) });
    expect(partitionName(Date.UTC(2026, 8, 1))).toBe("executions_p202609");
    const error = {
      code: "23514",
      message: 'no partition of relation "executions" found for row',
      detail: "Partition key of the failing row contains (created_at) = (1736985600000).",
    };
    expect(missingMonth(error)).toBe(1736985600000);
    expect(missingMonth({ ...error, code: "23505" })).toBeNull();
    expect(missingMonth({ ...error, message: 'no partition of relation "other" found for row' })).toBeNull();
  });

  test("a database of the schema before 0006, with data, is upgraded at start-up: every execution kept with its order, ids unique across months, rollup counters become cells, verify clean", async () => {
    const url = await createDatabase(server, "upgrade");
    const old = postgres(url, { max: 1, onnotice: () => {}, types });
    const executions = executionsOverMonths();
    try {
      // The schema as the releases before 0006 made it, and data written as their engine wrote it:
      // rows, rollup counters (open hours: nothing folded yet) and error signatures.
      await migrate(drizzle(old), { migrationsFolder: migrationsBefore("0006_partition_by_month") });
      await transaction(old, async (tx) => {
        for (let i = 0; i < executions.length; i += 500) {
          const json = JSON.stringify(executions.slice(i, i + 500).map(rowOf));
          await tx.unsafe(
            `INSERT INTO executions (${INSERT_COLUMNS}) SELECT ${INSERT_COLUMNS} FROM json_populate_recordset(NULL::executions, $1::text::json)`,
            [json],
          );
        }
        const deltas = new RollupDeltas(0);
        const sightings = new SignatureSightings();
        for (const e of executions) {
          const sig = failureSignature(e.outcome, e.error);
          deltas.add(e, e.outcome, 1, sig?.id ?? null);
          if (sig) sightings.see(sig, e.error!, e.nsapp, e.updatedAt);
        }
        await writeCounters(tx, [...deltas.cells.values(), ...deltas.openCells().values()]);
        await mergeSightings(tx, sightings);
        await tx`INSERT INTO held_reports (execution_id, random_id, report, received_at, repaired, cost) VALUES ('held-1', 'held-1', '{}', 1, false, 2)`;
      });
      const before = await old<
        { id: string; seq: number }[]
      >`SELECT execution_id AS id, seq FROM executions ORDER BY created_at, seq`;
      expect(before).toHaveLength(executions.length);

      // Start-up: what serve and every command do.
      const engine = await openEngine(url, { durability: "full", migrate: true, create: true });
      try {
        const { store } = engine;
        const after = await old<
          { id: string; seq: number }[]
        >`SELECT execution_id AS id, seq FROM executions ORDER BY created_at, seq`;
        expect(after).toEqual(before);
        const stored: Execution[] = [];
        for await (const e of store.iterateExecutions({})) stored.push(e);
        const byId = (a: Execution, b: Execution) => (a.executionId < b.executionId ? -1 : 1);
        expect(stored.sort(byId)).toEqual([...executions].sort(byId));
        // Every month in its own partition, each execution's id in execution_ids, the old table gone.
        const parts = await old<{ name: string; n: number }[]>`
          SELECT c.relname AS name, (SELECT count(*) FROM executions e WHERE e.tableoid = c.oid)::int AS n
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'executions'::regclass ORDER BY 1`;
        const months = [
          ...new Set(executions.map((e) => new Date(e.createdAt).toISOString().slice(0, 7).replace("-", ""))),
        ].sort();
        expect(parts.map((p) => p.name)).toEqual(months.map((m) => `executions_p${m}`));
        expect(parts.reduce((n, p) => n + p.n, 0)).toBe(executions.length);
        expect((await old<{ n: number }[]>`SELECT count(*)::int AS n FROM execution_ids`)[0]!.n).toBe(
          executions.length,
        );
        expect(
          (await old<{ t: string | null }[]>`SELECT to_regclass('executions_unpartitioned')::text AS t`)[0]!.t,
        ).toBeNull();
        expect(await store.heldBefore(2, 10)).toEqual(["held-1"]);
        const check = await verifyRollups(store);
        expect({
          ok: check.ok,
          records: check.records,
          mismatches: check.mismatches.length,
          gaps: check.signatureGaps,
        }).toEqual({ ok: true, records: executions.length, mismatches: 0, gaps: 0 });

        // Writes go on: an install of the first month is found by its id (a duplicate), its retry
        // by the install, a new one is created; seq goes on after the copied rows'.
        const first = executions[0]!;
        const install = await store.getExecutions(executions.find((e) => e.executionId.endsWith("-retry"))!.randomId);
        expect(install.map((e) => e.attempt)).toEqual([1, 2]);
        expect(await store.write([{ kind: "load", execution: first, at: Date.now() }])).toEqual([
          { kind: "duplicate" },
        ]);
        const fresh = {
          ...first,
          executionId: "new-one",
          randomId: "new-one",
          createdAt: Date.UTC(2026, 5, 1),
          updatedAt: Date.UTC(2026, 5, 1),
        };
        expect(await store.write([{ kind: "load", execution: fresh, at: Date.now() }])).toEqual([
          { kind: "created", outcome: fresh.outcome },
        ]);
        const [newest] = await old<{ seq: number }[]>`SELECT seq FROM executions WHERE execution_id = 'new-one'`;
        expect(newest!.seq).toBeGreaterThan(Math.max(...before.map((r) => r.seq)));
      } finally {
        await engine.close();
      }
      // And `installstats verify` says so too.
      const verify = Bun.spawnSync(
        ["bun", new URL("../../src/main.ts", import.meta.url).pathname, "verify", "--db", url],
        { stdout: "pipe", stderr: "pipe" },
      );
      expect({ code: verify.exitCode, ok: (JSON.parse(verify.stdout.toString()) as { ok: boolean }).ok }).toEqual({
        code: 0,
        ok: true,
      });
    } finally {
      await old.end();
    }
  });

  test("partitions are made as months come, by one node however many ask at once", async () => {
    const url = await createDatabase(server, "months");
    const [a, b] = await Promise.all(
      [1, 2].map(() => openEngine(url, { durability: "full", migrate: true, create: true })),
    );
    const check = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const month = (m: number, id: string) => ({
        ...executionsOverMonths()[0]!,
        executionId: id,
        randomId: id,
        createdAt: Date.UTC(2024, m, 3),
        updatedAt: Date.UTC(2024, m, 3),
      });
      // Both nodes need the same new months at once.
      const results = await Promise.all([
        a!.store.write([0, 1, 2].map((m) => ({ kind: "load" as const, execution: month(m, `a${m}`), at: 0 }))),
        b!.store.write([2, 1, 0].map((m) => ({ kind: "load" as const, execution: month(m, `b${m}`), at: 0 }))),
      ]);
      expect(results.flat().map((r) => r.kind)).toEqual(Array(6).fill("created"));
      const names = await check<
        { name: string }[]
      >`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'executions'::regclass ORDER BY 1`;
      expect(names.map((n) => n.name)).toEqual(["executions_p202401", "executions_p202402", "executions_p202403"]);
      // A partition has the table's indexes (partial ones included), each attached to the table's.
      const indexes = await check<{ parent: number; partition: number; attached: number }[]>`
        SELECT (SELECT count(*)::int FROM pg_index WHERE indrelid = 'executions'::regclass) AS parent,
               (SELECT count(*)::int FROM pg_index WHERE indrelid = 'executions_p202402'::regclass) AS partition,
               (SELECT count(*)::int FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
                 WHERE x.indrelid = 'executions_p202402'::regclass) AS attached`;
      expect(indexes[0]).toEqual({ parent: 4, partition: 4, attached: 4 });
    } finally {
      await check.end();
      await a?.close();
      await b?.close();
    }
  });
});
