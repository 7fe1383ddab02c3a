// A database written by the previous release (test/fixtures/release-0.1.sql: made by release 0.1
// code, commit f79b34e, with `seed` and real /upload reports: failed with an exit code, done,
// held updates, a repaired body, a tool, one still in progress) is upgraded in place at open:
// every record kept as an execution, exit codes and categories derived (and the outcome a failure's
// code makes it), held updates applied
// later as before, rollups rebuilt and equal to a recount.
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { normalizeStart } from "../../src/domain/normalize.ts";
import { parseExitCode } from "../../src/domain/exit-codes.ts";
import { outcomeOfFailure, type Outcome } from "../../src/domain/outcome.ts";
import { defaults } from "../../src/config.ts";

const dir = mkdtempSync(join(tmpdir(), "installstats-migration-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function previousReleaseDb(): { path: string; installs: Record<string, unknown>[]; held: number; rejected: number } {
  const path = join(dir, `old-${Math.random().toString(36).slice(2)}.db`);
  const db = new Database(path, { create: true });
  db.exec(readFileSync(join(import.meta.dir, "../fixtures/release-0.1.sql"), "utf8"));
  const installs = db.query("SELECT * FROM installs ORDER BY random_id").all() as Record<string, unknown>[];
  const held = (db.query("SELECT count(*) AS n FROM held_updates").get() as { n: number }).n;
  const rejected = (db.query("SELECT count(*) AS n FROM rejected_reports").get() as { n: number }).n;
  db.close();
  return { path, installs, held, rejected };
}

const NORMALIZE = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };

describe("upgrade of a database written by release 0.1", () => {
  test("every install becomes its first execution, field for field; nothing else is lost", async () => {
    const old = previousReleaseDb();
    expect(old.installs.length).toBeGreaterThan(60);
    expect(old.held).toBe(2);
    const engine = openSqliteEngine(old.path, { durability: "normal", migrate: true });
    try {
      for (const before of old.installs) {
        const [after, ...more] = await engine.store.getExecutions(before.random_id as string);
        expect(more).toEqual([]);
        expect(after).toMatchObject({
          executionId: before.random_id,
          randomId: before.random_id,
          attempt: 1,
          type: before.type,
          ctType: before.ct_type,
          diskSize: before.disk_size,
          coreCount: before.core_count,
          ramSize: before.ram_size,
          osType: before.os_type,
          osVersion: before.os_version,
          disableip6: before.disableip6,
          nsapp: before.nsapp,
          method: before.method,
          pveVersion: before.pve_version,
          status: before.status,
          // A failure whose text states a user's abort code or a blocked one (the old client's
          // TERMINATED is 143) is read with the rule (domain/outcome.ts outcomeOfFailure).
          outcome: outcomeOfFailure(before.outcome as Outcome, parseExitCode(before.error as string | null)),
          error: before.error,
          createdAt: before.created_at,
          updatedAt: before.updated_at,
          durationMs: before.duration_ms,
          repaired: before.repaired === 1,
          payloadVersion: null,
          installingAt: before.created_at,
        });
      }
      const tables = engine.sqlite
        .query("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((r) => (r as { name: string }).name);
      expect(tables).not.toContain("installs");
      expect(tables).not.toContain("held_updates");
      const rejected = (engine.sqlite.query("SELECT count(*) AS n FROM rejected_reports").get() as { n: number }).n;
      expect(rejected).toBe(old.rejected);
      const check = await verifyRollups(engine.store);
      expect(check.records).toBe(old.installs.length);
      expect(check.mismatches).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  test("exit codes and categories derived from old texts; kinds from types; held updates still apply", async () => {
    const old = previousReleaseDb();
    const engine = openSqliteEngine(old.path, { durability: "normal", migrate: true });
    try {
      const [failed] = await engine.store.getExecutions("fix-failed");
      expect(failed).toMatchObject({ outcome: "failed", exitCode: 100, errorCategory: "dependency", kind: "install" });
      const [done] = await engine.store.getExecutions("fix-done");
      expect(done).toMatchObject({
        outcome: "success",
        exitCode: null,
        errorCategory: null,
        finishedAt: done!.updatedAt,
      });
      const [tool] = await engine.store.getExecutions("fix-tool");
      expect(tool).toMatchObject({ kind: "tool", outcome: "in_progress" });
      // The held INTERRUPTED update meets its start report after the upgrade: aborted, user_aborted.
      const start = normalizeStart({ type: "lxc", nsapp: "late", random_id: "fix-held" }, NORMALIZE);
      if (!start.ok) throw new Error(start.message);
      const [result] = await engine.store.write([
        { kind: "report", report: start.value, endpoint: "upload", raw: new Uint8Array(), repairs: [], at: Date.now() },
      ]);
      expect(result).toEqual({ kind: "created", outcome: "aborted" });
      const [held] = await engine.store.getExecutions("fix-held");
      expect(held).toMatchObject({
        status: "failed",
        outcome: "aborted",
        error: "INTERRUPTED",
        exitCode: 130,
        errorCategory: "user_aborted",
        durationMs: null,
      });
      expect((await verifyRollups(engine.store)).mismatches).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  test("opening again changes nothing (the upgrade runs once)", async () => {
    const old = previousReleaseDb();
    const first = openSqliteEngine(old.path, { durability: "normal", migrate: true });
    const version = (first.sqlite.query("SELECT version FROM rollup_state").get() as { version: number }).version;
    const cells = first.sqlite.query("SELECT count(*) AS n, sum(length(data)) AS b FROM rollups").get() as {
      n: number;
      b: number;
    };
    await first.close();
    const again = openSqliteEngine(old.path, { durability: "normal", migrate: true });
    expect((again.sqlite.query("SELECT version FROM rollup_state").get() as { version: number }).version).toBe(version);
    expect(again.sqlite.query("SELECT count(*) AS n, sum(length(data)) AS b FROM rollups").get()).toEqual(cells);
    await again.close();
  });
});
