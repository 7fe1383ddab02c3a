// `installstats verify`: the rollups must equal a full recount of the records, cell by cell. The
// cells compared are those the engines store (domain/rollup.ts storedSlicesOf); a slice of every
// repo or platform is their sum, made when read, so it is right when they are.
import type { RollupCell, StoreReads } from "../store/contract/executions.ts";
import {
  GRAINS,
  RollupDeltas,
  bucketStart,
  cellId,
  mergeInto,
  storedSlicesIn,
  storedSlicesOf,
  type RollupData,
  type RollupKey,
} from "../domain/rollup.ts";
import { failureSignature } from "../domain/error-signature.ts";
import { DAY } from "../domain/time.ts";
import { collections } from "../store/bulk-load.ts";

interface CellMismatch {
  grain: number;
  app: string;
  bucket: string;
  expected: RollupData | null;
  stored: RollupData | null;
}

export interface RollupCheck {
  ok: boolean;
  records: number;
  cells: number;
  mismatches: CellMismatch[];
  /** Failed installs whose signature is missing from error_signatures, or lacks their app. */
  signatureGaps: number;
  /**
   * What could not be read at all (damaged pages or values), one line each: the day or month whose
   * records or cells were unreadable, and the error. Those days are not compared; the check goes on.
   */
  damaged: string[];
}

/** Deep equality of two cells' data whatever the order their keys were added in (no strings built: verify compares millions). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => same(x, b[i]));
  }
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every(
    (k) => Object.hasOwn(b, k) && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}

const MAX_REPORTED = 20;

/** A cell the engines store, not one made when read. */
const isStored = (c: RollupCell): boolean => storedSlicesIn(c.slice).length === 1;

/** What one verification works with: the store, the result so far, and what it carries from day to day. */
interface Verification {
  store: StoreReads;
  check: RollupCheck;
  foldedUntil: number;
  /** The apps of each signature seen, as stored ("\u0000missing": not stored at all). */
  knownSignatures: Map<string, Set<string>>;
  /**
   * Month cells gather the records of many days: their expected state is summed day by day and
   * compared when the month is done.
   */
  monthExpected: Map<string, { key: RollupKey; data: RollupData }>;
  /** Months with a day that could not be recounted: not compared. */
  damagedMonths: Set<number>;
}

function mismatch({ check }: Verification, m: CellMismatch): void {
  check.ok = false;
  if (check.mismatches.length < MAX_REPORTED) check.mismatches.push(m);
}

/** Runs one step; damage (or anything else unreadable) is reported, never thrown: verify's answer is a result. */
async function readable({ check }: Verification, what: string, step: () => Promise<void>): Promise<boolean> {
  try {
    await step();
    return true;
  } catch (e) {
    check.ok = false;
    if (check.damaged.length < MAX_REPORTED)
      check.damaged.push(`${what}: ${e instanceof Error ? e.message : String(e)}`);
    else if (check.damaged.length === MAX_REPORTED) check.damaged.push("... and more");
    return false;
  }
}

async function signatureApps(v: Verification, id: string): Promise<Set<string> | undefined> {
  if (!v.knownSignatures.has(id)) {
    const [row] = await v.store.signatures([id]);
    v.knownSignatures.set(id, new Set(row ? row.apps : ["\u0000missing"]));
  }
  return v.knownSignatures.get(id);
}

/** Cells outside the records' days (months) must not exist at all. */
async function checkStrays(v: Verification, firstDay: number, endDay: number): Promise<void> {
  for (const grain of [GRAINS.hour, GRAINS.day, GRAINS.month]) {
    const start = grain === GRAINS.month ? bucketStart(firstDay, grain) : firstDay;
    await readable(v, `rollup cells (grain ${grain}) outside the records' days`, async () => {
      for (const stray of [
        ...(await v.store.rollupCells(grain, Number.MIN_SAFE_INTEGER, start)),
        ...(await v.store.rollupCells(grain, endDay, Number.MAX_SAFE_INTEGER)),
      ].filter(isStored)) {
        mismatch(v, {
          grain,
          app: stray.slice,
          bucket: new Date(stray.bucket).toISOString(),
          expected: null,
          stored: stray.data,
        });
      }
    });
  }
}

/** A month done: its stored cells against the sums of its days. */
async function checkMonth(v: Verification, month: number): Promise<void> {
  const { monthExpected, check } = v;
  let cells: RollupCell[] = [];
  const readOk = await readable(
    v,
    `month ${new Date(month).toISOString().slice(0, 7)}`,
    async () => void (cells = (await v.store.rollupCells(GRAINS.month, month, month + 1)).filter(isStored)),
  );
  if (!readOk || v.damagedMonths.has(month)) {
    // Not compared: its cells could not be read, or a day of it could not be recounted.
    monthExpected.clear();
    return;
  }
  const stored = new Map(cells.map((c) => [c.slice, c.data]));
  for (const { key, data } of monthExpected.values()) {
    check.cells++;
    const have = stored.get(key.app);
    stored.delete(key.app);
    if (have === undefined || !same(have, data)) {
      mismatch(v, {
        grain: key.grain,
        app: key.app,
        bucket: new Date(month).toISOString(),
        expected: data,
        stored: have ?? null,
      });
    }
  }
  for (const [app, data] of stored)
    mismatch(v, { grain: GRAINS.month, app, bucket: new Date(month).toISOString(), expected: null, stored: data });
  monthExpected.clear();
}

/** The day's records counted again (and their signatures looked up); the month cells' share summed for checkMonth. */
async function recountDay(v: Verification, day: number): Promise<RollupDeltas> {
  const { check } = v;
  const expected = new RollupDeltas(v.foldedUntil, storedSlicesOf);
  for await (const r of v.store.iterateExecutions({ from: day, to: day + DAY })) {
    check.records++;
    const sig = failureSignature(r.outcome, r.error);
    expected.add(r, r.outcome, 1, sig?.id ?? null);
    if (sig) {
      const apps = await signatureApps(v, sig.id);
      if (!apps || apps.has("\u0000missing") || (r.nsapp !== null && !apps.has(r.nsapp))) check.signatureGaps++;
    }
  }
  return expected;
}

/** One day: its hour and day cells (and the open hours) against a recount of its records. */
async function checkDay(v: Verification, day: number): Promise<void> {
  const expected = await recountDay(v, day);
  const have = new Map<string, { grain: number; app: string; bucket: number; data: RollupData }>();
  for (const grain of [GRAINS.hour, GRAINS.day]) {
    for (const c of (await v.store.rollupCells(grain, day, day + DAY)).filter(isStored))
      have.set(cellId(grain, c.bucket, c.slice), { grain, app: c.slice, bucket: c.bucket, data: c.data });
  }
  // Open hours' cells (in hour grain only) are compared like stored ones.
  for (const [id, { key, data }] of [...expected.cells, ...expected.openCells()]) {
    if (key.grain === GRAINS.month) {
      const acc = v.monthExpected.get(id);
      if (acc) mergeInto(acc.data, data);
      else v.monthExpected.set(id, { key, data });
      continue;
    }
    v.check.cells++;
    const found = have.get(id);
    have.delete(id);
    if (found === undefined || !same(found.data, data)) {
      mismatch(v, {
        grain: key.grain,
        app: key.app,
        bucket: new Date(key.bucket).toISOString(),
        expected: data,
        stored: found?.data ?? null,
      });
    }
  }
  for (const extra of have.values()) {
    mismatch(v, {
      grain: extra.grain,
      app: extra.app,
      bucket: new Date(extra.bucket).toISOString(),
      expected: null,
      stored: extra.data,
    });
  }
}

/** Recounts day by day (memory stays bounded by one day of cells) and compares every cell. */
export async function verifyRollups(
  store: StoreReads,
  onDay?: (day: number, last: number) => void,
): Promise<RollupCheck> {
  let span: { first: number; last: number } | null = null;
  try {
    span = await store.recordSpan();
  } catch (e) {
    return {
      ok: false,
      records: 0,
      cells: 0,
      mismatches: [],
      signatureGaps: 0,
      damaged: [`records: ${e instanceof Error ? e.message : String(e)}`],
    };
  }
  const firstDay = span ? span.first - (span.first % DAY) : 0;
  const endDay = span ? span.last - (span.last % DAY) + DAY : 0;
  const v: Verification = {
    store,
    check: { ok: true, records: 0, cells: 0, mismatches: [], signatureGaps: 0, damaged: [] },
    foldedUntil: 0,
    knownSignatures: new Map(),
    monthExpected: new Map(),
    damagedMonths: new Set(),
  };
  if (!(await readable(v, "rollup state", async () => void (v.foldedUntil = await store.foldedUntil()))))
    return v.check;
  await checkStrays(v, firstDay, endDay);
  let currentMonth: number | null = null;
  // A day's cells, stored and recounted, decoded side by side, are garbage the next day: left to
  // itself the heap grew to several times that (207,288 executions over 60 days: 799-898 MB).
  const collect = collections();
  let recountedBefore = 0;
  for (let day = firstDay; day < endDay; day += DAY) {
    collect(v.check.records - recountedBefore);
    recountedBefore = v.check.records;
    onDay?.(day, endDay);
    const month = bucketStart(day, GRAINS.month);
    if (month !== currentMonth) {
      if (currentMonth !== null) await checkMonth(v, currentMonth);
      currentMonth = month;
    }
    // A day whose records or cells cannot be read is reported; its month's sums are then incomplete.
    if (!(await readable(v, `day ${new Date(day).toISOString().slice(0, 10)}`, () => checkDay(v, day))))
      v.damagedMonths.add(month);
  }
  if (currentMonth !== null) await checkMonth(v, currentMonth);
  if (v.check.signatureGaps > 0) v.check.ok = false;
  return v.check;
}
