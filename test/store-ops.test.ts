// Deleting and expiring installs through the one write path keeps rollups equal to a recount.
import { describe, expect, test } from "bun:test";
import { startReport, testApp } from "./helpers/app.ts";
import { verifyRollups } from "../src/report/verify.ts";

describe("delete", () => {
  test("removes the record, its held update and its rejected-log bodies; rollups follow", async () => {
    const t = testApp();
    await t.post("/upload", startReport("gone", { nsapp: "x" }));
    await t.post("/upload/updatestatus", { status: "failed", error: "exit code 3", random_id: "gone" });
    await t.post("/upload/updatestatus", { status: "done", random_id: "gone" }); // 409: logged with its random_id
    await t.post("/upload", startReport("kept", { nsapp: "x" }));
    await t.post("/upload/updatestatus", { status: "done", random_id: "held-only" });
    expect(t.rejected().filter((r) => r.randomId === "gone").length).toBe(1);

    expect(await t.writer.submit({ kind: "delete", randomId: "gone", at: t.clock() })).toEqual({ kind: "deleted", found: true });
    expect(await t.writer.submit({ kind: "delete", randomId: "held-only", at: t.clock() })).toEqual({ kind: "deleted", found: true });
    expect(await t.writer.submit({ kind: "delete", randomId: "never", at: t.clock() })).toEqual({ kind: "deleted", found: false });
    expect((await t.get("/api/installs/gone")).status).toBe(404);
    expect(t.rejected().filter((r) => r.randomId === "gone")).toEqual([]);
    expect(t.sqlite.query("SELECT count(*) AS n FROM held_updates").get()).toEqual({ n: 0 });
    expect((await t.get("/api/stats/summary")).body).toMatchObject({ total: 1, failed: 0, in_progress: 1 });
    expect(verifyRollups(t.store)).toMatchObject({ ok: true, records: 1 });
  });
});

describe("expire", () => {
  test("an install stuck in progress becomes unknown, keeps its status, and still takes a late final status", async () => {
    const t = testApp();
    await t.post("/upload", startReport("stuck"));
    await t.post("/upload", startReport("done-one"));
    await t.post("/upload/updatestatus", { status: "done", random_id: "done-one" });
    t.clock.advance(3 * 3600_000);
    expect(await t.writer.submit({ kind: "expire", randomId: "stuck", at: t.clock() })).toEqual({ kind: "expired", changed: true });
    expect(await t.writer.submit({ kind: "expire", randomId: "done-one", at: t.clock() })).toEqual({ kind: "expired", changed: false });
    expect((await t.get("/api/installs/stuck")).body).toMatchObject({ status: "installing", outcome: "unknown" });
    expect((await t.get("/api/stats/summary")).body).toMatchObject({ unknown: 1, in_progress: 0, success: 1 });
    expect(verifyRollups(t.store).ok).toBe(true);

    const late = await t.post("/upload/updatestatus", { status: "failed", error: "exit code 1", random_id: "stuck" });
    expect(late.status).toBe(200);
    expect((await t.get("/api/installs/stuck")).body).toMatchObject({ status: "failed", outcome: "failed", duration_s: 3 * 3600 });
    expect((await t.get("/api/stats/summary")).body).toMatchObject({ unknown: 0, failed: 1 });
    expect(verifyRollups(t.store).ok).toBe(true);
    expect((await t.post("/upload/updatestatus", { status: "done", random_id: "stuck" })).status).toBe(409);
  });
});

describe("rebuildRollups", () => {
  test("recomputes every cell from the records: a wiped or damaged rollup table is exact again", async () => {
    const t = testApp();
    for (let i = 0; i < 50; i++) {
      await t.post("/upload", startReport(`rb-${i}`, { nsapp: `app-${i % 5}` }));
      if (i % 3) await t.post("/upload/updatestatus", { status: i % 2 ? "done" : "failed", error: `exit code ${i % 4}`, random_id: `rb-${i}` });
      t.clock.advance(9 * 3600_000); // spread over days and into the next month
    }
    const before = (await t.get("/api/stats/summary?days=60")).body;
    t.sqlite.run("DELETE FROM rollups WHERE grain = 2");
    t.sqlite.run("UPDATE rollups SET data = '{\"dims\":{},\"dur\":{}}' WHERE id IN (SELECT id FROM rollups LIMIT 3)");
    expect(verifyRollups(t.store).ok).toBe(false);
    t.store.rebuildRollups();
    expect(verifyRollups(t.store)).toMatchObject({ ok: true, records: 50 });
    expect((await t.get("/api/stats/summary?days=60")).body).toEqual(before);
  });
});
