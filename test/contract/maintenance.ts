// The Store contract, maintenance: stuck installs and expiry, counts before a cutoff, deletion,
// periods dropped and pruning, the budgets of the log and of held reports, rebuilding the rollups.
import { describe, expect, test } from "bun:test";
import { GRAINS } from "../../src/domain/rollup.ts";
import { DAY, HOUR } from "../../src/domain/time.ts";
import { pruneOlderThan } from "../../src/maintenance/prune.ts";
import type { Store, WriteOp } from "../../src/store/contract/store.ts";
import {
  ALL,
  allInstalls,
  appOf,
  bytes,
  EVERYTHING,
  expectVerified,
  type Harness,
  hourTotals,
  idsOf,
  latestOf,
  loadOp,
  MIN,
  mixedWorkload,
  one,
  outcomes,
  PAST,
  record,
  rejectOp,
  type ReportFields,
  rollupSnapshot,
  startOp,
  updateOp,
} from "./harness.ts";

/** The contract's tests of this feature, in the suite of one engine (suite.ts). */
export function maintenanceContract({ database, freshStore }: Harness): void {
  // -------------------------------------------------------------- maintenance

  describe("maintenance", () => {
    test("stuckExecutions lists installs in progress created in [from, before), oldest first, at most limit", async () => {
      const store = await freshStore();
      await store.write([
        startOp("s3", {}, PAST + 3 * HOUR),
        startOp("s1", {}, PAST + HOUR),
        startOp("s0", {}, PAST),
        startOp("s2", {}, PAST + 2 * HOUR),
        startOp("s4", {}, PAST + 4 * HOUR),
        startOp("done", {}, PAST + 90 * MIN),
        startOp("cfg", {}, PAST + 150 * MIN),
      ]);
      await store.write([
        updateOp("done", "done", null, PAST + 100 * MIN),
        updateOp("cfg", "configuring", null, PAST + 160 * MIN),
      ]);
      expect(await store.stuckExecutions(PAST + HOUR, PAST + 4 * HOUR, 10)).toEqual(
        [
          { executionId: "s1", createdAt: PAST + HOUR },
          { executionId: "s2", createdAt: PAST + 2 * HOUR },
          { executionId: "cfg", createdAt: PAST + 150 * MIN }, // a progress status is still in progress
          { executionId: "s3", createdAt: PAST + 3 * HOUR },
        ].sort((a, b) => a.createdAt - b.createdAt),
      );
      expect((await store.stuckExecutions(PAST, EVERYTHING.to, 2)).map((r) => r.executionId)).toEqual(["s0", "s1"]);
      expect(await store.stuckExecutions(PAST + 5 * HOUR, EVERYTHING.to, 10)).toEqual([]);
    });

    test("expire: an install in progress becomes unknown with its status kept; a late final status still applies", async () => {
      const store = await freshStore();
      await store.write([startOp("stuck", { nsapp: "a" }, PAST), startOp("fine", { nsapp: "a" }, PAST + MIN)]);
      await one(store, updateOp("fine", "done", null, PAST + 2 * MIN));
      const fine = await latestOf(store, "fine");

      expect(await one(store, { kind: "expire", executionId: "stuck", at: PAST + 13 * HOUR })).toEqual({
        kind: "expired",
        changed: true,
      });
      expect(await latestOf(store, "stuck")).toMatchObject({
        status: "installing",
        outcome: "unknown",
        createdAt: PAST,
      });
      expect(await one(store, { kind: "expire", executionId: "stuck", at: PAST + 14 * HOUR })).toEqual({
        kind: "expired",
        changed: false,
      });
      expect(await one(store, { kind: "expire", executionId: "fine", at: PAST + 13 * HOUR })).toEqual({
        kind: "expired",
        changed: false,
      });
      expect(await latestOf(store, "fine")).toEqual(fine!);
      expect(await one(store, { kind: "expire", executionId: "never", at: PAST + 13 * HOUR })).toEqual({
        kind: "expired",
        changed: false,
      });
      expect(await store.stuckExecutions(EVERYTHING.from, EVERYTHING.to, 10)).toEqual([]);
      expect(await hourTotals(store)).toEqual(outcomes({ unknown: 1, success: 1 }));
      await expectVerified(store, 2);

      expect(await one(store, updateOp("stuck", "failed", "exit code 9", PAST + 15 * HOUR))).toEqual({
        kind: "updated",
        outcome: "failed",
      });
      expect(await latestOf(store, "stuck")).toMatchObject({
        status: "failed",
        outcome: "failed",
        error: "exit code 9",
        durationMs: 15 * HOUR,
      });
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 1, success: 1 }));
      expect(await hourTotals(store, appOf("a"))).toEqual(outcomes({ failed: 1, success: 1 }));
      expect(await one(store, updateOp("stuck", "done", null, PAST + 16 * HOUR))).toEqual({
        kind: "already-final",
        outcome: "failed",
      });
      await expectVerified(store, 2);
    });

    test("stuck-checked moves the mark only from where it stands (compare-and-set)", async () => {
      const store = await freshStore();
      const m0 = await store.stuckCheckedUntil();
      expect(await one(store, { kind: "stuck-checked", from: m0, until: PAST, at: PAST })).toEqual({ kind: "marked" });
      expect(await store.stuckCheckedUntil()).toBe(PAST);
      // A job that read the old mark lost the race: its mark does not land.
      expect(await one(store, { kind: "stuck-checked", from: m0, until: PAST + HOUR, at: PAST })).toEqual({
        kind: "marked",
      });
      expect(await store.stuckCheckedUntil()).toBe(PAST);
      await one(store, { kind: "stuck-checked", from: PAST, until: PAST + 2 * HOUR, at: PAST });
      expect(await store.stuckCheckedUntil()).toBe(PAST + 2 * HOUR);
    });

    test("a load of an older install in progress lowers the stuck mark to it", async () => {
      const store = await freshStore();
      await one(store, {
        kind: "stuck-checked",
        from: await store.stuckCheckedUntil(),
        until: PAST + DAY,
        at: PAST + DAY,
      });
      await one(store, loadOp(record("old-done", { createdAt: PAST + HOUR, status: "done" })));
      expect(await store.stuckCheckedUntil()).toBe(PAST + DAY); // a finished one needs no check
      await one(store, loadOp(record("old-open", { createdAt: PAST + 2 * HOUR, status: "installing" })));
      expect(await store.stuckCheckedUntil()).toBeLessThanOrEqual(PAST + 2 * HOUR);
      const mark = await store.stuckCheckedUntil();
      expect((await store.stuckExecutions(mark, PAST + DAY, 10)).map((r) => r.executionId)).toEqual(["old-open"]);
    });

    // Replay writes a report at its own (old) time: the stuck job must still find it.
    test("a start of an older install in progress lowers the stuck mark to it", async () => {
      const store = await freshStore();
      await one(store, {
        kind: "stuck-checked",
        from: await store.stuckCheckedUntil(),
        until: PAST + DAY,
        at: PAST + DAY,
      });
      await one(store, startOp("imported-open", {}, PAST + 2 * HOUR));
      expect(await store.stuckCheckedUntil()).toBeLessThanOrEqual(PAST + 2 * HOUR);
    });

    test("countBefore counts installs created, held updates and log entries received before the cutoff", async () => {
      const store = await freshStore();
      await store.write([
        startOp("i1", {}, PAST),
        startOp("i2", {}, PAST + HOUR),
        startOp("i3", {}, PAST + 2 * HOUR),
        updateOp("h1", "done", null, PAST + 30 * MIN),
        updateOp("h2", "done", null, PAST + 3 * HOUR),
        rejectOp(PAST + 10 * MIN),
        rejectOp(PAST + 70 * MIN),
        rejectOp(PAST + 4 * HOUR),
      ]);
      // A late update keeps the install's created_at.
      await one(store, updateOp("i1", "done", null, PAST + 5 * HOUR));
      expect(await store.countBefore(PAST)).toEqual({ executions: 0, held: 0, rejected: 0 });
      expect(await store.countBefore(PAST + HOUR)).toEqual({ executions: 1, held: 1, rejected: 1 });
      expect(await store.countBefore(PAST + 2 * HOUR)).toEqual({ executions: 2, held: 1, rejected: 2 });
      expect(await store.countBefore(EVERYTHING.to)).toEqual({ executions: 3, held: 2, rejected: 3 });
    });

    test("heldBefore lists the random_ids of updates held since before the cutoff", async () => {
      const store = await freshStore();
      await store.write([
        updateOp("a", "done", null, PAST),
        updateOp("b", "failed", "x", PAST + MIN),
        updateOp("c", "done", null, PAST + HOUR),
        startOp("d", {}, PAST),
      ]);
      expect((await store.heldBefore(PAST + HOUR, 10)).sort()).toEqual(["a", "b"]);
      expect(await store.heldBefore(PAST + HOUR, 1)).toHaveLength(1);
      expect(await store.heldBefore(PAST, 10)).toEqual([]);
      await one(store, startOp("a", {}, PAST + 2 * HOUR)); // applied: no longer held
      expect((await store.heldBefore(EVERYTHING.to, 10)).sort()).toEqual(["b", "c"]);
    });

    test("delete removes the record, its held update and its log entries; found says whether anything was there", async () => {
      const store = await freshStore();
      await store.write([startOp("gone", { nsapp: "a" }, PAST), startOp("kept", { nsapp: "a" }, PAST + MIN)]);
      await one(store, updateOp("gone", "failed", "exit code 3", PAST + 2 * MIN));
      await one(store, updateOp("gone", "done", null, PAST + 3 * MIN)); // already-final: logged with its random_id
      await one(store, rejectOp(PAST + 4 * MIN, { randomId: "gone", reason: "invalid_field" }));
      await one(store, rejectOp(PAST + 4 * MIN, { randomId: "kept", reason: "invalid_field" }));
      await one(store, updateOp("held-only", "done", null, PAST + 5 * MIN));
      await one(store, rejectOp(PAST + 6 * MIN, { randomId: "log-only", reason: "invalid_field" }));
      expect((await store.listRejected({ limit: 10 })).filter((e) => e.randomId === "gone")).toHaveLength(2);

      expect(await one(store, { kind: "delete", randomId: "gone", at: PAST + HOUR })).toEqual({
        kind: "deleted",
        found: true,
        executions: 1,
      });
      expect(await latestOf(store, "gone")).toBeUndefined();
      expect((await store.listRejected({ limit: 10 })).map((e) => e.randomId)).toEqual(["log-only", "kept"]);
      expect(await hourTotals(store)).toEqual(outcomes({ in_progress: 1 }));
      expect(await hourTotals(store, appOf("a"))).toEqual(outcomes({ in_progress: 1 }));

      expect(await one(store, { kind: "delete", randomId: "held-only", at: PAST + HOUR })).toEqual({
        kind: "deleted",
        found: true,
        executions: 0,
      });
      expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual([]);
      expect(await one(store, { kind: "delete", randomId: "log-only", at: PAST + HOUR })).toEqual({
        kind: "deleted",
        found: true,
        executions: 0,
      });
      expect((await store.listRejected({ limit: 10 })).map((e) => e.randomId)).toEqual(["kept"]);
      expect(await one(store, { kind: "delete", randomId: "never", at: PAST + HOUR })).toEqual({
        kind: "deleted",
        found: false,
        executions: 0,
      });
      expect(await one(store, { kind: "delete", randomId: "gone", at: PAST + HOUR })).toEqual({
        kind: "deleted",
        found: false,
        executions: 0,
      });
      expect((await latestOf(store, "kept"))!.randomId).toBe("kept");
      await expectVerified(store, 1);

      // A deleted install can be reported afresh.
      expect(await one(store, startOp("gone", {}, PAST + 2 * HOUR))).toEqual({
        kind: "created",
        outcome: "in_progress",
      });
      await expectVerified(store, 2);
    });

    /**
     * Installs over three months: "a" in January (and a final report of a second execution,
     * held), "b" failed in January and retried in March, "c" in February with a log entry, "d"
     * in March with a log entry. Nothing of it is in the open hours of any engine.
     */
    async function threeMonths(store: Store): Promise<void> {
      const tel = (randomId: string, executionId: string, status: string, at: number, fields: ReportFields = {}) =>
        startOp(randomId, { status, ...fields }, at, { executionId, payloadVersion: 2 });
      await store.write([
        loadOp(record("a", { createdAt: Date.UTC(2025, 0, 15), nsapp: "x" })),
        tel("a", "a-2", "success", Date.UTC(2025, 0, 16)), // held: its start never came
        tel("b", "b", "installing", Date.UTC(2025, 0, 20), { nsapp: "y" }),
        tel("b", "b", "failed", Date.UTC(2025, 0, 20, 1), { nsapp: "y", error: "exit code 1", exitCode: 1 }),
        loadOp(record("c", { createdAt: Date.UTC(2025, 1, 10), nsapp: "x", status: "failed", error: "exit code 2" })),
        tel("b", "b-2", "installing", Date.UTC(2025, 2, 5), { nsapp: "y" }),
        startOp("d", { nsapp: "x" }, Date.UTC(2025, 2, 12)),
        rejectOp(Date.UTC(2025, 2, 13), { randomId: "c", reason: "invalid_field" }),
        rejectOp(Date.UTC(2025, 2, 13), { randomId: "d", reason: "invalid_field" }),
      ]);
      expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual(["a"]);
    }
    const remaining = async (store: Store) => [...new Set(idsOf(await allInstalls(store)))].sort();

    test("drop-before: where the engine keeps periods, every install with an execution before `until` goes whole; the rest stays, rollups equal a recount", async () => {
      const store = await freshStore();
      await threeMonths(store);
      const dropped = await one(store, {
        kind: "drop-before",
        before: Date.UTC(2025, 1, 20),
        at: Date.UTC(2025, 3, 1),
      });
      if (dropped.until === null) {
        // No periods (SQLite): nothing happens here; retention deletes install by install.
        expect(dropped).toEqual({ kind: "dropped", executions: 0, until: null });
        expect(await remaining(store)).toEqual(["a", "b", "c", "d"]);
        await expectVerified(store, 5);
        return;
      }
      // A period boundary at or before `before` (PostgreSQL: the month's start).
      expect(dropped.until).toBeLessThanOrEqual(Date.UTC(2025, 1, 20));
      expect(dropped.until).toBeGreaterThan(Date.UTC(2025, 0, 20, 1));
      expect(dropped.until).toBeLessThanOrEqual(Date.UTC(2025, 1, 10));
      // a and both executions of b (one in March), the held report of a with them; c and d and their log entries stay.
      expect(dropped).toEqual({ kind: "dropped", executions: 3, until: dropped.until });
      expect(await remaining(store)).toEqual(["c", "d"]);
      expect(await store.getExecutions("b")).toEqual([]);
      expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual([]);
      expect((await store.listRejected({ limit: 10 })).map((e) => e.randomId).sort()).toEqual(["c", "d"]);
      await expectVerified(store, 2);
      // Nothing left to drop; the months kept take new executions as before.
      expect(
        await one(store, { kind: "drop-before", before: Date.UTC(2025, 1, 20), at: Date.UTC(2025, 3, 1) }),
      ).toEqual({ kind: "dropped", executions: 0, until: dropped.until });
      expect(await one(store, loadOp(record("e", { createdAt: Date.UTC(2025, 1, 11) })))).toEqual({
        kind: "created",
        outcome: "success",
      });
      await expectVerified(store, 3);
    });

    test("prune: to the cutoff exactly on every engine; the retention job's whole periods keep what is after the period boundary", async () => {
      const exact = await freshStore();
      await threeMonths(exact);
      const cutoff = Date.UTC(2025, 1, 20);
      const commitTo = (store: Store) => ({ store, commit: (ops: readonly WriteOp[]) => store.write(ops) });
      const pruned = await pruneOlderThan(commitTo(exact), { cutoff, now: Date.UTC(2025, 3, 1) });
      expect(pruned).toMatchObject({ executions: 4, held: 0 }); // a, b twice, c; the held report of a went with a
      expect(await remaining(exact)).toEqual(["d"]);
      expect((await exact.listRejected({ limit: 10 })).map((e) => e.randomId)).toEqual(["d"]);
      await expectVerified(exact, 1);

      const job = await freshStore();
      await threeMonths(job);
      const dropped = await pruneOlderThan(commitTo(job), { cutoff, now: Date.UTC(2025, 3, 1), wholePeriods: true });
      const periods = (await remaining(job)).includes("c");
      // With periods c (after the boundary) waits for its month to pass; without, the job deletes to the cutoff.
      expect(await remaining(job)).toEqual(periods ? ["c", "d"] : ["d"]);
      expect(dropped.executions).toBe(periods ? 3 : 4);
      await expectVerified(job, periods ? 2 : 1);
    });

    test("a store writes into a period another store dropped: it is there again for the write", async () => {
      const db = await database();
      const a = await db.open();
      const b = await db.open();
      await one(a, loadOp(record("old", { createdAt: Date.UTC(2025, 0, 15) })));
      await one(b, { kind: "drop-before", before: Date.UTC(2025, 1, 1), at: Date.UTC(2025, 3, 1) });
      expect(await one(a, loadOp(record("again", { createdAt: Date.UTC(2025, 0, 16) })))).toEqual({
        kind: "created",
        outcome: "success",
      });
      const kept = (await b.getExecutions("old")).length > 0; // no periods: nothing was dropped
      expect(await one(a, startOp("old", {}, Date.UTC(2025, 0, 17)))).toMatchObject({
        kind: kept ? "duplicate" : "created",
      });
      expect(await remaining(b)).toEqual(["again", "old"]);
      await expectVerified(b, 2);
    });
  });

  // -------------------------------------------------------------- budgets

  describe("budgets of the rejected-reports log and held reports", () => {
    const KB = 1024;
    const HELD_BUDGET = 16 * 1024 * KB;
    /** Distinct bytes that do not compress (random, base64 for readability), `n` long, never valid JSON. */
    const junk = (n: number): Uint8Array =>
      bytes(
        `~${Buffer.from(crypto.getRandomValues(new Uint8Array(n)))
          .toString("base64")
          .slice(0, n - 1)}`,
      );
    const sha256 = (b: Uint8Array) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
    const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

    test("identical bodies are stored once, compressed; every entry still shows its whole body", async () => {
      const store = await freshStore();
      const body = bytes(
        `{"random_id": "x", "type": "lxc", "error": "${"apt-get failed: unable to fetch\\n".repeat(3000)}`,
      ); // ~100 KB, broken JSON
      await store.write(Array.from({ length: 50 }, (_, i) => rejectOp(PAST + i, { body })));
      const b = await store.budgets();
      expect(b.log).toMatchObject({
        entries: 50,
        deduplicated: 49,
        bodyRawBytes: body.byteLength,
        truncated: 0,
        dropped: 0,
        headOnly: 0,
      });
      expect(b.log.bodyBytes).toBeLessThan(body.byteLength / 50);
      expect(b.log.usedBytes).toBeLessThan(body.byteLength / 10);
      const entries = await store.listRejected({ limit: 100 });
      expect(entries).toHaveLength(50);
      for (const e of entries) {
        expect(sameBytes(e.body, body)).toBe(true);
        expect(e).toMatchObject({ bodySize: body.byteLength, bodySha256: sha256(body), bodyKept: true });
      }
    });

    test("past 3/4 of the budget an entry keeps reason, size, hash and head; head-only entries make room for newer ones; the log stays within its budget", async () => {
      const store = await freshStore();
      const budget = 64 * KB;
      store.setLimits({ logBytes: budget, heldBytes: HELD_BUDGET });
      const sent: Uint8Array[] = [];
      for (let i = 0; i < 150; i++) {
        sent.push(junk(10 * KB));
        await one(store, rejectOp(PAST + i, { body: sent[i]! }));
        expect((await store.budgets()).log.usedBytes).toBeLessThanOrEqual(budget);
      }
      const b = await store.budgets();
      expect(b.log.truncated).toBeGreaterThan(100);
      expect(b.log.evicted).toBeGreaterThan(50);
      expect(b.log.dropped).toBe(0);
      expect(b.log.droppedBytes).toBeGreaterThan(100 * 9 * KB);
      const entries = (await store.listRejected({ limit: 200 })).reverse();
      expect(entries).toHaveLength(b.log.entries);
      // Whole bodies first (kept until retention or a prune removes them), then the newest head-only ones.
      const whole = entries.filter((e) => e.bodyKept);
      expect(whole.length).toBeGreaterThanOrEqual(5);
      whole.forEach((e, i) => expect(sameBytes(e.body, sent[i]!)).toBe(true));
      const heads = entries.filter((e) => !e.bodyKept);
      expect(heads.length).toBe(b.log.headOnly);
      expect(entries.length).toBeLessThan(100);
      expect(heads.at(-1)).toMatchObject({
        reason: "invalid_json",
        bodySize: 10 * KB,
        bodySha256: sha256(sent[149]!),
        receivedAt: PAST + 149,
      });
      expect(sameBytes(heads.at(-1)!.body, sent[149]!.subarray(0, 256))).toBe(true);
      // Only whole bodies can be replayed.
      const candidates = await store.replayCandidates({
        reasons: ["invalid_json"],
        retryPrefix: "x",
        afterId: 0,
        limit: 200,
      });
      expect(candidates.map((e) => e.id)).toEqual(whole.map((e) => e.id));
    });

    test("with the budget full of whole entries, a new entry is counted, not stored; lowering the budget keeps what is there", async () => {
      const store = await freshStore();
      await store.write(Array.from({ length: 10 }, (_, i) => rejectOp(PAST + i, { body: junk(10 * KB) })));
      const before = await store.budgets();
      store.setLimits({ logBytes: 50 * KB, heldBytes: HELD_BUDGET });
      expect(await one(store, rejectOp(PAST + 10, { body: junk(10 * KB) }))).toEqual({ kind: "logged" });
      const after = await store.budgets();
      expect(after.log).toMatchObject({
        entries: 10,
        dropped: 1,
        usedBytes: before.log.usedBytes,
        limitBytes: 50 * KB,
      });
      expect(await store.listRejected({ limit: 20 })).toHaveLength(10);
    });

    test("forgetting, deleting and retention give the bytes back; a shared body goes with its last entry", async () => {
      const store = await freshStore();
      await store.write([startOp("victim", {}, PAST), updateOp("victim", "done", null, PAST + MIN)]);
      const repeated = bytes(JSON.stringify({ random_id: "victim", status: "failed", error: "x".repeat(20 * KB) }));
      for (let i = 0; i < 3; i++)
        expect(await one(store, updateOp("victim", "failed", "x", PAST + 2 * MIN, { raw: repeated }))).toMatchObject({
          kind: "already-final",
        });
      await store.write([
        rejectOp(PAST + 3 * MIN, { body: junk(5 * KB) }),
        rejectOp(PAST + DAY, { body: junk(5 * KB) }),
      ]);
      let b = await store.budgets();
      expect(b.log).toMatchObject({ entries: 5, deduplicated: 2 });
      const oneBody = b.log.bodyRawBytes;

      expect(await one(store, { kind: "delete", randomId: "victim", at: PAST + DAY })).toMatchObject({ found: true });
      b = await store.budgets();
      expect(b.log).toMatchObject({ entries: 2, bodyRawBytes: oneBody - repeated.byteLength });
      expect(await one(store, { kind: "forget-rejected", before: PAST + DAY / 2, at: PAST + DAY })).toEqual({
        kind: "forgotten",
        count: 1,
      });
      expect((await store.budgets()).log).toMatchObject({ entries: 1, bodyRawBytes: 5 * KB });
      await one(store, { kind: "forget-rejected", before: PAST + DAY + 1, at: PAST + DAY });
      expect((await store.budgets()).log).toMatchObject({
        entries: 0,
        usedBytes: 0,
        bodyBytes: 0,
        bodyRawBytes: 0,
        headOnly: 0,
      });
    });

    const orphan = (id: string, at: number) =>
      updateOp(id, "failed", `E: ${"unable to fetch archive\n".repeat(170)}`, at); // ~4 KB of error

    test("held reports count against their budget, compressed; a start report takes its held status and frees it", async () => {
      const store = await freshStore();
      expect(await one(store, orphan("h-1", PAST))).toEqual({ kind: "held" });
      let b = await store.budgets();
      expect(b.held.count).toBe(1);
      expect(b.held.usedBytes).toBeGreaterThan(0);
      expect(b.held.usedBytes).toBeLessThan(KB);
      expect(await one(store, startOp("h-1", {}, PAST + MIN))).toEqual({ kind: "created", outcome: "failed" });
      expect(await latestOf(store, "h-1")).toMatchObject({ status: "failed", durationMs: null });
      b = await store.budgets();
      expect(b.held).toMatchObject({ count: 0, usedBytes: 0 });
    });

    test("past the held budget the oldest become executions on their own: stored, counted; the newest stay held", async () => {
      const store = await freshStore();
      const budget = 2 * KB;
      store.setLimits({ logBytes: 64 * 1024 * KB, heldBytes: budget });
      for (let i = 0; i < 40; i++) {
        expect(await one(store, orphan(`o-${i}`, PAST + i * 1000))).toEqual({ kind: "held" });
        expect((await store.budgets()).held.usedBytes).toBeLessThanOrEqual(budget);
      }
      const b = await store.budgets();
      expect(b.held.count).toBeGreaterThan(5);
      expect(b.held.overflowed).toBe(40 - b.held.count);
      // The oldest were applied as what they say: a failed install whose start never came.
      expect(await latestOf(store, "o-0")).toMatchObject({
        status: "failed",
        outcome: "failed",
        durationMs: null,
        createdAt: PAST,
      });
      // The newest wait, and still take their start report.
      expect(await store.getExecutions("o-39")).toEqual([]);
      expect(await one(store, startOp("o-39", { nsapp: "late" }, PAST + HOUR))).toEqual({
        kind: "created",
        outcome: "failed",
      });
      expect(await latestOf(store, "o-39")).toMatchObject({ nsapp: "late", status: "failed" });
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 40 - b.held.count + 1 }));
      await expectVerified(store, 40 - b.held.count + 1);
    });

    test("expire-held counts what it applied; what is left is still counted", async () => {
      const store = await freshStore();
      await store.write([orphan("old-1", PAST), orphan("old-2", PAST + MIN), orphan("recent", PAST + 6 * DAY)]);
      expect(await one(store, { kind: "expire-held", before: PAST + DAY, limit: 100, at: PAST + 7 * DAY })).toEqual({
        kind: "expired-held",
        count: 2,
      });
      expect((await store.budgets()).held).toMatchObject({ count: 1, expired: 2, overflowed: 0 });
      await expectVerified(store, 2);
    });
  });

  // -------------------------------------------------------------- rebuild

  describe("rebuildRollups", () => {
    test("recomputes the same cells: verify stays ok and every aggregate is unchanged", async () => {
      const store = await freshStore();
      const records = await mixedWorkload(store, async () => {});
      const apps = [ALL, ...["nginx", "docker", "homeassistant", null].map((a) => appOf(a))];
      const before = await rollupSnapshot(store, apps);
      const mark = await store.foldedUntil();
      const days: number[] = [];
      await store.rebuildRollups((day) => days.push(day));
      expect(days.length).toBeGreaterThan(0);
      expect(await rollupSnapshot(store, apps)).toEqual(before);
      expect(await store.foldedUntil()).toBe(mark);
      await expectVerified(store, records);
      // And the store goes on as before.
      await one(store, updateOp("o7", "done", null, mark + HOUR));
      await expectVerified(store, records);
    });

    test("on an empty database it does nothing", async () => {
      const store = await freshStore();
      await store.rebuildRollups();
      expect(await store.rollupCells(GRAINS.day, EVERYTHING.from, EVERYTHING.to)).toEqual([]);
      await expectVerified(store, 0);
    });
  });
}
