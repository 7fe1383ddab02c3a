// The Store contract, reports and the read side: starts, updates and the current clients'
// executions as stored; listings, streams, small reads; rollups and their recount.
import { describe, expect, test } from "bun:test";
import { errorSignature, failureSignatureId } from "../../src/domain/error-signature.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { deriveOutcome, type Outcome } from "../../src/domain/outcome.ts";
import {
  ALL_APPS,
  GRAINS,
  appSlice,
  bucketStart,
  countHour,
  emptyData,
  hoursFrom,
  platformClass,
  sliceKey,
  type RollupData,
  type RollupPart,
} from "../../src/domain/rollup.ts";
import { DAY, HOUR, floorHour } from "../../src/domain/time.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import {
  PAGE_SORTS,
  type ExecutionFilter,
  type PageQuery,
  type PageSort,
  type StoreReads,
} from "../../src/store/contract/executions.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { LATE_MS } from "../../src/store/common/heard.ts";

const OUTCOMES_LISTED = ["success", "failed", "aborted", "in_progress", "unknown"] as const;
import { SCANNED, breakdown, foldRecords, summarize } from "../../src/read/aggregate.ts";
import { createStats } from "../../src/read/stats.ts";
import {
  ALL,
  ALL_PARTS,
  allInstalls,
  appOf,
  everyPage,
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
  onlyParts,
  openHour,
  outcomes,
  PAST,
  record,
  rejectOp,
  type ReportFields,
  slicesOfApps,
  sortedCells,
  startOp,
  stored,
  updateOp,
} from "./harness.ts";

/** The contract's tests of this feature, in the suite of one engine (suite.ts). */
export function executionsContract({ database, freshStore }: Harness): void {
  // -------------------------------------------------------------- start

  describe("write start", () => {
    test("creates the install with the outcome of its status; every field is stored as sent", async () => {
      const store = await freshStore();
      const op = startOp(
        "s1",
        {
          nsapp: "jellyfin",
          type: "vm",
          ctType: 0,
          diskSize: 32.5,
          coreCount: 4,
          ramSize: 4096,
          osType: "ubuntu",
          osVersion: "24.04",
          disableip6: null,
          method: null,
          pveVersion: "8.3.1",
        },
        PAST,
      );
      expect(await one(store, op)).toEqual({ kind: "created", outcome: "in_progress" });
      expect(await latestOf(store, "s1")).toEqual(stored(op));

      // A host tool's or addon's one-shot (its only report is final) is final at once, of its own kind.
      const tool = startOp(
        "s2",
        { type: "pve", nsapp: "post-pve-install", status: "failed", error: "exit code 2" },
        PAST + 1,
        { payloadVersion: 2 },
      );
      expect(await one(store, tool)).toEqual({ kind: "created", outcome: "failed" });
      expect(await latestOf(store, "s2")).toMatchObject({
        kind: "tool",
        status: "failed",
        outcome: "failed",
        error: "exit code 2",
        durationMs: null,
        finishedAt: PAST + 1,
      });
      expect(await hourTotals(store)).toEqual(outcomes({ in_progress: 1 })); // tools stay out of the installs' slices
      expect(await hourTotals(store, sliceKey("tool", null, ALL_APPS))).toEqual(outcomes({ failed: 1 }));
      // An installation's final report before its start is held (below), not created.
      expect(
        await one(store, startOp("s3", { status: "failed", error: "exit code 2" }, PAST + 2, { payloadVersion: 2 })),
      ).toEqual({ kind: "held" });
      await expectVerified(store, 2);
    });

    test("the same random_id again is a duplicate: the stored record is unchanged, nothing is logged", async () => {
      const store = await freshStore();
      await one(store, startOp("dup", { nsapp: "nginx" }, PAST));
      const stored = await latestOf(store, "dup");
      expect(await one(store, startOp("dup", { nsapp: "other", type: "vm", ramSize: 1 }, PAST + HOUR))).toEqual({
        kind: "duplicate",
      });
      expect(await latestOf(store, "dup")).toEqual(stored!);
      expect(await store.listRejected({ limit: 10 })).toEqual([]);
      expect(await hourTotals(store)).toEqual(outcomes({ in_progress: 1 }));
      await expectVerified(store, 1);
    });

    test("duplicates within one batch: the first is created, the rest are duplicates", async () => {
      const store = await freshStore();
      expect(
        await store.write([startOp("b", {}, PAST), startOp("b", { nsapp: "x" }, PAST + 1), startOp("c", {}, PAST + 2)]),
      ).toEqual([
        { kind: "created", outcome: "in_progress" },
        { kind: "duplicate" },
        { kind: "created", outcome: "in_progress" },
      ]);
      expect((await latestOf(store, "b"))!.nsapp).toBe("nginx");
      await expectVerified(store, 2);
    });
  });

  // -------------------------------------------------------------- executions (/telemetry)

  describe("executions of the current clients", () => {
    /** A /telemetry report (payload v2) of execution `executionId` of install `randomId`. */
    const tel = (randomId: string, executionId: string, status: string, at: number, fields: ReportFields = {}) =>
      startOp(randomId, { status, ...fields }, at, { executionId, payloadVersion: 2 });

    test("a lifecycle: created, progress pings advance the timeline, the final report ends it; repeats are duplicates", async () => {
      const store = await freshStore();
      const results = await store.write([
        tel("i1", "e1", "installing", PAST),
        tel("i1", "e1", "installing", PAST + 1000), // the client retries a start it saw fail
        tel("i1", "e1", "validation", PAST + 2 * MIN),
        tel("i1", "e1", "configuring", PAST + 3 * MIN),
        tel("i1", "e1", "failed", PAST + 4 * MIN, {
          error: "exit_code=100 | apt failed",
          exitCode: 100,
          errorCategory: "dependency",
          failedCommand: "apt-get install -y x",
          failedLine: 12,
          installDuration: 240,
        }),
        tel("i1", "e1", "failed", PAST + 5 * MIN, { error: "exit_code=100 | apt failed", exitCode: 100 }), // the final report again
        tel("i1", "e1", "configuring", PAST + 6 * MIN), // a late ping never moves a final status back
        tel("i1", "e1", "success", PAST + 7 * MIN), // nor does another final status (the client retries any non-2xx)
      ]);
      expect(results).toEqual([
        { kind: "created", outcome: "in_progress" },
        { kind: "duplicate" },
        { kind: "updated", outcome: "in_progress" },
        { kind: "updated", outcome: "in_progress" },
        { kind: "updated", outcome: "failed" },
        { kind: "duplicate" },
        { kind: "duplicate" },
        { kind: "duplicate" },
      ]);
      expect(await store.getExecutions("i1")).toMatchObject([
        {
          executionId: "e1",
          randomId: "i1",
          attempt: 1,
          kind: "install",
          payloadVersion: 2,
          status: "failed",
          outcome: "failed",
          exitCode: 100,
          errorCategory: "dependency",
          failedCommand: "apt-get install -y x",
          failedLine: 12,
          installDuration: 240,
          createdAt: PAST,
          updatedAt: PAST + 4 * MIN,
          durationMs: 4 * MIN,
          installingAt: PAST,
          validationAt: PAST + 2 * MIN,
          configuringAt: PAST + 3 * MIN,
          finishedAt: PAST + 4 * MIN,
        },
      ]);
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
      await expectVerified(store, 1);
    });

    test("a later report that names the app the first one lacked moves the execution to that app everywhere", async () => {
      const store = await freshStore();
      await store.write([
        tel("k1", "e1", "installing", PAST, { nsapp: null }),
        tel("k2", "e2", "installing", PAST, { nsapp: "keep" }),
      ]);
      expect(
        await store.write([
          tel("k1", "e1", "validation", PAST + MIN, { nsapp: "jellyfin" }),
          tel("k2", "e2", "validation", PAST + MIN, { nsapp: "keep" }),
        ]),
      ).toEqual([
        { kind: "updated", outcome: "in_progress" },
        { kind: "updated", outcome: "in_progress" },
      ]);
      expect(idsOf((await store.listExecutions({ nsapp: "jellyfin" }, { limit: 10 })).rows)).toEqual(["k1"]);
      expect(idsOf((await store.listExecutions({ nsapp: "keep" }, { limit: 10 })).rows)).toEqual(["k2"]);
      expect((await store.getExecutions("k1"))[0]).toMatchObject({
        nsapp: "jellyfin",
        status: "validation",
        createdAt: PAST,
        validationAt: PAST + MIN,
      });
      await store.write([tel("k1", "e1", "success", PAST + 2 * MIN, { nsapp: "jellyfin" })]);
      expect(
        idsOf((await store.listExecutions({ nsapp: "jellyfin", outcome: "success" }, { limit: 10 })).rows),
      ).toEqual(["k1"]);
      await expectVerified(store, 2);
    });

    test("a new execution after a final status is a retry: attempt 2 of the same install, not a conflict", async () => {
      const store = await freshStore();
      await store.write([
        tel("r1", "e1", "installing", PAST),
        tel("r1", "e1", "failed", PAST + MIN, { error: "exit code 1", exitCode: 1 }),
      ]);
      expect(
        await store.write([tel("r1", "e2", "installing", PAST + 2 * MIN), tel("r1", "e2", "success", PAST + 5 * MIN)]),
      ).toEqual([
        { kind: "created", outcome: "in_progress" },
        { kind: "updated", outcome: "success" },
      ]);
      const executions = await store.getExecutions("r1");
      expect(executions.map((e) => [e.executionId, e.attempt, e.outcome])).toEqual([
        ["e1", 1, "failed"],
        ["e2", 2, "success"],
      ]);
      expect(idsOf((await store.listExecutions({ randomId: "r1" }, { limit: 10, order: "oldest" })).rows)).toEqual([
        "r1",
        "r1",
      ]);
      // Each execution counts once, by its attempt.
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 1, success: 1 }));
      const [cell] = await store.readRollups({ grain: GRAINS.hour, slice: ALL, ...EVERYTHING, parts: ["data"] });
      expect(cell!.data.dims.attempt).toEqual({ "1": [0, 1, 0, 0, 0, 0], "2": [1, 0, 0, 0, 0, 0] });
      // Deleting the install removes both.
      expect(await one(store, { kind: "delete", randomId: "r1", at: PAST + HOUR })).toEqual({
        kind: "deleted",
        found: true,
        executions: 2,
      });
      await expectVerified(store, 0);
    });

    test("an install's first run after a retry stored before it: numbered after the retry, whatever the ids look like", async () => {
      const store = await freshStore();
      // A first run's execution_id is its install's random_id (as the clients send it); a retry's is its own.
      for (const [install, retry] of [
        ["r7", "e7"],
        ["7d1f6c1e-3b7a-4d2e-9a51-0c8f2b6e4a10", "0b5e8c2a-91d4-4f6b-8e3c-5a7d2f1c9e84"],
      ] as const) {
        await store.write([tel(install, retry, "installing", PAST)]);
        await store.write([tel(install, install, "installing", PAST + MIN)]);
        await store.write([tel(install, install, "failed", PAST + 2 * MIN, { error: "exit code 1", exitCode: 1 })]);
        const executions = await store.getExecutions(install);
        expect(executions.map((e) => [e.executionId, e.attempt, e.outcome])).toEqual([
          [retry, 1, "in_progress"],
          [install, 2, "failed"],
        ]);
      }
      // In one batch: the retry's row, written first, counts for the first run after it.
      await store.write([tel("r8", "e8", "installing", PAST), tel("r8", "r8", "installing", PAST + MIN)]);
      expect((await store.getExecutions("r8")).map((e) => [e.executionId, e.attempt])).toEqual([
        ["e8", 1],
        ["r8", 2],
      ]);
      await expectVerified(store, 6);
    });

    test("expire is by execution: only that attempt becomes unknown", async () => {
      const store = await freshStore();
      await store.write([tel("x1", "e1", "installing", PAST), tel("x1", "e2", "installing", PAST + MIN)]);
      expect(await one(store, { kind: "expire", executionId: "e1", at: PAST + DAY })).toEqual({
        kind: "expired",
        changed: true,
      });
      expect((await store.getExecutions("x1")).map((e) => [e.executionId, e.outcome])).toEqual([
        ["e1", "unknown"],
        ["e2", "in_progress"],
      ]);
      await expectVerified(store, 2);
    });

    test("a final report before its start is held; expire-held applies it on its own, as the execution it describes", async () => {
      const store = await freshStore();
      expect(await one(store, tel("o1", "o1", "success", PAST, { installDuration: 90 }))).toEqual({ kind: "held" });
      expect(await one(store, tel("o2", "o2", "failed", PAST + HOUR, { error: "exit code 2", exitCode: 2 }))).toEqual({
        kind: "held",
      });
      expect(await one(store, { kind: "expire-held", before: PAST + MIN, limit: 10, at: PAST + DAY })).toEqual({
        kind: "expired-held",
        count: 1,
      });
      expect(await store.getExecutions("o1")).toMatchObject([
        {
          status: "success",
          outcome: "success",
          createdAt: PAST,
          durationMs: null,
          installingAt: null,
          finishedAt: PAST,
          installDuration: 90,
        },
      ]);
      expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual(["o2"]);
      expect((await store.budgets()).held).toMatchObject({ count: 1, expired: 1 });
      // A start report coming after that is a duplicate: the record is final.
      expect(await one(store, tel("o1", "o1", "installing", PAST + DAY))).toEqual({ kind: "duplicate" });
      await expectVerified(store, 1);
    });

    test("a final report before its start that may not be held (its client's share is used up) is applied on its own at once", async () => {
      const store = await freshStore();
      const op = {
        ...tel("nh1", "nh1", "failed", PAST, { error: "exit code 2", exitCode: 2, errorCategory: "shell" }),
        holdable: false,
      };
      expect(await one(store, op)).toEqual({ kind: "created", outcome: "failed" });
      expect(await store.getExecutions("nh1")).toMatchObject([
        {
          status: "failed",
          outcome: "failed",
          exitCode: 2,
          createdAt: PAST,
          durationMs: null,
          installingAt: null,
          finishedAt: PAST,
          attempt: 1,
        },
      ]);
      expect((await store.budgets()).held.count).toBe(0);
      // As after expire-held: the start report coming later is a duplicate.
      expect(await one(store, tel("nh1", "nh1", "installing", PAST + MIN))).toEqual({ kind: "duplicate" });
      // Everything else a report does is as it was: a start still creates, a final still ends it.
      expect(await one(store, { ...tel("nh2", "nh2", "installing", PAST), holdable: false })).toEqual({
        kind: "created",
        outcome: "in_progress",
      });
      expect(await one(store, { ...tel("nh2", "nh2", "success", PAST + MIN), holdable: false })).toEqual({
        kind: "updated",
        outcome: "success",
      });
      await expectVerified(store, 2);
    });

    test("filters on the current clients' fields and kinds select exactly their executions", async () => {
      const store = await freshStore();
      await store.write([
        tel("k1", "k1", "installing", PAST, {
          exitCode: null,
          cpuVendor: "intel",
          arch: "amd64",
          platform: "pve",
          repoSource: "ProxmoxVE",
          repoSlug: "community-scripts/ProxmoxVE",
          appVersion: "1.0",
          kernelVersion: "6.8",
          gpuVendor: "nvidia",
          gpuPassthrough: "yes",
        }),
        tel("k2", "k2", "installing", PAST + MIN, {
          cpuVendor: "amd",
          arch: "arm64",
          platform: "pimox",
          repoSource: "my-fork",
          repoSlug: "me/fork",
          gpuPassthrough: "no",
        }),
        tel("k3", "k3", "failed", PAST + 2 * MIN, {
          type: "addon",
          nsapp: "netdata",
          error: "exit code 127",
          exitCode: 127,
          errorCategory: "command_not_found",
        }),
        tel("k4", "k4", "success", PAST + 3 * MIN, { type: "pve", nsapp: "post-pve-install" }),
        // platform as the community reads it: sent, else from the host version, else none
        tel("k5", "k5", "installing", PAST + 4 * MIN, { platform: null, pveVersion: "incus-6.0.1" }),
        tel("k6", "k6", "installing", PAST + 5 * MIN, { platform: "Incus", pveVersion: "INCUS-6.3" }),
        tel("k7", "k7", "installing", PAST + 6 * MIN, { platform: null, pveVersion: null }),
        tel("k8", "k8", "installing", PAST + 7 * MIN, { platform: "incus", pveVersion: "8.4.1" }),
      ]);
      const ids = async (filter: ExecutionFilter) =>
        idsOf((await store.listExecutions(filter, { limit: 10, order: "oldest" })).rows);
      expect(await ids({})).toEqual(["k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"]);
      expect(await ids({ kind: "install" })).toEqual(["k1", "k2", "k5", "k6", "k7", "k8"]);
      // k2 sent "pimox" on a host of 8.2.2; k6 "Incus" is not a platform the client sends (a fork's)
      expect(await ids({ platformClass: "incus" })).toEqual(["k5", "k6", "k8"]);
      expect(await ids({ platformClass: "pve" })).toEqual(["k1", "k2", "k3", "k4"]);
      expect(await ids({ platformClass: "" })).toEqual(["k7"]);
      expect(await ids({ platformClass: "lxd" })).toEqual([]);
      // except: what a filter leaves out, an execution without the value included (NULL is "not matched")
      expect(await ids({ except: { platformClass: "pve" } })).toEqual(["k5", "k6", "k7", "k8"]);
      expect(await ids({ kind: "install", except: { platformClass: "incus" } })).toEqual(["k1", "k2", "k7"]);
      expect(await ids({ except: { gpuPassthrough: "yes" } })).toEqual(["k2", "k3", "k4", "k5", "k6", "k7", "k8"]);
      expect(await ids({ except: { cpuVendor: "intel", arch: "amd64" } })).toEqual([
        "k2",
        "k3",
        "k4",
        "k5",
        "k6",
        "k7",
        "k8",
      ]);
      expect(await ids({ except: { exitCode: 127 } })).toEqual(["k1", "k2", "k4", "k5", "k6", "k7", "k8"]);
      expect(await ids({ except: { repoSlug: "" } })).toEqual(["k1", "k2"]);
      expect(await ids({ except: {} })).toEqual([]);
      expect(await ids({ kind: "addon" })).toEqual(["k3"]);
      expect(await ids({ kind: "tool" })).toEqual(["k4"]);
      expect(await ids({ exitCode: 127 })).toEqual(["k3"]);
      expect(await ids({ errorCategory: "command_not_found" })).toEqual(["k3"]);
      expect(await ids({ cpuVendor: "intel" })).toEqual(["k1"]);
      expect(await ids({ arch: "arm64" })).toEqual(["k2"]);
      expect(await ids({ platform: "pve" })).toEqual(["k1"]);
      expect(await ids({ gpuVendor: "nvidia" })).toEqual(["k1"]);
      expect(await ids({ gpuPassthrough: "no" })).toEqual(["k2"]);
      expect(await ids({ repoSource: "my-fork" })).toEqual(["k2"]);
      expect(await ids({ repoSlug: "community-scripts/ProxmoxVE" })).toEqual(["k1"]);
      expect(await ids({ appVersion: "1.0" })).toEqual(["k1"]);
      expect(await ids({ kernelVersion: "6.8" })).toEqual(["k1"]);
      expect(await ids({ randomId: "k2" })).toEqual(["k2"]);
      // Forks count in the "external" repo slice; each kind in its own slices.
      expect(await hourTotals(store, sliceKey("install", "external", ALL_APPS))).toEqual(outcomes({ in_progress: 1 }));
      expect(await hourTotals(store, sliceKey("addon", null, ALL_APPS))).toEqual(outcomes({ failed: 1 }));
      await expectVerified(store, 8);
    });

    test("countUpdatedSince: the executions matching a filter that reported anything since each time", async () => {
      const store = await freshStore();
      await store.write([tel("c1", "c1", "installing", PAST), tel("c2", "c2", "installing", PAST + MIN)]);
      await store.write([tel("c1", "c1", "success", PAST + 10 * MIN)]);
      expect(await store.countUpdatedSince({}, [PAST, PAST + MIN, PAST + 5 * MIN, PAST + 11 * MIN])).toEqual([
        2, 2, 1, 0,
      ]);
      expect(await store.countUpdatedSince({ outcome: "in_progress" }, [PAST, PAST + 2 * MIN])).toEqual([1, 0]);
      expect(await store.countUpdatedSince({}, [])).toEqual([]);
    });

    test("heard from since a time: every run that reported since, however long after its start (the late index's edges)", async () => {
      const store = await freshStore();
      const T = PAST + 3 * DAY;
      // Reports at, just before and just after the edges a read looks at: the time asked, and
      // LATE_MS before it, where the near range ends and the late index begins.
      const gaps = [0, 1, MIN, LATE_MS - 1, LATE_MS, LATE_MS + 1, 2 * HOUR, DAY, 2 * DAY];
      const asked = [T - DAY, T - HOUR, T - 20 * MIN, T];
      const ops: WriteOp[] = [];
      let n = 0;
      for (const t of asked)
        for (const startGap of gaps)
          for (const heardGap of [-1, 0, 1, 5 * MIN]) {
            const start = t - startGap;
            const last = t + heardGap;
            if (last < start) continue;
            const id = `h${n++}`;
            ops.push(tel(id, id, "installing", start, { nsapp: "debian" }));
            if (last > start) ops.push(tel(id, id, n % 3 === 0 ? "installing" : "success", last));
          }
      await store.write(ops);
      // An expired run was heard from when it expired (its updated_at).
      await store.write([{ kind: "expire", executionId: "h0", at: T - 10 * MIN }]);
      const all: Execution[] = [];
      for await (const e of store.iterateExecutions({})) all.push(e);
      for (const outcome of [undefined, "in_progress", "success"] as const) {
        const of = all.filter((e) => outcome === undefined || e.outcome === outcome);
        const filter = outcome === undefined ? {} : { outcome };
        const since = [...asked, T - LATE_MS, T + 1];
        expect(await store.countUpdatedSince(filter, since)).toEqual(
          since.map((t) => of.filter((e) => e.updatedAt >= t).length),
        );
        for (const t of since) {
          const heard = of.filter((e) => e.updatedAt >= t).sort((a, b) => b.updatedAt - a.updatedAt);
          const listed = await store.listUpdatedSince(filter, t, 7);
          expect(listed.map((e) => e.updatedAt)).toEqual(heard.slice(0, 7).map((e) => e.updatedAt));
          expect(listed.every((e) => e.updatedAt >= t && (outcome === undefined || e.outcome === outcome))).toBe(true);
          expect((await store.listUpdatedSince(filter, t, 1000)).length).toBe(heard.length);
        }
      }
    });
  });

  // -------------------------------------------------------------- update

  describe("write update", () => {
    test("a final status on an install in progress is applied, with its duration", async () => {
      const store = await freshStore();
      await one(store, startOp("u1", { nsapp: "nginx" }, PAST));
      const before = (await latestOf(store, "u1"))!;
      const error = "exit code 100: apt-get failed";
      expect(await one(store, updateOp("u1", "failed", error, PAST + 5 * MIN))).toEqual({
        kind: "updated",
        outcome: deriveOutcome("failed", error),
      });
      expect(await latestOf(store, "u1")).toEqual({
        ...before,
        status: "failed",
        outcome: "failed",
        error,
        updatedAt: PAST + 5 * MIN,
        durationMs: 5 * MIN,
        finishedAt: PAST + 5 * MIN,
      });
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
      await expectVerified(store, 1);
    });

    test("a second final status is already-final with the stored outcome; the record is unchanged and the report logged", async () => {
      const store = await freshStore();
      await one(store, startOp("u2", {}, PAST));
      await one(store, updateOp("u2", "done", null, PAST + MIN));
      const stored = (await latestOf(store, "u2"))!;
      const late = updateOp("u2", "failed", "exit code 1", PAST + 2 * MIN);
      expect(await one(store, late)).toEqual({ kind: "already-final", outcome: "success" });
      expect(await latestOf(store, "u2")).toEqual(stored);
      const [entry] = await store.listRejected({ limit: 10 });
      expect(entry).toMatchObject({
        reason: "already_final",
        endpoint: "updatestatus",
        randomId: "u2",
        receivedAt: PAST + 2 * MIN,
        result: null,
      });
      expect([...entry!.body]).toEqual([...late.raw]);
      expect(await hourTotals(store)).toEqual(outcomes({ success: 1 }));
      await expectVerified(store, 1);
    });

    test("a progress status keeps the install open; the final status still applies after it", async () => {
      const store = await freshStore();
      await one(store, startOp("u3", {}, PAST));
      expect(await one(store, updateOp("u3", "configuring", null, PAST + MIN))).toEqual({
        kind: "updated",
        outcome: "in_progress",
      });
      expect(await latestOf(store, "u3")).toMatchObject({
        status: "configuring",
        outcome: "in_progress",
        updatedAt: PAST + MIN,
        durationMs: null,
      });
      expect(await one(store, updateOp("u3", "done", null, PAST + 3 * MIN))).toEqual({
        kind: "updated",
        outcome: "success",
      });
      expect(await latestOf(store, "u3")).toMatchObject({ status: "done", outcome: "success", durationMs: 3 * MIN });
      await expectVerified(store, 1);
    });

    test("status failed with error INTERRUPTED is aborted", async () => {
      const store = await freshStore();
      await one(store, startOp("u4", {}, PAST));
      expect(await one(store, updateOp("u4", "failed", "INTERRUPTED", PAST + MIN))).toEqual({
        kind: "updated",
        outcome: "aborted",
      });
      expect(await hourTotals(store)).toEqual(outcomes({ aborted: 1 }));
      await expectVerified(store, 1);
    });

    test("a blocked ending (a failure the host raised before the script ran) is stored, listed and counted apart", async () => {
      const store = await freshStore();
      await one(store, startOp("b1", {}, PAST));
      await one(store, startOp("f1", {}, PAST));
      // As normalization makes it (domain/outcome.ts outcomeOfFailure): the store keeps what it is given.
      const blocked = updateOp("b1", "failed", "exit code 214", PAST + MIN);
      blocked.report = { ...blocked.report, outcome: "blocked", exitCode: 214, errorCategory: "storage" };
      expect(await one(store, blocked)).toEqual({ kind: "updated", outcome: "blocked" });
      await one(store, updateOp("f1", "failed", "exit code 100", PAST + MIN));
      expect(await latestOf(store, "b1")).toMatchObject({
        status: "failed",
        outcome: "blocked",
        exitCode: 214,
        errorCategory: "storage",
      });
      expect(idsOf((await store.listExecutions({ outcome: "blocked" }, { limit: 10 })).rows)).toEqual(["b1"]);
      expect(idsOf((await store.listExecutions({ outcome: "failed" }, { limit: 10 })).rows)).toEqual(["f1"]);
      expect(await hourTotals(store)).toEqual(outcomes({ blocked: 1, failed: 1 }));
      await expectVerified(store, 2);
    });

    test("listings by outcome: every outcome, in pages both ways, with other filters, and an outcome that is none", async () => {
      const store = await freshStore();
      const ops: WriteOp[] = [];
      const endings = ["success", "failed", "aborted", null, "failed", "success"] as const;
      for (let i = 0; i < 30; i++) {
        const at = PAST + i * MIN + (i % 4) * 7;
        ops.push(startOp(`o${i}`, { nsapp: i % 2 === 0 ? "a" : "b" }, at));
        const end = endings[i % endings.length]!;
        if (end !== null) ops.push(updateOp(`o${i}`, end, end === "failed" ? "exit code 1" : null, at + 30 * MIN));
      }
      await store.write(ops);
      // Every run began in progress and most ended later; one in progress expires (unknown).
      await store.write([{ kind: "expire", executionId: "o3", at: PAST + DAY }]);
      const all = await allInstalls(store);
      for (const outcome of OUTCOMES_LISTED) {
        const want = all
          .filter((e) => e.outcome === outcome)
          .sort((a, b) => b.createdAt - a.createdAt)
          .map((e) => e.executionId);
        for (const filter of [
          { outcome },
          { outcome, nsapp: "a" },
          { outcome, from: PAST + 5 * MIN },
        ] as ExecutionFilter[]) {
          const expected = want.filter((id) => {
            const e = all.find((x) => x.executionId === id)!;
            return (filter.nsapp === undefined || e.nsapp === filter.nsapp) && e.createdAt >= (filter.from ?? 0);
          });
          expect(
            (await everyPage(store, filter, 4, "newest")).flat().map((e) => e.executionId),
            outcome,
          ).toEqual(expected);
          expect(
            (await everyPage(store, filter, 3, "oldest")).flat().map((e) => e.executionId),
            outcome,
          ).toEqual([...expected].reverse());
        }
      }
      // Not an outcome: nothing, never an error (a reader's value passed through).
      expect((await store.listExecutions({ outcome: "nope" as Outcome }, { limit: 10 })).rows).toEqual([]);
    });

    test("an update for an unknown install is held; its start report takes the held status, with no duration", async () => {
      const store = await freshStore();
      expect(await one(store, updateOp("h1", "failed", "exit code 3", PAST))).toEqual({ kind: "held" });
      expect(await latestOf(store, "h1")).toBeUndefined();
      expect(await store.heldBefore(PAST + 1, 10)).toEqual(["h1"]);
      expect((await store.countBefore(PAST + 1)).held).toBe(1);
      await expectVerified(store, 0);

      const start = startOp("h1", { nsapp: "docker" }, PAST + MIN);
      expect(await one(store, start)).toEqual({ kind: "created", outcome: "failed" });
      // The real start time is unknown (the final status came first), so there is no duration.
      expect(await latestOf(store, "h1")).toMatchObject({
        ...start.report.fields,
        randomId: "h1",
        status: "failed",
        outcome: "failed",
        error: "exit code 3",
        durationMs: null,
      });
      expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual([]);
      expect((await store.countBefore(EVERYTHING.to)).held).toBe(0);
      expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
      // Final now: a later status is refused.
      expect(await one(store, updateOp("h1", "done", null, PAST + 2 * MIN))).toEqual({
        kind: "already-final",
        outcome: "failed",
      });
      await expectVerified(store, 1);
    });

    test("a second final held update for the same install is already-final; the first one is applied", async () => {
      const store = await freshStore();
      expect(await one(store, updateOp("h2", "done", null, PAST))).toEqual({ kind: "held" });
      expect(await one(store, updateOp("h2", "failed", "exit code 1", PAST + MIN))).toEqual({
        kind: "already-final",
        outcome: "success",
      });
      expect(await store.listRejected({ limit: 10 })).toEqual([
        expect.objectContaining({ reason: "already_final", randomId: "h2" }),
      ]);
      expect(await one(store, startOp("h2", {}, PAST + 2 * MIN))).toEqual({ kind: "created", outcome: "success" });
      expect(await latestOf(store, "h2")).toMatchObject({
        status: "done",
        outcome: "success",
        error: null,
        durationMs: null,
      });
      await expectVerified(store, 1);
    });

    test("an update and its start in one batch, either way round, end final", async () => {
      const store = await freshStore();
      expect(
        await store.write([
          startOp("x1", {}, PAST),
          updateOp("x1", "done", null, PAST + MIN),
          updateOp("x2", "done", null, PAST),
          startOp("x2", {}, PAST + MIN),
        ]),
      ).toEqual([
        { kind: "created", outcome: "in_progress" },
        { kind: "updated", outcome: "success" },
        { kind: "held" },
        { kind: "created", outcome: "success" },
      ]);
      expect(await hourTotals(store)).toEqual(outcomes({ success: 2 }));
      await expectVerified(store, 2);
    });
  });

  // -------------------------------------------------------------- listings

  describe("getExecutions and listExecutions", () => {
    // Twelve records varied in every field a filter reads; f11 and f12 share a millisecond.
    const rows: Execution[] = [
      record("f01", { createdAt: PAST + 1 * MIN, nsapp: "nginx", status: "done" }),
      record("f02", {
        createdAt: PAST + 2 * MIN,
        nsapp: "nginx",
        status: "failed",
        error: "exit code 100: apt-get update failed",
        type: "vm",
      }),
      record("f03", {
        createdAt: PAST + 3 * MIN,
        nsapp: "homeassistant",
        status: "installing",
        osType: "ubuntu",
        osVersion: "24.04",
        pveVersion: "8.3.0",
        method: "advanced",
      }),
      record("f04", {
        createdAt: PAST + 4 * MIN,
        nsapp: null,
        status: "done",
        type: "tool",
        osType: null,
        osVersion: null,
        pveVersion: null,
        method: null,
      }),
      record("f05", {
        createdAt: PAST + 5 * MIN,
        nsapp: "docker",
        status: "failed",
        error: "nginx: port 80 already in use",
        osVersion: "11",
      }),
      record("f06", { createdAt: PAST + 6 * MIN, nsapp: "50%_off", status: "done", method: null }),
      record("f07", { createdAt: PAST + 7 * MIN, nsapp: "500x_offx", status: "done", pveVersion: null }),
      record("f08", {
        createdAt: PAST + 8 * MIN,
        nsapp: "docker",
        status: "configuring",
        osType: "alpine",
        osVersion: "3.20",
      }),
      record("f09", { createdAt: PAST + 9 * MIN, nsapp: "homeassistant", status: "aborted", type: "vm" }),
      record("f10", { createdAt: PAST + 10 * MIN, nsapp: "nginx", status: "failed", error: "INTERRUPTED" }),
      record("f11", { createdAt: PAST + 11 * MIN, nsapp: "docker", status: "installing", outcome: "unknown" }),
      record("f12", { createdAt: PAST + 11 * MIN, nsapp: "nginx", status: "installing", pveVersion: "9.0.0" }),
    ];
    const loaded = async () => {
      const store = await freshStore();
      await store.write(rows.map((r) => loadOp(r)));
      return store;
    };

    test("getInstall: a stored install whole, an unknown one undefined", async () => {
      const store = await loaded();
      expect(await latestOf(store, "f05")).toEqual(rows[4]!);
      expect(await latestOf(store, "nope")).toBeUndefined();
      expect(await latestOf(store, "")).toBeUndefined();
    });

    test("every filter field selects exactly the installs it names", async () => {
      const store = await loaded();
      const has = (v: string | null, q: string) => v !== null && v.includes(q);
      const cases: [ExecutionFilter, (r: Execution) => boolean][] = [
        [{ nsapp: "nginx" }, (r) => r.nsapp === "nginx"],
        [{ nsapp: "" }, (r) => r.nsapp === null],
        [{ status: "installing" }, (r) => r.status === "installing"],
        [{ outcome: "failed" }, (r) => r.outcome === "failed"],
        [{ outcome: "aborted" }, (r) => r.outcome === "aborted"],
        [{ outcome: "unknown" }, (r) => r.outcome === "unknown"],
        [{ type: "vm" }, (r) => r.type === "vm"],
        [{ osType: "ubuntu" }, (r) => r.osType === "ubuntu"],
        [{ osType: "" }, (r) => r.osType === null],
        [{ osVersion: "11" }, (r) => r.osVersion === "11"],
        [{ pveVersion: "9.0.0" }, (r) => r.pveVersion === "9.0.0"],
        [{ pveVersion: "" }, (r) => r.pveVersion === null],
        [{ method: "advanced" }, (r) => r.method === "advanced"],
        [{ method: "" }, (r) => r.method === null],
        [
          { from: PAST + 3 * MIN, to: PAST + 7 * MIN },
          (r) => r.createdAt >= PAST + 3 * MIN && r.createdAt < PAST + 7 * MIN,
        ],
        [{ from: PAST + 11 * MIN }, (r) => r.createdAt >= PAST + 11 * MIN],
        [{ until: PAST + 5 * MIN }, (r) => r.createdAt <= PAST + 5 * MIN],
        // Free text: in the app name and in the error text, taken literally (no wildcards).
        [{ q: "nginx" }, (r) => has(r.nsapp, "nginx") || has(r.error, "nginx")],
        [{ q: "apt-get" }, (r) => has(r.error, "apt-get")],
        [{ q: "50%" }, (r) => has(r.nsapp, "50%")],
        [{ q: "_off" }, (r) => has(r.nsapp, "_off")],
        [{ q: "0%_" }, (r) => has(r.nsapp, "0%_")],
        [{ nsapp: "nginx", outcome: "failed" }, (r) => r.nsapp === "nginx" && r.outcome === "failed"],
        [
          { nsapp: "docker", from: PAST + 6 * MIN, status: "installing" },
          (r) => r.nsapp === "docker" && r.createdAt >= PAST + 6 * MIN && r.status === "installing",
        ],
      ];
      for (const [filter, wanted] of cases) {
        const expected = idsOf(rows.filter(wanted));
        // The case itself must tell something: some rows in, some out.
        expect({ filter, selects: expected.length > 0 && expected.length < rows.length }).toEqual({
          filter,
          selects: true,
        });
        const { rows: got, next } = await store.listExecutions(filter, { limit: 100, order: "oldest" });
        expect({ filter, ids: idsOf(got) }).toEqual({ filter, ids: expected });
        expect(next).toBeNull();
        expect({ filter, ids: idsOf(await allInstalls(store, filter)) }).toEqual({ filter, ids: expected });
      }
      expect(idsOf((await store.listExecutions({ nsapp: "no-such-app" }, { limit: 10 })).rows)).toEqual([]);
    });

    test("newest first by default, oldest first on request; ties by insertion", async () => {
      const store = await loaded();
      const oldest = idsOf(rows);
      expect(idsOf((await store.listExecutions({}, { limit: 100 })).rows)).toEqual([...oldest].reverse());
      expect(idsOf((await store.listExecutions({}, { limit: 100, order: "newest" })).rows)).toEqual(
        [...oldest].reverse(),
      );
      expect(idsOf((await store.listExecutions({}, { limit: 100, order: "oldest" })).rows)).toEqual(oldest);
      expect(idsOf((await store.listExecutions({}, { limit: 3 })).rows)).toEqual(["f12", "f11", "f10"]);
    });

    test("cursor pages visit every matching install exactly once, in order, also within one millisecond", async () => {
      const store = await freshStore();
      // Inserted out of time order, ten in each of three milliseconds, two apps interleaved.
      const ops = [2, 0, 1].flatMap((ms) =>
        Array.from({ length: 10 }, (_, i) => startOp(`c${ms}-${i}`, { nsapp: i % 2 ? "a" : "b" }, PAST + ms)),
      );
      await store.write(ops);
      const inserted = ops.map((op) => ({ id: op.report.randomId, at: op.at, app: op.report.fields!.nsapp }));
      const oldest = [...inserted].sort((x, y) => x.at - y.at); // stable: ties keep insertion order
      for (const [filter, keep] of [
        [{}, () => true],
        [{ nsapp: "a" }, (r: (typeof inserted)[number]) => r.app === "a"],
      ] as const) {
        const expected = oldest.filter(keep).map((r) => r.id);
        for (const limit of [1, 4, 5, 7, 100]) {
          const asc = await everyPage(store, filter, limit, "oldest");
          expect(asc.flat().map((r) => r.randomId)).toEqual(expected);
          const desc = await everyPage(store, filter, limit, "newest");
          expect(desc.flat().map((r) => r.randomId)).toEqual([...expected].reverse());
          expect(asc.length).toBe(Math.max(1, Math.ceil(expected.length / limit))); // a full last page has next null
        }
      }
      // A window is kept across pages too.
      const windowed = await everyPage(store, { from: PAST + 1, to: PAST + 2 }, 3, "newest");
      expect(windowed.flat().map((r) => r.randomId)).toEqual(
        oldest
          .filter((r) => r.at === PAST + 1)
          .map((r) => r.id)
          .reverse(),
      );
    });

    test("pageExecutions: sorted by each column either way, ties newest first; offset pages add up to the whole; total counts every match", async () => {
      const store = await loaded();
      const column: Record<PageSort, (r: Execution) => string | number | null> = {
        created: (r) => r.createdAt,
        nsapp: (r) => r.nsapp,
        status: (r) => r.outcome,
        os_type: (r) => r.osType,
        type: (r) => r.type,
        method: (r) => r.method,
        exit_code: (r) => r.exitCode,
      };
      const cmp = (a: string | number | null, b: string | number | null) =>
        a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1;
      const insertion = new Map(rows.map((r, i) => [r.randomId, i]));
      for (const sort of PAGE_SORTS) {
        for (const descending of [false, true]) {
          const expected = idsOf(
            [...rows].sort(
              (a, b) =>
                (descending ? -1 : 1) * cmp(column[sort](a), column[sort](b)) ||
                b.createdAt - a.createdAt ||
                insertion.get(b.randomId)! - insertion.get(a.randomId)!,
            ),
          );
          const whole = await store.pageExecutions({}, { offset: 0, limit: 100, sort, descending });
          expect({ sort, descending, ids: idsOf(whole.rows), total: whole.total }).toEqual({
            sort,
            descending,
            ids: expected,
            total: rows.length,
          });
          const pages = await Promise.all(
            [0, 5, 10, 15].map((offset) => store.pageExecutions({}, { offset, limit: 5, sort, descending })),
          );
          expect(pages.flatMap((p) => idsOf(p.rows))).toEqual(expected);
          expect(pages.map((p) => p.total)).toEqual([12, 12, 12, 12]);
        }
      }
      const page = (filter: ExecutionFilter, extra: Partial<PageQuery>) =>
        store.pageExecutions(filter, { offset: 0, limit: 100, sort: "created", descending: false, ...extra });
      const oldest = (keep: (r: Execution) => boolean) =>
        idsOf(
          [...rows]
            .filter(keep)
            .sort((a, b) => a.createdAt - b.createdAt || insertion.get(b.randomId)! - insertion.get(a.randomId)!),
        );
      // The app filter: part of the name in any case, wildcards taken literally; with the other filters.
      for (const [text, keep] of [
        ["NGI", (r: Execution) => r.nsapp === "nginx"],
        ["0%_", (r: Execution) => r.nsapp === "50%_off"],
        ["_off", (r: Execution) => r.nsapp?.includes("_off") === true],
        ["x", (r: Execution) => r.nsapp?.includes("x") === true],
      ] as const) {
        const got = await page({}, { appContains: text });
        expect({ text, ids: idsOf(got.rows), total: got.total }).toEqual({
          text,
          ids: oldest(keep),
          total: oldest(keep).length,
        });
      }
      const failedNginx = await page({ outcome: "failed" }, { appContains: "nginx" });
      expect(idsOf(failedNginx.rows)).toEqual(oldest((r) => r.nsapp === "nginx" && r.outcome === "failed"));
      expect(await page({ nsapp: "nobody" }, {})).toEqual({ rows: [], total: 0 });
      expect((await page({}, { offset: 50 })).total).toBe(12);
    });

    test("typesOfApps: each app's type as of its newest execution, the latest inserted of a millisecond; unknown apps left out", async () => {
      const store = await loaded();
      const newest = (app: string) => rows.filter((r) => r.nsapp === app).at(-1)!;
      const got = await store.typesOfApps(["nginx", "docker", "no-such-app", "homeassistant"]);
      expect(got).toEqual(["nginx", "docker", "homeassistant"].map((nsapp) => ({ nsapp, type: newest(nsapp).type })));
      // homeassistant's first run was an LXC, its newest a VM.
      expect(got.find((a) => a.nsapp === "homeassistant")?.type).toBe("vm");
      expect(await store.typesOfApps([])).toEqual([]);
    });

    test('pageExecutions: any of several repo sources, "" for those naming none', async () => {
      const store = await freshStore();
      const repos = [
        ["r1", "ProxmoxVE"],
        ["r2", ""],
        ["r3", null],
        ["r4", "ProxmoxVED"],
        ["r5", "someone/fork"],
      ] as const;
      await store.write(
        repos.map(([id, repoSource], i) => loadOp(record(id, { createdAt: PAST + i * MIN, repoSource }))),
      );
      const ids = async (repoSources?: readonly string[]) =>
        idsOf(
          (
            await store.pageExecutions(
              {},
              { offset: 0, limit: 10, sort: "created", descending: false, ...(repoSources ? { repoSources } : {}) },
            )
          ).rows,
        );
      expect(await ids(["ProxmoxVE", ""])).toEqual(["r1", "r2", "r3"]);
      expect(await ids(["ProxmoxVED"])).toEqual(["r4"]);
      expect(await ids(["someone/fork", "ProxmoxVED"])).toEqual(["r4", "r5"]);
      expect(await ids([])).toEqual([]);
      expect(await ids()).toEqual(["r1", "r2", "r3", "r4", "r5"]);
    });

    test("next is null on the last page, also when it is full, and on an empty listing", async () => {
      const store = await loaded();
      const first = await store.listExecutions({ nsapp: "nginx" }, { limit: 2 });
      expect(first.next).not.toBeNull();
      const last = await store.listExecutions({ nsapp: "nginx" }, { limit: 2, after: first.next! });
      expect(idsOf(last.rows)).toEqual(["f02", "f01"]);
      expect(last.next).toBeNull();
      expect(await store.listExecutions({ nsapp: "nobody" }, { limit: 5 })).toEqual({ rows: [], next: null });
      expect(await (await freshStore()).listExecutions({}, { limit: 5 })).toEqual({ rows: [], next: null });
    });
  });

  // -------------------------------------------------------------- streaming

  describe("executionChunks and iterateExecutions", () => {
    const streamed = async () => {
      const store = await freshStore();
      // Ten installs, three of them in one millisecond, inserted out of time order.
      const ats = [5, 1, 3, 3, 3, 9, 2, 7, 8, 6].map((m) => PAST + m * MIN);
      await store.write(ats.map((at, i) => startOp(`k${i}`, { nsapp: i % 3 ? "a" : "b" }, at)));
      const oldest = ats.map((at, i) => ({ id: `k${i}`, at, app: i % 3 ? "a" : "b" })).sort((x, y) => x.at - y.at);
      return { store, oldest: oldest.map((r) => r.id), rows: oldest };
    };
    const chunksOf = async (gen: AsyncGenerator<Execution[], void>) => {
      const out: string[][] = [];
      for await (const chunk of gen) out.push(idsOf(chunk));
      return out;
    };

    test("oldest first, in chunks of chunkRows, after offset, at most limit", async () => {
      const { store, oldest } = await streamed();
      expect((await chunksOf(store.executionChunks({}))).flat()).toEqual(oldest);
      const sizes = async (
        page: { offset?: number; limit?: number; chunkRows?: number },
        filter: ExecutionFilter = {},
      ) => (await chunksOf(store.executionChunks(filter, page))).map((c) => c.length);
      expect(await sizes({ chunkRows: 3 })).toEqual([3, 3, 3, 1]);
      expect(await sizes({ chunkRows: 3, limit: 7 })).toEqual([3, 3, 1]);
      expect(await sizes({ chunkRows: 2, offset: 2, limit: 5 })).toEqual([2, 2, 1]);
      expect(await sizes({ chunkRows: 4, offset: 8 })).toEqual([2]);
      expect(await sizes({ offset: 10 })).toEqual([]);
      expect((await chunksOf(store.executionChunks({}, { chunkRows: 2, offset: 2, limit: 5 }))).flat()).toEqual(
        oldest.slice(2, 7),
      );
      // Chunk boundaries inside the millisecond shared by three installs lose and repeat nothing.
      for (const chunkRows of [1, 2, 3])
        expect((await chunksOf(store.executionChunks({}, { chunkRows }))).flat()).toEqual(oldest);
    });

    test("filters apply, `until` included", async () => {
      const { store, rows } = await streamed();
      expect((await chunksOf(store.executionChunks({ until: PAST + 3 * MIN }, { chunkRows: 2 }))).flat()).toEqual(
        rows.filter((r) => r.at <= PAST + 3 * MIN).map((r) => r.id),
      );
      expect((await chunksOf(store.executionChunks({ nsapp: "a" }, { chunkRows: 2, offset: 1 }))).flat()).toEqual(
        rows
          .filter((r) => r.app === "a")
          .slice(1)
          .map((r) => r.id),
      );
      expect(
        (await chunksOf(store.executionChunks({ from: PAST + 3 * MIN, to: PAST + 8 * MIN }, { chunkRows: 2 }))).flat(),
      ).toEqual(rows.filter((r) => r.at >= PAST + 3 * MIN && r.at < PAST + 8 * MIN).map((r) => r.id));
    });

    test("iterateExecutions equals the chunks flattened", async () => {
      const { store } = await streamed();
      for (const filter of [
        {},
        { nsapp: "b" },
        { from: PAST + 3 * MIN },
        { until: PAST + 6 * MIN, nsapp: "a" },
      ] satisfies ExecutionFilter[]) {
        const flat: Execution[] = [];
        for await (const chunk of store.executionChunks(filter, { chunkRows: 2 })) flat.push(...chunk);
        expect(await allInstalls(store, filter)).toEqual(flat);
      }
    });

    test("an abandoned iteration leaves the store fully usable", async () => {
      const { store, oldest } = await streamed();
      for await (const chunk of store.executionChunks({}, { chunkRows: 2 })) {
        expect(chunk).toHaveLength(2);
        break;
      }
      for await (const r of store.iterateExecutions({})) {
        expect(r.randomId).toBe(oldest[0]!);
        break;
      }
      // An iteration left suspended mid-way (never finished, never returned) must not block writes either.
      const suspended = store.executionChunks({}, { chunkRows: 3 });
      expect((await suspended.next()).done).toBe(false);
      expect(await one(store, startOp("after-break", {}, PAST + HOUR))).toEqual({
        kind: "created",
        outcome: "in_progress",
      });
      expect(await one(store, updateOp("k0", "done", null, PAST + HOUR))).toEqual({
        kind: "updated",
        outcome: "success",
      });
      expect((await latestOf(store, "after-break"))!.createdAt).toBe(PAST + HOUR);
      expect((await allInstalls(store)).length).toBe(11);
      await suspended.return();
      await expectVerified(store, 11);
    });
  });

  // -------------------------------------------------------------- small reads

  describe("errorTextCounts, changeMarker, recordSpan", () => {
    test("errorTextCounts: installs per exact non-empty error text, most frequent first", async () => {
      const store = await freshStore();
      expect(await store.errorTextCounts()).toEqual([]);
      const errors = [
        "exit code 1",
        "exit code 1",
        "exit code 1",
        "Exit code 1",
        "disk full",
        "disk full",
        "exit code 1 ",
        null,
        "",
      ];
      await store.write(
        errors.map((error, i) => loadOp(record(`e${i}`, { createdAt: PAST + i, status: "failed", error }))),
      );
      const counts = await store.errorTextCounts();
      expect(counts.slice(0, 2)).toEqual([
        { error: "exit code 1", count: 3 },
        { error: "disk full", count: 2 },
      ]);
      // Ties in any order; texts that differ in case or whitespace are different texts.
      expect(counts.slice(2).sort((a, b) => (a.error < b.error ? -1 : 1))).toEqual([
        { error: "Exit code 1", count: 1 },
        { error: "exit code 1 ", count: 1 },
      ]);
    });

    test("long error texts (the clients' log tails) come back whole from every read, and group exactly", async () => {
      const store = await freshStore();
      // Lines of a log with non-ASCII and astral characters everywhere, one of them across every likely cut.
      const log = (tail: string) =>
        Array.from({ length: 400 }, (_, i) => `[${i}] step ${i}: compiling \u00e9\u4e2d \u{1F600} module_${i}.c`).join(
          "\n",
        ) + tail;
      const texts = [log(""), log(""), log(" but the tail differs"), "short", "x" + "\u{1F600}".repeat(3000)];
      expect(texts[0]!.length).toBeGreaterThan(10_000);
      await store.write(
        texts.map((error, i) =>
          loadOp(record(`long${i}`, { createdAt: PAST + i * MIN, status: "failed", error, nsapp: "app" })),
        ),
      );
      for (const [i, error] of texts.entries()) expect((await latestOf(store, `long${i}`))!.error).toBe(error);
      const listed = (await store.listExecutions({}, { limit: 10, order: "oldest" })).rows.map((r) => r.error);
      expect(listed).toEqual(texts);
      expect(
        (await store.pageExecutions({}, { offset: 0, limit: 10, sort: "created", descending: false })).rows.map(
          (r) => r.error,
        ),
      ).toEqual(texts);
      const streamed: (string | null)[] = [];
      for await (const chunk of store.executionChunks({}, { chunkRows: 2 }))
        streamed.push(...chunk.map((r) => r.error));
      expect(streamed).toEqual(texts);
      const counts = await store.errorTextCounts();
      expect(counts).toHaveLength(4);
      expect(counts[0]).toEqual({ error: texts[0]!, count: 2 });
      expect(new Set(counts.map((c) => c.error))).toEqual(new Set(texts));
      // Free text finds what the head of a long text says.
      expect(idsOf((await store.listExecutions({ q: "[3] step 3" }, { limit: 10, order: "oldest" })).rows)).toEqual([
        "long0",
        "long1",
        "long2",
      ]);
    });

    test("changeMarker moves with each commit and only then", async () => {
      const store = await freshStore();
      const m0 = await store.changeMarker();
      expect(await store.changeMarker()).toBe(m0);
      await one(store, startOp("m1", {}, PAST));
      const m1 = await store.changeMarker();
      expect(m1).not.toBe(m0);
      // Reads commit nothing.
      await store.listExecutions({}, { limit: 10 });
      await store.rollupCells(GRAINS.hour, EVERYTHING.from, EVERYTHING.to);
      await allInstalls(store);
      expect(await store.changeMarker()).toBe(m1);
      await one(store, updateOp("m1", "done", null, PAST + MIN));
      const m2 = await store.changeMarker();
      expect([m0, m1]).not.toContain(m2);
      await one(store, rejectOp(PAST + 2 * MIN));
      expect([m0, m1, m2]).not.toContain(await store.changeMarker());
    });

    test("recordSpan: null when empty, then the first and last created_at", async () => {
      const store = await freshStore();
      expect(await store.recordSpan()).toBeNull();
      await one(store, updateOp("held-only", "done", null, PAST)); // a held update is no install
      await one(store, rejectOp(PAST));
      expect(await store.recordSpan()).toBeNull();
      await store.write([startOp("r2", {}, PAST + 2 * DAY), startOp("r1", {}, PAST), startOp("r3", {}, PAST + HOUR)]);
      expect(await store.recordSpan()).toEqual({ first: PAST, last: PAST + 2 * DAY });
      await one(store, { kind: "delete", randomId: "r2", at: PAST + 3 * DAY });
      expect(await store.recordSpan()).toEqual({ first: PAST, last: PAST + HOUR });
    });
  });

  // -------------------------------------------------------------- rollups

  describe("rollups", () => {
    /** Three starts (two apps) in open hour H, one finished. */
    const openScene = async () => {
      const store = await freshStore();
      const H = await openHour(store);
      await store.write([
        startOp("a1", { nsapp: "a" }, H + MIN),
        startOp("a2", { nsapp: "a" }, H + 2 * MIN),
        startOp("b1", { nsapp: "b", type: "vm" }, H + 3 * MIN),
      ]);
      await one(store, updateOp("a1", "done", null, H + 10 * MIN));
      return { store, H };
    };

    test("hour cells include the open hours; day and month cells do not, until they are folded", async () => {
      const { store, H } = await openScene();
      const mark = await store.foldedUntil();
      expect(mark).toBeLessThanOrEqual(H);
      const hour = await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H, to: H + HOUR, parts: ALL_PARTS });
      expect(hour.map((c) => c.bucket)).toEqual([H]);
      expect(hour[0]!.data.dims.nsapp).toEqual({ a: [1, 0, 0, 1, 0, 0], b: [0, 0, 0, 1, 0, 0] });
      expect(hour[0]!.data.dims.type).toEqual({ lxc: [1, 0, 0, 1, 0, 0], vm: [0, 0, 0, 1, 0, 0] });
      const app = await store.readRollups({
        grain: GRAINS.hour,
        slice: appOf("a"),
        from: H,
        to: H + HOUR,
        parts: ALL_PARTS,
      });
      expect(app.map((c) => [c.bucket, c.data.dims.type])).toEqual([[H, { lxc: [1, 0, 0, 1, 0, 0] }]]);
      expect((await store.rollupCells(GRAINS.hour, H, H + HOUR)).map((c) => c.slice).sort()).toEqual(
        slicesOfApps(["a", "b"]),
      );
      // The open hour is not in day or month cells yet.
      const dayOf = bucketStart(H, GRAINS.day);
      expect(await store.rollupCells(GRAINS.day, dayOf, dayOf + DAY)).toEqual([]);
      expect(await store.readRollups({ grain: GRAINS.month, slice: ALL, ...EVERYTHING, parts: ALL_PARTS })).toEqual([]);
      // Outside [from, to): nothing.
      expect(
        await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H + HOUR, to: H + 2 * HOUR, parts: ALL_PARTS }),
      ).toEqual([]);
      expect(await store.rollupCells(GRAINS.hour, H - HOUR, H)).toEqual([]);
      await expectVerified(store, 3);
    });

    test("fold stores the hours before `until` in day and month cells and moves the mark", async () => {
      const { store, H } = await openScene();
      const before = await sortedCells(store, GRAINS.hour);
      expect(await one(store, { kind: "fold", until: H + HOUR, at: H + HOUR })).toEqual({ kind: "folded", hours: 1 });
      expect(await store.foldedUntil()).toBe(H + HOUR);
      // Hour cells are what they were; day and month cells now hold the same counts.
      expect(await sortedCells(store, GRAINS.hour)).toEqual(before);
      for (const grain of [GRAINS.day, GRAINS.month]) {
        const cells = await sortedCells(store, grain);
        expect(cells.map((c) => [c.slice, c.bucket])).toEqual(before.map((c) => [c.slice, bucketStart(H, grain)]));
        expect(cells.map((c) => c.data)).toEqual(before.map((c) => c.data));
      }
      // Folding again up to the same mark, or behind it, folds nothing and leaves the mark.
      expect(await one(store, { kind: "fold", until: H + HOUR, at: H + HOUR })).toEqual({ kind: "folded", hours: 0 });
      expect(await one(store, { kind: "fold", until: H - 5 * HOUR, at: H + HOUR })).toEqual({
        kind: "folded",
        hours: 0,
      });
      expect(await store.foldedUntil()).toBe(H + HOUR);
      await expectVerified(store, 3);

      // Writes after the fold: to the folded hour (stored cells of every grain follow) and to a new open hour.
      await store.write([
        updateOp("b1", "failed", "exit code 7", H + 2 * HOUR),
        startOp("c1", { nsapp: "c" }, H + HOUR + MIN),
      ]);
      const day = await store.readRollups({
        grain: GRAINS.day,
        slice: ALL,
        from: bucketStart(H, GRAINS.day),
        to: bucketStart(H, GRAINS.day) + DAY,
        parts: ["apps"],
      });
      expect(day.map((c) => c.data.dims.nsapp)).toEqual([{ a: [1, 0, 0, 1, 0, 0], b: [0, 1, 0, 0, 0, 0] }]);
      expect(
        (
          await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H + HOUR, to: H + 2 * HOUR, parts: ["apps"] })
        ).map((c) => c.data.dims.nsapp),
      ).toEqual([{ c: [0, 0, 0, 1, 0, 0] }]);
      expect(await one(store, { kind: "fold", until: H + 3 * HOUR, at: H + 3 * HOUR })).toEqual({
        kind: "folded",
        hours: 1,
      });
      await expectVerified(store, 4);
    });

    test("fold counts the hours it stored and skips hours without installs", async () => {
      const store = await freshStore();
      const H = await openHour(store);
      await store.write([0, 0, 2, 5].map((h, i) => startOp(`f${i}`, { nsapp: "a" }, H + h * HOUR + MIN)));
      expect(await one(store, { kind: "fold", until: H + 3 * HOUR, at: H + 3 * HOUR })).toEqual({
        kind: "folded",
        hours: 2,
      });
      expect((await store.rollupCells(GRAINS.day, EVERYTHING.from, EVERYTHING.to)).length).toBeGreaterThan(0);
      expect(await one(store, { kind: "fold", until: H + 6 * HOUR, at: H + 6 * HOUR })).toEqual({
        kind: "folded",
        hours: 1,
      });
      expect(await hourTotals(store)).toEqual(outcomes({ in_progress: 4 }));
      await expectVerified(store, 4);
    });

    test("readRollups returns only the parts asked for (folded cells)", async () => {
      const store = await freshStore();
      await store.write([startOp("p1", { nsapp: "a" }, PAST), startOp("p2", { nsapp: "b" }, PAST + MIN)]);
      await store.write([
        updateOp("p1", "failed", "exit code 3: boom", PAST + 2 * MIN),
        updateOp("p2", "done", null, PAST + 3 * MIN),
      ]);
      await one(store, { kind: "fold", until: floorHour(PAST) + HOUR, at: PAST + HOUR }); // folded already in some engines
      for (const grain of [GRAINS.hour, GRAINS.day, GRAINS.month]) {
        for (const slice of [ALL, appOf("a")]) {
          const whole = await store.readRollups({ grain, slice, ...EVERYTHING, parts: ALL_PARTS });
          expect(whole.length).toBe(1);
          expect(Object.keys(whole[0]!.data.err).length).toBe(1);
          for (const parts of [
            ["data"],
            ["apps"],
            ["errors"],
            ["data", "errors"],
            ["apps", "errors"],
          ] as RollupPart[][]) {
            const got = await store.readRollups({ grain, slice, ...EVERYTHING, parts });
            expect({ grain, slice, parts, got }).toEqual({
              grain,
              slice,
              parts,
              got: whole.map((c) => ({ bucket: c.bucket, data: onlyParts(c.data, parts) })),
            });
          }
        }
      }
    });

    test("readRollups returns only the parts asked for (open hours)", async () => {
      const { store, H } = await openScene();
      const whole = await store.readRollups({
        grain: GRAINS.hour,
        slice: ALL,
        from: H,
        to: H + HOUR,
        parts: ALL_PARTS,
      });
      for (const parts of [["data"], ["apps"], ["errors"]] as RollupPart[][]) {
        expect(await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H, to: H + HOUR, parts })).toEqual(
          whole.map((c) => ({ bucket: c.bucket, data: onlyParts(c.data, parts) })),
        );
      }
    });

    test("signatures: first and last seen, apps and the first example of each failure signature", async () => {
      const store = await freshStore();
      const H = await openHour(store);
      const texts = [
        "exit code 100: apt-get install failed at line 42",
        "exit code 101: apt-get install failed at line 7",
        "disk full on /var/lib/vz",
      ];
      await store.write([
        startOp("g1", { nsapp: "nginx" }, H),
        startOp("g2", { nsapp: "docker" }, H + MIN),
        startOp("g3", { nsapp: "nginx" }, H + 2 * MIN),
        startOp("g4", { nsapp: "zabbix" }, H + 3 * MIN),
        startOp("g5", { nsapp: "yarr" }, H + 4 * MIN),
      ]);
      await one(store, updateOp("g1", "failed", texts[0]!, H + 10 * MIN));
      await one(store, updateOp("g2", "failed", texts[1]!, H + 20 * MIN));
      await one(store, updateOp("g3", "failed", texts[2]!, H + 30 * MIN));
      await one(store, updateOp("g4", "failed", "INTERRUPTED", H + 40 * MIN)); // aborted: no failure signature
      await one(store, updateOp("g5", "done", null, H + 50 * MIN));

      const apt = failureSignatureId("failed", texts[0]!)!;
      const disk = failureSignatureId("failed", texts[2]!)!;
      expect(failureSignatureId("failed", texts[1]!)).toBe(apt); // the same failure, different numbers
      expect(failureSignatureId(deriveOutcome("failed", "INTERRUPTED"), "INTERRUPTED")).toBeNull();
      const known = (await store.signatures([disk, apt, "0000000000000000"])).sort((a, b) => a.firstSeen - b.firstSeen);
      expect(known).toEqual([
        {
          id: apt,
          signature: errorSignature(texts[0]!)!,
          example: texts[0]!,
          firstSeen: H + 10 * MIN,
          lastSeen: H + 20 * MIN,
          apps: ["docker", "nginx"],
        },
        {
          id: disk,
          signature: errorSignature(texts[2]!)!,
          example: texts[2]!,
          firstSeen: H + 30 * MIN,
          lastSeen: H + 30 * MIN,
          apps: ["nginx"],
        },
      ]);
      expect(await store.signatures([])).toEqual([]);
      // Rollups count failures under their signature ids, per slice.
      const [all] = await store.readRollups({
        grain: GRAINS.hour,
        slice: ALL,
        from: H,
        to: H + HOUR,
        parts: ["errors"],
      });
      expect(all!.data.err).toEqual({ [apt]: 2, [disk]: 1 });
      const [nginx] = await store.readRollups({
        grain: GRAINS.hour,
        slice: appOf("nginx"),
        from: H,
        to: H + HOUR,
        parts: ["errors"],
      });
      expect(nginx!.data.err).toEqual({ [apt]: 1, [disk]: 1 });
      // Still known, with the same facts, once folded.
      await one(store, { kind: "fold", until: H + HOUR, at: H + HOUR });
      expect((await store.signatures([apt]))[0]).toEqual(known[0]!);
      await expectVerified(store, 5);
    });

    test("signatures: seen again, the span widens either way and the apps are kept or added to", async () => {
      const store = await freshStore();
      const H = await openHour(store);
      const text = "exit code 100: apt-get install failed at line 42";
      const apt = failureSignatureId("failed", text)!;
      const apps = ["nginx", "nginx", "nginx", "docker", "nginx"];
      await store.write(apps.map((nsapp, i) => startOp(`s${i}`, { nsapp }, H + i * MIN)));
      const seen = async () => {
        const [known] = await store.signatures([apt]);
        return known && { firstSeen: known.firstSeen - H, lastSeen: known.lastSeen - H, apps: known.apps };
      };
      const fail = (i: number, minute: number) => one(store, updateOp(`s${i}`, "failed", text, H + minute * MIN));
      await fail(0, 30);
      expect(await seen()).toEqual({ firstSeen: 30 * MIN, lastSeen: 30 * MIN, apps: ["nginx"] });
      await fail(1, 20); // earlier, an app listed already
      expect(await seen()).toEqual({ firstSeen: 20 * MIN, lastSeen: 30 * MIN, apps: ["nginx"] });
      await fail(2, 40); // later, an app listed already
      expect(await seen()).toEqual({ firstSeen: 20 * MIN, lastSeen: 40 * MIN, apps: ["nginx"] });
      await fail(3, 25); // within the span, a new app
      expect(await seen()).toEqual({ firstSeen: 20 * MIN, lastSeen: 40 * MIN, apps: ["docker", "nginx"] });
      await fail(4, 35); // within the span, a listed app: nothing changes
      expect(await seen()).toEqual({ firstSeen: 20 * MIN, lastSeen: 40 * MIN, apps: ["docker", "nginx"] });
      expect((await store.signatures([apt]))[0]!.example).toBe(text);
    });
  });

  // -------------------------------------------------------------- hour cells of older hours

  describe("rollup cells: hour cells for the last days only, older hours from the records", () => {
    /** Hour cells of `slice` as a recount of `records` makes them (every hour that has a record). */
    function recountHours(
      records: readonly Execution[],
      slice: string,
      from: number,
      to: number,
    ): { bucket: number; data: RollupData }[] {
      const cells = new Map<number, RollupData>();
      for (const r of records) {
        if (r.createdAt < from || r.createdAt >= to) continue;
        const c = { r, outcome: r.outcome, sign: 1 as const, errorSig: failureSignatureId(r.outcome, r.error) };
        countHour(
          (s, hour) =>
            s === slice ? (cells.get(hour) ?? (cells.set(hour, emptyData()), cells.get(hour)!)) : emptyData(),
          c,
        );
      }
      return [...cells].sort((a, b) => a[0] - b[0]).map(([bucket, data]) => ({ bucket, data }));
    }
    /** Executions at hours `daysBack` days before `mark` (from 05:00 to 12:00 UTC of that day, whatever the time now): apps, repos, kinds and outcomes mixed. */
    function executionsAt(mark: number, daysBack: number, tag: string): Execution[] {
      // 05:00 of that day: its runs (up to 12:00) stay on one day whatever the time the test runs.
      const hour = bucketStart(mark - daysBack * DAY, GRAINS.day) + 5 * HOUR;
      return [
        record(`${tag}-1`, {
          createdAt: hour + MIN,
          nsapp: "a",
          pveVersion: null,
          updatedAt: hour + 9 * MIN,
          durationMs: 8 * MIN,
        }),
        record(`${tag}-2`, {
          createdAt: hour + 2 * MIN,
          nsapp: "b",
          repoSource: "ProxmoxVE",
          status: "failed",
          error: "exit code 100: apt-get install failed",
          updatedAt: hour + 5 * MIN,
        }),
        record(`${tag}-3`, {
          createdAt: hour + 3 * MIN,
          nsapp: "a",
          repoSource: "tteck/fork",
          pveVersion: "9.0.10",
          status: "installing",
        }),
        record(`${tag}-4`, { createdAt: hour + HOUR + MIN, nsapp: "post-pve-install", type: "pve", status: "done" }),
        record(`${tag}-5`, {
          createdAt: hour + 7 * HOUR,
          nsapp: "b",
          osVersion: "13",
          platform: "incus",
          status: "done",
        }),
      ];
    }
    const SLICES = [
      ALL,
      appOf("a"),
      appOf("b"),
      sliceKey("install", "ProxmoxVE", ALL_APPS),
      sliceKey("install", "external", appSlice("a")),
      sliceKey("tool", null, ALL_APPS),
      sliceKey("install", null, ALL_APPS, "pve"),
      sliceKey("install", null, appSlice("b"), "incus"),
      sliceKey("install", "", appSlice("a"), ""),
    ];

    /** A fresh store holding executions of 3, 40 and 75 days before its fold mark: hour cells, older hours, older months. */
    async function threeAges() {
      const store = await freshStore();
      const mark = await store.foldedUntil();
      const records = [
        ...executionsAt(mark, 3, "new"),
        ...executionsAt(mark, 40, "old"),
        ...executionsAt(mark, 75, "older"),
      ];
      await store.write(records.map((r) => loadOp(r)));
      return { store, mark, records };
    }

    test("hour cells reach back HOUR_CELL_DAYS before the fold mark; older hours are counted from the records, equal to a recount", async () => {
      const { store, mark, records } = await threeAges();
      // Stored hour cells: the recent ones only. Day and month cells for every record.
      const first = hoursFrom(mark);
      const storedHours = await store.rollupCells(GRAINS.hour, EVERYTHING.from, EVERYTHING.to);
      expect(storedHours.length).toBeGreaterThan(0);
      expect(storedHours.every((c) => c.bucket >= first)).toBe(true);
      expect(
        new Set((await store.rollupCells(GRAINS.day, EVERYTHING.from, EVERYTHING.to)).map((c) => c.bucket)).size,
      ).toBe(3);
      // Every slice's hour cells over all time, over an old day alone, and over one old hour.
      const oldHour = bucketStart(mark - 40 * DAY, GRAINS.day) + 5 * HOUR; // the "old" runs' first hour
      for (const [from, to] of [
        [EVERYTHING.from, EVERYTHING.to],
        [bucketStart(oldHour, GRAINS.day), bucketStart(oldHour, GRAINS.day) + DAY],
        [oldHour, oldHour + HOUR],
        [oldHour + HOUR, first + DAY],
      ] as const) {
        for (const slice of SLICES) {
          const got = await store.readRollups({ grain: GRAINS.hour, slice, from, to, parts: ALL_PARTS });
          expect({ slice, from, cells: got }).toEqual({ slice, from, cells: recountHours(records, slice, from, to) });
        }
      }
      // Parts as asked, as for stored cells.
      for (const parts of [["data"], ["apps"], ["errors"]] as RollupPart[][]) {
        const got = await store.readRollups({
          grain: GRAINS.hour,
          slice: ALL,
          from: oldHour,
          to: oldHour + HOUR,
          parts,
        });
        expect(got).toEqual(
          recountHours(records, ALL, oldHour, oldHour + HOUR).map((c) => ({
            bucket: c.bucket,
            data: onlyParts(c.data, parts),
          })),
        );
      }
      await expectVerified(store, records.length);
    });

    test("a platform class filter is read from its slices, never from the records, alone or with an app, a repo, a kind and one dimension", async () => {
      const { store, mark, records } = await threeAges();
      // Scans through the store the read side is given are counted (old hours are counted by the engine itself).
      let scans = 0;
      const seen: StoreReads = Object.create(store);
      seen.executionChunks = (f, page) => {
        scans++;
        return store.executionChunks(f, page);
      };
      const stats = createStats(seen);
      // Ragged ends over hours older than the hour cells, days, months and the newest days' hours.
      const w = { from: floorHour(mark - 80 * DAY) + 7 * HOUR, to: mark + HOUR };
      const byDay = (r: { createdAt: number }) => r.createdAt - (r.createdAt % DAY);
      for (const f of [
        { platformClass: "pve" },
        { platformClass: "incus" },
        { platformClass: "" },
        { platformClass: "lxd" },
        { platformClass: "incus", nsapp: "b" },
        { platformClass: "pve", repoSource: "ProxmoxVE" },
        { platformClass: "", kind: "install" as const, outcome: "success" as const },
        { platformClass: "pve", type: "lxc" },
      ] satisfies ExecutionFilter[]) {
        scans = 0;
        const want = await foldRecords(store.executionChunks({ ...f, from: w.from, to: w.to }), byDay);
        const plan = { ...SCANNED, outcome: f.outcome ?? null };
        // Counts of one more dimension's value (a timeseries) come from the platform's slices too.
        const series = await stats.timeseries(f, w, "day");
        expect([f, series.source]).toEqual([f, "rollup"]);
        expect([f, series.points.reduce((n, p) => n + p.total, 0)]).toEqual([f, summarize(want, plan).total]);
        if (!("type" in f)) {
          const { source, ...got } = await stats.summary(f, w);
          expect([f, source, got]).toEqual([f, "rollup", summarize(want, plan)]);
          const by = { by: "nsapp", sort: "volume", minRuns: 1, limit: 100 } as const;
          const groups = await stats.breakdown(f, w, by);
          expect([f, groups.source, groups.groups]).toEqual([f, "rollup", breakdown(want, plan, by).groups]);
        }
        expect([f, scans]).toEqual([f, 0]);
      }
      // The records hold every class, so none of these was trivially everything or nothing.
      expect(new Set(records.map((r) => platformClass(r)))).toEqual(new Set(["pve", "incus", ""]));
    });

    test("older hours follow writes to their day: a late final report, a new record, a deletion", async () => {
      const db = await database();
      const loader = await db.open();
      const mark = await loader.foldedUntil();
      const records = executionsAt(mark, 50, "x");
      await loader.write(records.map((r) => loadOp(r)));
      // Closed, a store folds what it wrote: PostgreSQL folds a write's deltas a moment after it,
      // and a fold between the two reads below would have the day counted again (equal, new objects).
      await loader.close();
      const store = await db.open();
      const day = bucketStart(records[0]!.createdAt, GRAINS.day);
      const read = (parts: readonly RollupPart[] = ALL_PARTS) =>
        store.readRollups({ grain: GRAINS.hour, slice: ALL, from: day, to: day + DAY, parts });
      const recount = (of: Execution[], parts: RollupPart[]) =>
        recountHours(of, ALL, day, day + DAY).map((c) => ({ bucket: c.bucket, data: onlyParts(c.data, parts) }));
      expect(await read()).toEqual(recountHours(records, ALL, day, day + DAY)); // counted, and kept
      // A part alone is made once from the kept cells, the same objects while the day stands
      // (readers keep what they derive from settled cells by identity: read/settled.ts).
      const apps = await read(["apps"]);
      expect(apps).toEqual(recount(records, ["apps"]));
      (await read(["apps"])).forEach((c, i) => expect(c.data).toBe(apps[i]!.data));
      // The install still in progress ends (its report arrives 50 days late).
      await one(store, updateOp("x-3", "failed", "exit code 1", mark - DAY));
      await one(store, loadOp(record("x-6", { createdAt: records[0]!.createdAt + 30 * MIN, nsapp: "c" })));
      await one(store, { kind: "delete", randomId: "x-1", at: mark });
      const now = await allInstalls(store);
      expect(now.length).toBe(records.length);
      expect(await read()).toEqual(recountHours(now, ALL, day, day + DAY));
      for (const parts of [["apps"], ["data"], ["errors"]] as RollupPart[][])
        expect(await read(parts)).toEqual(recount(now, parts));
      await expectVerified(store, records.length);
    });

    test("older hours read through one store follow what another store wrote to their day", async () => {
      const db = await database();
      const a = await db.open();
      const b = await db.open();
      const mark = await a.foldedUntil();
      const records = executionsAt(mark, 45, "y");
      await a.write(records.map((r) => loadOp(r)));
      const day = bucketStart(records[0]!.createdAt, GRAINS.day);
      const read = () =>
        a.readRollups({ grain: GRAINS.hour, slice: appOf("b"), from: day, to: day + DAY, parts: ALL_PARTS });
      expect(await read()).toEqual(recountHours(records, appOf("b"), day, day + DAY));
      await b.write([
        loadOp(
          record("y-9", {
            createdAt: records[1]!.createdAt + 5 * MIN,
            nsapp: "b",
            status: "failed",
            error: "exit code 7",
          }),
        ),
      ]);
      expect(await read()).toEqual(recountHours(await allInstalls(a), appOf("b"), day, day + DAY));
    });

    test("a fold that moves the mark removes the hour cells that leave the last days, and nothing is lost", async () => {
      const store = await freshStore();
      const mark = await store.foldedUntil();
      const records = executionsAt(mark, 20, "z");
      await store.write(records.map((r) => loadOp(r)));
      const day = bucketStart(records[0]!.createdAt, GRAINS.day);
      expect((await store.rollupCells(GRAINS.hour, day, day + DAY)).length).toBeGreaterThan(0);
      // Twenty days later the day has left the hour cells; its hours still answer from the records.
      const later = mark + 20 * DAY;
      await one(store, { kind: "fold", until: later, at: later });
      expect(await store.rollupCells(GRAINS.hour, day, day + DAY)).toEqual([]);
      for (const slice of SLICES) {
        expect(
          await store.readRollups({ grain: GRAINS.hour, slice, from: day, to: day + DAY, parts: ALL_PARTS }),
        ).toEqual(recountHours(records, slice, day, day + DAY));
      }
      await expectVerified(store, records.length);
    });
  });

  // -------------------------------------------------------------- rollups equal a recount

  describe("verifyRollups", () => {
    test("rollups equal a recount after every step of a mixed workload", async () => {
      const store = await freshStore();
      const steps: string[] = [];
      const records = await mixedWorkload(store, async (step, n) => {
        steps.push(step);
        const check = await verifyRollups(store);
        expect({ step, ok: check.ok, records: check.records, mismatches: check.mismatches }).toEqual({
          step,
          ok: true,
          records: n,
          mismatches: [],
        });
      });
      expect(steps.length).toBe(10);
      expect(records).toBe(22);
      expect((await allInstalls(store)).length).toBe(22);
    });

    test("the workload ends where its reports say", async () => {
      const store = await freshStore();
      await mixedWorkload(store, async () => {});
      const get = async (id: string) => (await latestOf(store, id))!;
      expect(await get("p4")).toMatchObject({ status: "failed", outcome: "aborted", error: "INTERRUPTED" });
      expect(await get("p6")).toMatchObject({
        status: "done",
        outcome: "success",
        durationMs: PAST + 2 * DAY - (PAST + 6 * 37 * MIN),
      });
      expect(await get("p3")).toMatchObject({ status: "failed", outcome: "failed" });
      expect(await get("q1")).toMatchObject({
        status: "failed",
        outcome: "failed",
        error: "disk full",
        durationMs: null,
      });
      expect(await get("o2")).toMatchObject({ status: "installing", outcome: "unknown" });
      expect(await get("o6")).toMatchObject({ status: "installing", outcome: "unknown" });
      for (const id of ["p1", "o3", "p7", "gone-held"]) expect(await latestOf(store, id)).toBeUndefined();
      expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual([]);
      const byOutcome = (await allInstalls(store)).reduce(
        (m, r) => ({ ...m, [r.outcome]: (m[r.outcome] ?? 0) + 1 }),
        {} as Partial<Record<Outcome, number>>,
      );
      expect(await hourTotals(store)).toEqual(outcomes(byOutcome));
    });
  });
}
