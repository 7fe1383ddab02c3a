// The Store contract, the store as a whole: concurrent writers, two stores on one database,
// close and reopen.
import { describe, expect, test } from "bun:test";
import { failureSignatureId } from "../../src/domain/error-signature.ts";
import { deriveOutcome } from "../../src/domain/outcome.ts";
import { GRAINS } from "../../src/domain/rollup.ts";
import { DAY, HOUR } from "../../src/domain/time.ts";
import type { Store } from "../../src/store/contract/store.ts";
import {
  ALL,
  ALL_PARTS,
  allInstalls,
  appOf,
  EVERYTHING,
  expectVerified,
  type Harness,
  hourTotals,
  loadOp,
  MIN,
  mixedWorkload,
  one,
  openHour,
  outcomes,
  PAST,
  record,
  rejectOp,
  rollupSnapshot,
  sortedCells,
  startOp,
  updateOp,
} from "./harness.ts";

/** The contract's tests of this feature, in the suite of one engine (suite.ts). */
export function storeWideContract({ database, freshStore }: Harness): void {
  // -------------------------------------------------------------- concurrency

  describe("concurrency", () => {
    test("200 writes submitted at once through one store, updates racing their starts", async () => {
      const store = await freshStore();
      const H = await openHour(store);
      const n = 100;
      const status = (i: number) => (i % 3 === 0 ? "failed" : i % 3 === 1 ? "done" : "configuring");
      const results = new Map<string, { start?: unknown; update?: unknown }>();
      const writes: Promise<void>[] = [];
      for (let i = 0; i < n; i++) {
        const at = (i % 2 ? PAST : H) + i * MIN;
        const start = startOp(`w${i}`, { nsapp: `app${i % 4}` }, at);
        const update = updateOp(`w${i}`, status(i), i % 3 === 0 ? `exit code ${i}` : null, at + 30 * MIN);
        const seen: { start?: unknown; update?: unknown } = {};
        results.set(`w${i}`, seen);
        // Every fourth update is submitted before its start.
        const ops = i % 4 === 0 ? [update, start] : [start, update];
        for (const op of ops)
          writes.push(store.write([op]).then(([r]) => void (seen[op === start ? "start" : "update"] = r)));
      }
      await Promise.all(writes);

      for (let i = 0; i < n; i++) {
        const outcome = deriveOutcome(status(i), `exit code ${i}`);
        // Whichever ran first: the update held and applied at creation, or the created install updated.
        const allowed: unknown[] = [
          { start: { kind: "created", outcome }, update: { kind: "held" } },
          { start: { kind: "created", outcome: "in_progress" }, update: { kind: "updated", outcome } },
        ];
        expect(allowed).toContainEqual(results.get(`w${i}`));
      }
      const installs = await allInstalls(store);
      expect(installs.length).toBe(n);
      for (const r of installs) expect(r.status).toBe(status(Number(r.randomId.slice(1))));
      expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual([]);
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 34, success: 33, in_progress: 33 }));
      await expectVerified(store, n);
    });

    test("two stores on one database: interleaved writes, one winner per random_id, held updates across stores, equal reads", async () => {
      const db = await database();
      const a = await db.open();
      const b = await db.open();
      const H = await openHour(a);
      const marker = await a.changeMarker();

      // The same install started through both at once: exactly one is created.
      const [ra, rb] = await Promise.all([
        one(a, startOp("same", { nsapp: "x" }, H)),
        one(b, startOp("same", { nsapp: "y" }, H + 1)),
      ]);
      expect([ra.kind, rb.kind].sort()).toEqual(["created", "duplicate"]);
      expect(await a.changeMarker()).not.toBe(marker); // whichever store committed, a sees a change

      // Held on one store, started on the other.
      expect(await one(b, updateOp("cross", "failed", "exit code 4", H + MIN))).toEqual({ kind: "held" });
      expect(await one(a, startOp("cross", { nsapp: "x" }, H + 2 * MIN))).toEqual({
        kind: "created",
        outcome: "failed",
      });
      expect(await b.heldBefore(EVERYTHING.to, 10)).toEqual([]);

      // Interleaved, in open and folded hours, each store updating what the other started.
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        const [mine, other] = i % 2 ? [a, b] : [b, a];
        const at = (i % 3 ? H : PAST) + i * MIN;
        writes.push(
          mine
            .write([startOp(`i${i}`, { nsapp: `app${i % 3}` }, at)])
            .then(() =>
              other.write([updateOp(`i${i}`, i % 5 ? "done" : "failed", i % 5 ? null : `exit code ${i}`, at + MIN)]),
            ),
        );
      }
      await Promise.all(writes);
      // A fold through one store moves the mark for both.
      expect(await one(b, { kind: "fold", until: H + HOUR, at: H + HOUR })).toMatchObject({ kind: "folded" });
      expect(await a.foldedUntil()).toBe(H + HOUR);
      await a.write([startOp("late", { nsapp: "app1" }, H + HOUR + MIN), updateOp("i3", "done", null, H + 2 * HOUR)]);
      await b.write([
        updateOp("late", "done", null, H + HOUR + 2 * MIN),
        { kind: "expire", executionId: "same", at: H + 3 * HOUR },
      ]);

      const total = 43;
      for (const s of [a, b]) expect((await allInstalls(s)).length).toBe(total);
      expect(await a.listExecutions({}, { limit: 100 })).toEqual(await b.listExecutions({}, { limit: 100 }));
      for (const grain of [GRAINS.hour, GRAINS.day, GRAINS.month])
        expect(await sortedCells(a, grain)).toEqual(await sortedCells(b, grain));
      expect(await a.readRollups({ grain: GRAINS.hour, slice: ALL, ...EVERYTHING, parts: ALL_PARTS })).toEqual(
        await b.readRollups({ grain: GRAINS.hour, slice: ALL, ...EVERYTHING, parts: ALL_PARTS }),
      );
      expect(await hourTotals(a)).toEqual(await hourTotals(b));
      expect(await hourTotals(a)).toEqual(outcomes({ success: 33, failed: 9, unknown: 1 }));
      await expectVerified(a, total);
      await expectVerified(b, total);
    });

    test("a store's rollup reads follow cells another store changed, folded or open", async () => {
      const db = await database();
      const a = await db.open();
      const b = await db.open();
      const H = await openHour(a);
      await a.write([startOp("f1", { nsapp: "x" }, PAST), startOp("o1", { nsapp: "x" }, H)]);
      const cellsOf = (s: Store) =>
        Promise.all([GRAINS.hour, GRAINS.day, GRAINS.month].map((grain) => sortedCells(s, grain)));
      const before = await cellsOf(a); // read (and kept, where an engine keeps parsed cells)
      await b.write([
        updateOp("f1", "failed", "exit code 2: late", PAST + HOUR),
        updateOp("o1", "done", null, H + MIN),
        startOp("f2", { nsapp: "y" }, PAST + 2 * MIN),
      ]);
      const after = await cellsOf(a);
      expect(after).not.toEqual(before);
      expect(after).toEqual(await cellsOf(b));
      expect(await a.readRollups({ grain: GRAINS.day, slice: ALL, ...EVERYTHING, parts: ["apps"] })).toEqual(
        await b.readRollups({ grain: GRAINS.day, slice: ALL, ...EVERYTHING, parts: ["apps"] }),
      );
      await expectVerified(a, 3);
    });

    test("large batches (a seed's, a copy's) on two stores at once, beside small ones: one transaction each, everything counted once", async () => {
      const db = await database();
      const a = await db.open();
      const b = await db.open();
      const H = await openHour(a);
      const loads = (prefix: string) =>
        Array.from({ length: 5000 }, (_, i) =>
          loadOp(record(`${prefix}${i}`, { createdAt: PAST + i * MIN, nsapp: `app${i % 7}` })),
        );
      const results = await Promise.all([
        a.write(loads("a")),
        b.write(loads("b")),
        a.write([startOp("small-a", { nsapp: "x" }, H)]),
        b.write([startOp("small-b", { nsapp: "y" }, H + MIN), updateOp("small-a", "done", null, H + 2 * MIN)]),
      ]);
      expect(results.flat().filter((r) => r.kind === "created")).toHaveLength(10002);
      await expectVerified(a, 10002);
    });
  });

  // -------------------------------------------------------------- durability

  describe("close and reopen", () => {
    test("close resolves; a reopened store sees everything written", async () => {
      const db = await database();
      const store = await db.open();
      const records = await mixedWorkload(store, async () => {});
      await store.write([
        rejectOp(PAST, { randomId: "p0" }),
        { kind: "stuck-checked", from: await store.stuckCheckedUntil(), until: PAST + HOUR, at: PAST + DAY },
      ]);
      await one(store, updateOp("held-at-close", "done", null, PAST + DAY));
      const apps = [ALL, appOf("nginx"), appOf("docker")];
      const snapshot = async (s: Store) => ({
        installs: await allInstalls(s),
        rollups: await rollupSnapshot(s, apps),
        rejected: await s.listRejected({ limit: 100 }),
        held: await s.heldBefore(EVERYTHING.to, 10),
        foldedUntil: await s.foldedUntil(),
        stuckCheckedUntil: await s.stuckCheckedUntil(),
        span: await s.recordSpan(),
        errors: await s.errorTextCounts(),
        signatures: await s.signatures([
          failureSignatureId("failed", "exit code 100: apt-get install failed at line 42")!,
        ]),
      });
      const before = await snapshot(store);
      expect(before.signatures).toHaveLength(1);
      // The slices compared hold data (a wrong slice key would compare empty answers).
      for (const slice of apps)
        expect((before.rollups[`${GRAINS.day} ${slice}`] as unknown[]).length).toBeGreaterThan(0);
      expect(before.held).toEqual(["held-at-close"]);
      await expect(store.close()).resolves.toBeUndefined();

      const reopened = await db.open();
      expect(await snapshot(reopened)).toEqual(before);
      await expectVerified(reopened, records);
      // And it goes on: the held update still waits for its start.
      expect(await one(reopened, startOp("held-at-close", {}, PAST + 2 * DAY))).toEqual({
        kind: "created",
        outcome: "success",
      });
      await expectVerified(reopened, records + 1);
    });
  });
}
