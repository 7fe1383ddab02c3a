// A slice of every repo and platform is the sum of up to a dozen stored slices' cells
// (store/common/sum-cells.ts): a sum is kept while the cells it adds up are the same objects,
// made afresh when any of them is another, and never written into a cell it was given.
import { describe, expect, test } from "bun:test";
import { SumCache, sumByBucket } from "../../src/store/common/sum-cells.ts";
import { addRecord, emptyData, type RollupData, type RollupRecord } from "../../src/domain/rollup.ts";
import { record as execution } from "../contract/harness.ts";

const record = (nsapp: string, platform: string): RollupRecord =>
  execution(`${nsapp}-${platform}`, { nsapp, platform, createdAt: 0 });

const cellOf = (...records: RollupRecord[]): RollupData => {
  const d = emptyData();
  for (const r of records) addRecord(d, r, "success", 1, true, null);
  return d;
};

describe("sums of stored slices", () => {
  test("summed per bucket, oldest first; a sum kept while its cells are the same objects, made afresh when one is another", () => {
    const cache = new SumCache(8);
    const pve = [
      { bucket: 2, data: cellOf(record("a", "pve")) },
      { bucket: 1, data: cellOf(record("b", "pve")) },
    ];
    const incus = [{ bucket: 2, data: cellOf(record("a", "incus"), record("c", "incus")) }];
    const kept = { cache, key: "k" };
    const first = sumByBucket([pve, incus], kept);
    expect(first.map((c) => c.bucket)).toEqual([1, 2]);
    // One cell in a bucket is that cell; two are summed into a cell of their own.
    expect(first[0]!.data).toBe(pve[1]!.data);
    expect(first[1]!.data.dims.nsapp).toEqual({ a: [2, 0, 0, 0, 0, 0], c: [1, 0, 0, 0, 0, 0] });
    expect(first[1]!.data.dims.platform).toEqual({ pve: [1, 0, 0, 0, 0, 0], incus: [2, 0, 0, 0, 0, 0] });
    expect(pve[0]!.data.dims.nsapp).toEqual({ a: [1, 0, 0, 0, 0, 0] });
    // The same cells: the same sum. Without the cache: an equal sum of its own.
    expect(sumByBucket([pve, incus], kept)[1]!.data).toBe(first[1]!.data);
    expect(sumByBucket([pve, incus])[1]!.data).toEqual(first[1]!.data);
    expect(sumByBucket([pve, incus])[1]!.data).not.toBe(first[1]!.data);
    // A cell decoded afresh (its bytes changed): summed again.
    const changed = [{ bucket: 2, data: cellOf(record("a", "incus")) }];
    const again = sumByBucket([pve, changed], kept);
    expect(again[1]!.data).not.toBe(first[1]!.data);
    expect(again[1]!.data.dims.nsapp).toEqual({ a: [2, 0, 0, 0, 0, 0] });
    // Another key (another shape or slice set): a sum of its own.
    expect(sumByBucket([pve, incus], { cache, key: "other" })[1]!.data).not.toBe(first[1]!.data);
  });

  test("at most `limit` sums are kept, the least recently used go first; clear forgets them all", () => {
    const cache = new SumCache(2);
    const a = cellOf(record("a", "pve"));
    const b = cellOf(record("b", "incus"));
    const one = cache.sum("1", [a, b]);
    const two = cache.sum("2", [a, b]);
    expect(cache.sum("1", [a, b])).toBe(one);
    cache.sum("3", [a, b]); // "2" was used least recently
    expect(cache.sum("1", [a, b])).toBe(one);
    expect(cache.sum("2", [a, b])).not.toBe(two);
    cache.clear();
    expect(cache.sum("1", [a, b])).not.toBe(one);
  });
});
