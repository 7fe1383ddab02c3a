// Budgets on PostgreSQL with several nodes writing at once (issue 17): two stores on one database
// (two connection pools, as two nodes), four writers at once, small budgets, every kind of write
// that changes the log or held reports. Nothing fails (no deadlock), the log stays within its
// budget, and every running total equals a recount of the tables. The rules themselves are the
// contract suite's (test/contract/, "budgets"), proven on both engines.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { deriveOutcome } from "../../src/domain/outcome.ts";
import type { Report } from "../../src/domain/execution.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import type { Store, WriteOp } from "../../src/store/contract/store.ts";
import { openEngine } from "../../src/store/open.ts";
import { uploadStart } from "../helpers/reports.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(120_000);

let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server?.stop());

const KB = 1024;
const LIMITS = { logBytes: 128 * KB, heldBytes: 8 * KB };
const T0 = Date.parse("2026-05-01T00:00:00Z");
const bytes = (s: string) => new TextEncoder().encode(s);
const junk = (n: number) =>
  bytes(
    `~${Buffer.from(crypto.getRandomValues(new Uint8Array(n)))
      .toString("base64")
      .slice(0, n - 1)}`,
  );
const SHARED = bytes(`{"same": "${"x".repeat(4000)}`);

function finalReport(randomId: string, error: string): Report {
  return {
    executionId: randomId,
    randomId,
    payloadVersion: null,
    fields: null,
    status: "failed",
    error,
    outcome: deriveOutcome("failed", error),
    exitCode: null,
    errorCategory: null,
    failedCommand: null,
    failedLine: null,
    installDuration: null,
  };
}

/** One writer's batches: refusals (new bodies and one shared body), repairs, conflicts, held reports and their starts, deletions, replays, expiry. */
async function writer(store: Store, other: Store, w: number, batches: number): Promise<void> {
  for (let b = 0; b < batches; b++) {
    const at = T0 + b * 1000 + w;
    const id = (k: string) => `w${w}-b${b}-${k}`;
    const ops: WriteOp[] = [
      {
        kind: "reject",
        rejection: {
          endpoint: "upload",
          reason: "invalid_json",
          field: null,
          message: "not JSON",
          randomId: null,
          body: junk(2 * KB + ((b * 7) % 6) * KB),
        },
        at,
      },
      {
        kind: "reject",
        rejection: {
          endpoint: "telemetry",
          reason: "invalid_json",
          field: null,
          message: "not JSON",
          randomId: null,
          body: SHARED,
        },
        at,
      },
      {
        kind: "report",
        endpoint: "upload",
        report: uploadStart(id("s")),
        raw: bytes(`{"random_id": "${id("s")}",}`),
        repairs: ["trailing_comma"],
        at,
      },
      ...["h", "h1", "h2"].map(
        (k) =>
          ({
            kind: "report",
            endpoint: "updatestatus",
            report: finalReport(id(k), `E: ${"unable to fetch\n".repeat(60)}`),
            raw: bytes("{}"),
            repairs: [],
            at,
          }) as const,
      ),
    ];
    if (b > 0)
      ops.push({
        kind: "report",
        endpoint: "upload",
        report: uploadStart(`w${w}-b${b - 1}-h`),
        raw: bytes("{}"),
        repairs: [],
        at,
      }); // takes a held report, maybe from the other node
    if (b % 5 === 4)
      ops.push({
        kind: "report",
        endpoint: "updatestatus",
        report: finalReport(id("s"), "late"),
        raw: junk(3 * KB),
        repairs: [],
        at,
      }); // conflicts with nothing yet: applied
    if (b % 5 === 4)
      ops.push({
        kind: "report",
        endpoint: "updatestatus",
        report: finalReport(id("s"), "again"),
        raw: junk(3 * KB),
        repairs: [],
        at,
      }); // already final: logged
    if (b % 7 === 6) ops.push({ kind: "delete", randomId: `w${w}-b${b - 3}-s`, at });
    if (b % 9 === 8) ops.push({ kind: "expire-held", before: at, limit: 5, at });
    await store.write(ops);
    if (b % 6 === 5) {
      const [entry] = await other.listRejected({ limit: 1 });
      if (entry) await other.write([{ kind: "mark-replayed", rejectedId: entry.id, result: "still invalid_json", at }]);
    }
    if (b === batches - 5) await other.write([{ kind: "forget-rejected", before: T0 + (batches / 2) * 1000, at }]);
  }
}

describe("budgets with two nodes writing at once", () => {
  test("no deadlock, the log within its budget, every total equal to a recount of the tables", async () => {
    const url = await createDatabase(server, "budgets");
    const open = () => openEngine(url, { durability: "normal", migrate: true, create: true });
    const [a, b] = await Promise.all([open(), open()]);
    const check = postgres(url, { max: 1, onnotice: () => {} });
    try {
      for (const e of [a, b]) e.store.setLimits(LIMITS);
      await Promise.all([
        writer(a.store, b.store, 0, 40),
        writer(a.store, b.store, 1, 40),
        writer(b.store, a.store, 2, 40),
        writer(b.store, a.store, 3, 40),
      ]);

      const budgets = await a.store.budgets();
      const [recount] = await check<Record<string, number>[]>`SELECT
        (SELECT count(*)::int FROM rejected_reports) AS entries,
        (SELECT count(*)::int FROM rejected_reports WHERE body_store = 'head') AS "headOnly",
        (SELECT coalesce(sum(octet_length(data)), 0)::int FROM bodies) AS "bodyBytes",
        (SELECT coalesce(sum(size), 0)::int FROM bodies) AS "bodyRawBytes",
        (SELECT coalesce(sum(cost), 0)::int FROM rejected_reports) + (SELECT coalesce(sum(octet_length(data)), 0)::int FROM bodies) AS "usedBytes",
        (SELECT count(*)::int FROM held_reports) AS held,
        (SELECT coalesce(sum(cost), 0)::int FROM held_reports) AS "heldBytes",
        (SELECT count(*)::int FROM bodies b WHERE refs <> (SELECT count(*) FROM rejected_reports r WHERE r.body_store = 'shared' AND r.body_hash = b.hash)) AS "wrongRefs"`;
      expect({
        ...budgets.log,
        held: budgets.held.count,
        heldBytes: budgets.held.usedBytes,
        wrongRefs: 0,
      }).toMatchObject(recount!);
      expect(budgets.log.usedBytes).toBeLessThanOrEqual(LIMITS.logBytes);
      expect(budgets.held.usedBytes).toBeLessThanOrEqual(LIMITS.heldBytes);
      // Every rule was at work: shared bodies, heads, eviction, held reports applied on their own.
      expect(budgets.log.deduplicated).toBeGreaterThan(10);
      expect(budgets.log.truncated).toBeGreaterThan(20);
      expect(budgets.log.evicted).toBeGreaterThan(0);
      expect(budgets.held.overflowed).toBeGreaterThan(0);
      expect(budgets.held.expired).toBeGreaterThan(0);
      expect((await verifyRollups(a.store)).ok).toBe(true);
    } finally {
      await check.end();
      await Promise.all([a.close(), b.close()]);
    }
  });
});
