// Budgets of what is kept besides executions (issue 15): the rejected-reports log stores each body
// once, compressed, and past its budget keeps reason, size, hash and head; held reports are
// compressed, and past their budget or their expiry become the executions they describe. Totals
// stay exact through every write, deletion and restart; nothing acknowledged is dropped.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.ts";
import { createMetrics, registerStorageMetrics } from "../src/http/metrics.ts";
import { expireHeld } from "../src/maintenance/expire-held.ts";
import { createMaintenance } from "../src/maintenance/maintenance.ts";
import { replayRejected } from "../src/maintenance/replay.ts";
import { toRejectedJson } from "../src/maintenance/rejected-log.ts";
import { scheduledJobs } from "../src/maintenance/schedule.ts";
import { verifyRollups } from "../src/maintenance/verify.ts";
import type { BudgetStatus } from "../src/store/contract.ts";
import { HEAD_BYTES } from "../src/store/sqlite/budgets.ts";
import { openSqliteEngine } from "../src/store/sqlite/engine.ts";
import { startReport, testApp, type TestApp } from "./helpers/app.ts";

const KB = 1024;
const DAY = 86_400_000;

/** Distinct text that does not compress (random bytes in base64), `bytes` long, never valid JSON. */
function junk(bytes: number): string {
  const raw = new Uint8Array(bytes);
  crypto.getRandomValues(raw);
  return `~${Buffer.from(raw).toString("base64").slice(0, bytes - 1)}`;
}

const sha256 = (text: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(text).digest("hex");
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

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
  expect(b.log.headOnly).toBe(t.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM rejected_reports WHERE body_store = 'head'").get()!.n);
  const costs = t.sqlite.query<{ n: number }, []>("SELECT coalesce(sum(cost), 0) AS n FROM rejected_reports").get()!.n;
  expect(b.log.usedBytes).toBe(costs + bodies);
  expect(b.log.bodyRawBytes).toBe(t.sqlite.query<{ n: number }, []>("SELECT coalesce(sum(size), 0) AS n FROM bodies").get()!.n);
  expect(b.held.count).toBe(t.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM held_reports").get()!.n);
  expect(b.held.usedBytes).toBe(t.sqlite.query<{ n: number }, []>("SELECT coalesce(sum(cost), 0) AS n FROM held_reports").get()!.n);
}

describe("the rejected-reports log", () => {
  test("identical bodies are stored once, compressed; every entry still shows its whole body", async () => {
    const t = await testApp();
    const body = `{"random_id": "x", "type": "lxc", "error": "${"apt-get failed: unable to fetch\\n".repeat(3000)}`; // ~100 KB, broken JSON
    for (let i = 0; i < 50; i++) expect((await t.post("/upload", body)).status).toBe(400);
    const b = await t.store.budgets();
    expect(b.log).toMatchObject({ entries: 50, deduplicated: 49, bodyRawBytes: body.length, truncated: 0, dropped: 0 });
    expect(b.log.bodyBytes).toBeLessThan(body.length / 50);
    expect(t.sqlite.query("SELECT count(*) AS n, max(refs) AS refs FROM bodies").get()).toEqual({ n: 1, refs: 50 });
    expectExact(t, b);
    const entries = await t.rejected();
    expect(entries).toHaveLength(50);
    for (const e of entries) {
      expect(text(e.body)).toBe(body);
      expect(e).toMatchObject({ bodySize: body.length, bodySha256: sha256(body), bodyKept: true });
    }
    expect(toRejectedJson(entries[0]!)).toMatchObject({ body, body_size: body.length, body_sha256: sha256(body), body_truncated: false });
  });

  test("past 3/4 of the budget an entry keeps reason, size, hash and head; head-only entries make room for newer ones; the log stays within its budget", async () => {
    const budget = 64 * KB;
    const t = await testApp({ logBudget: budget });
    const sent: string[] = [];
    for (let i = 0; i < 150; i++) {
      const body = junk(10 * KB);
      sent.push(body);
      expect((await t.post("/upload", body)).status).toBe(400);
      expect((await t.store.budgets()).log.usedBytes).toBeLessThanOrEqual(budget);
    }
    const b = await t.store.budgets();
    expectExact(t, b);
    expect(b.log.truncated).toBeGreaterThan(100);
    expect(b.log.evicted).toBeGreaterThan(50);
    expect(b.log.dropped).toBe(0);
    expect(b.log.droppedBytes).toBeGreaterThan(100 * 9 * KB);

    const entries = await t.rejected();
    // Whole bodies first (kept until retention or a prune removes them), then the newest head-only ones.
    const whole = entries.filter((e) => e.bodyKept);
    expect(whole.length).toBeGreaterThanOrEqual(5);
    whole.forEach((e, i) => expect(text(e.body)).toBe(sent[i]!));
    const heads = entries.filter((e) => !e.bodyKept);
    expect(heads.length).toBe(b.log.headOnly);
    expect(entries.length).toBeLessThan(100);
    const last = heads.at(-1)!;
    expect(last).toMatchObject({ reason: "invalid_json", bodySize: 10 * KB, bodySha256: sha256(sent[149]!) });
    expect(text(last.body)).toBe(sent[149]!.slice(0, HEAD_BYTES));
    expect(toRejectedJson(last)).toMatchObject({ body_truncated: true, body_size: 10 * KB, body: sent[149]!.slice(0, HEAD_BYTES) });
  });

  test("with the budget full of whole entries, a new entry is counted, not stored; lowering the budget keeps what is there", async () => {
    const t = await testApp();
    for (let i = 0; i < 10; i++) await t.post("/upload", junk(10 * KB));
    const before = await t.store.budgets();
    t.store.setLimits({ logBytes: 50 * KB, heldBytes: 16 * 1024 * KB });
    expect((await t.post("/upload", junk(10 * KB))).status).toBe(400); // still answered as ever
    const after = await t.store.budgets();
    expect(after.log).toMatchObject({ entries: 10, dropped: 1, usedBytes: before.log.usedBytes, limitBytes: 50 * KB });
    expectExact(t, after);
  });

  test("forgetting, deleting and retention give the bytes back; a shared body goes with its last entry", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("victim"));
    await t.post("/upload/updatestatus", { random_id: "victim", status: "done" });
    const repeated = JSON.stringify({ random_id: "victim", status: "failed", error: "x".repeat(20 * KB) });
    for (let i = 0; i < 3; i++) expect((await t.post("/upload/updatestatus", repeated)).status).toBe(409);
    await t.post("/upload", junk(5 * KB)); // no random_id
    t.clock.advance(DAY);
    await t.post("/upload", junk(5 * KB));
    let b = await t.store.budgets();
    expect(b.log).toMatchObject({ entries: 5, deduplicated: 2 });
    expectExact(t, b);

    expect(await t.writer.submit({ kind: "delete", randomId: "victim", at: t.clock() })).toMatchObject({ found: true });
    b = await t.store.budgets();
    expect(b.log.entries).toBe(2);
    expect(t.sqlite.query("SELECT count(*) AS n FROM bodies").get()).toEqual({ n: 2 });
    expectExact(t, b);

    expect(await t.writer.submit({ kind: "forget-rejected", before: t.clock() - DAY / 2, at: t.clock() })).toEqual({ kind: "forgotten", count: 1 });
    expectExact(t, await t.store.budgets());
    await t.writer.submit({ kind: "forget-rejected", before: t.clock() + 1, at: t.clock() });
    b = await t.store.budgets();
    expect(b.log).toMatchObject({ entries: 0, usedBytes: 0, bodyBytes: 0, bodyRawBytes: 0 });
    expect(t.sqlite.query("SELECT count(*) AS n FROM bodies").get()).toEqual({ n: 0 });
  });

  test("replay runs whole bodies again and leaves head-only ones alone", async () => {
    const t = await testApp({ logBudget: 64 * KB });
    const kept = `{"random_id": "r-1", "type": "lxc", "nsapp": "x", "status": "installing", "error": "${"a".repeat(2000)}" "oops"}`;
    expect((await t.post("/upload", kept)).status).toBeLessThan(500);
    for (let i = 0; i < 20; i++) await t.post("/upload", junk(8 * KB));
    const before = await t.rejected();
    expect(before.some((e) => !e.bodyKept)).toBe(true);
    const summary = await replayRejected({ store: t.store, commit: (ops) => t.store.write(ops) }, { normalize: t.config, now: t.clock() });
    expect(summary.tried).toBe(before.filter((e) => e.bodyKept && (e.reason === "invalid_json" || e.reason === "invalid_field")).length);
  });
});

describe("held reports", () => {
  const orphan = (id: string, errorBytes = 4 * KB) => ({ random_id: id, status: "failed", error: `E: ${"unable to fetch archive\n".repeat(errorBytes / 24)}` });

  test("kept compressed; a start report still takes its held status", async () => {
    const t = await testApp();
    expect((await t.post("/upload/updatestatus", orphan("h-1"))).status).toBe(202);
    const row = t.sqlite.query<{ codec: string; len: number; cost: number }, []>("SELECT codec, length(data) AS len, cost FROM held_reports").get()!;
    expect(row.codec).toBe("zstd");
    expect(row.len).toBeLessThan(KB);
    let b = await t.store.budgets();
    expect(b.held).toMatchObject({ count: 1, usedBytes: row.cost });
    expect((await t.post("/upload", startReport("h-1"))).status).toBe(201);
    expect((await t.get("/api/installs/h-1")).body).toMatchObject({ status: "failed", outcome: "failed", duration_s: null });
    b = await t.store.budgets();
    expect(b.held).toMatchObject({ count: 0, usedBytes: 0 });
  });

  test("past the budget the oldest become executions on their own: acknowledged, stored, counted; the newest stay held", async () => {
    const t = await testApp({ heldBudget: 8 * KB });
    for (let i = 0; i < 40; i++) {
      expect((await t.post("/upload/updatestatus", orphan(`o-${i}`))).status).toBe(202);
      t.clock.advance(1000);
      expect((await t.store.budgets()).held.usedBytes).toBeLessThanOrEqual(8 * KB);
    }
    const b = await t.store.budgets();
    expectExact(t, b);
    expect(b.held.overflowed).toBe(40 - b.held.count);
    expect(b.held.count).toBeGreaterThan(5);
    // The oldest were applied as what they say: a failed install whose start never came.
    expect((await t.get("/api/installs/o-0")).body).toMatchObject({ status: "failed", outcome: "failed", type: "", nsapp: null, duration_s: null, created_at: "2026-06-01T12:00:00.000Z" });
    // The newest wait, and still take their start report.
    expect((await t.get("/api/installs/o-39")).status).toBe(404);
    expect((await t.post("/upload", startReport("o-39", { nsapp: "late" }))).status).toBe(201);
    expect((await t.get("/api/installs/o-39")).body).toMatchObject({ nsapp: "late", status: "failed" });
    expect((await t.get("/api/stats/summary")).body).toMatchObject({ failed: 40 - (b.held.count - 1) });
    expect((await verifyRollups(t.store)).ok).toBe(true);
  });

  test("expire-held: what waited longer than the expiry is applied (an /upload update, a /telemetry final report), counted, rollups exact", async () => {
    const t = await testApp();
    await t.post("/upload/updatestatus", orphan("old-upload"));
    const execution = crypto.randomUUID();
    expect(
      (
        await t.post("/telemetry", {
          random_id: "old-telemetry",
          execution_id: execution,
          type: "lxc",
          nsapp: "jellyfin",
          status: "failed",
          exit_code: 100,
          error: "apt failed",
          os_type: "debian",
          os_version: "12",
        })
      ).status,
    ).toBe(202);
    t.clock.advance(6 * DAY);
    await t.post("/upload/updatestatus", orphan("recent"));
    t.clock.advance(DAY + 1000);
    const applied = await expireHeld((op) => t.writer.submit(op), 7 * DAY, t.clock());
    expect(applied).toBe(2);
    const b = await t.store.budgets();
    expect(b.held).toMatchObject({ count: 1, expired: 2 });
    expectExact(t, b);
    expect((await t.get("/api/installs/old-upload")).body).toMatchObject({ status: "failed", type: "" });
    expect((await t.get("/api/installs/old-telemetry")).body).toMatchObject({ execution_id: execution, nsapp: "jellyfin", type: "lxc", exit_code: 100, os_type: "debian" });
    expect((await verifyRollups(t.store)).ok).toBe(true);
    // The job: scheduled from the config, and reports what it did.
    const jobs = scheduledJobs({ config: t.config, store: t.store, writer: t.writer, clock: t.clock, maintenance: t.maintenance });
    const job = jobs.find((j) => j.name === "expire-held")!;
    expect(job).toBeDefined();
    t.clock.advance(7 * DAY);
    expect(await job.run()).toEqual({ expired_held: 1 });
    expect(scheduledJobs({ config: { ...t.config, heldExpiryMs: 0 }, store: t.store, writer: t.writer, clock: t.clock, maintenance: t.maintenance }).some((j) => j.name === "expire-held")).toBe(false);
  });
});

describe("settings, metrics and upgrade", () => {
  test("--log-budget, --held-budget, --held-expiry and their environment variables; the maintenance layer applies them to the store", async () => {
    const c = loadConfig({ "log-budget": "8m", "held-expiry": "2d" }, { INSTALLSTATS_HELD_BUDGET: "1m" });
    expect(c).toMatchObject({ logBudget: 8 * 1024 * KB, heldBudget: 1024 * KB, heldExpiryMs: 2 * DAY });
    expect(loadConfig({}, {})).toMatchObject({ logBudget: 64 * 1024 * KB, heldBudget: 16 * 1024 * KB, heldExpiryMs: 7 * DAY });
    const t = await testApp({ logBudget: 12345, heldBudget: 678 });
    expect((await t.store.budgets()).log.limitBytes).toBe(12345);
    createMaintenance({ config: { ...t.config, logBudget: 999_999 }, store: t.store, writer: t.writer, clock: t.clock });
    expect((await t.store.budgets()).log.limitBytes).toBe(999_999);
  });

  test("/metrics and health show the budgets (registered by the composition root)", async () => {
    const t = await testApp();
    for (let i = 0; i < 3; i++) await t.post("/upload", "{not json");
    await t.post("/upload/updatestatus", orphan2("m-1"));
    const metrics = createMetrics();
    const engine = openSqliteEngine(":memory:", { durability: "normal", migrate: true });
    registerStorageMetrics(metrics.registry, async () => ({ writable: true, problems: [], integrity: null, budgets: await t.store.budgets(), database: { engine: "sqlite", location: ":memory:", replica: null } }));
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
    db.exec(readFileSync(join(import.meta.dir, "fixtures/release-0.1.sql"), "utf8"));
    const legacy = db.query<{ n: number; bytes: number }, []>("SELECT count(*) AS n, sum(64 + length(body) + length(message) + coalesce(length(field), 0) + coalesce(length(random_id), 0)) AS bytes FROM rejected_reports").get()!;
    db.close();
    expect(legacy.n).toBeGreaterThan(0);
    const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
    const b = await engine.store.budgets();
    expect(b.log).toMatchObject({ entries: legacy.n, usedBytes: legacy.bytes, bodyBytes: 0 });
    expect(b.held.count).toBe(engine.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM held_reports").get()!.n);
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
