// The Store contract as a test suite: what every storage engine must do, written against
// src/store/contract.ts alone. An engine proves itself by calling `storeContract` with a factory
// of fresh, empty database locations (see sqlite.test.ts); a PostgreSQL engine adds one such file.
//
// Stores are opened only through openEngine (src/store/open.ts) and used only through
// `engine.store`: no SQL, no engine internals. Expectations come from the contract's doc comments
// and the pure domain helpers (outcomes, error signatures, rollup slices), and "rollups equal a
// recount" is verifyRollups, which recounts every cell through the contract as well.
//
// Times: PAST is long before any fresh database's fold mark could matter to a test; tests about
// open hours take their hours after the store's own mark (`openHour`), so none depends on where
// an engine starts the mark.
import { afterEach, describe, expect, test } from "bun:test";
import { errorSignature, failureSignatureId } from "../../src/domain/error-signature.ts";
import { UNDESCRIBED, kindOfType, type Descriptive, type Execution, type Report } from "../../src/domain/execution.ts";
import { OUTCOMES, deriveOutcome, type Outcome } from "../../src/domain/outcome.ts";
import type { RejectReason, Rejection } from "../../src/domain/rejection.ts";
import { ALL_APPS, GRAINS, appSlice, bucketStart, sliceKey, slicesOf, type Grain, type RollupData, type RollupPart } from "../../src/domain/rollup.ts";
import { DAY, HOUR, floorHour } from "../../src/domain/time.ts";
import { pruneOlderThan } from "../../src/maintenance/prune.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import type { HeldReport } from "../../src/domain/lifecycle.ts";
import type { RelayPolicy } from "../../src/domain/relay.ts";
import { PAGE_SORTS, type AlertSend, type AlertTransition, type ExecutionFilter, type ListCursor, type PageQuery, type PageSort, type RejectedEntry, type ResultFor, type RollupCell, type Store, type WriteOp } from "../../src/store/contract.ts";
import { openEngine } from "../../src/store/open.ts";

/** Fresh, empty databases of one engine: an SQLite file in a new directory, a new PostgreSQL database. */
export interface EngineFactory {
  name: string;
  create(): Promise<{ location: string; destroy(): Promise<void> }>;
}

const MIN = 60_000;
/** Rollup slices of installs (the default view): every app, and one app; every repo. */
const ALL = sliceKey("install", null, ALL_APPS);
const appOf = (nsapp: string | null): string => sliceKey("install", null, appSlice(nsapp));
/** Every slice an /upload install of these apps counts in, sorted. */
const slicesOfApps = (apps: readonly string[]): string[] => [...new Set(apps.flatMap((nsapp) => slicesOf({ type: "lxc", repoSource: null, nsapp })))].sort();
/** Early in a month and a day, so PAST + a few hours stays in both. */
const PAST = Date.UTC(2025, 2, 10, 8, 0, 0);
const EVERYTHING = { from: Number.MIN_SAFE_INTEGER, to: Number.MAX_SAFE_INTEGER };
const ALL_PARTS: readonly RollupPart[] = ["data", "apps", "errors"];

// ------------------------------------------------------------------ building ops

type ReportOp = Extract<WriteOp, { kind: "report" }>;
type Repaired = { repairs?: readonly string[]; raw?: Uint8Array };
/** What a report says: the descriptive fields (type, nsapp, ...) and how the run stands. */
type ReportFields = Partial<Descriptive> & Partial<Pick<Report, "status" | "error" | "exitCode" | "errorCategory" | "failedCommand" | "failedLine" | "installDuration">>;

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

const DESCRIPTIVE: Descriptive = {
  ...UNDESCRIBED, type: "lxc", ctType: 1, diskSize: 8, coreCount: 2, ramSize: 2048, osType: "debian", osVersion: "12", disableip6: "yes", nsapp: "nginx",
  method: "default", pveVersion: "8.2.2",
};

/** A report with every descriptive field (a start report unless `fields` give a final status); the outcome follows the status. */
function startReport(randomId: string, fields: ReportFields = {}, executionId = randomId, payloadVersion: number | null = null): Report {
  const { status = "installing", error = null, exitCode = null, errorCategory = null, failedCommand = null, failedLine = null, installDuration = null, ...descriptive } = fields;
  return {
    executionId, randomId, payloadVersion, fields: { ...DESCRIPTIVE, ...descriptive },
    status, error, outcome: deriveOutcome(status, error), exitCode, errorCategory, failedCommand, failedLine, installDuration,
  };
}

/** An /upload start report (or, with `executionId`/`payloadVersion`, a /telemetry report carrying every field). */
function startOp(randomId: string, fields: ReportFields, at: number, opts: Repaired & { executionId?: string; payloadVersion?: number } = {}): ReportOp {
  const report = startReport(randomId, fields, opts.executionId ?? randomId, opts.payloadVersion ?? null);
  const endpoint = report.payloadVersion === null ? "upload" : "telemetry";
  return { kind: "report", endpoint, report, raw: opts.raw ?? bytes(JSON.stringify(report)), repairs: opts.repairs ?? [], at };
}

/** An /upload status update: how the run ended, no descriptive fields. */
function updateOp(randomId: string, status: string, error: string | null, at: number, opts: Repaired = {}): ReportOp {
  const report: Report = {
    executionId: randomId, randomId, payloadVersion: null, fields: null, status, error, outcome: deriveOutcome(status, error),
    exitCode: null, errorCategory: null, failedCommand: null, failedLine: null, installDuration: null,
  };
  return { kind: "report", endpoint: "updatestatus", report, raw: opts.raw ?? bytes(JSON.stringify({ random_id: randomId, status, error })), repairs: opts.repairs ?? [], at };
}

/** A complete execution as `load` takes it; the outcome follows the status unless given, the kind the type. */
function record(randomId: string, fields: Partial<Execution> & { createdAt: number }): Execution {
  const status = fields.status ?? "done";
  const error = fields.error ?? null;
  const outcome = fields.outcome ?? deriveOutcome(status, error);
  const type = fields.type ?? "lxc";
  return {
    ...DESCRIPTIVE, executionId: randomId, randomId, attempt: 1, kind: kindOfType(type), payloadVersion: null,
    status, outcome, error, exitCode: null, errorCategory: null, failedCommand: null, failedLine: null, installDuration: null,
    updatedAt: fields.createdAt, durationMs: null, installingAt: fields.createdAt, validationAt: null, configuringAt: null,
    finishedAt: outcome === "in_progress" || outcome === "unknown" ? null : (fields.updatedAt ?? fields.createdAt), repaired: false,
    ...fields,
  };
}

/** The execution a first report creates, as the contract says it is stored: every field as sent. */
function stored(op: ReportOp): Execution {
  const { fields, ...report } = op.report;
  const final = report.outcome !== "in_progress";
  return {
    ...DESCRIPTIVE, ...fields, ...report, attempt: 1, kind: kindOfType(fields?.type ?? "lxc"), createdAt: op.at, updatedAt: op.at, durationMs: null,
    installingAt: final ? null : op.at, validationAt: null, configuringAt: null, finishedAt: final ? op.at : null, repaired: op.repairs.length > 0,
  };
}

const loadOp = (execution: Execution, at = execution.updatedAt): Extract<WriteOp, { kind: "load" }> => ({ kind: "load", execution, at });

function rejectOp(at: number, fields: Partial<Rejection> = {}): Extract<WriteOp, { kind: "reject" }> {
  const rejection: Rejection = { endpoint: "upload", reason: "invalid_json", field: null, message: "not JSON", randomId: null, body: bytes(`{{{ ${at}`), ...fields };
  return { kind: "reject", rejection, at };
}

/** One write, its one result typed by its kind. */
async function one<Op extends WriteOp>(store: Store, op: Op): Promise<ResultFor<Op>> {
  const results = await store.write([op]);
  expect(results).toHaveLength(1);
  return results[0] as ResultFor<Op>;
}

// ------------------------------------------------------------------ reading back

const idsOf = (rows: readonly { randomId: string }[]): string[] => rows.map((r) => r.randomId);

/** An install's latest execution (what GET /api/installs/{id} shows first); undefined when unknown. */
const latestOf = async (store: Store, randomId: string): Promise<Execution | undefined> => (await store.getExecutions(randomId)).at(-1);

async function allInstalls(store: Store, filter: ExecutionFilter = {}): Promise<Execution[]> {
  const out: Execution[] = [];
  for await (const r of store.iterateExecutions(filter)) out.push(r);
  return out;
}

/** Every page of a listing, following `next` until it is null. */
async function everyPage(store: Store, filter: ExecutionFilter, limit: number, order: "newest" | "oldest"): Promise<Execution[][]> {
  const pages: Execution[][] = [];
  let after: ListCursor | undefined;
  for (;;) {
    const page = await store.listExecutions(filter, { limit, after, order });
    pages.push(page.rows);
    if (page.next === null) return pages;
    expect(page.rows).toHaveLength(limit); // only the last page may be short
    expect(pages.length).toBeLessThan(1000); // a cursor that never ends
    after = page.next;
  }
}

/** Installs per outcome, summed over the `type` dimension of every hour cell of a slice (folded or open). */
async function hourTotals(store: Store, slice: string = ALL): Promise<Record<Outcome, number>> {
  const totals = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  for (const { data } of await store.readRollups({ grain: GRAINS.hour, slice, ...EVERYTHING, parts: ["data"] })) {
    for (const counts of Object.values(data.dims.type ?? {})) OUTCOMES.forEach((o, i) => (totals[o] += counts[i]!));
  }
  return totals;
}

const outcomes = (partial: Partial<Record<Outcome, number>>): Record<Outcome, number> =>
  Object.fromEntries(OUTCOMES.map((o) => [o, partial[o] ?? 0])) as Record<Outcome, number>;

const byCell = (a: RollupCell, b: RollupCell) => a.bucket - b.bucket || (a.slice < b.slice ? -1 : a.slice > b.slice ? 1 : 0);
const sortedCells = async (store: Store, grain: Grain): Promise<RollupCell[]> => (await store.rollupCells(grain, EVERYTHING.from, EVERYTHING.to)).sort(byCell);

/** Every rollup answer a dashboard could get, for before/after comparisons. */
async function rollupSnapshot(store: Store, apps: readonly string[]) {
  const out: Record<string, unknown> = {};
  for (const grain of [GRAINS.hour, GRAINS.day, GRAINS.month]) {
    out[`cells ${grain}`] = await sortedCells(store, grain);
    for (const slice of apps) out[`${grain} ${slice}`] = await store.readRollups({ grain, slice, ...EVERYTHING, parts: ALL_PARTS });
  }
  return out;
}

/** What a cell holds of the parts asked for: data = every dimension but nsapp, and durations; apps = nsapp; errors = the rest. */
function onlyParts(d: RollupData, parts: readonly RollupPart[]): RollupData {
  const { dims, dur, ...errors } = d;
  const { nsapp, ...rest } = dims;
  const out = { dims: {}, dur: {}, ...Object.fromEntries(Object.keys(errors).map((k) => [k, {}])) } as RollupData;
  if (parts.includes("data")) Object.assign(out, { dims: { ...rest }, dur });
  if (parts.includes("apps") && nsapp !== undefined) out.dims.nsapp = nsapp;
  if (parts.includes("errors")) Object.assign(out, errors);
  return out;
}

/** An hour past both the store's fold mark and the clock: open (not folded) in any engine until a test folds it. */
async function openHour(store: Store): Promise<number> {
  return floorHour(Math.max(await store.foldedUntil(), Date.now())) + 2 * HOUR;
}

async function expectVerified(store: Store, records: number): Promise<void> {
  const check = await verifyRollups(store);
  expect({ ok: check.ok, records: check.records, mismatches: check.mismatches, signatureGaps: check.signatureGaps }).toEqual({ ok: true, records, mismatches: [], signatureGaps: 0 });
}

// ------------------------------------------------------------------ a mixed workload

/**
 * Starts, updates, updates before their start, aborts, expiry, deletion, a fold, late updates to
 * folded hours and loads: `check` runs after every step with the number of installs stored.
 */
async function mixedWorkload(store: Store, check: (step: string, records: number) => Promise<void>): Promise<number> {
  const H = await openHour(store);
  const apps = ["nginx", "docker", "homeassistant", null];
  let records = 0;

  await store.write(Array.from({ length: 12 }, (_, i) => startOp(`p${i}`, { nsapp: apps[i % 4]!, type: i % 5 ? "lxc" : "vm" }, PAST + i * 37 * MIN)));
  records += 12;
  await check("starts", records);

  await store.write([
    updateOp("p0", "done", null, PAST + 20 * MIN),
    updateOp("p1", "failed", "exit code 100: apt-get install failed at line 42", PAST + 80 * MIN),
    updateOp("p2", "failed", "exit code 101: apt-get install failed at line 7", PAST + 90 * MIN),
    updateOp("p3", "configuring", null, PAST + 120 * MIN),
    updateOp("p4", "failed", "INTERRUPTED", PAST + 170 * MIN), // aborted by the user
    updateOp("p5", "success", null, PAST + 200 * MIN),
  ]);
  await check("updates", records);

  expect(await store.write([updateOp("q0", "done", null, PAST + 3 * HOUR), updateOp("q1", "failed", "disk full", PAST + 3 * HOUR)])).toEqual([{ kind: "held" }, { kind: "held" }]);
  await check("held updates", records);
  await store.write([startOp("q0", { nsapp: "docker" }, PAST + 4 * HOUR), startOp("q1", { nsapp: "nginx" }, PAST + 5 * HOUR)]);
  records += 2;
  await check("starts after their updates", records);

  await store.write(Array.from({ length: 8 }, (_, i) => startOp(`o${i}`, { nsapp: apps[i % 4]! }, H + i * 5 * MIN)));
  await store.write([updateOp("o0", "done", null, H + 30 * MIN), updateOp("o1", "failed", "exit code 100: apt-get install failed at line 3", H + 31 * MIN)]);
  records += 8;
  await check("open hours", records);

  expect(await store.write([{ kind: "expire", executionId: "p6", at: PAST + DAY }, { kind: "expire", executionId: "o2", at: H + 40 * MIN }])).toEqual([
    { kind: "expired", changed: true },
    { kind: "expired", changed: true },
  ]);
  await check("expire", records);

  await one(store, updateOp("gone-held", "done", null, PAST + DAY));
  expect(await store.write([
    { kind: "delete", randomId: "p1", at: PAST + DAY },
    { kind: "delete", randomId: "o3", at: H + 41 * MIN },
    { kind: "delete", randomId: "gone-held", at: PAST + DAY },
  ])).toEqual([{ kind: "deleted", found: true, executions: 1 }, { kind: "deleted", found: true, executions: 1 }, { kind: "deleted", found: true, executions: 0 }]);
  records -= 2;
  await check("delete", records);

  const folded = await one(store, { kind: "fold", until: H + HOUR, at: H + HOUR });
  expect(folded.hours).toBeGreaterThanOrEqual(1);
  await check("fold", records);

  // Late changes to hours already folded: stored hour, day and month cells must all follow.
  await store.write([
    updateOp("p6", "done", null, PAST + 2 * DAY), // expired, then finished after all
    updateOp("p3", "failed", "exit code 1: configure failed", PAST + 2 * DAY),
    updateOp("o4", "done", null, H + 2 * HOUR),
    updateOp("o5", "failed", "exit code 100: apt-get install failed at line 9", H + 2 * HOUR),
    { kind: "expire", executionId: "o6", at: H + 3 * HOUR },
    { kind: "delete", randomId: "p7", at: H + 3 * HOUR },
  ]);
  records -= 1;
  await check("late updates to folded hours", records);

  await store.write([
    loadOp(record("l0", { createdAt: PAST + 3 * DAY, status: "failed", error: "exit code 2: make failed", durationMs: 90_000, updatedAt: PAST + 3 * DAY + 90_000 })),
    loadOp(record("l1", { createdAt: H + HOUR + 5 * MIN, status: "installing", nsapp: "docker" })),
    startOp("o8", { nsapp: "nginx" }, H + HOUR + 6 * MIN),
  ]);
  records += 3;
  await check("loads and a start after the fold", records);
  return records;
}

// ------------------------------------------------------------------ the suite

export function storeContract(factory: EngineFactory): void {
  describe(`Store contract (${factory.name})`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    /** A fresh empty database; every store opened on it is closed, and it is destroyed, after the test. */
    async function database() {
      const db = await factory.create();
      const stores: Store[] = [];
      cleanups.push(async () => {
        for (const s of stores) await s.close().catch(() => {}); // closed already by some tests
        await db.destroy();
      });
      return {
        async open(): Promise<Store> {
          const engine = await openEngine(db.location, { durability: "normal", migrate: true, create: true });
          stores.push(engine.store);
          return engine.store;
        },
      };
    }
    const freshStore = async (): Promise<Store> => (await database()).open();

    // -------------------------------------------------------------- start

    describe("write start", () => {
      test("creates the install with the outcome of its status; every field is stored as sent", async () => {
        const store = await freshStore();
        const op = startOp("s1", { nsapp: "jellyfin", type: "vm", ctType: 0, diskSize: 32.5, coreCount: 4, ramSize: 4096, osType: "ubuntu", osVersion: "24.04", disableip6: null, method: null, pveVersion: "8.3.1" }, PAST);
        expect(await one(store, op)).toEqual({ kind: "created", outcome: "in_progress" });
        expect(await latestOf(store, "s1")).toEqual(stored(op));

        // A host tool's or addon's one-shot (its only report is final) is final at once, of its own kind.
        const tool = startOp("s2", { type: "pve", nsapp: "post-pve-install", status: "failed", error: "exit code 2" }, PAST + 1, { payloadVersion: 2 });
        expect(await one(store, tool)).toEqual({ kind: "created", outcome: "failed" });
        expect(await latestOf(store, "s2")).toMatchObject({ kind: "tool", status: "failed", outcome: "failed", error: "exit code 2", durationMs: null, finishedAt: PAST + 1 });
        expect(await hourTotals(store)).toEqual(outcomes({ in_progress: 1 })); // tools stay out of the installs' slices
        expect(await hourTotals(store, sliceKey("tool", null, ALL_APPS))).toEqual(outcomes({ failed: 1 }));
        // An installation's final report before its start is held (below), not created.
        expect(await one(store, startOp("s3", { status: "failed", error: "exit code 2" }, PAST + 2, { payloadVersion: 2 }))).toEqual({ kind: "held" });
        await expectVerified(store, 2);
      });

      test("the same random_id again is a duplicate: the stored record is unchanged, nothing is logged", async () => {
        const store = await freshStore();
        await one(store, startOp("dup", { nsapp: "nginx" }, PAST));
        const stored = await latestOf(store, "dup");
        expect(await one(store, startOp("dup", { nsapp: "other", type: "vm", ramSize: 1 }, PAST + HOUR))).toEqual({ kind: "duplicate" });
        expect(await latestOf(store, "dup")).toEqual(stored!);
        expect(await store.listRejected({ limit: 10 })).toEqual([]);
        expect(await hourTotals(store)).toEqual(outcomes({ in_progress: 1 }));
        await expectVerified(store, 1);
      });

      test("duplicates within one batch: the first is created, the rest are duplicates", async () => {
        const store = await freshStore();
        expect(await store.write([startOp("b", {}, PAST), startOp("b", { nsapp: "x" }, PAST + 1), startOp("c", {}, PAST + 2)])).toEqual([
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
          tel("i1", "e1", "failed", PAST + 4 * MIN, { error: "exit_code=100 | apt failed", exitCode: 100, errorCategory: "dependency", failedCommand: "apt-get install -y x", failedLine: 12, installDuration: 240 }),
          tel("i1", "e1", "failed", PAST + 5 * MIN, { error: "exit_code=100 | apt failed", exitCode: 100 }), // the final report again
          tel("i1", "e1", "configuring", PAST + 6 * MIN), // a late ping never moves a final status back
          tel("i1", "e1", "success", PAST + 7 * MIN), // nor does another final status (the client retries any non-2xx)
        ]);
        expect(results).toEqual([
          { kind: "created", outcome: "in_progress" }, { kind: "duplicate" }, { kind: "updated", outcome: "in_progress" }, { kind: "updated", outcome: "in_progress" },
          { kind: "updated", outcome: "failed" }, { kind: "duplicate" }, { kind: "duplicate" }, { kind: "duplicate" },
        ]);
        expect(await store.getExecutions("i1")).toMatchObject([{
          executionId: "e1", randomId: "i1", attempt: 1, kind: "install", payloadVersion: 2, status: "failed", outcome: "failed",
          exitCode: 100, errorCategory: "dependency", failedCommand: "apt-get install -y x", failedLine: 12, installDuration: 240,
          createdAt: PAST, updatedAt: PAST + 4 * MIN, durationMs: 4 * MIN,
          installingAt: PAST, validationAt: PAST + 2 * MIN, configuringAt: PAST + 3 * MIN, finishedAt: PAST + 4 * MIN,
        }]);
        expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
        await expectVerified(store, 1);
      });

      test("a later report that names the app the first one lacked moves the execution to that app everywhere", async () => {
        const store = await freshStore();
        await store.write([tel("k1", "e1", "installing", PAST, { nsapp: null }), tel("k2", "e2", "installing", PAST, { nsapp: "keep" })]);
        expect(await store.write([tel("k1", "e1", "validation", PAST + MIN, { nsapp: "jellyfin" }), tel("k2", "e2", "validation", PAST + MIN, { nsapp: "keep" })])).toEqual([
          { kind: "updated", outcome: "in_progress" },
          { kind: "updated", outcome: "in_progress" },
        ]);
        expect(idsOf((await store.listExecutions({ nsapp: "jellyfin" }, { limit: 10 })).rows)).toEqual(["k1"]);
        expect(idsOf((await store.listExecutions({ nsapp: "keep" }, { limit: 10 })).rows)).toEqual(["k2"]);
        expect((await store.getExecutions("k1"))[0]).toMatchObject({ nsapp: "jellyfin", status: "validation", createdAt: PAST, validationAt: PAST + MIN });
        await store.write([tel("k1", "e1", "success", PAST + 2 * MIN, { nsapp: "jellyfin" })]);
        expect(idsOf((await store.listExecutions({ nsapp: "jellyfin", outcome: "success" }, { limit: 10 })).rows)).toEqual(["k1"]);
        await expectVerified(store, 2);
      });

      test("a new execution after a final status is a retry: attempt 2 of the same install, not a conflict", async () => {
        const store = await freshStore();
        await store.write([tel("r1", "e1", "installing", PAST), tel("r1", "e1", "failed", PAST + MIN, { error: "exit code 1", exitCode: 1 })]);
        expect(await store.write([tel("r1", "e2", "installing", PAST + 2 * MIN), tel("r1", "e2", "success", PAST + 5 * MIN)])).toEqual([
          { kind: "created", outcome: "in_progress" },
          { kind: "updated", outcome: "success" },
        ]);
        const executions = await store.getExecutions("r1");
        expect(executions.map((e) => [e.executionId, e.attempt, e.outcome])).toEqual([["e1", 1, "failed"], ["e2", 2, "success"]]);
        expect(idsOf((await store.listExecutions({ randomId: "r1" }, { limit: 10, order: "oldest" })).rows)).toEqual(["r1", "r1"]);
        // Each execution counts once, by its attempt.
        expect(await hourTotals(store)).toEqual(outcomes({ failed: 1, success: 1 }));
        const [cell] = await store.readRollups({ grain: GRAINS.hour, slice: ALL, ...EVERYTHING, parts: ["data"] });
        expect(cell!.data.dims.attempt).toEqual({ "1": [0, 1, 0, 0, 0], "2": [1, 0, 0, 0, 0] });
        // Deleting the install removes both.
        expect(await one(store, { kind: "delete", randomId: "r1", at: PAST + HOUR })).toEqual({ kind: "deleted", found: true, executions: 2 });
        await expectVerified(store, 0);
      });

      test("expire is by execution: only that attempt becomes unknown", async () => {
        const store = await freshStore();
        await store.write([tel("x1", "e1", "installing", PAST), tel("x1", "e2", "installing", PAST + MIN)]);
        expect(await one(store, { kind: "expire", executionId: "e1", at: PAST + DAY })).toEqual({ kind: "expired", changed: true });
        expect((await store.getExecutions("x1")).map((e) => [e.executionId, e.outcome])).toEqual([["e1", "unknown"], ["e2", "in_progress"]]);
        await expectVerified(store, 2);
      });

      test("a final report before its start is held; expire-held applies it on its own, as the execution it describes", async () => {
        const store = await freshStore();
        expect(await one(store, tel("o1", "o1", "success", PAST, { installDuration: 90 }))).toEqual({ kind: "held" });
        expect(await one(store, tel("o2", "o2", "failed", PAST + HOUR, { error: "exit code 2", exitCode: 2 }))).toEqual({ kind: "held" });
        expect(await one(store, { kind: "expire-held", before: PAST + MIN, limit: 10, at: PAST + DAY })).toEqual({ kind: "expired-held", count: 1 });
        expect(await store.getExecutions("o1")).toMatchObject([{ status: "success", outcome: "success", createdAt: PAST, durationMs: null, installingAt: null, finishedAt: PAST, installDuration: 90 }]);
        expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual(["o2"]);
        expect((await store.budgets()).held).toMatchObject({ count: 1, expired: 1 });
        // A start report coming after that is a duplicate: the record is final.
        expect(await one(store, tel("o1", "o1", "installing", PAST + DAY))).toEqual({ kind: "duplicate" });
        await expectVerified(store, 1);
      });

      test("a final report before its start that may not be held (its client's share is used up) is applied on its own at once", async () => {
        const store = await freshStore();
        const op = { ...tel("nh1", "nh1", "failed", PAST, { error: "exit code 2", exitCode: 2, errorCategory: "shell" }), holdable: false };
        expect(await one(store, op)).toEqual({ kind: "created", outcome: "failed" });
        expect(await store.getExecutions("nh1")).toMatchObject([{ status: "failed", outcome: "failed", exitCode: 2, createdAt: PAST, durationMs: null, installingAt: null, finishedAt: PAST, attempt: 1 }]);
        expect((await store.budgets()).held.count).toBe(0);
        // As after expire-held: the start report coming later is a duplicate.
        expect(await one(store, tel("nh1", "nh1", "installing", PAST + MIN))).toEqual({ kind: "duplicate" });
        // Everything else a report does is as it was: a start still creates, a final still ends it.
        expect(await one(store, { ...tel("nh2", "nh2", "installing", PAST), holdable: false })).toEqual({ kind: "created", outcome: "in_progress" });
        expect(await one(store, { ...tel("nh2", "nh2", "success", PAST + MIN), holdable: false })).toEqual({ kind: "updated", outcome: "success" });
        await expectVerified(store, 2);
      });

      test("filters on the current clients' fields and kinds select exactly their executions", async () => {
        const store = await freshStore();
        await store.write([
          tel("k1", "k1", "installing", PAST, { exitCode: null, cpuVendor: "intel", arch: "amd64", platform: "pve", repoSource: "ProxmoxVE", repoSlug: "community-scripts/ProxmoxVE", appVersion: "1.0", kernelVersion: "6.8", gpuVendor: "nvidia", gpuPassthrough: "yes" }),
          tel("k2", "k2", "installing", PAST + MIN, { cpuVendor: "amd", arch: "arm64", platform: "pimox", repoSource: "my-fork", repoSlug: "me/fork", gpuPassthrough: "no" }),
          tel("k3", "k3", "failed", PAST + 2 * MIN, { type: "addon", nsapp: "netdata", error: "exit code 127", exitCode: 127, errorCategory: "command_not_found" }),
          tel("k4", "k4", "success", PAST + 3 * MIN, { type: "pve", nsapp: "post-pve-install" }),
          // platform as the community reads it: sent, else from the host version, else none
          tel("k5", "k5", "installing", PAST + 4 * MIN, { platform: null, pveVersion: "incus-6.0.1" }),
          tel("k6", "k6", "installing", PAST + 5 * MIN, { platform: "Incus", pveVersion: "INCUS-6.3" }),
          tel("k7", "k7", "installing", PAST + 6 * MIN, { platform: null, pveVersion: null }),
          tel("k8", "k8", "installing", PAST + 7 * MIN, { platform: "incus", pveVersion: "8.4.1" }),
        ]);
        const ids = async (filter: ExecutionFilter) => idsOf((await store.listExecutions(filter, { limit: 10, order: "oldest" })).rows);
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
        expect(await ids({ except: { cpuVendor: "intel", arch: "amd64" } })).toEqual(["k2", "k3", "k4", "k5", "k6", "k7", "k8"]);
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
        expect(await store.countUpdatedSince({}, [PAST, PAST + MIN, PAST + 5 * MIN, PAST + 11 * MIN])).toEqual([2, 2, 1, 0]);
        expect(await store.countUpdatedSince({ outcome: "in_progress" }, [PAST, PAST + 2 * MIN])).toEqual([1, 0]);
        expect(await store.countUpdatedSince({ from: PAST + MIN }, [PAST])).toEqual([1]);
        expect(await store.countUpdatedSince({}, [])).toEqual([]);
      });
    });

    // -------------------------------------------------------------- update

    describe("write update", () => {
      test("a final status on an install in progress is applied, with its duration", async () => {
        const store = await freshStore();
        await one(store, startOp("u1", { nsapp: "nginx" }, PAST));
        const before = (await latestOf(store, "u1"))!;
        const error = "exit code 100: apt-get failed";
        expect(await one(store, updateOp("u1", "failed", error, PAST + 5 * MIN))).toEqual({ kind: "updated", outcome: deriveOutcome("failed", error) });
        expect(await latestOf(store, "u1")).toEqual({ ...before, status: "failed", outcome: "failed", error, updatedAt: PAST + 5 * MIN, durationMs: 5 * MIN, finishedAt: PAST + 5 * MIN });
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
        expect(entry).toMatchObject({ reason: "already_final", endpoint: "updatestatus", randomId: "u2", receivedAt: PAST + 2 * MIN, result: null });
        expect([...entry!.body]).toEqual([...late.raw]);
        expect(await hourTotals(store)).toEqual(outcomes({ success: 1 }));
        await expectVerified(store, 1);
      });

      test("a progress status keeps the install open; the final status still applies after it", async () => {
        const store = await freshStore();
        await one(store, startOp("u3", {}, PAST));
        expect(await one(store, updateOp("u3", "configuring", null, PAST + MIN))).toEqual({ kind: "updated", outcome: "in_progress" });
        expect(await latestOf(store, "u3")).toMatchObject({ status: "configuring", outcome: "in_progress", updatedAt: PAST + MIN, durationMs: null });
        expect(await one(store, updateOp("u3", "done", null, PAST + 3 * MIN))).toEqual({ kind: "updated", outcome: "success" });
        expect(await latestOf(store, "u3")).toMatchObject({ status: "done", outcome: "success", durationMs: 3 * MIN });
        await expectVerified(store, 1);
      });

      test("status failed with error INTERRUPTED is aborted", async () => {
        const store = await freshStore();
        await one(store, startOp("u4", {}, PAST));
        expect(await one(store, updateOp("u4", "failed", "INTERRUPTED", PAST + MIN))).toEqual({ kind: "updated", outcome: "aborted" });
        expect(await hourTotals(store)).toEqual(outcomes({ aborted: 1 }));
        await expectVerified(store, 1);
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
        expect(await latestOf(store, "h1")).toMatchObject({ ...start.report.fields, randomId: "h1", status: "failed", outcome: "failed", error: "exit code 3", durationMs: null });
        expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual([]);
        expect((await store.countBefore(EVERYTHING.to)).held).toBe(0);
        expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
        // Final now: a later status is refused.
        expect(await one(store, updateOp("h1", "done", null, PAST + 2 * MIN))).toEqual({ kind: "already-final", outcome: "failed" });
        await expectVerified(store, 1);
      });

      test("a second final held update for the same install is already-final; the first one is applied", async () => {
        const store = await freshStore();
        expect(await one(store, updateOp("h2", "done", null, PAST))).toEqual({ kind: "held" });
        expect(await one(store, updateOp("h2", "failed", "exit code 1", PAST + MIN))).toEqual({ kind: "already-final", outcome: "success" });
        expect(await store.listRejected({ limit: 10 })).toEqual([expect.objectContaining({ reason: "already_final", randomId: "h2" })]);
        expect(await one(store, startOp("h2", {}, PAST + 2 * MIN))).toEqual({ kind: "created", outcome: "success" });
        expect(await latestOf(store, "h2")).toMatchObject({ status: "done", outcome: "success", error: null, durationMs: null });
        await expectVerified(store, 1);
      });

      test("an update and its start in one batch, either way round, end final", async () => {
        const store = await freshStore();
        expect(await store.write([startOp("x1", {}, PAST), updateOp("x1", "done", null, PAST + MIN), updateOp("x2", "done", null, PAST), startOp("x2", {}, PAST + MIN)])).toEqual([
          { kind: "created", outcome: "in_progress" },
          { kind: "updated", outcome: "success" },
          { kind: "held" },
          { kind: "created", outcome: "success" },
        ]);
        expect(await hourTotals(store)).toEqual(outcomes({ success: 2 }));
        await expectVerified(store, 2);
      });
    });

    // -------------------------------------------------------------- the rejected-reports log

    describe("write reject and the rejected-reports log", () => {
      test("a rejection is logged with everything it carries; listRejected is newest first", async () => {
        const store = await freshStore();
        const body = new Uint8Array([0, 255, 123, 10, 200]); // not even UTF-8: kept byte for byte
        expect(await one(store, rejectOp(PAST, { endpoint: "updatestatus", reason: "invalid_field", field: "type", message: "type must be one of lxc, vm", randomId: "r1", body }))).toEqual({ kind: "logged" });
        await one(store, rejectOp(PAST + 1));
        const [newest, oldest] = await store.listRejected({ limit: 10 });
        expect(newest).toMatchObject({ reason: "invalid_json", receivedAt: PAST + 1 });
        expect(oldest).toMatchObject({ endpoint: "updatestatus", reason: "invalid_field", field: "type", message: "type must be one of lxc, vm", randomId: "r1", receivedAt: PAST, result: null, replayedAt: null, replayResult: null });
        expect([...oldest!.body]).toEqual([...body]);
        expect(newest!.id).toBeGreaterThan(oldest!.id);
      });

      test("headOnly: a refusal (and a repaired or already-final report's body) keeps the head of its body, with the whole body's size and hash", async () => {
        const store = await freshStore();
        const body = bytes(`{"random_id": "h1", ${"x".repeat(2000)}`);
        expect(await one(store, { ...rejectOp(PAST, { body }), headOnly: true })).toEqual({ kind: "logged" });
        const whole = bytes(`{"random_id": "h2", ${"y".repeat(2000)}`);
        await one(store, rejectOp(PAST + 1, { body: whole }));
        await one(store, startOp("h3", {}, PAST, { repairs: ["x"] }));
        await one(store, { ...updateOp("h3", "failed", "exit code 1", PAST + MIN), raw: bytes(`{"status": "failed", "pad": "${"z".repeat(1000)}"}`) });
        await one(store, { ...updateOp("h3", "done", null, PAST + 2 * MIN), raw: bytes(`{"status": "done", "pad": "${"z".repeat(1000)}"}`), headOnly: true });
        const [final, repaired, kept, cut] = await store.listRejected({ limit: 10 });
        expect(repaired).toMatchObject({ reason: "repaired", bodyKept: true });
        expect(cut).toMatchObject({ bodyKept: false, bodySize: body.byteLength, bodySha256: new Bun.CryptoHasher("sha256").update(body).digest("hex") });
        expect([...cut!.body]).toEqual([...body.subarray(0, 256)]);
        expect(kept).toMatchObject({ bodyKept: true, bodySize: whole.byteLength });
        expect(final).toMatchObject({ reason: "already_final", bodyKept: false, bodySize: 1029 });
        expect(final!.body.byteLength).toBe(256);
      });

      test("`before` pages through the log, and `reason` filters it", async () => {
        const store = await freshStore();
        const reasons: RejectReason[] = ["invalid_json", "invalid_field", "payload_too_large"];
        await store.write(Array.from({ length: 9 }, (_, i) => rejectOp(PAST + i, { reason: reasons[i % 3]!, message: `m${i}` })));
        const pages: string[][] = [];
        let before: number | undefined;
        for (;;) {
          const page = await store.listRejected({ limit: 4, before });
          if (page.length === 0) break;
          pages.push(page.map((e) => e.message));
          before = page.at(-1)!.id;
        }
        expect(pages).toEqual([["m8", "m7", "m6", "m5"], ["m4", "m3", "m2", "m1"], ["m0"]]);
        expect((await store.listRejected({ limit: 10, reason: "invalid_field" })).map((e) => e.message)).toEqual(["m7", "m4", "m1"]);
        const second = await store.listRejected({ limit: 1, reason: "payload_too_large" });
        expect((await store.listRejected({ limit: 10, reason: "payload_too_large", before: second[0]!.id })).map((e) => e.message)).toEqual(["m5", "m2"]);
        expect(await store.listRejected({ limit: 10, reason: "repaired" })).toEqual([]);
      });

      test("repaired reports are applied and logged raw with reason repaired and what their write came to", async () => {
        const store = await freshStore();
        const raw = (n: number) => bytes(`{"random_id": "rep${n}", "status": "installing",}`);
        expect(await one(store, startOp("rep1", {}, PAST, { repairs: ["trailing_comma"], raw: raw(1) }))).toEqual({ kind: "created", outcome: "in_progress" });
        expect(await one(store, updateOp("rep1", "done", null, PAST + MIN, { repairs: ["unescaped_quote"], raw: raw(2) }))).toEqual({ kind: "updated", outcome: "success" });
        expect(await one(store, updateOp("rep3", "done", null, PAST + 2 * MIN, { repairs: ["unescaped_quote"], raw: raw(3) }))).toEqual({ kind: "held" });
        await one(store, startOp("plain", {}, PAST + 3 * MIN)); // strict JSON: not logged

        const log = await store.listRejected({ limit: 10 });
        expect(log.map((e) => ({ reason: e.reason, result: e.result, randomId: e.randomId, endpoint: e.endpoint, receivedAt: e.receivedAt }))).toEqual([
          { reason: "repaired", result: "held", randomId: "rep3", endpoint: "updatestatus", receivedAt: PAST + 2 * MIN },
          { reason: "repaired", result: "updated", randomId: "rep1", endpoint: "updatestatus", receivedAt: PAST + MIN },
          { reason: "repaired", result: "created", randomId: "rep1", endpoint: "upload", receivedAt: PAST },
        ]);
        expect(log.map((e) => new TextDecoder().decode(e.body))).toEqual([3, 2, 1].map((n) => new TextDecoder().decode(raw(n))));
        expect((await store.listRejected({ limit: 10, reason: "repaired" })).length).toBe(3);
        expect((await latestOf(store, "rep1"))!.repaired).toBe(true);
        expect((await latestOf(store, "plain"))!.repaired).toBe(false);
        // A held update that needed repair marks the record it is applied to.
        await one(store, startOp("rep3", {}, PAST + 4 * MIN));
        expect((await latestOf(store, "rep3"))!.repaired).toBe(true);
      });

      // A duplicate changes nothing, repaired or not, so it is not logged (docs/decisions/2026-11-21-ingestion.md): a client that re-sends the same broken body fills no log.
      test("a repaired duplicate start is not logged again; the repaired original is", async () => {
        const store = await freshStore();
        const raw = bytes(`{"random_id": "rd", "status": "installing",}`);
        expect(await one(store, startOp("rd", {}, PAST, { repairs: ["trailing_comma"], raw }))).toEqual({ kind: "created", outcome: "in_progress" });
        expect(await one(store, startOp("rd", {}, PAST + MIN, { repairs: ["trailing_comma"], raw }))).toEqual({ kind: "duplicate" });
        expect(await store.listRejected({ limit: 10 })).toEqual([expect.objectContaining({ reason: "repaired", result: "created", randomId: "rd", body: raw })]);
      });
    });

    // -------------------------------------------------------------- load

    describe("write load", () => {
      test("a complete record is stored as it is and counted once; a second load is a duplicate", async () => {
        const store = await freshStore();
        const install = record("ld1", { createdAt: PAST, updatedAt: PAST + 7 * MIN, status: "failed", error: "exit code 5: make failed", durationMs: 7 * MIN, repaired: true, nsapp: "docker" });
        expect(await one(store, loadOp(install))).toEqual({ kind: "created", outcome: "failed" });
        expect(await latestOf(store, "ld1")).toEqual(install);
        // Once: a start and its update would pass through in_progress, a load never does.
        expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
        expect(await hourTotals(store, appOf("docker"))).toEqual(outcomes({ failed: 1 }));

        expect(await one(store, loadOp({ ...install, status: "done", outcome: "success", error: null }))).toEqual({ kind: "duplicate" });
        expect(await latestOf(store, "ld1")).toEqual(install);
        expect(await hourTotals(store)).toEqual(outcomes({ failed: 1 }));
        await expectVerified(store, 1);
      });

      test("a loaded install in progress takes a later final status", async () => {
        const store = await freshStore();
        expect(await one(store, loadOp(record("ld2", { createdAt: PAST, status: "installing" })))).toEqual({ kind: "created", outcome: "in_progress" });
        expect(await one(store, updateOp("ld2", "done", null, PAST + MIN))).toEqual({ kind: "updated", outcome: "success" });
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
        await store.write([updateOp("h2", "failed", long, PAST + 2 * MIN, { repairs: ["unescaped_quote"] }), updateOp("h1", "done", null, PAST + MIN), updateOp("h3", "failed", "x", PAST + 2 * MIN)]);
        const { held } = await sideData(store);
        expect(held.map((h) => [h.report.randomId, h.at, h.repaired])).toEqual([["h1", PAST + MIN, false], ["h2", PAST + 2 * MIN, true], ["h3", PAST + 2 * MIN, false]]);
        expect(held[1]!.report).toEqual(updateOp("h2", "failed", long, 0).report);

        await store.write(Array.from({ length: 7 }, (_, i) => rejectOp(PAST + i, { message: `m${i}` })));
        const { log } = await sideData(store);
        expect(log[0]).toMatchObject({ reason: "repaired", randomId: "h2" });
        expect(log.slice(1).map((e) => e.message)).toEqual(Array.from({ length: 7 }, (_, i) => `m${i}`));
        const after = log[4]!.id;
        const rest: string[] = [];
        for await (const chunk of store.rejectedChunks({ afterId: after, chunkRows: 2 })) rest.push(...chunk.map((e) => e.message));
        expect(rest).toEqual(["m4", "m5", "m6"]);
      });

      test("a store's held reports and log loaded into another come out the same; loading them again adds nothing", async () => {
        const source = await freshStore();
        const long = bytes(`{"random_id": "x", "error": "${"apt-get failed\\n".repeat(2000)}`);
        await source.write([
          updateOp("held-a", "failed", "exit code 1", PAST, { repairs: ["unescaped_quote"], raw: bytes(`{"random_id": "held-a", "status": "failed", "error": "exit "code" 1"}`) }),
          updateOp("held-b", "done", null, PAST + MIN),
          rejectOp(PAST + 2 * MIN, { body: long }),
          rejectOp(PAST + 3 * MIN, { body: long, endpoint: "telemetry", reason: "invalid_field", field: "type", randomId: "r9", message: "type must be one of lxc, vm" }),
          rejectOp(PAST + 4 * MIN, { body: new Uint8Array([0, 255, 7]) }),
        ]);
        const [first] = await source.listRejected({ limit: 1 });
        await one(source, { kind: "mark-replayed", rejectedId: first!.id, result: "still invalid_json", at: PAST + DAY });
        const from = await sideData(source);
        expect(from.held).toHaveLength(2);
        expect(from.log).toHaveLength(4); // the repaired update's body, two junk bodies sharing one, and a binary one

        const target = await freshStore();
        const load = (data: typeof from): Promise<{ kind: string; bodyKept?: boolean }[]> => target.write([
          ...data.held.map((held) => ({ kind: "load-held", held, at: PAST + DAY }) as const),
          ...data.log.map((entry) => ({ kind: "load-rejected", entry, source: "the source", at: PAST + DAY }) as const),
        ]);
        expect(await load(from)).toEqual([...from.held.map(() => ({ kind: "created" })), ...from.log.map(() => ({ kind: "created", bodyKept: true }))]);
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
        expect(await one(target, { kind: "load-rejected", entry: later.log[0]!, source: "another", at: PAST + DAY })).toEqual({ kind: "created", bodyKept: true });

        // A held report is applied as the target's own would be when its start report comes.
        expect(await one(target, startOp("held-a", { nsapp: "nginx" }, PAST + 2 * DAY))).toEqual({ kind: "created", outcome: "failed" });
        expect(await latestOf(target, "held-a")).toMatchObject({ status: "failed", error: "exit code 1", repaired: true });
        // A held report whose execution the target has already is not held there again.
        expect(await one(target, { kind: "load-held", held: from.held[0]!, at: PAST + DAY })).toEqual({ kind: "duplicate" });
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

    // -------------------------------------------------------------- listings

    describe("getInstall and listExecutions", () => {
      // Twelve records varied in every field a filter reads; f11 and f12 share a millisecond.
      const rows: Execution[] = [
        record("f01", { createdAt: PAST + 1 * MIN, nsapp: "nginx", status: "done" }),
        record("f02", { createdAt: PAST + 2 * MIN, nsapp: "nginx", status: "failed", error: "exit code 100: apt-get update failed", type: "vm" }),
        record("f03", { createdAt: PAST + 3 * MIN, nsapp: "homeassistant", status: "installing", osType: "ubuntu", osVersion: "24.04", pveVersion: "8.3.0", method: "advanced" }),
        record("f04", { createdAt: PAST + 4 * MIN, nsapp: null, status: "done", type: "tool", osType: null, osVersion: null, pveVersion: null, method: null }),
        record("f05", { createdAt: PAST + 5 * MIN, nsapp: "docker", status: "failed", error: "nginx: port 80 already in use", osVersion: "11" }),
        record("f06", { createdAt: PAST + 6 * MIN, nsapp: "50%_off", status: "done", method: null }),
        record("f07", { createdAt: PAST + 7 * MIN, nsapp: "500x_offx", status: "done", pveVersion: null }),
        record("f08", { createdAt: PAST + 8 * MIN, nsapp: "docker", status: "configuring", osType: "alpine", osVersion: "3.20" }),
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
          [{ from: PAST + 3 * MIN, to: PAST + 7 * MIN }, (r) => r.createdAt >= PAST + 3 * MIN && r.createdAt < PAST + 7 * MIN],
          [{ from: PAST + 11 * MIN }, (r) => r.createdAt >= PAST + 11 * MIN],
          [{ until: PAST + 5 * MIN }, (r) => r.createdAt <= PAST + 5 * MIN],
          // Free text: in the app name and in the error text, taken literally (no wildcards).
          [{ q: "nginx" }, (r) => has(r.nsapp, "nginx") || has(r.error, "nginx")],
          [{ q: "apt-get" }, (r) => has(r.error, "apt-get")],
          [{ q: "50%" }, (r) => has(r.nsapp, "50%")],
          [{ q: "_off" }, (r) => has(r.nsapp, "_off")],
          [{ q: "0%_" }, (r) => has(r.nsapp, "0%_")],
          [{ nsapp: "nginx", outcome: "failed" }, (r) => r.nsapp === "nginx" && r.outcome === "failed"],
          [{ nsapp: "docker", from: PAST + 6 * MIN, status: "installing" }, (r) => r.nsapp === "docker" && r.createdAt >= PAST + 6 * MIN && r.status === "installing"],
        ];
        for (const [filter, wanted] of cases) {
          const expected = idsOf(rows.filter(wanted));
          // The case itself must tell something: some rows in, some out.
          expect({ filter, selects: expected.length > 0 && expected.length < rows.length }).toEqual({ filter, selects: true });
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
        expect(idsOf((await store.listExecutions({}, { limit: 100, order: "newest" })).rows)).toEqual([...oldest].reverse());
        expect(idsOf((await store.listExecutions({}, { limit: 100, order: "oldest" })).rows)).toEqual(oldest);
        expect(idsOf((await store.listExecutions({}, { limit: 3 })).rows)).toEqual(["f12", "f11", "f10"]);
      });

      test("cursor pages visit every matching install exactly once, in order, also within one millisecond", async () => {
        const store = await freshStore();
        // Inserted out of time order, ten in each of three milliseconds, two apps interleaved.
        const ops = [2, 0, 1].flatMap((ms) => Array.from({ length: 10 }, (_, i) => startOp(`c${ms}-${i}`, { nsapp: i % 2 ? "a" : "b" }, PAST + ms)));
        await store.write(ops);
        const inserted = ops.map((op) => ({ id: op.report.randomId, at: op.at, app: op.report.fields!.nsapp }));
        const oldest = [...inserted].sort((x, y) => x.at - y.at); // stable: ties keep insertion order
        for (const [filter, keep] of [[{}, () => true], [{ nsapp: "a" }, (r: (typeof inserted)[number]) => r.app === "a"]] as const) {
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
        expect(windowed.flat().map((r) => r.randomId)).toEqual(oldest.filter((r) => r.at === PAST + 1).map((r) => r.id).reverse());
      });

      test("pageExecutions: sorted by each column either way, ties newest first; offset pages add up to the whole; total counts every match", async () => {
        const store = await loaded();
        const column: Record<PageSort, (r: Execution) => string | number | null> = {
          created: (r) => r.createdAt, nsapp: (r) => r.nsapp, status: (r) => r.outcome, os_type: (r) => r.osType, type: (r) => r.type, method: (r) => r.method, exit_code: (r) => r.exitCode,
        };
        const cmp = (a: string | number | null, b: string | number | null) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1);
        const insertion = new Map(rows.map((r, i) => [r.randomId, i]));
        for (const sort of PAGE_SORTS) {
          for (const descending of [false, true]) {
            const expected = idsOf(
              [...rows].sort((a, b) => (descending ? -1 : 1) * cmp(column[sort](a), column[sort](b)) || b.createdAt - a.createdAt || insertion.get(b.randomId)! - insertion.get(a.randomId)!),
            );
            const whole = await store.pageExecutions({}, { offset: 0, limit: 100, sort, descending });
            expect({ sort, descending, ids: idsOf(whole.rows), total: whole.total }).toEqual({ sort, descending, ids: expected, total: rows.length });
            const pages = await Promise.all([0, 5, 10, 15].map((offset) => store.pageExecutions({}, { offset, limit: 5, sort, descending })));
            expect(pages.flatMap((p) => idsOf(p.rows))).toEqual(expected);
            expect(pages.map((p) => p.total)).toEqual([12, 12, 12, 12]);
          }
        }
        const page = (filter: ExecutionFilter, extra: Partial<PageQuery>) => store.pageExecutions(filter, { offset: 0, limit: 100, sort: "created", descending: false, ...extra });
        const oldest = (keep: (r: Execution) => boolean) => idsOf([...rows].filter(keep).sort((a, b) => a.createdAt - b.createdAt || insertion.get(b.randomId)! - insertion.get(a.randomId)!));
        // The app filter: part of the name in any case, wildcards taken literally; with the other filters.
        for (const [text, keep] of [
          ["NGI", (r: Execution) => r.nsapp === "nginx"],
          ["0%_", (r: Execution) => r.nsapp === "50%_off"],
          ["_off", (r: Execution) => r.nsapp?.includes("_off") === true],
          ["x", (r: Execution) => r.nsapp?.includes("x") === true],
        ] as const) {
          const got = await page({}, { appContains: text });
          expect({ text, ids: idsOf(got.rows), total: got.total }).toEqual({ text, ids: oldest(keep), total: oldest(keep).length });
        }
        const failedNginx = await page({ outcome: "failed" }, { appContains: "nginx" });
        expect(idsOf(failedNginx.rows)).toEqual(oldest((r) => r.nsapp === "nginx" && r.outcome === "failed"));
        expect(await page({ nsapp: "nobody" }, {})).toEqual({ rows: [], total: 0 });
        expect((await page({}, { offset: 50 })).total).toBe(12);
      });

      test("newestOfApps: each app's newest execution, the latest inserted of a millisecond; unknown apps left out", async () => {
        const store = await loaded();
        const got = await store.newestOfApps(["nginx", "docker", "no-such-app", "homeassistant"]);
        expect(idsOf(got)).toEqual(["f12", "f11", "f09"]);
        expect(got[0]).toEqual(rows[11]!);
        expect(await store.newestOfApps([])).toEqual([]);
      });

      test("pageExecutions: any of several repo sources, \"\" for those naming none", async () => {
        const store = await freshStore();
        const repos = [["r1", "ProxmoxVE"], ["r2", ""], ["r3", null], ["r4", "ProxmoxVED"], ["r5", "someone/fork"]] as const;
        await store.write(repos.map(([id, repoSource], i) => loadOp(record(id, { createdAt: PAST + i * MIN, repoSource }))));
        const ids = async (repoSources?: readonly string[]) => idsOf((await store.pageExecutions({}, { offset: 0, limit: 10, sort: "created", descending: false, ...(repoSources ? { repoSources } : {}) })).rows);
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
        expect((await (await freshStore()).listExecutions({}, { limit: 5 }))).toEqual({ rows: [], next: null });
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
        const sizes = async (page: { offset?: number; limit?: number; chunkRows?: number }, filter: ExecutionFilter = {}) =>
          (await chunksOf(store.executionChunks(filter, page))).map((c) => c.length);
        expect(await sizes({ chunkRows: 3 })).toEqual([3, 3, 3, 1]);
        expect(await sizes({ chunkRows: 3, limit: 7 })).toEqual([3, 3, 1]);
        expect(await sizes({ chunkRows: 2, offset: 2, limit: 5 })).toEqual([2, 2, 1]);
        expect(await sizes({ chunkRows: 4, offset: 8 })).toEqual([2]);
        expect(await sizes({ offset: 10 })).toEqual([]);
        expect((await chunksOf(store.executionChunks({}, { chunkRows: 2, offset: 2, limit: 5 }))).flat()).toEqual(oldest.slice(2, 7));
        // Chunk boundaries inside the millisecond shared by three installs lose and repeat nothing.
        for (const chunkRows of [1, 2, 3]) expect((await chunksOf(store.executionChunks({}, { chunkRows }))).flat()).toEqual(oldest);
      });

      test("filters apply, `until` included", async () => {
        const { store, rows } = await streamed();
        expect((await chunksOf(store.executionChunks({ until: PAST + 3 * MIN }, { chunkRows: 2 }))).flat()).toEqual(rows.filter((r) => r.at <= PAST + 3 * MIN).map((r) => r.id));
        expect((await chunksOf(store.executionChunks({ nsapp: "a" }, { chunkRows: 2, offset: 1 }))).flat()).toEqual(rows.filter((r) => r.app === "a").slice(1).map((r) => r.id));
        expect((await chunksOf(store.executionChunks({ from: PAST + 3 * MIN, to: PAST + 8 * MIN }, { chunkRows: 2 }))).flat()).toEqual(
          rows.filter((r) => r.at >= PAST + 3 * MIN && r.at < PAST + 8 * MIN).map((r) => r.id),
        );
      });

      test("iterateExecutions equals the chunks flattened", async () => {
        const { store } = await streamed();
        for (const filter of [{}, { nsapp: "b" }, { from: PAST + 3 * MIN }, { until: PAST + 6 * MIN, nsapp: "a" }] satisfies ExecutionFilter[]) {
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
        expect(await one(store, startOp("after-break", {}, PAST + HOUR))).toEqual({ kind: "created", outcome: "in_progress" });
        expect(await one(store, updateOp("k0", "done", null, PAST + HOUR))).toEqual({ kind: "updated", outcome: "success" });
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
        const errors = ["exit code 1", "exit code 1", "exit code 1", "Exit code 1", "disk full", "disk full", "exit code 1 ", null, ""];
        await store.write(errors.map((error, i) => loadOp(record(`e${i}`, { createdAt: PAST + i, status: "failed", error }))));
        const counts = await store.errorTextCounts();
        expect(counts.slice(0, 2)).toEqual([{ error: "exit code 1", count: 3 }, { error: "disk full", count: 2 }]);
        // Ties in any order; texts that differ in case or whitespace are different texts.
        expect(counts.slice(2).sort((a, b) => (a.error < b.error ? -1 : 1))).toEqual([{ error: "Exit code 1", count: 1 }, { error: "exit code 1 ", count: 1 }]);
      });

      test("long error texts (the clients' log tails) come back whole from every read, and group exactly", async () => {
        const store = await freshStore();
        // Lines of a log with non-ASCII and astral characters everywhere, one of them across every likely cut.
        const log = (tail: string) => Array.from({ length: 400 }, (_, i) => `[${i}] step ${i}: compiling \u00e9\u4e2d \u{1F600} module_${i}.c`).join("\n") + tail;
        const texts = [log(""), log(""), log(" but the tail differs"), "short", "x" + "\u{1F600}".repeat(3000)];
        expect(texts[0]!.length).toBeGreaterThan(10_000);
        await store.write(texts.map((error, i) => loadOp(record(`long${i}`, { createdAt: PAST + i * MIN, status: "failed", error, nsapp: "app" }))));
        for (const [i, error] of texts.entries()) expect((await latestOf(store, `long${i}`))!.error).toBe(error);
        const listed = (await store.listExecutions({}, { limit: 10, order: "oldest" })).rows.map((r) => r.error);
        expect(listed).toEqual(texts);
        expect((await store.pageExecutions({}, { offset: 0, limit: 10, sort: "created", descending: false })).rows.map((r) => r.error)).toEqual(texts);
        const streamed: (string | null)[] = [];
        for await (const chunk of store.executionChunks({}, { chunkRows: 2 })) streamed.push(...chunk.map((r) => r.error));
        expect(streamed).toEqual(texts);
        const counts = await store.errorTextCounts();
        expect(counts).toHaveLength(4);
        expect(counts[0]).toEqual({ error: texts[0]!, count: 2 });
        expect(new Set(counts.map((c) => c.error))).toEqual(new Set(texts));
        // Free text finds what the head of a long text says.
        expect(idsOf((await store.listExecutions({ q: "[3] step 3" }, { limit: 10, order: "oldest" })).rows)).toEqual(["long0", "long1", "long2"]);
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
        await store.write([startOp("a1", { nsapp: "a" }, H + MIN), startOp("a2", { nsapp: "a" }, H + 2 * MIN), startOp("b1", { nsapp: "b", type: "vm" }, H + 3 * MIN)]);
        await one(store, updateOp("a1", "done", null, H + 10 * MIN));
        return { store, H };
      };

      test("hour cells include the open hours; day and month cells do not, until they are folded", async () => {
        const { store, H } = await openScene();
        const mark = await store.foldedUntil();
        expect(mark).toBeLessThanOrEqual(H);
        const hour = await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H, to: H + HOUR, parts: ALL_PARTS });
        expect(hour.map((c) => c.bucket)).toEqual([H]);
        expect(hour[0]!.data.dims.nsapp).toEqual({ a: [1, 0, 0, 1, 0], b: [0, 0, 0, 1, 0] });
        expect(hour[0]!.data.dims.type).toEqual({ lxc: [1, 0, 0, 1, 0], vm: [0, 0, 0, 1, 0] });
        const app = await store.readRollups({ grain: GRAINS.hour, slice: appOf("a"), from: H, to: H + HOUR, parts: ALL_PARTS });
        expect(app.map((c) => [c.bucket, c.data.dims.type])).toEqual([[H, { lxc: [1, 0, 0, 1, 0] }]]);
        expect((await store.rollupCells(GRAINS.hour, H, H + HOUR)).map((c) => c.slice).sort()).toEqual(slicesOfApps(["a", "b"]));
        // The open hour is not in day or month cells yet.
        const dayOf = bucketStart(H, GRAINS.day);
        expect(await store.rollupCells(GRAINS.day, dayOf, dayOf + DAY)).toEqual([]);
        expect(await store.readRollups({ grain: GRAINS.month, slice: ALL, ...EVERYTHING, parts: ALL_PARTS })).toEqual([]);
        // Outside [from, to): nothing.
        expect(await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H + HOUR, to: H + 2 * HOUR, parts: ALL_PARTS })).toEqual([]);
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
        expect(await one(store, { kind: "fold", until: H - 5 * HOUR, at: H + HOUR })).toEqual({ kind: "folded", hours: 0 });
        expect(await store.foldedUntil()).toBe(H + HOUR);
        await expectVerified(store, 3);

        // Writes after the fold: to the folded hour (stored cells of every grain follow) and to a new open hour.
        await store.write([updateOp("b1", "failed", "exit code 7", H + 2 * HOUR), startOp("c1", { nsapp: "c" }, H + HOUR + MIN)]);
        const day = await store.readRollups({ grain: GRAINS.day, slice: ALL, from: bucketStart(H, GRAINS.day), to: bucketStart(H, GRAINS.day) + DAY, parts: ["apps"] });
        expect(day.map((c) => c.data.dims.nsapp)).toEqual([{ a: [1, 0, 0, 1, 0], b: [0, 1, 0, 0, 0] }]);
        expect((await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H + HOUR, to: H + 2 * HOUR, parts: ["apps"] })).map((c) => c.data.dims.nsapp)).toEqual([{ c: [0, 0, 0, 1, 0] }]);
        expect(await one(store, { kind: "fold", until: H + 3 * HOUR, at: H + 3 * HOUR })).toEqual({ kind: "folded", hours: 1 });
        await expectVerified(store, 4);
      });

      test("fold counts the hours it stored and skips hours without installs", async () => {
        const store = await freshStore();
        const H = await openHour(store);
        await store.write([0, 0, 2, 5].map((h, i) => startOp(`f${i}`, { nsapp: "a" }, H + h * HOUR + MIN)));
        expect(await one(store, { kind: "fold", until: H + 3 * HOUR, at: H + 3 * HOUR })).toEqual({ kind: "folded", hours: 2 });
        expect((await store.rollupCells(GRAINS.day, EVERYTHING.from, EVERYTHING.to)).length).toBeGreaterThan(0);
        expect(await one(store, { kind: "fold", until: H + 6 * HOUR, at: H + 6 * HOUR })).toEqual({ kind: "folded", hours: 1 });
        expect(await hourTotals(store)).toEqual(outcomes({ in_progress: 4 }));
        await expectVerified(store, 4);
      });

      test("readRollups returns only the parts asked for (folded cells)", async () => {
        const store = await freshStore();
        await store.write([startOp("p1", { nsapp: "a" }, PAST), startOp("p2", { nsapp: "b" }, PAST + MIN)]);
        await store.write([updateOp("p1", "failed", "exit code 3: boom", PAST + 2 * MIN), updateOp("p2", "done", null, PAST + 3 * MIN)]);
        await one(store, { kind: "fold", until: floorHour(PAST) + HOUR, at: PAST + HOUR }); // folded already in some engines
        for (const grain of [GRAINS.hour, GRAINS.day, GRAINS.month]) {
          for (const slice of [ALL, appOf("a")]) {
            const whole = await store.readRollups({ grain, slice, ...EVERYTHING, parts: ALL_PARTS });
            expect(whole.length).toBe(1);
            expect(Object.keys(whole[0]!.data.err).length).toBe(1);
            for (const parts of [["data"], ["apps"], ["errors"], ["data", "errors"], ["apps", "errors"]] as RollupPart[][]) {
              const got = await store.readRollups({ grain, slice, ...EVERYTHING, parts });
              expect({ grain, slice, parts, got }).toEqual({ grain, slice, parts, got: whole.map((c) => ({ bucket: c.bucket, data: onlyParts(c.data, parts) })) });
            }
          }
        }
      });

      test("readRollups returns only the parts asked for (open hours)", async () => {
        const { store, H } = await openScene();
        const whole = await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H, to: H + HOUR, parts: ALL_PARTS });
        for (const parts of [["data"], ["apps"], ["errors"]] as RollupPart[][]) {
          expect(await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H, to: H + HOUR, parts })).toEqual(whole.map((c) => ({ bucket: c.bucket, data: onlyParts(c.data, parts) })));
        }
      });

      test("signatures: first and last seen, apps and the first example of each failure signature", async () => {
        const store = await freshStore();
        const H = await openHour(store);
        const texts = ["exit code 100: apt-get install failed at line 42", "exit code 101: apt-get install failed at line 7", "disk full on /var/lib/vz"];
        await store.write([
          startOp("g1", { nsapp: "nginx" }, H), startOp("g2", { nsapp: "docker" }, H + MIN), startOp("g3", { nsapp: "nginx" }, H + 2 * MIN),
          startOp("g4", { nsapp: "zabbix" }, H + 3 * MIN), startOp("g5", { nsapp: "yarr" }, H + 4 * MIN),
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
        const known = (await store.signatures([disk, apt, "0000000000000000"])).sort((a, b) => (a.firstSeen - b.firstSeen));
        expect(known).toEqual([
          { id: apt, signature: errorSignature(texts[0]!)!, example: texts[0]!, firstSeen: H + 10 * MIN, lastSeen: H + 20 * MIN, apps: ["docker", "nginx"] },
          { id: disk, signature: errorSignature(texts[2]!)!, example: texts[2]!, firstSeen: H + 30 * MIN, lastSeen: H + 30 * MIN, apps: ["nginx"] },
        ]);
        expect(await store.signatures([])).toEqual([]);
        // Rollups count failures under their signature ids, per slice.
        const [all] = await store.readRollups({ grain: GRAINS.hour, slice: ALL, from: H, to: H + HOUR, parts: ["errors"] });
        expect(all!.data.err).toEqual({ [apt]: 2, [disk]: 1 });
        const [nginx] = await store.readRollups({ grain: GRAINS.hour, slice: appOf("nginx"), from: H, to: H + HOUR, parts: ["errors"] });
        expect(nginx!.data.err).toEqual({ [apt]: 1, [disk]: 1 });
        // Still known, with the same facts, once folded.
        await one(store, { kind: "fold", until: H + HOUR, at: H + HOUR });
        expect((await store.signatures([apt]))[0]).toEqual(known[0]!);
        await expectVerified(store, 5);
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
          expect({ step, ok: check.ok, records: check.records, mismatches: check.mismatches }).toEqual({ step, ok: true, records: n, mismatches: [] });
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
        expect(await get("p6")).toMatchObject({ status: "done", outcome: "success", durationMs: PAST + 2 * DAY - (PAST + 6 * 37 * MIN) });
        expect(await get("p3")).toMatchObject({ status: "failed", outcome: "failed" });
        expect(await get("q1")).toMatchObject({ status: "failed", outcome: "failed", error: "disk full", durationMs: null });
        expect(await get("o2")).toMatchObject({ status: "installing", outcome: "unknown" });
        expect(await get("o6")).toMatchObject({ status: "installing", outcome: "unknown" });
        for (const id of ["p1", "o3", "p7", "gone-held"]) expect(await latestOf(store, id)).toBeUndefined();
        expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual([]);
        const byOutcome = (await allInstalls(store)).reduce((m, r) => ({ ...m, [r.outcome]: (m[r.outcome] ?? 0) + 1 }), {} as Partial<Record<Outcome, number>>);
        expect(await hourTotals(store)).toEqual(outcomes(byOutcome));
      });
    });

    // -------------------------------------------------------------- maintenance

    describe("maintenance", () => {
      test("stuckExecutions lists installs in progress created in [from, before), oldest first, at most limit", async () => {
        const store = await freshStore();
        await store.write([
          startOp("s3", {}, PAST + 3 * HOUR), startOp("s1", {}, PAST + HOUR), startOp("s0", {}, PAST), startOp("s2", {}, PAST + 2 * HOUR),
          startOp("s4", {}, PAST + 4 * HOUR), startOp("done", {}, PAST + 90 * MIN), startOp("cfg", {}, PAST + 150 * MIN),
        ]);
        await store.write([updateOp("done", "done", null, PAST + 100 * MIN), updateOp("cfg", "configuring", null, PAST + 160 * MIN)]);
        expect(await store.stuckExecutions(PAST + HOUR, PAST + 4 * HOUR, 10)).toEqual([
          { executionId: "s1", createdAt: PAST + HOUR },
          { executionId: "s2", createdAt: PAST + 2 * HOUR },
          { executionId: "cfg", createdAt: PAST + 150 * MIN }, // a progress status is still in progress
          { executionId: "s3", createdAt: PAST + 3 * HOUR },
        ].sort((a, b) => a.createdAt - b.createdAt));
        expect((await store.stuckExecutions(PAST, EVERYTHING.to, 2)).map((r) => r.executionId)).toEqual(["s0", "s1"]);
        expect(await store.stuckExecutions(PAST + 5 * HOUR, EVERYTHING.to, 10)).toEqual([]);
      });

      test("expire: an install in progress becomes unknown with its status kept; a late final status still applies", async () => {
        const store = await freshStore();
        await store.write([startOp("stuck", { nsapp: "a" }, PAST), startOp("fine", { nsapp: "a" }, PAST + MIN)]);
        await one(store, updateOp("fine", "done", null, PAST + 2 * MIN));
        const fine = await latestOf(store, "fine");

        expect(await one(store, { kind: "expire", executionId: "stuck", at: PAST + 13 * HOUR })).toEqual({ kind: "expired", changed: true });
        expect(await latestOf(store, "stuck")).toMatchObject({ status: "installing", outcome: "unknown", createdAt: PAST });
        expect(await one(store, { kind: "expire", executionId: "stuck", at: PAST + 14 * HOUR })).toEqual({ kind: "expired", changed: false });
        expect(await one(store, { kind: "expire", executionId: "fine", at: PAST + 13 * HOUR })).toEqual({ kind: "expired", changed: false });
        expect(await latestOf(store, "fine")).toEqual(fine!);
        expect(await one(store, { kind: "expire", executionId: "never", at: PAST + 13 * HOUR })).toEqual({ kind: "expired", changed: false });
        expect(await store.stuckExecutions(EVERYTHING.from, EVERYTHING.to, 10)).toEqual([]);
        expect(await hourTotals(store)).toEqual(outcomes({ unknown: 1, success: 1 }));
        await expectVerified(store, 2);

        expect(await one(store, updateOp("stuck", "failed", "exit code 9", PAST + 15 * HOUR))).toEqual({ kind: "updated", outcome: "failed" });
        expect(await latestOf(store, "stuck")).toMatchObject({ status: "failed", outcome: "failed", error: "exit code 9", durationMs: 15 * HOUR });
        expect(await hourTotals(store)).toEqual(outcomes({ failed: 1, success: 1 }));
        expect(await hourTotals(store, appOf("a"))).toEqual(outcomes({ failed: 1, success: 1 }));
        expect(await one(store, updateOp("stuck", "done", null, PAST + 16 * HOUR))).toEqual({ kind: "already-final", outcome: "failed" });
        await expectVerified(store, 2);
      });

      test("stuck-checked moves the mark only from where it stands (compare-and-set)", async () => {
        const store = await freshStore();
        const m0 = await store.stuckCheckedUntil();
        expect(await one(store, { kind: "stuck-checked", from: m0, until: PAST, at: PAST })).toEqual({ kind: "marked" });
        expect(await store.stuckCheckedUntil()).toBe(PAST);
        // A job that read the old mark lost the race: its mark does not land.
        expect(await one(store, { kind: "stuck-checked", from: m0, until: PAST + HOUR, at: PAST })).toEqual({ kind: "marked" });
        expect(await store.stuckCheckedUntil()).toBe(PAST);
        await one(store, { kind: "stuck-checked", from: PAST, until: PAST + 2 * HOUR, at: PAST });
        expect(await store.stuckCheckedUntil()).toBe(PAST + 2 * HOUR);
      });

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

      test("a load of an older install in progress lowers the stuck mark to it", async () => {
        const store = await freshStore();
        await one(store, { kind: "stuck-checked", from: await store.stuckCheckedUntil(), until: PAST + DAY, at: PAST + DAY });
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
        await one(store, { kind: "stuck-checked", from: await store.stuckCheckedUntil(), until: PAST + DAY, at: PAST + DAY });
        await one(store, startOp("imported-open", {}, PAST + 2 * HOUR));
        expect(await store.stuckCheckedUntil()).toBeLessThanOrEqual(PAST + 2 * HOUR);
      });

      test("countBefore counts installs created, held updates and log entries received before the cutoff", async () => {
        const store = await freshStore();
        await store.write([
          startOp("i1", {}, PAST), startOp("i2", {}, PAST + HOUR), startOp("i3", {}, PAST + 2 * HOUR),
          updateOp("h1", "done", null, PAST + 30 * MIN), updateOp("h2", "done", null, PAST + 3 * HOUR),
          rejectOp(PAST + 10 * MIN), rejectOp(PAST + 70 * MIN), rejectOp(PAST + 4 * HOUR),
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
        await store.write([updateOp("a", "done", null, PAST), updateOp("b", "failed", "x", PAST + MIN), updateOp("c", "done", null, PAST + HOUR), startOp("d", {}, PAST)]);
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

        expect(await one(store, { kind: "delete", randomId: "gone", at: PAST + HOUR })).toEqual({ kind: "deleted", found: true, executions: 1 });
        expect(await latestOf(store, "gone")).toBeUndefined();
        expect((await store.listRejected({ limit: 10 })).map((e) => e.randomId)).toEqual(["log-only", "kept"]);
        expect(await hourTotals(store)).toEqual(outcomes({ in_progress: 1 }));
        expect(await hourTotals(store, appOf("a"))).toEqual(outcomes({ in_progress: 1 }));

        expect(await one(store, { kind: "delete", randomId: "held-only", at: PAST + HOUR })).toEqual({ kind: "deleted", found: true, executions: 0 });
        expect(await store.heldBefore(EVERYTHING.to, 10)).toEqual([]);
        expect(await one(store, { kind: "delete", randomId: "log-only", at: PAST + HOUR })).toEqual({ kind: "deleted", found: true, executions: 0 });
        expect((await store.listRejected({ limit: 10 })).map((e) => e.randomId)).toEqual(["kept"]);
        expect(await one(store, { kind: "delete", randomId: "never", at: PAST + HOUR })).toEqual({ kind: "deleted", found: false, executions: 0 });
        expect(await one(store, { kind: "delete", randomId: "gone", at: PAST + HOUR })).toEqual({ kind: "deleted", found: false, executions: 0 });
        expect((await latestOf(store, "kept"))!.randomId).toBe("kept");
        await expectVerified(store, 1);

        // A deleted install can be reported afresh.
        expect(await one(store, startOp("gone", {}, PAST + 2 * HOUR))).toEqual({ kind: "created", outcome: "in_progress" });
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
        const dropped = await one(store, { kind: "drop-before", before: Date.UTC(2025, 1, 20), at: Date.UTC(2025, 3, 1) });
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
        expect(await one(store, { kind: "drop-before", before: Date.UTC(2025, 1, 20), at: Date.UTC(2025, 3, 1) })).toEqual({ kind: "dropped", executions: 0, until: dropped.until });
        expect(await one(store, loadOp(record("e", { createdAt: Date.UTC(2025, 1, 11) })))).toEqual({ kind: "created", outcome: "success" });
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
        expect(await one(a, loadOp(record("again", { createdAt: Date.UTC(2025, 0, 16) })))).toEqual({ kind: "created", outcome: "success" });
        const kept = (await b.getExecutions("old")).length > 0; // no periods: nothing was dropped
        expect(await one(a, startOp("old", {}, Date.UTC(2025, 0, 17)))).toMatchObject({ kind: kept ? "duplicate" : "created" });
        expect(await remaining(b)).toEqual(["again", "old"]);
        await expectVerified(b, 2);
      });

      test("forget-rejected drops log entries received before a time and counts them", async () => {
        const store = await freshStore();
        await store.write([rejectOp(PAST), rejectOp(PAST + MIN), rejectOp(PAST + 2 * MIN), rejectOp(PAST + 3 * MIN)]);
        await one(store, startOp("r", {}, PAST, { repairs: ["trailing_comma"] })); // a repaired entry ages like any other
        expect(await one(store, { kind: "forget-rejected", before: PAST + 2 * MIN, at: PAST + DAY })).toEqual({ kind: "forgotten", count: 3 });
        expect((await store.listRejected({ limit: 10 })).map((e) => e.receivedAt)).toEqual([PAST + 3 * MIN, PAST + 2 * MIN]);
        expect(await one(store, { kind: "forget-rejected", before: PAST + 2 * MIN, at: PAST + DAY })).toEqual({ kind: "forgotten", count: 0 });
        expect((await store.countBefore(EVERYTHING.to)).rejected).toBe(2);
        expect(await latestOf(store, "r")).toBeDefined(); // only the log forgets
      });

      test("mark-replayed, replayCandidates and countReplayed", async () => {
        const store = await freshStore();
        const RETRY = "still invalid";
        const reasons = ["invalid_json", "invalid_field"] as const;
        await store.write([
          rejectOp(PAST, { reason: "invalid_json", message: "j1" }),
          rejectOp(PAST + 1, { reason: "invalid_field", message: "f1" }),
          rejectOp(PAST + 2, { reason: "already_final", message: "a1" }),
          rejectOp(PAST + 3, { reason: "invalid_json", message: "j2" }),
          rejectOp(PAST + 4, { reason: "invalid_field", message: "f2" }),
          rejectOp(PAST + 5, { reason: "invalid_json", message: "j3" }),
        ]);
        const byMessage = new Map((await store.listRejected({ limit: 10 })).map((e) => [e.message, e.id]));
        const id = (m: string) => byMessage.get(m)!;
        const candidates = async (afterId = 0, limit = 10, rs: readonly RejectReason[] = reasons) =>
          (await store.replayCandidates({ reasons: rs, retryPrefix: RETRY, afterId, limit })).map((e) => e.message);

        expect(await candidates()).toEqual(["j1", "f1", "j2", "f2", "j3"]); // oldest first, of the reasons asked
        expect(await candidates(id("f1"))).toEqual(["j2", "f2", "j3"]);
        expect(await candidates(0, 2)).toEqual(["j1", "f1"]);
        expect(await candidates(0, 10, ["invalid_field"])).toEqual(["f1", "f2"]);
        expect(await store.countReplayed(reasons, RETRY)).toBe(0);

        const at = PAST + DAY;
        expect(await store.write([
          { kind: "mark-replayed", rejectedId: id("j1"), result: "created", at },
          { kind: "mark-replayed", rejectedId: id("f1"), result: `${RETRY}: type must be one of lxc, vm`, at },
          { kind: "mark-replayed", rejectedId: id("j2"), result: "duplicate", at },
          { kind: "mark-replayed", rejectedId: id("a1"), result: "created", at },
        ])).toEqual([{ kind: "marked" }, { kind: "marked" }, { kind: "marked" }, { kind: "marked" }]);
        const j1 = (await store.listRejected({ limit: 10 })).find((e) => e.message === "j1")!;
        expect({ replayedAt: j1.replayedAt, replayResult: j1.replayResult }).toEqual({ replayedAt: at, replayResult: "created" });

        // Replayed for good leave the candidates; "still invalid" ones are tried again.
        expect(await candidates()).toEqual(["f1", "f2", "j3"]);
        expect(await store.countReplayed(reasons, RETRY)).toBe(2);
        expect(await store.countReplayed(["invalid_json"], RETRY)).toBe(2);
        expect(await store.countReplayed(["invalid_field"], RETRY)).toBe(0);
        expect(await store.countReplayed(["already_final"], RETRY)).toBe(1);

        // Marked again: the last mark counts.
        await one(store, { kind: "mark-replayed", rejectedId: id("f1"), result: "updated", at: at + 1 });
        expect(await candidates()).toEqual(["f2", "j3"]);
        expect(await store.countReplayed(reasons, RETRY)).toBe(3);
      });

      // Not SQL LIKE (case-insensitive in SQLite, _ and % wildcards): every engine must agree.
      test("retryPrefix is a plain, case-sensitive prefix", async () => {
        const store = await freshStore();
        await store.write([rejectOp(PAST, { message: "upper" }), rejectOp(PAST + 1, { message: "wild" })]);
        const [wild, upper] = await store.listRejected({ limit: 10 });
        await store.write([
          { kind: "mark-replayed", rejectedId: upper!.id, result: "STILL INVALID, shouting", at: PAST + DAY },
          { kind: "mark-replayed", rejectedId: wild!.id, result: "stillXinvalid", at: PAST + DAY },
        ]);
        expect(await store.replayCandidates({ reasons: ["invalid_json"], retryPrefix: "still invalid", afterId: 0, limit: 10 })).toEqual([]);
        expect(await store.countReplayed(["invalid_json"], "still invalid")).toBe(2);
        expect(await store.countReplayed(["invalid_json"], "still_invalid")).toBe(2);
      });
    });

    // -------------------------------------------------------------- rebuild

    // -------------------------------------------------------------- budgets

    describe("budgets of the rejected-reports log and held reports", () => {
      const KB = 1024;
      const HELD_BUDGET = 16 * 1024 * KB;
      /** Distinct bytes that do not compress (random, base64 for readability), `n` long, never valid JSON. */
      const junk = (n: number): Uint8Array => bytes(`~${Buffer.from(crypto.getRandomValues(new Uint8Array(n))).toString("base64").slice(0, n - 1)}`);
      const sha256 = (b: Uint8Array) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
      const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

      test("identical bodies are stored once, compressed; every entry still shows its whole body", async () => {
        const store = await freshStore();
        const body = bytes(`{"random_id": "x", "type": "lxc", "error": "${"apt-get failed: unable to fetch\\n".repeat(3000)}`); // ~100 KB, broken JSON
        await store.write(Array.from({ length: 50 }, (_, i) => rejectOp(PAST + i, { body })));
        const b = await store.budgets();
        expect(b.log).toMatchObject({ entries: 50, deduplicated: 49, bodyRawBytes: body.byteLength, truncated: 0, dropped: 0, headOnly: 0 });
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
        expect(heads.at(-1)).toMatchObject({ reason: "invalid_json", bodySize: 10 * KB, bodySha256: sha256(sent[149]!), receivedAt: PAST + 149 });
        expect(sameBytes(heads.at(-1)!.body, sent[149]!.subarray(0, 256))).toBe(true);
        // Only whole bodies can be replayed.
        const candidates = await store.replayCandidates({ reasons: ["invalid_json"], retryPrefix: "x", afterId: 0, limit: 200 });
        expect(candidates.map((e) => e.id)).toEqual(whole.map((e) => e.id));
      });

      test("with the budget full of whole entries, a new entry is counted, not stored; lowering the budget keeps what is there", async () => {
        const store = await freshStore();
        await store.write(Array.from({ length: 10 }, (_, i) => rejectOp(PAST + i, { body: junk(10 * KB) })));
        const before = await store.budgets();
        store.setLimits({ logBytes: 50 * KB, heldBytes: HELD_BUDGET });
        expect(await one(store, rejectOp(PAST + 10, { body: junk(10 * KB) }))).toEqual({ kind: "logged" });
        const after = await store.budgets();
        expect(after.log).toMatchObject({ entries: 10, dropped: 1, usedBytes: before.log.usedBytes, limitBytes: 50 * KB });
        expect(await store.listRejected({ limit: 20 })).toHaveLength(10);
      });

      test("forgetting, deleting and retention give the bytes back; a shared body goes with its last entry", async () => {
        const store = await freshStore();
        await store.write([startOp("victim", {}, PAST), updateOp("victim", "done", null, PAST + MIN)]);
        const repeated = bytes(JSON.stringify({ random_id: "victim", status: "failed", error: "x".repeat(20 * KB) }));
        for (let i = 0; i < 3; i++) expect(await one(store, updateOp("victim", "failed", "x", PAST + 2 * MIN, { raw: repeated }))).toMatchObject({ kind: "already-final" });
        await store.write([rejectOp(PAST + 3 * MIN, { body: junk(5 * KB) }), rejectOp(PAST + DAY, { body: junk(5 * KB) })]);
        let b = await store.budgets();
        expect(b.log).toMatchObject({ entries: 5, deduplicated: 2 });
        const oneBody = b.log.bodyRawBytes;

        expect(await one(store, { kind: "delete", randomId: "victim", at: PAST + DAY })).toMatchObject({ found: true });
        b = await store.budgets();
        expect(b.log).toMatchObject({ entries: 2, bodyRawBytes: oneBody - repeated.byteLength });
        expect(await one(store, { kind: "forget-rejected", before: PAST + DAY / 2, at: PAST + DAY })).toEqual({ kind: "forgotten", count: 1 });
        expect((await store.budgets()).log).toMatchObject({ entries: 1, bodyRawBytes: 5 * KB });
        await one(store, { kind: "forget-rejected", before: PAST + DAY + 1, at: PAST + DAY });
        expect((await store.budgets()).log).toMatchObject({ entries: 0, usedBytes: 0, bodyBytes: 0, bodyRawBytes: 0, headOnly: 0 });
      });

      const orphan = (id: string, at: number) => updateOp(id, "failed", `E: ${"unable to fetch archive\n".repeat(170)}`, at); // ~4 KB of error

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
        expect(await latestOf(store, "o-0")).toMatchObject({ status: "failed", outcome: "failed", durationMs: null, createdAt: PAST });
        // The newest wait, and still take their start report.
        expect(await store.getExecutions("o-39")).toEqual([]);
        expect(await one(store, startOp("o-39", { nsapp: "late" }, PAST + HOUR))).toEqual({ kind: "created", outcome: "failed" });
        expect(await latestOf(store, "o-39")).toMatchObject({ nsapp: "late", status: "failed" });
        expect(await hourTotals(store)).toEqual(outcomes({ failed: 40 - b.held.count + 1 }));
        await expectVerified(store, 40 - b.held.count + 1);
      });

      test("expire-held counts what it applied; what is left is still counted", async () => {
        const store = await freshStore();
        await store.write([orphan("old-1", PAST), orphan("old-2", PAST + MIN), orphan("recent", PAST + 6 * DAY)]);
        expect(await one(store, { kind: "expire-held", before: PAST + DAY, limit: 100, at: PAST + 7 * DAY })).toEqual({ kind: "expired-held", count: 2 });
        expect((await store.budgets()).held).toMatchObject({ count: 1, expired: 2, overflowed: 0 });
        await expectVerified(store, 2);
      });
    });

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
          for (const op of ops) writes.push(store.write([op]).then(([r]) => void (seen[op === start ? "start" : "update"] = r)));
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
        const [ra, rb] = await Promise.all([one(a, startOp("same", { nsapp: "x" }, H)), one(b, startOp("same", { nsapp: "y" }, H + 1))]);
        expect([ra.kind, rb.kind].sort()).toEqual(["created", "duplicate"]);
        expect(await a.changeMarker()).not.toBe(marker); // whichever store committed, a sees a change

        // Held on one store, started on the other.
        expect(await one(b, updateOp("cross", "failed", "exit code 4", H + MIN))).toEqual({ kind: "held" });
        expect(await one(a, startOp("cross", { nsapp: "x" }, H + 2 * MIN))).toEqual({ kind: "created", outcome: "failed" });
        expect(await b.heldBefore(EVERYTHING.to, 10)).toEqual([]);

        // Interleaved, in open and folded hours, each store updating what the other started.
        const writes: Promise<unknown>[] = [];
        for (let i = 0; i < 40; i++) {
          const [mine, other] = i % 2 ? [a, b] : [b, a];
          const at = (i % 3 ? H : PAST) + i * MIN;
          writes.push(mine.write([startOp(`i${i}`, { nsapp: `app${i % 3}` }, at)]).then(() => other.write([updateOp(`i${i}`, i % 5 ? "done" : "failed", i % 5 ? null : `exit code ${i}`, at + MIN)])));
        }
        await Promise.all(writes);
        // A fold through one store moves the mark for both.
        expect(await one(b, { kind: "fold", until: H + HOUR, at: H + HOUR })).toMatchObject({ kind: "folded" });
        expect(await a.foldedUntil()).toBe(H + HOUR);
        await a.write([startOp("late", { nsapp: "app1" }, H + HOUR + MIN), updateOp("i3", "done", null, H + 2 * HOUR)]);
        await b.write([updateOp("late", "done", null, H + HOUR + 2 * MIN), { kind: "expire", executionId: "same", at: H + 3 * HOUR }]);

        const total = 43;
        for (const s of [a, b]) expect((await allInstalls(s)).length).toBe(total);
        expect(await a.listExecutions({}, { limit: 100 })).toEqual(await b.listExecutions({}, { limit: 100 }));
        for (const grain of [GRAINS.hour, GRAINS.day, GRAINS.month]) expect(await sortedCells(a, grain)).toEqual(await sortedCells(b, grain));
        expect(await a.readRollups({ grain: GRAINS.hour, slice: ALL, ...EVERYTHING, parts: ALL_PARTS })).toEqual(await b.readRollups({ grain: GRAINS.hour, slice: ALL, ...EVERYTHING, parts: ALL_PARTS }));
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
        const cellsOf = (s: Store) => Promise.all([GRAINS.hour, GRAINS.day, GRAINS.month].map((grain) => sortedCells(s, grain)));
        const before = await cellsOf(a); // read (and kept, where an engine keeps parsed cells)
        await b.write([updateOp("f1", "failed", "exit code 2: late", PAST + HOUR), updateOp("o1", "done", null, H + MIN), startOp("f2", { nsapp: "y" }, PAST + 2 * MIN)]);
        const after = await cellsOf(a);
        expect(after).not.toEqual(before);
        expect(after).toEqual(await cellsOf(b));
        expect(await a.readRollups({ grain: GRAINS.day, slice: ALL, ...EVERYTHING, parts: ["apps"] })).toEqual(await b.readRollups({ grain: GRAINS.day, slice: ALL, ...EVERYTHING, parts: ["apps"] }));
        await expectVerified(a, 3);
      });

      test("large batches (a seed's, a copy's) on two stores at once, beside small ones: one transaction each, everything counted once", async () => {
        const db = await database();
        const a = await db.open();
        const b = await db.open();
        const H = await openHour(a);
        const loads = (prefix: string) => Array.from({ length: 5000 }, (_, i) => loadOp(record(`${prefix}${i}`, { createdAt: PAST + i * MIN, nsapp: `app${i % 7}` })));
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

    // -------------------------------------------------------------- alerts

    describe("alerts", () => {
      const T = PAST + 10 * DAY;
      const msg = (text: string) => JSON.stringify({ title: text });
      const firing = (rule: string, subject: string, channels: string[], heldBack: AlertTransition["heldBack"] = null): AlertTransition => ({ rule, subject, status: "firing", message: msg(`${rule} ${subject} firing`), channels, heldBack });
      const resolved = (rule: string, subject: string, channels: string[], heldBack: AlertTransition["heldBack"] = null): AlertTransition => ({ rule, subject, status: "resolved", message: msg(`${rule} ${subject} resolved`), channels, heldBack });
      const round = (at: number, transitions: AlertTransition[], sends: AlertSend[] = [], rules: { rule: string; summary: string }[] = []): WriteOp => ({ kind: "alert-round", at, rules, transitions, sends });

      test("a round records each transition as a history entry, its state, and a message queued per channel", async () => {
        const store = await freshStore();
        const r = await one(store, round(T, [firing("spike", "app=jellyfin", ["ntfy", "mail"]), firing("quiet", "", [], "silenced")], [], [{ rule: "spike", summary: "1 firing" }, { rule: "quiet", summary: "no reports for 7h" }]));
        expect(r.kind).toBe("alert-recorded");
        if (r.kind !== "alert-recorded") return;
        expect(r.events).toHaveLength(2);
        const [spikeId, quietId] = r.events as [number, number];
        expect(await store.alertStates()).toEqual([
          { rule: "quiet", subject: "", status: "firing", since: T, eventId: quietId, notified: false, lastSentAt: null },
          { rule: "spike", subject: "app=jellyfin", status: "firing", since: T, eventId: spikeId, notified: true, lastSentAt: T },
        ]);
        expect(await store.alertRuleMarks()).toEqual([
          { rule: "quiet", silencedUntil: null, evaluatedAt: T, summary: "no reports for 7h" },
          { rule: "spike", silencedUntil: null, evaluatedAt: T, summary: "1 firing" },
        ]);
        const history = await store.alertHistory({ limit: 10 });
        expect(history.map((e) => [e.id, e.rule, e.status, e.at, e.notifiedAt, e.heldBack])).toEqual([
          [quietId, "quiet", "firing", T, null, "silenced"],
          [spikeId, "spike", "firing", T, T, null],
        ]);
        expect(history[1]!.message).toBe(msg("spike app=jellyfin firing"));
        expect(history[1]!.deliveries).toEqual([
          { channel: "ntfy", state: "pending", attempts: 0, lastError: null, sentAt: null },
          { channel: "mail", state: "pending", attempts: 0, lastError: null, sentAt: null },
        ]);
        expect(await store.alertQueue()).toEqual([{ channel: "mail", pending: 1 }, { channel: "ntfy", pending: 1 }]);
        const due = await store.alertDue(T, 10);
        expect(due.map((d) => [d.channel, d.eventId, d.message, d.nextAt, d.attempts, d.state])).toEqual([
          ["ntfy", spikeId, msg("spike app=jellyfin firing"), T, 0, "pending"],
          ["mail", spikeId, msg("spike app=jellyfin firing"), T, 0, "pending"],
        ]);
        expect(await store.alertDue(T - 1, 10)).toEqual([]);
        // Paging and one rule's history.
        expect((await store.alertHistory({ limit: 10, before: quietId })).map((e) => e.id)).toEqual([spikeId]);
        expect((await store.alertHistory({ limit: 10, rule: "quiet" })).map((e) => e.id)).toEqual([quietId]);
      });

      test("a resolve keeps the time of the last firing sent; a firing held back is sent later, once", async () => {
        const store = await freshStore();
        await one(store, round(T, [firing("spike", "", ["hook"])]));
        const r = await one(store, round(T + HOUR, [resolved("spike", "", ["hook"])]));
        const [state] = await store.alertStates();
        expect(state).toMatchObject({ status: "ok", since: T + HOUR, notified: true, lastSentAt: T });
        if (r.kind === "alert-recorded") expect(state!.eventId).toBe(r.events[0]!);
        // Fires again within the cooldown: recorded, held back.
        await one(store, round(T + 2 * HOUR, [firing("spike", "", [], "cooldown")]));
        expect((await store.alertStates())[0]).toMatchObject({ status: "firing", notified: false, lastSentAt: T });
        // The cooldown ended and it still fires: sent now, and only once.
        const send: AlertSend = { rule: "spike", subject: "", message: msg("late"), channels: ["hook"] };
        await one(store, round(T + 3 * HOUR, [], [send]));
        await one(store, round(T + 4 * HOUR, [], [send]));
        expect((await store.alertStates())[0]).toMatchObject({ status: "firing", notified: true, lastSentAt: T + 3 * HOUR, since: T + 2 * HOUR });
        const [latest] = await store.alertHistory({ limit: 1 });
        expect(latest).toMatchObject({ status: "firing", at: T + 2 * HOUR, notifiedAt: T + 3 * HOUR, heldBack: "cooldown" });
        expect(latest!.deliveries.map((d) => d.channel)).toEqual(["hook"]);
        expect((await store.alertDue(T + 5 * HOUR, 10)).map((d) => d.message)).toEqual([msg("spike  firing"), msg("spike  resolved"), msg("late")]);
        // A send for an alert that does not fire, or is unknown, does nothing.
        await one(store, round(T + 5 * HOUR, [resolved("spike", "", ["hook"])], [{ ...send, subject: "nobody" }]));
        await one(store, round(T + 6 * HOUR, [], [send]));
        expect(await store.alertQueue()).toEqual([{ channel: "hook", pending: 4 }]);
      });

      test("deliveries: sent, retried later, failed for good; a message marked already stays as it is", async () => {
        const store = await freshStore();
        await one(store, round(T, [firing("spike", "", ["a", "b", "c"])]));
        const [a, b, c] = await store.alertDue(T, 10);
        expect(await one(store, { kind: "alert-delivery", id: a!.id, result: "sent", error: null, nextAt: null, at: T + 1000 })).toEqual({ kind: "alert-delivery-marked", found: true });
        expect(await one(store, { kind: "alert-delivery", id: b!.id, result: "retry", error: "connection refused", nextAt: T + 60_000, at: T + 1000 })).toEqual({ kind: "alert-delivery-marked", found: true });
        await one(store, { kind: "alert-delivery", id: c!.id, result: "failed", error: "HTTP 404", nextAt: null, at: T + 1000 });
        expect(await one(store, { kind: "alert-delivery", id: a!.id, result: "failed", error: "late", nextAt: null, at: T + 2000 })).toEqual({ kind: "alert-delivery-marked", found: false });
        expect(await store.alertDue(T + 59_999, 10)).toEqual([]);
        expect((await store.alertDue(T + 60_000, 10)).map((d) => [d.id, d.attempts, d.lastError])).toEqual([[b!.id, 1, "connection refused"]]);
        expect(await store.alertQueue()).toEqual([{ channel: "b", pending: 1 }]);
        const [event] = await store.alertHistory({ limit: 1 });
        expect(event!.deliveries).toEqual([
          { channel: "a", state: "sent", attempts: 1, lastError: null, sentAt: T + 1000 },
          { channel: "b", state: "pending", attempts: 1, lastError: "connection refused", sentAt: null },
          { channel: "c", state: "failed", attempts: 1, lastError: "HTTP 404", sentAt: null },
        ]);
      });

      test("silences are set and lifted; rule marks keep them across rounds", async () => {
        const store = await freshStore();
        await one(store, { kind: "alert-silence", rule: "spike", until: T + DAY, at: T });
        await one(store, round(T + 60_000, [], [], [{ rule: "spike", summary: "ok" }]));
        expect(await store.alertRuleMarks()).toEqual([{ rule: "spike", silencedUntil: T + DAY, evaluatedAt: T + 60_000, summary: "ok" }]);
        await one(store, { kind: "alert-silence", rule: "spike", until: null, at: T + HOUR });
        expect(await store.alertRuleMarks()).toEqual([{ rule: "spike", silencedUntil: null, evaluatedAt: T + 60_000, summary: "ok" }]);
      });

      test("forget removes old history and finished messages, never an alert's current entry nor a queued message", async () => {
        const store = await freshStore();
        await one(store, round(T, [firing("old", "", ["hook"]), firing("kept", "", [])]));
        await one(store, round(T + HOUR, [resolved("old", "", [])]));
        await one(store, round(T + 2 * HOUR, [firing("queued", "", ["hook"])]));
        const due = await store.alertDue(T + 3 * HOUR, 10);
        await one(store, { kind: "alert-delivery", id: due[0]!.id, result: "sent", error: null, nextAt: null, at: T + 60_000 });
        const r = await one(store, { kind: "alert-forget", before: T + 3 * HOUR, at: T + 4 * HOUR });
        // "old" firing (its message sent) goes; "old" resolved and "kept" are current; "queued" still waits.
        expect(r).toEqual({ kind: "alert-forgotten", events: 1, messages: 1 });
        expect((await store.alertHistory({ limit: 10 })).map((e) => [e.rule, e.status])).toEqual([["queued", "firing"], ["old", "resolved"], ["kept", "firing"]]);
        expect(await store.alertQueue()).toEqual([{ channel: "hook", pending: 1 }]);
      });

      test("rejectedCounts counts the log by reason in a window", async () => {
        const store = await freshStore();
        await store.write([
          rejectOp(T - 1),
          rejectOp(T),
          rejectOp(T + 10, { reason: "invalid_field", field: "type", message: "bad type" }),
          rejectOp(T + 20, { reason: "invalid_field", field: "type", message: "bad type" }),
          rejectOp(T + HOUR),
        ]);
        await one(store, startOp("rep", {}, T + 30, { repairs: ["unescaped quote"] }));
        expect(await store.rejectedCounts(T, T + HOUR)).toEqual({ invalid_json: 1, invalid_field: 2, repaired: 1 });
        expect(await store.rejectedCounts(T + 2 * HOUR, T + 3 * HOUR)).toEqual({});
      });

      test("alert state survives close and reopen", async () => {
        const db = await database();
        const store = await db.open();
        await one(store, round(T, [firing("spike", "app=x", ["hook"])]));
        await one(store, { kind: "alert-silence", rule: "spike", until: T + DAY, at: T });
        const before = { states: await store.alertStates(), marks: await store.alertRuleMarks(), history: await store.alertHistory({ limit: 10 }), due: await store.alertDue(T, 10) };
        await store.close();
        const reopened = await db.open();
        expect({ states: await reopened.alertStates(), marks: await reopened.alertRuleMarks(), history: await reopened.alertHistory({ limit: 10 }), due: await reopened.alertDue(T, 10) }).toEqual(before);
      });
    });

    // -------------------------------------------------------------- the relay's outbox

    describe("issue links", () => {
      const T = PAST + 20 * DAY;
      const SIG = "00112233aabbccdd";
      const issue = (number: number, how: "created" | "found" = "created") => ({ tracker: "gitea", repo: "community/ProxmoxVE", number, url: `https://git.example.org/community/ProxmoxVE/issues/${number}`, title: `jellyfin: exit 100 (#${number})`, how });
      const claim = (store: Store, owner: string, at = T, signature = SIG) => one(store, { kind: "issue-claim", signature, owner, leaseMs: 60_000, at });
      const settle = (store: Store, owner: string, link: ReturnType<typeof issue> | null, at = T, signature = SIG) => one(store, { kind: "issue-settle", signature, owner, link, at });

      test("a claim keeps others out until its lease ends; the same owner may claim again", async () => {
        const store = await freshStore();
        expect(await claim(store, "a")).toEqual({ kind: "issue-claimed" });
        expect(await claim(store, "b", T + 1000)).toEqual({ kind: "issue-busy", until: T + 60_000 });
        expect(await claim(store, "a", T + 2000)).toEqual({ kind: "issue-claimed" });
        expect(await claim(store, "b", T + 61_000)).toEqual({ kind: "issue-busy", until: T + 62_000 });
        expect(await claim(store, "b", T + 62_000)).toEqual({ kind: "issue-claimed" });
        // A claim is not a link.
        expect(await store.issueLinks([SIG])).toEqual([]);
        expect(await store.issueLinks()).toEqual([]);
      });

      test("a settled claim is a link; the first link stays, whoever settles later, and a claim finds it", async () => {
        const store = await freshStore();
        await claim(store, "a");
        const first = { ...issue(41), signature: SIG, linkedAt: T + 5 };
        expect(await settle(store, "a", issue(41), T + 5)).toEqual({ kind: "issue-linked", link: first });
        expect(await store.issueLinks([SIG])).toEqual([first]);
        expect(await claim(store, "b", T + 10)).toEqual({ kind: "issue-linked", link: first });
        expect(await settle(store, "b", issue(42), T + 20)).toEqual({ kind: "issue-linked", link: first });
        expect(await settle(store, "a", null, T + 30)).toEqual({ kind: "issue-released" });
        expect(await store.issueLinks([SIG])).toEqual([first]);
      });

      test("a release frees only the owner's claim", async () => {
        const store = await freshStore();
        await claim(store, "a");
        expect(await settle(store, "b", null)).toEqual({ kind: "issue-released" });
        expect(await claim(store, "b", T + 1)).toMatchObject({ kind: "issue-busy" });
        await settle(store, "a", null, T + 2);
        expect(await claim(store, "b", T + 3)).toEqual({ kind: "issue-claimed" });
      });

      test("listing: every link newest first, or those of some signatures; forget removes a link or a claim", async () => {
        const store = await freshStore();
        const sigs = ["1111111111111111", "2222222222222222", "3333333333333333"] as const;
        for (const [i, sig] of sigs.entries()) {
          await claim(store, "a", T + i, sig);
          await settle(store, "a", issue(i + 1, i === 1 ? "found" : "created"), T + 100 + i, sig);
        }
        await claim(store, "a", T, "4444444444444444");
        expect((await store.issueLinks()).map((l) => [l.signature, l.number, l.how])).toEqual([[sigs[2], 3, "created"], [sigs[1], 2, "found"], [sigs[0], 1, "created"]]);
        expect((await store.issueLinks([sigs[0], "4444444444444444", "ffffffffffffffff"])).map((l) => l.signature)).toEqual([sigs[0]]);
        expect(await store.issueLinks([])).toEqual([]);
        expect(await one(store, { kind: "issue-forget", signature: sigs[1], at: T })).toEqual({ kind: "issue-forgotten", found: true });
        expect(await one(store, { kind: "issue-forget", signature: "4444444444444444", at: T })).toEqual({ kind: "issue-forgotten", found: true });
        expect(await one(store, { kind: "issue-forget", signature: sigs[1], at: T })).toEqual({ kind: "issue-forgotten", found: false });
        expect((await store.issueLinks()).map((l) => l.signature)).toEqual([sigs[2], sigs[0]]);
        // A forgotten signature can be claimed and linked anew.
        expect(await claim(store, "b", T + 500, sigs[1])).toEqual({ kind: "issue-claimed" });
      });

      test("links are kept across a close and reopen", async () => {
        const db = await database();
        const store = await db.open();
        await claim(store, "a");
        await settle(store, "a", issue(7));
        await store.close();
        const again = await db.open();
        expect(await again.issueLinks([SIG])).toEqual([{ ...issue(7), signature: SIG, linkedAt: T }]);
        expect(await claim(again, "b")).toMatchObject({ kind: "issue-linked" });
      });
    });

    describe("relay outbox", () => {
      const policy = (over: Partial<RelayPolicy> = {}): RelayPolicy => ({ protocols: ["telemetry", "upload"], repos: [], omit: [], maxBytes: 1 << 30, ...over });
      const tel = (randomId: string, executionId: string, status: string, at: number, fields: ReportFields = {}) =>
        startOp(randomId, { status, ...fields }, at, { executionId, payloadVersion: 2 });
      const claim = async (store: Store, owner = "a", limit = 100, at = PAST) => one(store, { kind: "relay-claim", owner, limit, leaseMs: 60_000, at });
      const settle = (store: Store, over: Partial<Extract<WriteOp, { kind: "relay-settle" }>>) =>
        one(store, { kind: "relay-settle", owner: "a", sent: [], failed: [], refused: [], released: [], at: PAST, ...over });
      /** Claims and sends everything, as a sender does, and returns each entry in the order sent: endpoint and body. */
      async function drain(store: Store): Promise<{ endpoint: string; body: Record<string, unknown> }[]> {
        const out: { endpoint: string; body: Record<string, unknown> }[] = [];
        for (let round = 0; round < 100; round++) {
          const { entries } = await claim(store);
          if (entries.length === 0) return out;
          for (const e of entries) out.push({ endpoint: e.endpoint, body: JSON.parse(e.body) as Record<string, unknown> });
          await settle(store, { sent: entries.map((e) => e.id) });
        }
        throw new Error("the outbox never drained");
      }

      test("nothing is queued while the store relays nothing", async () => {
        const store = await freshStore();
        await store.write([startOp("r0", {}, PAST), updateOp("r0", "done", null, PAST + MIN)]);
        expect(await claim(store)).toEqual({ kind: "claimed", paused: false, entries: [] });
        expect(await store.relayStatus()).toMatchObject({ entries: 0, bytes: 0, sent: 0 });
      });

      test("every report that changed what is stored is queued in its protocol, in order per execution; repeats, refusals and loads are not", async () => {
        const store = await freshStore();
        store.setRelay(policy());
        await store.write([
          startOp("u1", { nsapp: "nginx", disableip6: null }, PAST),
          startOp("u1", { nsapp: "nginx" }, PAST + 1), // the client's retry: a duplicate
          tel("t1", "t1", "installing", PAST + 2, { nsapp: "jellyfin", repoSource: "ProxmoxVE", kernelVersion: "6.8" }),
          rejectOp(PAST + 3),
          loadOp(record("l1", { createdAt: PAST })),
        ]);
        await store.write([
          updateOp("u1", "failed", "exit code 100", PAST + MIN),
          tel("t1", "t1", "configuring", PAST + MIN),
          tel("t1", "t1", "configuring", PAST + MIN + 1), // nothing new
          tel("t1", "t1", "failed", PAST + 2 * MIN, { exitCode: 100, error: "exit_code=100 | apt", errorCategory: "dependency", repoSource: "ProxmoxVE", kernelVersion: "6.8" }),
          tel("t1", "t1", "failed", PAST + 2 * MIN + 1, { exitCode: 100, error: "exit_code=100 | apt" }), // a repeated final report
        ]);
        const status = await store.relayStatus();
        expect(status).toMatchObject({ entries: 5, waiting: 0, refused: 0, head: { queuedAt: PAST, attempts: 0, lastError: null } });
        expect(status.bytes).toBeGreaterThan(0);

        // The first claim has each execution's first entry only.
        const first = await claim(store);
        expect(first.entries.map((e) => [e.executionId, e.endpoint])).toEqual([["u1", "upload"], ["t1", "telemetry"]]);
        expect(first.entries[0]!.id).toBeLessThan(first.entries[1]!.id);
        expect(JSON.parse(first.entries[0]!.body)).toEqual({
          ct_type: 1, type: "lxc", disk_size: 8, core_count: 2, ram_size: 2048, os_type: "debian", os_version: "12",
          nsapp: "nginx", method: "default", pve_version: "8.2.2", status: "installing", random_id: "u1",
        });
        await settle(store, { sent: first.entries.map((e) => e.id) });
        const rest = await drain(store);
        expect(rest.map((e) => [e.endpoint, e.body.status])).toEqual([["updatestatus", "failed"], ["telemetry", "configuring"], ["telemetry", "failed"]]);
        expect(rest[0]!.body).toEqual({ status: "failed", error: "exit code 100", random_id: "u1" });
        expect(rest[2]!.body).toMatchObject({
          payload_version: 2, random_id: "t1", execution_id: "t1", type: "lxc", nsapp: "nginx", status: "failed", exit_code: 100,
          error: "exit_code=100 | apt", error_category: "dependency", repo_source: "ProxmoxVE", kernel_version: "6.8",
        });
        expect(await store.relayStatus()).toMatchObject({ entries: 0, bytes: 0, sent: 5, head: null });
      });

      test("a final status held before its start waits, and is sent after the start; applied on its own, it is sent as it stands", async () => {
        const store = await freshStore();
        store.setRelay(policy());
        expect(await one(store, updateOp("h1", "done", null, PAST))).toEqual({ kind: "held" });
        expect(await one(store, tel("h2", "h2", "success", PAST + 1, { exitCode: 0 }))).toEqual({ kind: "held" });
        expect(await store.relayStatus()).toMatchObject({ entries: 2, waiting: 2 });
        expect((await claim(store)).entries).toEqual([]);

        await one(store, startOp("h1", {}, PAST + MIN));
        expect(await drain(store)).toEqual([
          { endpoint: "upload", body: expect.objectContaining({ random_id: "h1", status: "installing" }) },
          { endpoint: "updatestatus", body: { status: "done", random_id: "h1" } },
        ]);
        // h2's start never comes: applied on its own, its entry is sent as it stands.
        expect(await one(store, { kind: "expire-held", before: PAST + HOUR, limit: 10, at: PAST + HOUR })).toEqual({ kind: "expired-held", count: 1 });
        expect(await drain(store)).toEqual([{ endpoint: "telemetry", body: expect.objectContaining({ execution_id: "h2", status: "success", exit_code: 0 }) }]);
        expect(await store.relayStatus()).toMatchObject({ entries: 0, waiting: 0, sent: 3 });
      });

      test("only the chosen repositories, without the omitted fields", async () => {
        const store = await freshStore();
        store.setRelay(policy({ repos: ["proxmoxve", "someone/proxmoxve-fork"], omit: ["error", "cpu_model"] }));
        await store.write([
          tel("main", "main", "failed", PAST, { type: "pve", repoSource: "ProxmoxVE", repoSlug: "community-scripts/ProxmoxVE", error: "exit_code=1 | x", exitCode: 1, cpuModel: "Xeon" }),
          tel("fork", "fork", "failed", PAST, { type: "pve", repoSource: "external", repoSlug: "Someone/ProxmoxVE", error: "exit_code=1", exitCode: 1 }),
          tel("fork2", "fork2", "failed", PAST, { type: "pve", repoSource: "external", repoSlug: "someone/ProxmoxVE-fork", exitCode: 1 }),
          tel("dev", "dev", "success", PAST, { type: "pve", repoSource: "ProxmoxVED", exitCode: 0 }),
          startOp("old", {}, PAST), // /upload: no repository, counted as ProxmoxVE (as the community service files it)
        ]);
        // A status update carries no repository: the stored execution's counts.
        await store.write([updateOp("old", "failed", "exit code 2", PAST + MIN)]);
        const sent = await drain(store);
        expect(sent.map((e) => e.body.random_id)).toEqual(["main", "fork2", "old", "old"]);
        expect(sent[0]!.body).not.toHaveProperty("error");
        expect(sent[0]!.body).not.toHaveProperty("cpu_model");
        expect(sent[0]!.body).toMatchObject({ exit_code: 1, repo_slug: "community-scripts/ProxmoxVE" });
        expect(sent[3]!.body).toEqual({ status: "failed", random_id: "old" });
      });

      test("only the chosen protocols: /upload reports, held ones too, stay home when only /telemetry is relayed", async () => {
        const store = await freshStore();
        store.setRelay(policy({ protocols: ["telemetry"] }));
        await store.write([updateOp("p1", "done", null, PAST), startOp("p2", {}, PAST), tel("p3", "p3", "installing", PAST)]);
        await store.write([startOp("p1", {}, PAST + MIN)]);
        expect((await drain(store)).map((e) => [e.endpoint, e.body.random_id])).toEqual([["telemetry", "p3"]]);
        expect(await store.relayStatus()).toMatchObject({ entries: 0, waiting: 0, sent: 1 });
      });

      test("past the bound the oldest entries not in flight are dropped and counted", async () => {
        const store = await freshStore();
        store.setRelay(policy());
        await one(store, startOp("b99", {}, PAST));
        const one_ = (await store.relayStatus()).bytes;
        await one(store, { kind: "relay-control", action: "discard", at: PAST });
        store.setRelay(policy({ maxBytes: one_ * 10 }));
        // 30 start reports of the same size: the outbox keeps the newest 10.
        for (let i = 0; i < 3; i++) await store.write(Array.from({ length: 10 }, (_, j) => startOp(`b${i}${j}`, {}, PAST + i * 10 + j)));
        const status = await store.relayStatus();
        expect(status).toMatchObject({ entries: 10, bytes: one_ * 10, dropped: { bound: 20, discarded: 1 } });
        // An entry in flight stays; the oldest others go instead.
        const inFlight = (await claim(store, "a", 1)).entries[0]!;
        expect(inFlight.randomId).toBe("b20");
        await one(store, startOp("b30", {}, PAST + 100));
        expect((await drain(store)).map((e) => e.body.random_id)).toEqual(["b20", "b22", "b23", "b24", "b25", "b26", "b27", "b28", "b29", "b30"]);
        expect(await store.relayStatus()).toMatchObject({ entries: 0, bytes: 0, dropped: { bound: 21, discarded: 1 } });
      });

      test("failed, refused, released, paused, requeued, discarded; deleting an install removes its entries", async () => {
        const store = await freshStore();
        store.setRelay(policy());
        await store.write([startOp("f1", {}, PAST), startOp("f2", {}, PAST + 1), startOp("f3", {}, PAST + 2), startOp("f4", {}, PAST + 3)]);
        await one(store, updateOp("f2", "done", null, PAST + MIN));
        const [e1, e2, e3, e4] = (await claim(store)).entries;
        // A claim again by the same owner (a sender that restarted) gets the same entries.
        expect((await claim(store)).entries.map((e) => e.id)).toEqual([e1!.id, e2!.id, e3!.id, e4!.id]);
        const failed = [{ id: e2!.id, error: "HTTP 503", retryAt: PAST + MIN }];
        expect(await settle(store, { sent: [e1!.id], failed, refused: [{ id: e3!.id, error: "HTTP 400: invalid payload" }], released: [e4!.id] })).toEqual({ kind: "settled", sent: 1 });
        expect(await store.relayStatus()).toMatchObject({ entries: 4, refused: 1, sent: 1, failedAttempts: 1, refusals: 1, head: { attempts: 1, lastError: "HTTP 503" } });
        // f2's entry failed: not offered before its retry time, and f2's update waits behind it; f3 (refused) is not offered.
        expect((await claim(store, "a", 100, PAST + MIN - 1)).entries.map((e) => e.randomId)).toEqual(["f4"]);
        const again = (await claim(store, "a", 100, PAST + MIN)).entries;
        expect(again.map((e) => [e.randomId, e.endpoint, e.attempts])).toEqual([["f2", "upload", 1], ["f4", "upload", 0]]);
        await settle(store, { released: again.map((e) => e.id) });

        expect(await one(store, { kind: "relay-control", action: "pause", at: PAST })).toEqual({ kind: "relay-controlled", entries: 0 });
        expect(await claim(store)).toEqual({ kind: "claimed", paused: true, entries: [] });
        expect((await store.relayStatus()).paused).toBe(true);
        await one(store, { kind: "relay-control", action: "resume", at: PAST });
        expect(await one(store, { kind: "relay-control", action: "requeue", at: PAST })).toEqual({ kind: "relay-controlled", entries: 1 });
        expect((await claim(store, "a", 100, PAST + MIN)).entries.map((e) => e.randomId)).toEqual(["f2", "f3", "f4"]);

        await one(store, { kind: "delete", randomId: "f2", at: PAST });
        expect(await store.relayStatus()).toMatchObject({ entries: 2, paused: false });
        expect(await one(store, { kind: "relay-control", action: "discard", at: PAST })).toEqual({ kind: "relay-controlled", entries: 2 });
        // A settlement of entries discarded meanwhile counts nothing.
        expect(await settle(store, { sent: [e3!.id, e4!.id] })).toEqual({ kind: "settled", sent: 0 });
        expect(await store.relayStatus()).toMatchObject({ entries: 0, bytes: 0, sent: 1, dropped: { bound: 0, discarded: 2 } });
        // Ids are never handed out again: a new entry does not take a discarded one's.
        await one(store, startOp("f5", {}, PAST + 5));
        expect((await claim(store)).entries[0]!.id).toBeGreaterThan(e4!.id);
      });

      test("the outbox, its counters and the pause survive a reopen", async () => {
        const db = await database();
        const store = await db.open();
        store.setRelay(policy());
        await store.write([startOp("k1", {}, PAST), updateOp("k2", "done", null, PAST)]);
        await one(store, { kind: "relay-control", action: "pause", at: PAST });
        const before = await store.relayStatus();
        await store.close();
        const reopened = await db.open();
        expect(await reopened.relayStatus()).toEqual(before);
        await one(reopened, { kind: "relay-control", action: "resume", at: PAST });
        expect((await drain(reopened)).map((e) => e.body.random_id)).toEqual(["k1"]);
      });
    });

    // -------------------------------------------------------------- durability

    describe("close and reopen", () => {
      test("close resolves; a reopened store sees everything written", async () => {
        const db = await database();
        const store = await db.open();
        const records = await mixedWorkload(store, async () => {});
        await store.write([rejectOp(PAST, { randomId: "p0" }), { kind: "stuck-checked", from: await store.stuckCheckedUntil(), until: PAST + HOUR, at: PAST + DAY }]);
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
          signatures: (await s.signatures([failureSignatureId("failed", "exit code 100: apt-get install failed at line 42")!])),
        });
        const before = await snapshot(store);
        expect(before.signatures).toHaveLength(1);
        // The slices compared hold data (a wrong slice key would compare empty answers).
        for (const slice of apps) expect((before.rollups[`${GRAINS.day} ${slice}`] as unknown[]).length).toBeGreaterThan(0);
        expect(before.held).toEqual(["held-at-close"]);
        await expect(store.close()).resolves.toBeUndefined();

        const reopened = await db.open();
        expect(await snapshot(reopened)).toEqual(before);
        await expectVerified(reopened, records);
        // And it goes on: the held update still waits for its start.
        expect(await one(reopened, startOp("held-at-close", {}, PAST + 2 * DAY))).toEqual({ kind: "created", outcome: "success" });
        await expectVerified(reopened, records + 1);
      });
    });
  });
}
