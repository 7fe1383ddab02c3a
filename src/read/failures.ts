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
