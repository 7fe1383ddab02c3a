// A database of the layout before migrations 0016 and 0017 (rollup cells as JSON in every slice
// and every hour, executions with text ids and every column stored), as the release with migration
// 0015 (declines are aborts) left it, is upgraded in place at open: every execution reads back as
// it was (a decline stored as that release stored it, an abort, included), the cells are rebuilt
// in the new layout and answer every question the old cells answered, verify is clean, and
// opening again changes nothing.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { SignatureSightings, failureSignature } from "../../src/domain/error-signature.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { GRAINS, hoursFrom } from "../../src/domain/rollup.ts";
import { DAY, HOUR, floorHour } from "../../src/domain/time.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { generateExecutions, seedOptions } from "../../src/seed/seed.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { answersOf, insertOldExecutions, jsonColumns, oldLayoutCells, sqliteMigrationsUpTo } from "../helpers/cells.ts";

setDefaultTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), "installstats-layout-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NOW = floorHour(Date.UTC(2026, 10, 20, 15));

/** The seed's /upload installs over 120 days, and executions of today's clients: retries, odd ids, v2 fields, a long error text. */
function executions(): Execution[] {
  const seeded = [...generateExecutions(seedOptions({ records: 1500, days: 120, end: NOW - 2 * HOUR, seed: 11 }))];
  const current = (i: number, over: Partial<Execution>): Execution => ({
    ...seeded[i]!,
    payloadVersion: 2,
    platform: "pve",
    arch: "amd64",
    cpuVendor: "intel",
    gpuVendor: "nvidia",
    gpuPassthrough: "yes",
    repoSource: "ProxmoxVE",
    repoSlug: "community-scripts/ProxmoxVE",
    kernelVersion: "6.14.8-2-pve",
    appVersion: "1.2.3",
    validationAt: seeded[i]!.createdAt + 3000,
    configuringAt: seeded[i]!.createdAt + 30_000,
    ...over,
  });
  const first = seeded[100]!;
  return [
    ...seeded,
    current(100, {
      executionId: "0f3c2a7e-1b2d-4c5e-8f90-123456789abc",
      attempt: 2,
      randomId: first.randomId,
      createdAt: first.createdAt + 10 * 60_000,
      updatedAt: first.createdAt + 20 * 60_000,
    }),
    current(200, { executionId: "fix-odd-id", randomId: "fix-odd-id" }),
    current(300, {
      executionId: "8D2E4F6A-0B1C-4D3E-9F5A-6B7C8D9E0F1A",
      randomId: "8D2E4F6A-0B1C-4D3E-9F5A-6B7C8D9E0F1A",
    }),
    current(400, {
      executionId: "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
      randomId: "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
      status: "failed",
      outcome: "failed",
      exitCode: 100,
      errorCategory: "dependency",
      error: `exit_code=100 | APT\n---\n${"Setting up libfoo (1.2.3) ...\n".repeat(60)}`,
      failedCommand: "apt-get install -y foo",
      failedLine: 42,
    }),
    // A decline, as the release with migration 0015 stored it: an abort by the user.
    current(500, {
      executionId: "6f7a8b9c-0d1e-4f2a-b3c4-d5e6f7a8b9c0",
      randomId: "6f7a8b9c-0d1e-4f2a-b3c4-d5e6f7a8b9c0",
      status: "failed",
      outcome: "aborted",
      exitCode: 114,
      errorCategory: "user_aborted",
      error: "exit_code=114 | declined",
    }),
  ];
}

describe("upgrade from the layout before migrations 0016 and 0017 (as of 0015)", () => {
  test("executions read back as they were; cells answer what the old ones did; verify is clean; again, nothing changes", async () => {
    const path = join(dir, "old.db");
    const records = executions();
    const old = openDatabase(path, { durability: "normal", migrate: false });
    migrate(old.db, { migrationsFolder: sqliteMigrationsUpTo(dir, 15) });
    const cells = oldLayoutCells(records, NOW);
    const putCell = old.sqlite.query(
      "INSERT INTO rollups (grain, app, bucket, data, apps, errors) VALUES (?, ?, ?, ?, ?, ?)",
    );
    old.sqlite.transaction(() => {
      insertOldExecutions(old.sqlite, records);
      for (const { key, data } of cells) {
        const c = jsonColumns(data);
        putCell.run(key.grain, key.app, key.bucket, c.data, c.apps, c.errors);
      }
      // Error signatures, as the engine kept them beside the cells.
      const sightings = new SignatureSightings();
      for (const e of records) {
        const sig = failureSignature(e.outcome, e.error);
        if (sig) sightings.see(sig, e.error!, e.nsapp, e.updatedAt);
      }
      const putSignature = old.sqlite.query(
        "INSERT INTO error_signatures (id, signature, example, first_seen, last_seen, apps) VALUES (?, ?, ?, ?, ?, ?)",
      );
      for (const [id, s] of sightings.seen)
        putSignature.run(id, s.signature, s.example, s.firstSeen, s.lastSeen, JSON.stringify([...s.apps].sort()));
      old.sqlite.run("UPDATE rollup_state SET folded_until = ?, version = 3", [NOW]);
    })();
    expect(cells.filter((c) => c.key.grain === GRAINS.hour && c.key.bucket < hoursFrom(NOW)).length).toBeGreaterThan(
      1000,
    );
    old.sqlite.close();

    const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
    try {
      const { store, sqlite } = engine;
      // Every execution as it was, by its install.
      for (const e of records)
        expect((await store.getExecutions(e.randomId)).find((x) => x.executionId === e.executionId)).toEqual(e);
      expect((await store.getExecutions(records[100]!.randomId)).map((e) => e.attempt)).toEqual([1, 2]);
      // Stored compactly: UUIDs as 16 bytes, random_id only where it differs.
      const layout = sqlite
        .query(
          "SELECT sum(typeof(execution_id) = 'blob' AND length(execution_id) = 16) AS blobs, count(rid) AS rids, count(*) AS n FROM executions",
        )
        .get() as { blobs: number; rids: number; n: number };
      expect(layout).toEqual({ blobs: records.length - 2, rids: 1, n: records.length });
      // Aborts, the decline among them, stored as the outcome's code.
      const aborted = records.filter((e) => e.outcome === "aborted");
      expect(aborted.some((e) => e.exitCode === 114)).toBe(true);
      expect(sqlite.query("SELECT count(*) AS n FROM executions WHERE outcome_code = 2").get()).toEqual({
        n: aborted.length,
      });
      // Every old cell's question has the old answer, hour cells older than the kept ones included.
      const answers = await answersOf(store, cells, NOW + DAY);
      expect(answers.got).toEqual(answers.want);
      expect(
        (
          sqlite.query("SELECT count(*) AS n FROM rollups WHERE grain = 0 AND bucket < ?").get(hoursFrom(NOW)) as {
            n: number;
          }
        ).n,
      ).toBe(0);
      const check = await verifyRollups(store);
      expect({ ok: check.ok, records: check.records, mismatches: check.mismatches, gaps: check.signatureGaps }).toEqual(
        { ok: true, records: records.length, mismatches: [], gaps: 0 },
      );
    } finally {
      await engine.close();
    }
    const snapshot = (e: ReturnType<typeof openSqliteEngine>) =>
      e.sqlite
        .query(
          "SELECT (SELECT count(*) FROM rollups) AS cells, (SELECT sum(length(data)) FROM rollups) AS bytes, (SELECT version FROM rollup_state) AS version",
        )
        .get();
    const first = openSqliteEngine(path, { durability: "normal", migrate: true });
    const before = snapshot(first);
    await first.close();
    const again = openSqliteEngine(path, { durability: "normal", migrate: true });
    expect(snapshot(again)).toEqual(before);
    await again.close();
  });
});
