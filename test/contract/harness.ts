// The Store contract suite's shared parts (suite.ts runs the suite): fresh databases of one
// engine, and what the feature files build ops with and read results through, written against
// src/store/contract/ alone.
//
// Stores are opened only through openEngine (src/store/open.ts) and used only through
// `engine.store`: no SQL, no engine internals. Expectations come from the contract's doc comments
// and the pure domain helpers (outcomes, error signatures, rollup slices), and "rollups equal a
// recount" is verifyRollups, which recounts every cell through the contract as well.
//
// Times: PAST is long before any fresh database's fold mark could matter to a test; tests about
// open hours take their hours after the store's own mark (`openHour`), so none depends on where
// an engine starts the mark.
import { afterEach, expect } from "bun:test";
import { UNDESCRIBED, kindOfType, type Descriptive, type Execution, type Report } from "../../src/domain/execution.ts";
import { OUTCOMES, deriveOutcome, type Outcome } from "../../src/domain/outcome.ts";
import type { Rejection } from "../../src/domain/rejection.ts";
import {
  ALL_APPS,
  GRAINS,
  appSlice,
  sliceKey,
  storedSlicesOf,
  type Grain,
  type RollupData,
  type RollupPart,
} from "../../src/domain/rollup.ts";
import { DAY, HOUR, floorHour } from "../../src/domain/time.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import type { ExecutionFilter, ListCursor, RollupCell } from "../../src/store/contract/executions.ts";
import type { ResultFor, Store, WriteOp } from "../../src/store/contract/store.ts";
import { openEngine } from "../../src/store/open.ts";

/** Fresh, empty databases of one engine: an SQLite file in a new directory, a new PostgreSQL database. */
export interface EngineFactory {
  name: string;
  create(): Promise<{ location: string; destroy(): Promise<void> }>;
}

export const MIN = 60_000;
/** Rollup slices of installs (the default view): every app, and one app; every repo. */
export const ALL = sliceKey("install", null, ALL_APPS);
export const appOf = (nsapp: string | null): string => sliceKey("install", null, appSlice(nsapp));
/**
 * The slices rollupCells lists for /upload installs of these apps on a PVE host, sorted: the two
 * stored ones of each (its repo and platform classes) and the slices of every repo and platform.
 */
export const slicesOfApps = (apps: readonly string[]): string[] =>
  [
    ...new Set(
      apps.flatMap((nsapp) => [
        ...storedSlicesOf({ type: "lxc", repoSource: null, nsapp, platform: null, pveVersion: "8.2.2" }),
        ALL,
        appOf(nsapp),
      ]),
    ),
  ].sort();
/** Early in a month and a day, so PAST + a few hours stays in both. */
export const PAST = Date.UTC(2025, 2, 10, 8, 0, 0);
export const EVERYTHING = { from: Number.MIN_SAFE_INTEGER, to: Number.MAX_SAFE_INTEGER };
export const ALL_PARTS: readonly RollupPart[] = ["data", "apps", "errors"];

// ------------------------------------------------------------------ building ops

type ReportOp = Extract<WriteOp, { kind: "report" }>;
type Repaired = { repairs?: readonly string[]; raw?: Uint8Array };
/** What a report says: the descriptive fields (type, nsapp, ...) and how the run stands. */
export type ReportFields = Partial<Descriptive> &
  Partial<
    Pick<Report, "status" | "error" | "exitCode" | "errorCategory" | "failedCommand" | "failedLine" | "installDuration">
  >;

export const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

const DESCRIPTIVE: Descriptive = {
  ...UNDESCRIBED,
  type: "lxc",
  ctType: 1,
  diskSize: 8,
  coreCount: 2,
  ramSize: 2048,
  osType: "debian",
  osVersion: "12",
  disableip6: "yes",
  nsapp: "nginx",
  method: "default",
  pveVersion: "8.2.2",
};

/** A report with every descriptive field (a start report unless `fields` give a final status); the outcome follows the status. */
function startReport(
  randomId: string,
  fields: ReportFields = {},
  executionId = randomId,
  payloadVersion: number | null = null,
): Report {
  const {
    status = "installing",
    error = null,
    exitCode = null,
    errorCategory = null,
    failedCommand = null,
    failedLine = null,
    installDuration = null,
    ...descriptive
  } = fields;
  return {
    executionId,
    randomId,
    payloadVersion,
    fields: { ...DESCRIPTIVE, ...descriptive },
    status,
    error,
    outcome: deriveOutcome(status, error),
    exitCode,
    errorCategory,
    failedCommand,
    failedLine,
    installDuration,
  };
}

/** An /upload start report (or, with `executionId`/`payloadVersion`, a /telemetry report carrying every field). */
export function startOp(
  randomId: string,
  fields: ReportFields,
  at: number,
  opts: Repaired & { executionId?: string; payloadVersion?: number } = {},
): ReportOp {
  const report = startReport(randomId, fields, opts.executionId ?? randomId, opts.payloadVersion ?? null);
  const endpoint = report.payloadVersion === null ? "upload" : "telemetry";
  return {
    kind: "report",
    endpoint,
    report,
    raw: opts.raw ?? bytes(JSON.stringify(report)),
    repairs: opts.repairs ?? [],
    at,
  };
}

/** An /upload status update: how the run ended, no descriptive fields. */
export function updateOp(
  randomId: string,
  status: string,
  error: string | null,
  at: number,
  opts: Repaired = {},
): ReportOp {
  const report: Report = {
    executionId: randomId,
    randomId,
    payloadVersion: null,
    fields: null,
    status,
    error,
    outcome: deriveOutcome(status, error),
    exitCode: null,
    errorCategory: null,
    failedCommand: null,
    failedLine: null,
    installDuration: null,
  };
  return {
    kind: "report",
    endpoint: "updatestatus",
    report,
    raw: opts.raw ?? bytes(JSON.stringify({ random_id: randomId, status, error })),
    repairs: opts.repairs ?? [],
    at,
  };
}

/** A complete execution as `load` takes it; the outcome follows the status unless given, the kind the type. */
export function record(randomId: string, fields: Partial<Execution> & { createdAt: number }): Execution {
  const status = fields.status ?? "done";
  const error = fields.error ?? null;
  const outcome = fields.outcome ?? deriveOutcome(status, error);
  const type = fields.type ?? "lxc";
  return {
    ...DESCRIPTIVE,
    executionId: randomId,
    randomId,
    attempt: 1,
    kind: kindOfType(type),
    payloadVersion: null,
    status,
    outcome,
    error,
    exitCode: null,
    errorCategory: null,
    failedCommand: null,
    failedLine: null,
    installDuration: null,
    updatedAt: fields.createdAt,
    durationMs: null,
    installingAt: fields.createdAt,
    validationAt: null,
    configuringAt: null,
    finishedAt: outcome === "in_progress" || outcome === "unknown" ? null : (fields.updatedAt ?? fields.createdAt),
    repaired: false,
    ...fields,
  };
}

/** The execution a first report creates, as the contract says it is stored: every field as sent. */
export function stored(op: ReportOp): Execution {
  const { fields, ...report } = op.report;
  const final = report.outcome !== "in_progress";
  return {
    ...DESCRIPTIVE,
    ...fields,
    ...report,
    attempt: 1,
    kind: kindOfType(fields?.type ?? "lxc"),
    createdAt: op.at,
    updatedAt: op.at,
    durationMs: null,
    installingAt: final ? null : op.at,
    validationAt: null,
    configuringAt: null,
    finishedAt: final ? op.at : null,
    repaired: op.repairs.length > 0,
  };
}

export const loadOp = (execution: Execution, at = execution.updatedAt): Extract<WriteOp, { kind: "load" }> => ({
  kind: "load",
  execution,
  at,
});

export function rejectOp(at: number, fields: Partial<Rejection> = {}): Extract<WriteOp, { kind: "reject" }> {
  const rejection: Rejection = {
    endpoint: "upload",
    reason: "invalid_json",
    field: null,
    message: "not JSON",
    randomId: null,
    body: bytes(`{{{ ${at}`),
    ...fields,
  };
  return { kind: "reject", rejection, at };
}

/** One write, its one result typed by its kind. */
export async function one<Op extends WriteOp>(store: Store, op: Op): Promise<ResultFor<Op>> {
  const results = await store.write([op]);
  expect(results).toHaveLength(1);
  return results[0] as ResultFor<Op>;
}

// ------------------------------------------------------------------ reading back

export const idsOf = (rows: readonly { randomId: string }[]): string[] => rows.map((r) => r.randomId);

/** An install's latest execution (what GET /api/installs/{id} shows first); undefined when unknown. */
export const latestOf = async (store: Store, randomId: string): Promise<Execution | undefined> =>
  (await store.getExecutions(randomId)).at(-1);

export async function allInstalls(store: Store, filter: ExecutionFilter = {}): Promise<Execution[]> {
  const out: Execution[] = [];
  for await (const r of store.iterateExecutions(filter)) out.push(r);
  return out;
}

/** Every page of a listing, following `next` until it is null. */
export async function everyPage(
  store: Store,
  filter: ExecutionFilter,
  limit: number,
  order: "newest" | "oldest",
): Promise<Execution[][]> {
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
export async function hourTotals(store: Store, slice: string = ALL): Promise<Record<Outcome, number>> {
  const totals = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  for (const { data } of await store.readRollups({ grain: GRAINS.hour, slice, ...EVERYTHING, parts: ["data"] })) {
    for (const counts of Object.values(data.dims.type ?? {})) OUTCOMES.forEach((o, i) => (totals[o] += counts[i]!));
  }
  return totals;
}

export const outcomes = (partial: Partial<Record<Outcome, number>>): Record<Outcome, number> =>
  Object.fromEntries(OUTCOMES.map((o) => [o, partial[o] ?? 0])) as Record<Outcome, number>;

const byCell = (a: RollupCell, b: RollupCell) =>
  a.bucket - b.bucket || (a.slice < b.slice ? -1 : a.slice > b.slice ? 1 : 0);
export const sortedCells = async (store: Store, grain: Grain): Promise<RollupCell[]> =>
  (await store.rollupCells(grain, EVERYTHING.from, EVERYTHING.to)).sort(byCell);

/** Every rollup answer a dashboard could get, for before/after comparisons. */
export async function rollupSnapshot(store: Store, apps: readonly string[]) {
  const out: Record<string, unknown> = {};
  for (const grain of [GRAINS.hour, GRAINS.day, GRAINS.month]) {
    out[`cells ${grain}`] = await sortedCells(store, grain);
    for (const slice of apps)
      out[`${grain} ${slice}`] = await store.readRollups({ grain, slice, ...EVERYTHING, parts: ALL_PARTS });
  }
  return out;
}

/** What a cell holds of the parts asked for: data = every dimension but nsapp, and durations; apps = nsapp; errors = the rest. */
export function onlyParts(d: RollupData, parts: readonly RollupPart[]): RollupData {
  const { dims, dur, ...errors } = d;
  const { nsapp, ...rest } = dims;
  const out = { dims: {}, dur: {}, ...Object.fromEntries(Object.keys(errors).map((k) => [k, {}])) } as RollupData;
  if (parts.includes("data")) Object.assign(out, { dims: { ...rest }, dur });
  if (parts.includes("apps") && nsapp !== undefined) out.dims.nsapp = nsapp;
  if (parts.includes("errors")) Object.assign(out, errors);
  return out;
}

/** An hour past both the store's fold mark and the clock: open (not folded) in any engine until a test folds it. */
export async function openHour(store: Store): Promise<number> {
  return floorHour(Math.max(await store.foldedUntil(), Date.now())) + 2 * HOUR;
}

export async function expectVerified(store: Store, records: number): Promise<void> {
  const check = await verifyRollups(store);
  expect({
    ok: check.ok,
    records: check.records,
    mismatches: check.mismatches,
    signatureGaps: check.signatureGaps,
  }).toEqual({ ok: true, records, mismatches: [], signatureGaps: 0 });
}

// ------------------------------------------------------------------ a mixed workload

/**
 * Starts, updates, updates before their start, aborts, expiry, deletion, a fold, late updates to
 * folded hours and loads: `check` runs after every step with the number of installs stored.
 */
export async function mixedWorkload(
  store: Store,
  check: (step: string, records: number) => Promise<void>,
): Promise<number> {
  const H = await openHour(store);
  const apps = ["nginx", "docker", "homeassistant", null];
  let records = 0;

  await store.write(
    Array.from({ length: 12 }, (_, i) =>
      startOp(`p${i}`, { nsapp: apps[i % 4]!, type: i % 5 ? "lxc" : "vm" }, PAST + i * 37 * MIN),
    ),
  );
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

  expect(
    await store.write([
      updateOp("q0", "done", null, PAST + 3 * HOUR),
      updateOp("q1", "failed", "disk full", PAST + 3 * HOUR),
    ]),
  ).toEqual([{ kind: "held" }, { kind: "held" }]);
  await check("held updates", records);
  await store.write([
    startOp("q0", { nsapp: "docker" }, PAST + 4 * HOUR),
    startOp("q1", { nsapp: "nginx" }, PAST + 5 * HOUR),
  ]);
  records += 2;
  await check("starts after their updates", records);

  await store.write(Array.from({ length: 8 }, (_, i) => startOp(`o${i}`, { nsapp: apps[i % 4]! }, H + i * 5 * MIN)));
  await store.write([
    updateOp("o0", "done", null, H + 30 * MIN),
    updateOp("o1", "failed", "exit code 100: apt-get install failed at line 3", H + 31 * MIN),
  ]);
  records += 8;
  await check("open hours", records);

  expect(
    await store.write([
      { kind: "expire", executionId: "p6", at: PAST + DAY },
      { kind: "expire", executionId: "o2", at: H + 40 * MIN },
    ]),
  ).toEqual([
    { kind: "expired", changed: true },
    { kind: "expired", changed: true },
  ]);
  await check("expire", records);

  await one(store, updateOp("gone-held", "done", null, PAST + DAY));
  expect(
    await store.write([
      { kind: "delete", randomId: "p1", at: PAST + DAY },
      { kind: "delete", randomId: "o3", at: H + 41 * MIN },
      { kind: "delete", randomId: "gone-held", at: PAST + DAY },
    ]),
  ).toEqual([
    { kind: "deleted", found: true, executions: 1 },
    { kind: "deleted", found: true, executions: 1 },
    { kind: "deleted", found: true, executions: 0 },
  ]);
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
    loadOp(
      record("l0", {
        createdAt: PAST + 3 * DAY,
        status: "failed",
        error: "exit code 2: make failed",
        durationMs: 90_000,
        updatedAt: PAST + 3 * DAY + 90_000,
      }),
    ),
    loadOp(record("l1", { createdAt: H + HOUR + 5 * MIN, status: "installing", nsapp: "docker" })),
    startOp("o8", { nsapp: "nginx" }, H + HOUR + 6 * MIN),
  ]);
  records += 3;
  await check("loads and a start after the fold", records);
  return records;
}

// ------------------------------------------------------------------ fresh databases

/** Fresh databases for the tests of one engine; every store opened on one is closed, and it is destroyed, after the test. */
export interface Harness {
  database(): Promise<{ open(): Promise<Store> }>;
  freshStore(): Promise<Store>;
}

/** Called inside the engine's describe, so the clean-up runs after each of its tests. */
export function harness(factory: EngineFactory): Harness {
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
  return { database, freshStore };
}
