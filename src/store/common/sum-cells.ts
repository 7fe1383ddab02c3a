// Cells as the read side asks for them, made of what an engine stores: the parts asked for only,
// and a slice of every repo or platform as the sum of its stored slices' cells (domain/rollup.ts storedSlicesIn).
import { emptyData, mergeInto, type RollupData, type RollupPart } from "../../domain/rollup.ts";

const EVERY_PART: ReadonlySet<RollupPart> = new Set(["data", "apps", "errors"]);

/** The parts asked for, and only those (`have`: the parts `data` holds): a reader sees the same cell whatever else a write cached. */
export function only(
  data: RollupData,
  parts: readonly RollupPart[],
  have: ReadonlySet<RollupPart> = EVERY_PART,
): RollupData {
  if (have.size === parts.length) return data;
  const { nsapp, ...rest } = data.dims;
  const withData = parts.includes("data");
  const dims: RollupData["dims"] = withData ? rest : {};
  if (nsapp && parts.includes("apps")) dims.nsapp = nsapp;
  return { dims, dur: withData ? data.dur : {}, err: parts.includes("errors") ? data.err : {} };
}

/** Cells of several stored slices (those a slice of every repo or platform adds up) as one cell per bucket, oldest first. */
export function sumByBucket(
  lists: readonly { bucket: number; data: RollupData }[][],
): { bucket: number; data: RollupData }[] {
  const nonEmpty = lists.filter((l) => l.length > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? [];
  const sums = new Map<number, { bucket: number; data: RollupData; own: boolean }>();
  for (const list of nonEmpty) {
    for (const c of list) {
      const sum = sums.get(c.bucket);
      if (!sum) sums.set(c.bucket, { ...c, own: false });
      else {
        // Cells may be shared with a cache: summed into a copy of their own.
        if (!sum.own) Object.assign(sum, { data: mergeInto(emptyData(), sum.data), own: true });
        mergeInto(sum.data, c.data);
      }
    }
  }
  return [...sums.values()].sort((a, b) => a.bucket - b.bucket).map(({ bucket, data }) => ({ bucket, data }));
}
