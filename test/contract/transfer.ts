// The Store contract, whole data sets in and out: complete records loaded (seed, import, copy),
// held reports and the log copied between stores, the position an import has reached per source.
import { describe, expect, test } from "bun:test";
import { DAY } from "../../src/domain/time.ts";
import type { HeldReport } from "../../src/domain/lifecycle.ts";
import type { RejectedEntry } from "../../src/store/contract/rejected.ts";
import type { Store } from "../../src/store/contract/store.ts";
import {
  appOf,
  bytes,
  expectVerified,
  type Harness,
  hourTotals,
  latestOf,
  loadOp,
  MIN,
  one,
  outcomes,
  PAST,
  record,
  rejectOp,
  startOp,
  updateOp,
} from "./harness.ts";

/** The contract's tests of this feature, in the suite of one engine (suite.ts). */
export function transferContract({ database, freshStore }: Harness): void {
  // -------------------------------------------------------------- load

  describe("write load", () => {
    test("a complete record is stored as it is and counted once; a second load is a duplicate", async () => {
      const store = await freshStore();
      const install = record("ld1", {
        createdAt: PAST,
        updatedAt: PAST + 7 * MIN,
        status: "failed",
        error: "exit code 5: make failed",
        durationMs: 7 * MIN,
        repaired: true,
        nsapp: "docker",
      });
      expect(await one(store, loadOp(install))).toEqual({ kind: "created", outcome: "failed" });
      expect(await latestOf(store, "ld1")).toEqual(install);
      // Once: a start and its update would pass through in_progress, a load never does.
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
      expect(await hourTotals(store, appOf("docker"))).toEqual(outcomes({ failed: 1 }));

      expect(await one(store, loadOp({ ...install, status: "done", outcome: "success", error: null }))).toEqual({
        kind: "duplicate",
      });
      expect(await latestOf(store, "ld1")).toEqual(install);
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
      await expectVerified(store, 1);
    });

    test("a loaded install in progress takes a later final status", async () => {
      const store = await freshStore();
      expect(await one(store, loadOp(record("ld2", { createdAt: PAST, status: "installing" })))).toEqual({
        kind: "created",
        outcome: "in_progress",
      });
      expect(await one(store, updateOp("ld2", "done", null, PAST + MIN))).toEqual({
        kind: "updated",
        outcome: "success",
      });
      expect(await latestOf(store, "ld2")).toMatchObject({ outcome: "success", durationMs: MIN });
      await expectVerified(store, 1);
    });
  });

  // -------------------------------------------------------------- copy: held reports and the log

  describe("heldChunks, rejectedChunks, load-held and load-rejected (copy)", () => {
    /** Every held report and log entry of a store, as chunks give them. */
    async function sideData(store: Store) {
      const held: HeldReport[] = [];
      for await (const chunk of store.heldChunks({ chunkRows: 2 })) held.push(...chunk);
      const log: RejectedEntry[] = [];
      for await (const chunk of store.rejectedChunks({ chunkRows: 3 })) log.push(...chunk);
      return { held, log };
    }
    /** A log entry as another store would show it: everything but the id that store gave it. */
    const sansId = ({ id: _, ...e }: RejectedEntry) => ({ ...e, body: [...e.body] });

    test("heldChunks: every held report oldest first, as it was received; rejectedChunks: entries above afterId, oldest first", async () => {
      const store = await freshStore();
      const long = `E: ${"unable to fetch archive\n".repeat(400)}`;
      await store.write([
        updateOp("h2", "failed", long, PAST + 2 * MIN, { repairs: ["unescaped_quote"] }),
        updateOp("h1", "done", null, PAST + MIN),
        updateOp("h3", "failed", "x", PAST + 2 * MIN),
      ]);
      const { held } = await sideData(store);
      expect(held.map((h) => [h.report.randomId, h.at, h.repaired])).toEqual([
        ["h1", PAST + MIN, false],
        ["h2", PAST + 2 * MIN, true],
        ["h3", PAST + 2 * MIN, false],
      ]);
      expect(held[1]!.report).toEqual(updateOp("h2", "failed", long, 0).report);

      await store.write(Array.from({ length: 7 }, (_, i) => rejectOp(PAST + i, { message: `m${i}` })));
      const { log } = await sideData(store);
      expect(log[0]).toMatchObject({ reason: "repaired", randomId: "h2" });
      expect(log.slice(1).map((e) => e.message)).toEqual(Array.from({ length: 7 }, (_, i) => `m${i}`));
      const after = log[4]!.id;
      const rest: string[] = [];
      for await (const chunk of store.rejectedChunks({ afterId: after, chunkRows: 2 }))
        rest.push(...chunk.map((e) => e.message));
      expect(rest).toEqual(["m4", "m5", "m6"]);
    });

    test("a store's held reports and log loaded into another come out the same; loading them again adds nothing", async () => {
      const source = await freshStore();
      const long = bytes(`{"random_id": "x", "error": "${"apt-get failed\\n".repeat(2000)}`);
      await source.write([
        updateOp("held-a", "failed", "exit code 1", PAST, {
          repairs: ["unescaped_quote"],
          raw: bytes(`{"random_id": "held-a", "status": "failed", "error": "exit "code" 1"}`),
        }),
        updateOp("held-b", "done", null, PAST + MIN),
        rejectOp(PAST + 2 * MIN, { body: long }),
        rejectOp(PAST + 3 * MIN, {
          body: long,
          endpoint: "telemetry",
          reason: "invalid_field",
          field: "type",
          randomId: "r9",
          message: "type must be one of lxc, vm",
        }),
        rejectOp(PAST + 4 * MIN, { body: new Uint8Array([0, 255, 7]) }),
      ]);
      const [first] = await source.listRejected({ limit: 1 });
      await one(source, { kind: "mark-replayed", rejectedId: first!.id, result: "still invalid_json", at: PAST + DAY });
      const from = await sideData(source);
      expect(from.held).toHaveLength(2);
      expect(from.log).toHaveLength(4); // the repaired update's body, two junk bodies sharing one, and a binary one

      const target = await freshStore();
      const load = (data: typeof from): Promise<{ kind: string; bodyKept?: boolean }[]> =>
        target.write([
          ...data.held.map((held) => ({ kind: "load-held", held, at: PAST + DAY }) as const),
          ...data.log.map((entry) => ({ kind: "load-rejected", entry, source: "the source", at: PAST + DAY }) as const),
        ]);
      expect(await load(from)).toEqual([
        ...from.held.map(() => ({ kind: "created" })),
        ...from.log.map(() => ({ kind: "created", bodyKept: true })),
      ]);
      const to = await sideData(target);
      expect(to.held).toEqual(from.held);
      expect(to.log.map(sansId)).toEqual(from.log.map(sansId));
      expect((await target.budgets()).held.count).toBe(2);
      expect((await target.budgets()).log.entries).toBe(4);

      // Again (a copy run a second time): every one is there already.
      expect(await load(from)).toEqual([...from.held, ...from.log].map(() => ({ kind: "duplicate" })));
      // An entry added to the source since is added; those before it are still duplicates.
      await one(source, rejectOp(PAST + 5 * MIN, { message: "new" }));
      const later = await sideData(source);
      expect((await load(later)).filter((r) => r.kind !== "duplicate")).toEqual([{ kind: "created", bodyKept: true }]);
      expect((await sideData(target)).log.map(sansId)).toEqual(later.log.map(sansId));
      // Another source's entries are its own: the same ids are not duplicates of the first's.
      expect(
        await one(target, { kind: "load-rejected", entry: later.log[0]!, source: "another", at: PAST + DAY }),
      ).toEqual({ kind: "created", bodyKept: true });

      // A held report is applied as the target's own would be when its start report comes.
      expect(await one(target, startOp("held-a", { nsapp: "nginx" }, PAST + 2 * DAY))).toEqual({
        kind: "created",
        outcome: "failed",
      });
      expect(await latestOf(target, "held-a")).toMatchObject({
        status: "failed",
        error: "exit code 1",
        repaired: true,
      });
      // A held report whose execution the target has already is not held there again.
      expect(await one(target, { kind: "load-held", held: from.held[0]!, at: PAST + DAY })).toEqual({
        kind: "duplicate",
      });
    });

    test("a head-only entry stays head-only, with the size and hash of the body it came from", async () => {
      const source = await freshStore();
      source.setLimits({ logBytes: 4096, heldBytes: 16 * 1024 * 1024 });
      const bodies = Array.from({ length: 6 }, () => crypto.getRandomValues(new Uint8Array(2000))); // incompressible
      await source.write(bodies.map((body, i) => rejectOp(PAST + i, { body })));
      const { log } = await sideData(source);
      const heads = log.filter((e) => !e.bodyKept);
      expect(heads.length).toBeGreaterThan(0);
      const target = await freshStore();
      const results = await target.write(log.map((entry) => ({ kind: "load-rejected", entry, source: "s", at: PAST })));
      expect(results).toEqual(log.map((e) => ({ kind: "created", bodyKept: e.bodyKept })));
      const copied = (await sideData(target)).log;
      expect(copied.map(sansId)).toEqual(log.map(sansId));
      for (const e of copied.filter((c) => !c.bodyKept)) expect(e.body.byteLength).toBeLessThan(e.bodySize);
      expect((await target.budgets()).log.headOnly).toBe(heads.length);
    });
  });

  // -------------------------------------------------------------- import positions

  describe("import-mark", () => {
    test("import-mark keeps a position per source, moved with the batch it is in; 0 for a source never marked", async () => {
      const db = await database();
      const store = await db.open();
      expect(await store.importMark("http://a:1")).toBe(0);
      const results = await store.write([
        loadOp(record("im-1", { createdAt: PAST })),
        { kind: "import-mark", source: "http://a:1", position: PAST + 5, at: PAST },
      ]);
      expect(results).toEqual([{ kind: "created", outcome: "success" }, { kind: "marked" }]);
      await one(store, { kind: "import-mark", source: "http://b:2", position: 7, at: PAST });
      expect([await store.importMark("http://a:1"), await store.importMark("http://b:2")]).toEqual([PAST + 5, 7]);
      await one(store, { kind: "import-mark", source: "http://a:1", position: PAST + 9, at: PAST });
      expect(await store.importMark("http://a:1")).toBe(PAST + 9);
      // Kept in the database: another store on it sees it.
      expect(await (await db.open()).importMark("http://a:1")).toBe(PAST + 9);
    });
  });
}
