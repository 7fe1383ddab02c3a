// Budgets of what is kept besides executions (issue 15): the rejected-reports log stores each body
// once, compressed, and past its budget keeps reason, size, hash and head; held reports are
// compressed, and past their budget or their expiry become the executions they describe. Totals
// stay exact through every write, deletion and restart; nothing acknowledged is dropped.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { createMetrics, registerStorageMetrics } from "../../src/http/metrics.ts";
import { expireHeld } from "../../src/maintenance/expire-held.ts";
import { createMaintenance } from "../../src/maintenance/service.ts";
import { replayRejected } from "../../src/maintenance/replay.ts";
import { toRejectedJson } from "../../src/maintenance/rejected-log.ts";
import { scheduledJobs } from "../../src/maintenance/schedule.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import type { BudgetStatus } from "../../src/store/contract/maintenance.ts";
import { HEAD_BYTES } from "../../src/store/common/budgets.ts";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";

const KB = 1024;
const DAY = 86_400_000;

/** Distinct text that does not compress (random bytes in base64), `bytes` long, never valid JSON. */
function junk(bytes: number): string {
  const raw = new Uint8Array(bytes);
  crypto.getRandomValues(raw);
  return `~${Buffer.from(raw)
    .toString("base64")
    .slice(0, bytes - 1)}`;
}

const sha256 = (text: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(text).digest("hex");

/** What is really stored: the bytes of the tables the budget covers, as SQLite counts them. */
function storedBytes(t: TestApp): { bodies: number; entries: number } {
  const bodies = t.sqlite.query<{ n: number }, []>("SELECT coalesce(sum(length(data)), 0) AS n FROM bodies").get()!.n;
  const entries = t.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM rejected_reports").get()!.n;
  return { bodies, entries };
}

/** The totals must always equal a recount from the tables. */
function expectExact(t: TestApp, b: BudgetStatus): void {
  const { bodies, entries } = storedBytes(t);
  expect(b.log.bodyBytes).toBe(bodies);
  expect(b.log.entries).toBe(entries);
  expect(b.log.headOnly).toBe(
    t.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM rejected_reports WHERE body_store = 'head'").get()!.n,
  );
  const costs = t.sqlite.query<{ n: number }, []>("SELECT coalesce(sum(cost), 0) AS n FROM rejected_reports").get()!.n;
  expect(b.log.usedBytes).toBe(costs + bodies);
  expect(b.log.bodyRawBytes).toBe(
    t.sqlite.query<{ n: number }, []>("SELECT coalesce(sum(size), 0) AS n FROM bodies").get()!.n,
  );
  expect(b.held.count).toBe(t.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM held_reports").get()!.n);
  expect(b.held.usedBytes).toBe(
    t.sqlite.query<{ n: number }, []>("SELECT coalesce(sum(cost), 0) AS n FROM held_reports").get()!.n,
  );
}

// What the contract suite checks on both engines through the Store (test/contract/, "budgets"):
// deduplication, head-only entries, eviction, dropping, held reports past their budget. Here, on
// SQLite, through HTTP: that the running totals equal a recount of the tables after each kind of
// change, replay and the expire-held job.
describe("the rejected-reports log and held reports, through HTTP", () => {
  test("the totals equal a recount of the tables after every kind of change", async () => {
    const t = await testApp({ logBudget: 64 * KB, heldBudget: 8 * KB });
    const body = `{"random_id": "x", "type": "lxc", "error": "${"apt-get failed: unable to fetch\\n".repeat(300)}`;
    for (let i = 0; i < 20; i++) expect((await t.post("/upload", body)).status).toBe(400);
    let b = await t.store.budgets();
    expect(b.log).toMatchObject({ entries: 20, deduplicated: 19 });
    expect(t.sqlite.query("SELECT count(*) AS n, max(refs) AS refs FROM bodies").get()).toEqual({ n: 1, refs: 20 });
    expectExact(t, b);
    for (let i = 0; i < 60; i++) await t.post("/upload", junk(5 * KB));
    b = await t.store.budgets();
    expect(b.log.truncated).toBeGreaterThan(20);
    expect(b.log.evicted).toBeGreaterThan(0);
    expectExact(t, b);

    await t.post("/upload", startReport("victim"));
    await t.post("/upload/updatestatus", { random_id: "victim", status: "done" });
    const repeated = JSON.stringify({ random_id: "victim", status: "failed", error: "x".repeat(2 * KB) });
    for (let i = 0; i < 3; i++) expect((await t.post("/upload/updatestatus", repeated)).status).toBe(409);
    expectExact(t, await t.store.budgets());
    expect(await t.writer.submit({ kind: "delete", randomId: "victim", at: t.clock() })).toMatchObject({ found: true });
    expectExact(t, await t.store.budgets());

    for (let i = 0; i < 40; i++) {
      expect((await t.post("/upload/updatestatus", orphan(`o-${i}`))).status).toBe(202);
      t.clock.advance(1000);
    }
    b = await t.store.budgets();
    expect(b.held.overflowed).toBe(40 - b.held.count);
    expectExact(t, b);
    expect((await expireHeld((op) => t.writer.submit(op), 1000, t.clock())) > 0).toBe(true);
    expectExact(t, await t.store.budgets());

    await t.writer.submit({ kind: "forget-rejected", before: t.clock() + 1, at: t.clock() });
    b = await t.store.budgets();
    expect(b.log).toMatchObject({ entries: 0, usedBytes: 0, bodyBytes: 0, bodyRawBytes: 0 });
    expect(t.sqlite.query("SELECT count(*) AS n FROM bodies").get()).toEqual({ n: 0 });
    expectExact(t, b);
    expect((await verifyRollups(t.store)).ok).toBe(true);
  });

  test("replay runs whole bodies again and leaves head-only ones alone", async () => {
    const t = await testApp({ logBudget: 64 * KB });
    const kept = `{"random_id": "r-1", "type": "lxc", "nsapp": "x", "status": "installing", "error": "${"a".repeat(2000)}" "oops"}`;
    expect((await t.post("/upload", kept)).status).toBeLessThan(500);
    for (let i = 0; i < 20; i++) await t.post("/upload", junk(8 * KB));
    const before = await t.rejected();
    expect(before.some((e) => !e.bodyKept)).toBe(true);
    const summary = await replayRejected(
      { store: t.store, commit: (ops) => t.store.write(ops) },
      { normalize: t.config, now: t.clock() },
    );
    expect(summary.tried).toBe(
      before.filter((e) => e.bodyKept && (e.reason === "invalid_json" || e.reason === "invalid_field")).length,
    );
  });

  test("a body past the budget is listed as its head, marked truncated", async () => {
    const t = await testApp({ logBudget: 16 * KB });
    const sent = Array.from({ length: 10 }, () => junk(4 * KB));
    for (const body of sent) expect((await t.post("/upload", body)).status).toBe(400);
    const last = (await t.rejected()).at(-1)!;
    expect(last.bodyKept).toBe(false);
    expect(toRejectedJson(last)).toMatchObject({
      body_truncated: true,
      body_size: 4 * KB,
      body_sha256: sha256(sent[9]!),
      body: sent[9]!.slice(0, HEAD_BYTES),
    });
  });

  test("the expire-held job: scheduled from the config, applies what waited too long, and says what it did", async () => {
    const t = await testApp();
    await t.post("/upload/updatestatus", orphan("old-upload"));
    t.clock.advance(8 * DAY);
    const jobs = scheduledJobs({
      config: t.config,
      store: t.store,
      writer: t.writer,
      clock: t.clock,
      maintenance: t.maintenance,
    });
    const job = jobs.find((j) => j.name === "expire-held")!;
    expect(job).toBeDefined();
    expect(await job.run()).toEqual({ expired_held: 1 });
    expect((await t.get("/api/installs/old-upload")).body).toMatchObject({ status: "failed", type: "" });
    expect(
      scheduledJobs({
        config: { ...t.config, heldExpiryMs: 0 },
        store: t.store,
        writer: t.writer,
        clock: t.clock,
        maintenance: t.maintenance,
      }).some((j) => j.name === "expire-held"),
    ).toBe(false);
  });
});

const orphan = (id: string, errorBytes = 4 * KB) => ({
  random_id: id,
  status: "failed",
  error: `E: ${"unable to fetch archive\n".repeat(errorBytes / 24)}`,
});

describe("settings, metrics and upgrade", () => {
  test("--log-budget, --held-budget, --held-expiry and their environment variables; the maintenance layer applies them to the store", async () => {
    const c = loadConfig({ "log-budget": "8m", "held-expiry": "2d" }, { INSTALLSTATS_HELD_BUDGET: "1m" });
    expect(c).toMatchObject({ logBudget: 8 * 1024 * KB, heldBudget: 1024 * KB, heldExpiryMs: 2 * DAY });
    expect(loadConfig({}, {})).toMatchObject({
      logBudget: 64 * 1024 * KB,
      heldBudget: 16 * 1024 * KB,
      heldExpiryMs: 7 * DAY,
    });
    const t = await testApp({ logBudget: 12345, heldBudget: 678 });
    expect((await t.store.budgets()).log.limitBytes).toBe(12345);
    createMaintenance({
      config: { ...t.config, logBudget: 999_999 },
      store: t.store,
      writer: t.writer,
      clock: t.clock,
    });
    expect((await t.store.budgets()).log.limitBytes).toBe(999_999);
  });

  test("/metrics and health show the budgets (registered by the composition root)", async () => {
    const t = await testApp();
    for (let i = 0; i < 3; i++) await t.post("/upload", "{not json");
    await t.post("/upload/updatestatus", orphan2("m-1"));
    const metrics = createMetrics();
    const engine = openSqliteEngine(":memory:", { durability: "normal", migrate: true });
    registerStorageMetrics(metrics.registry, async () => ({
      writable: true,
      problems: [],
      integrity: null,
      budgets: await t.store.budgets(),
      database: { engine: "sqlite", location: ":memory:", replica: null },
    }));
    const text = await metrics.registry.render();
    expect(text).toContain("installstats_log_budget_bytes 67108864");
    expect(text).toContain('installstats_log_entries{body="whole"} 3');
    expect(text).toContain('installstats_log_budget_actions_total{action="deduplicated"} 0');
    expect(text).toContain("installstats_held_reports 1");
    expect(text).toContain('installstats_held_applied_total{reason="expired"} 0');
    expect(text).toContain("installstats_storage_writable 1");
    expect(text).toMatch(/# TYPE installstats_held_applied_total counter/);
    const health = await engine.health();
    expect(health).toMatchObject({ writable: true, problems: [], integrity: null, budgets: { log: { entries: 0 } } });
    await engine.close();
  });

  test("a database from before the budgets: its log and held reports are counted in at migration, and leave the totals exactly", async () => {
    const dir = mkdtempSync(join(tmpdir(), "installstats-budgets-"));
    const path = join(dir, "old.db");
    const db = new Database(path, { create: true });
    db.exec(readFileSync(join(import.meta.dir, "../fixtures/release-0.1.sql"), "utf8"));
    const legacy = db
      .query<{ n: number; bytes: number }, []>(
        "SELECT count(*) AS n, sum(64 + length(body) + length(message) + coalesce(length(field), 0) + coalesce(length(random_id), 0)) AS bytes FROM rejected_reports",
      )
      .get()!;
    db.close();
    expect(legacy.n).toBeGreaterThan(0);
    const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
    const b = await engine.store.budgets();
    expect(b.log).toMatchObject({ entries: legacy.n, usedBytes: legacy.bytes, bodyBytes: 0 });
    expect(b.held.count).toBe(
      engine.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM held_reports").get()!.n,
    );
    const entries = await engine.store.listRejected({ limit: 100 });
    for (const e of entries) expect(e).toMatchObject({ bodyKept: true, bodySha256: null, bodySize: e.body.byteLength });
    await engine.store.write([{ kind: "forget-rejected", before: Date.now() + DAY, at: Date.now() }]);
    await engine.store.write([{ kind: "expire-held", before: Date.now() + DAY, limit: 100, at: Date.now() }]);
    const after = await engine.store.budgets();
    expect(after.log).toMatchObject({ entries: 0, usedBytes: 0 });
    expect(after.held).toMatchObject({ count: 0, usedBytes: 0, expired: b.held.count });
    expect((await verifyRollups(engine.store)).ok).toBe(true);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

const orphan2 = (id: string) => ({ random_id: id, status: "failed", error: "exit code 1" });
