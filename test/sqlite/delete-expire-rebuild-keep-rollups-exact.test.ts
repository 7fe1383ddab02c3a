// Deleting and expiring installs through the one write path keeps rollups equal to a recount;
// open hours' cells (kept in memory) too, across connections.
import { describe, expect, test } from "bun:test";
import { startReport, testApp } from "../helpers/app.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { createSqliteStore } from "../../src/store/sqlite/store.ts";
import type { Store, WriteOp } from "../../src/store/contract/store.ts";
import { ALL_APPS, sliceKey } from "../../src/domain/rollup.ts";
import { reportOp, uploadStart, uploadUpdate } from "../helpers/reports.ts";

describe("delete", () => {
  test("removes the record, its held update and its rejected-log bodies; rollups follow", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("gone", { nsapp: "x" }));
    await t.post("/upload/updatestatus", { status: "failed", error: "exit code 3", random_id: "gone" });
    await t.post("/upload/updatestatus", { status: "done", random_id: "gone" }); // 409: logged with its random_id
    await t.post("/upload", startReport("kept", { nsapp: "x" }));
    await t.post("/upload/updatestatus", { status: "done", random_id: "held-only" });
    expect((await t.rejected()).filter((r) => r.randomId === "gone").length).toBe(1);

    expect(await t.writer.submit({ kind: "delete", randomId: "gone", at: t.clock() })).toEqual({
      kind: "deleted",
      found: true,
      executions: 1,
    });
    expect(await t.writer.submit({ kind: "delete", randomId: "held-only", at: t.clock() })).toEqual({
      kind: "deleted",
      found: true,
      executions: 0,
    });
    expect(await t.writer.submit({ kind: "delete", randomId: "never", at: t.clock() })).toEqual({
      kind: "deleted",
      found: false,
      executions: 0,
    });
    expect((await t.get("/api/installs/gone")).status).toBe(404);
    expect((await t.rejected()).filter((r) => r.randomId === "gone")).toEqual([]);
    expect(t.sqlite.query("SELECT count(*) AS n FROM held_reports").get()).toEqual({ n: 0 });
    expect((await t.get("/api/stats/summary")).body).toMatchObject({ total: 1, failed: 0, in_progress: 1 });
    expect(await verifyRollups(t.store)).toMatchObject({ ok: true, records: 1 });
  });
});

describe("expire", () => {
  test("an install stuck in progress becomes unknown, keeps its status, and still takes a late final status", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("stuck"));
    await t.post("/upload", startReport("done-one"));
    await t.post("/upload/updatestatus", { status: "done", random_id: "done-one" });
    t.clock.advance(3 * 3600_000);
    expect(await t.writer.submit({ kind: "expire", executionId: "stuck", at: t.clock() })).toEqual({
      kind: "expired",
      changed: true,
    });
    expect(await t.writer.submit({ kind: "expire", executionId: "done-one", at: t.clock() })).toEqual({
      kind: "expired",
      changed: false,
    });
    expect((await t.get("/api/installs/stuck")).body).toMatchObject({ status: "installing", outcome: "unknown" });
    expect((await t.get("/api/stats/summary")).body).toMatchObject({ unknown: 1, in_progress: 0, success: 1 });
    expect((await verifyRollups(t.store)).ok).toBe(true);

    const late = await t.post("/upload/updatestatus", { status: "failed", error: "exit code 1", random_id: "stuck" });
    expect(late.status).toBe(200);
    expect((await t.get("/api/installs/stuck")).body).toMatchObject({
      status: "failed",
      outcome: "failed",
      duration_s: 3 * 3600,
    });
    expect((await t.get("/api/stats/summary")).body).toMatchObject({ unknown: 0, failed: 1 });
    expect((await verifyRollups(t.store)).ok).toBe(true);
    expect((await t.post("/upload/updatestatus", { status: "done", random_id: "stuck" })).status).toBe(409);
  });
});

describe("rebuildRollups", () => {
  test("recomputes every cell from the records: a wiped or damaged rollup table is exact again", async () => {
    const t = await testApp();
    for (let i = 0; i < 50; i++) {
      await t.post("/upload", startReport(`rb-${i}`, { nsapp: `app-${i % 5}` }));
      if (i % 3)
        await t.post("/upload/updatestatus", {
          status: i % 2 ? "done" : "failed",
          error: `exit code ${i % 4}`,
          random_id: `rb-${i}`,
        });
      t.clock.advance(9 * 3600_000); // spread over days and into the next month
    }
    // The first 30 installs' hours are folded into stored cells; the rest stay open (in memory).
    const middle = Date.parse("2026-06-01T12:00:00Z") + 30 * 9 * 3600_000;
    expect(await t.writer.submit({ kind: "fold", until: middle, at: t.clock() })).toEqual({
      kind: "folded",
      hours: 30,
    });
    const before = (await t.get("/api/stats/summary?days=60")).body;
    expect(before.total).toBe(50);
    t.sqlite.run("DELETE FROM rollups WHERE grain = 2");
    t.sqlite.run('UPDATE rollups SET data = \'{"dims":{},"dur":{}}\' WHERE id IN (SELECT id FROM rollups LIMIT 3)');
    expect((await verifyRollups(t.store)).ok).toBe(false);
    await t.store.rebuildRollups();
    expect(await verifyRollups(t.store)).toMatchObject({ ok: true, records: 50 });
    expect((await t.get("/api/stats/summary?days=60")).body).toEqual(before);
  });
});

describe("open hours", () => {
  const start = (id: string, nsapp: string, at: number): WriteOp => reportOp(uploadStart(id, { nsapp }), at);
  const done = (id: string, at: number): WriteOp => reportOp(uploadUpdate(id, "failed", "exit code 2"), at);
  const hourCells = async (s: Store) =>
    (await s.rollupCells(0, 0, Number.MAX_SAFE_INTEGER)).sort(
      (x, y) => x.bucket - y.bucket || x.slice.localeCompare(y.slice),
    );

  test("live in memory, are recounted by a new connection, follow another connection's writes, and fold into stored cells", async () => {
    const dir = mkdtempSync(join(tmpdir(), "open-hours-"));
    const path = join(dir, "installstats.db");
    const open = () => {
      const { sqlite, db } = openDatabase(path, { durability: "normal", migrate: true });
      return createSqliteStore(sqlite, db);
    };
    try {
      const a = open();
      // A connection asks whether another one committed at most once a millisecond (one request's
      // reads ask dozens of times): a read right after another connection's write waits that out.
      const settle = () => Bun.sleep(2);
      const now = Date.now();
      expect(await a.foldedUntil()).toBeLessThanOrEqual(now); // a new database: from this hour on, hours are open
      await a.write(Array.from({ length: 20 }, (_, i) => start(`a-${i}`, `app-${i % 3}`, now + i * 60_000)));
      await a.write([done("a-1", now + 3_600_000), done("a-2", now + 3_600_000)]);
      expect(await verifyRollups(a)).toMatchObject({ ok: true, records: 20 });
      const stored = open();
      expect(await hourCells(stored)).toEqual(await hourCells(a)); // recounted from the records
      expect(await verifyRollups(stored)).toMatchObject({ ok: true, records: 20 });

      await stored.write([start("b-1", "app-9", now), done("a-3", now + 7_200_000)]); // another connection writes
      await settle();
      expect(await hourCells(a)).toEqual(await hourCells(stored));
      expect(await verifyRollups(a)).toMatchObject({ ok: true, records: 21 });
      await a.write([done("b-1", now + 60_000)]);
      expect(await verifyRollups(a)).toMatchObject({ ok: true, records: 21 });
      await settle();
      expect(await verifyRollups(stored)).toMatchObject({ ok: true, records: 21 });

      // Folded: the cells are stored, and reads keep them parsed; a later change to a folded
      // hour (here, from either connection) is what the next read sees.
      const day = (s: Store) =>
        s.readRollups({
          grain: 1,
          slice: sliceKey("install", null, ALL_APPS),
          from: 0,
          to: Number.MAX_SAFE_INTEGER,
          parts: ["data", "apps", "errors"],
        });
      await a.write([{ kind: "fold", until: now + 24 * 3_600_000, at: now }]);
      await settle();
      expect(await day(a)).toEqual(await day(stored));
      const failedOf = async (s: Store) => (await day(s)).reduce((n, c) => n + (c.data.dims.type?.lxc?.[1] ?? 0), 0);
      expect(await failedOf(a)).toBe(4);
      await a.write([done("a-4", now + 2 * 3_600_000)]);
      expect(await failedOf(a)).toBe(5);
      await stored.write([done("a-5", now + 2 * 3_600_000)]);
      await settle();
      expect(await failedOf(a)).toBe(6);
      expect(await failedOf(stored)).toBe(6);
      expect(await verifyRollups(a)).toMatchObject({ ok: true, records: 21 });
      await a.close();
      await stored.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
