// A rollup cell's failure dimension taken apart once per settled cell: the community's error
// panels (/api/new) and its error analysis (/api/errors) read the same keys.
import { FAILURE_SEPARATOR, failureParts, isSettled, type Counts, type RollupData } from "../domain/rollup.ts";

/**
 * One cell's failure keys taken apart ("code SEP category SEP signature SEP app": the app cut off
 * the end, the code off the front, the rest the signature's group as it is), keys with failures
 * only. Parallel arrays: a year's cells hold ~70,000 keys, nearly all distinct.
 */
export interface CellFailures {
  group: string[];
  /** Whether the group has a signature (without error text it ends in its separator). */
  signed: boolean[];
  category: string[];
  signature: string[];
  app: string[];
  code: number[];
  /** Failed and blocked runs (the community's error panels). */
  failed: number[];
  /** Failed runs only (the original API's errors). */
  failedOnly: number[];
}

/**
 * What failuresIn made of a settled cell's failure dimension (domain/rollup.ts settle: it never
 * changes), kept as long as the cell is: a window an hour later, or of another length, shares
 * most of its cells, and taking their keys apart was most of /api/new's CPU.
 */
const takenApart = new WeakMap<RollupData, CellFailures>();

export function failuresIn(data: RollupData, keys: Record<string, Counts>): CellFailures {
  const settled = isSettled(data);
  const kept = settled ? takenApart.get(data) : undefined;
  if (kept !== undefined) return kept;
  const out: CellFailures = {
    group: [],
    signed: [],
    category: [],
    signature: [],
    app: [],
    code: [],
    failed: [],
    failedOnly: [],
  };
  for (const key in keys) {
    const c = keys[key]!;
    const failed = c[1] + c[5];
    if (failed === 0 || key === "") continue;
    const appAt = key.lastIndexOf(FAILURE_SEPARATOR);
    const group = key.slice(0, appAt);
    const codeEnd = group.indexOf(FAILURE_SEPARATOR);
    const { category, signature } = failureParts(`${group}${FAILURE_SEPARATOR}`);
    out.group.push(group);
    out.signed.push(group.charCodeAt(group.length - 1) !== 0x1f);
    out.category.push(category);
    out.signature.push(signature);
    out.app.push(key.slice(appAt + 1));
    out.code.push(codeEnd === 0 ? 0 : Number(group.slice(0, codeEnd)));
    out.failed.push(failed);
    out.failedOnly.push(c[1]);
  }
  if (settled) takenApart.set(data, out);
  return out;
}

/** One app's failed runs (failed only) by exit code (0 left out), by category and by signature. */
export interface AppFailures {
  codes: Map<string, number>;
  categories: Map<string, number>;
  signatures: Map<string, number>;
}

/** What an app without failures in a cell has (shared: read only). */
const NONE: AppFailures = { codes: new Map(), categories: new Map(), signatures: new Map() };

const tallied = new WeakMap<RollupData, Map<string, AppFailures>>();

/** `m` with `n` added to `key`'s count. */
export const addTo = (m: Map<string, number>, key: string, n: number) => m.set(key, (m.get(key) ?? 0) + n);

/**
 * The failed runs of `apps` in a cell (failuresIn's keys added up per app), kept with a settled
 * cell as failuresIn's keys are: walking a month's keys for each request was ~40 % of /api/errors'
 * CPU. Only the apps asked for are added up (a page asks for the same few dozen), so a year's sum
 * keeps a few dozen apps' tallies, not every app's.
 */
export function failuresByApp(
  data: RollupData,
  keys: Record<string, Counts>,
  apps: readonly string[],
): ReadonlyMap<string, AppFailures> {
  const settled = isSettled(data);
  const kept = (settled ? tallied.get(data) : undefined) ?? new Map<string, AppFailures>();
  const missing = new Set(apps.filter((app) => !kept.has(app)));
  if (missing.size > 0) {
    const f = failuresIn(data, keys);
    for (let i = 0; i < f.app.length; i++) {
      const n = f.failedOnly[i]!;
      const app = f.app[i]!;
      if (n === 0 || !missing.has(app)) continue;
      let a = kept.get(app);
      if (a === undefined) kept.set(app, (a = { codes: new Map(), categories: new Map(), signatures: new Map() }));
      if (f.code[i] !== 0) addTo(a.codes, String(f.code[i]), n);
      addTo(a.categories, f.category[i]!, n);
      if (f.signed[i]) addTo(a.signatures, f.signature[i]!, n);
    }
    for (const app of missing) if (!kept.has(app)) kept.set(app, NONE);
  }
  if (settled) tallied.set(data, kept);
  return kept;
}

const ranked = new WeakMap<AppFailures, [string, number][]>();

/** Most failures first, then by id. */
const before = (a: [string, number], b: [string, number]) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * The signature with most failures (then the smallest id) of a settled tally's app with `more`
 * added: the settled one's signatures ranked once (an app has thousands), `more`'s few counted on top.
 */
export function firstSignature(
  settled: AppFailures | undefined,
  more: ReadonlyMap<string, number>,
): [string, number] | null {
  let first: [string, number] | null = null;
  const consider = (s: [string, number]) => {
    if (s[1] > 0 && (first === null || before(s, first) < 0)) first = s;
  };
  for (const [id, n] of more) consider([id, (settled?.signatures.get(id) ?? 0) + n]);
  if (settled === undefined) return first;
  let order = ranked.get(settled);
  if (order === undefined) ranked.set(settled, (order = [...settled.signatures].filter(([, n]) => n > 0).sort(before)));
  // The best of those `more` left as they were.
  const unchanged = order.find(([id]) => !more.has(id));
  if (unchanged !== undefined) consider(unchanged);
  return first;
}
