// An execution's row is found by its creation time and insertion order (execution_ids.seq,
// drizzle/postgres/0016): among many runs stored in the same millisecond each update changes its
// own row, and a database of the release before gets every id's order from its row. A throwaway server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import postgres from "postgres";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { openEngine } from "../../src/store/open.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";
import { reportOp, uploadStart, uploadUpdate } from "../helpers/reports.ts";

setDefaultTimeout(60_000);

let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server?.stop());

const OPEN = { durability: "normal" as const, migrate: true, create: true };
const T = Date.UTC(2026, 10, 29, 12);
const RUNS = 40;
const ids = Array.from({ length: RUNS }, (_, i) => `same-ms-${String(i).padStart(2, "0")}`);
/** Every other run fails, the rest succeed: a row changed in another's place shows. */
const outcomeOf = (i: number) => (i % 2 === 0 ? "failed" : "success");

/** Start reports of every run in one millisecond, then their final statuses, in one batch each. */
async function startAndFinish(url: string, startAt: number | null): Promise<void> {
  const engine = await openEngine(url, OPEN);
  try {
    if (startAt !== null) await engine.store.write(ids.map((id) => reportOp(uploadStart(id), startAt)));
    const results = await engine.store.write(
      ids.map((id, i) => reportOp(uploadUpdate(id, outcomeOf(i), i % 2 === 0 ? "exit code 1" : null), T + 60_000)),
    );
    expect(results.map((r) => r.kind)).toEqual(ids.map(() => "updated"));
  } finally {
    await engine.close();
  }
}

/** Each run's stored outcome, and whether verify finds the rollups equal to a recount. */
async function stored(url: string): Promise<{ outcomes: string[]; verified: boolean }> {
  const engine = await openEngine(url, OPEN);
  try {
    const outcomes = [];
    for (const id of ids) outcomes.push((await engine.store.getExecutions(id)).map((e) => e.outcome).join());
    return { outcomes, verified: (await verifyRollups(engine.store)).ok };
  } finally {
    await engine.close();
  }
}

/** Ids whose order is not their row's (or has none). */
const misplaced = async (pg: postgres.Sql): Promise<string[]> =>
  (
    await pg<{ id: string }[]>`SELECT k.execution_id AS id FROM execution_ids k
      LEFT JOIN executions e ON e.execution_id = k.execution_id AND e.created_at = k.created_at
      WHERE k.seq IS DISTINCT FROM e.seq`
  ).map((r) => r.id);

describe("executions found by creation time and insertion order", () => {
  test("runs stored in one millisecond: each final status goes to its own row", async () => {
    const url = await createDatabase(server, "same_ms");
    await startAndFinish(url, T);
    const pg = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const [shared] = await pg<{ n: number }[]>`SELECT count(*)::int AS n FROM executions WHERE created_at = ${T}`;
      expect(shared!.n).toBe(RUNS);
      expect(await misplaced(pg)).toEqual([]);
    } finally {
      await pg.end();
    }
    expect(await stored(url)).toEqual({ outcomes: ids.map((_, i) => outcomeOf(i)), verified: true });
  });

  test("a database of the release before 0016: ids get their rows' order, an id without a row goes", async () => {
    const url = await createDatabase(server, "before_0016");
    // Runs started by the current release, then the database made to look as 0015 left it.
    const engine = await openEngine(url, OPEN);
    await engine.store.write(ids.map((id) => reportOp(uploadStart(id), T)));
    await engine.close();
    const journal = JSON.parse(
      readFileSync(new URL("../../drizzle/postgres/meta/_journal.json", import.meta.url), "utf8"),
    ) as { entries: { tag: string; when: number }[] };
    const when = journal.entries.find((e) => e.tag === "0016_execution_ids_seq")!.when;
    const pg = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await pg`ALTER TABLE execution_ids DROP COLUMN seq`;
      await pg`DELETE FROM drizzle.__drizzle_migrations WHERE created_at >= ${when}`;
      await pg`INSERT INTO execution_ids (execution_id, random_id, created_at) VALUES ('ghost', 'ghost', ${T})`;

      await startAndFinish(url, null);
      expect(await misplaced(pg)).toEqual([]);
      expect(await pg`SELECT 1 FROM execution_ids WHERE execution_id = 'ghost'`).toHaveLength(0);
      const [column] = await pg<{ nullable: string }[]>`
        SELECT is_nullable AS nullable FROM information_schema.columns WHERE table_name = 'execution_ids' AND column_name = 'seq'`;
      expect(column!.nullable).toBe("NO");
    } finally {
      await pg.end();
    }
    expect(await stored(url)).toEqual({ outcomes: ids.map((_, i) => outcomeOf(i)), verified: true });
  });
});
