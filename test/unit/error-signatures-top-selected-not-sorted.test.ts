// The most frequent error signatures of many cells are selected, not sorted out of every id
// (read/aggregate.ts errorTop): the top equals the head of the full ordering for every limit,
// ties by id, and the distinct count and the sum are those of every id with failures; with a
// settled cell among them (a window's kept sum: its ids ranked once) as without.
import { describe, expect, test } from "bun:test";
import { errorTop, type Cell } from "../../src/read/aggregate.ts";
import { emptyData, settle, valueMap } from "../../src/domain/rollup.ts";

/** Cells whose error maps hold `ids` ids with small counts (many ties), some summing to zero or less. */
function cellsOf(seed: number, cells: number, ids: number): Cell[] {
  let x = seed;
  const rnd = () => {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    return x / 2_147_483_648;
  };
  return Array.from({ length: cells }, (_, bucket) => {
    const data = emptyData();
    data.err = valueMap();
    for (let k = 0; k < ids / 2; k++) {
      const id = Math.floor(rnd() * ids)
        .toString(16)
        .padStart(8, "0");
      // A negative count: a complement's cells take counts away.
      data.err[id] = (data.err[id] ?? 0) + (rnd() < 0.1 ? -1 : Math.floor(rnd() * 4));
    }
    return { bucket, data };
  });
}

/** Every id's sum, those above zero, most first and by id on ties: what the top must be the head of. */
function fullOrder(cells: readonly Cell[]): [string, number][] {
  const sums = new Map<string, number>();
  for (const { data } of cells) for (const id in data.err) sums.set(id, (sums.get(id) ?? 0) + data.err[id]!);
  return [...sums].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

describe("errorTop", () => {
  test("the top of every limit is the head of the full ordering; distinct and total count every id with failures", () => {
    for (const [seed, settled] of [
      [1, false],
      [2, false],
      [3, false],
      [1, true],
      [2, true],
      [3, true],
    ] as const) {
      const cells = cellsOf(seed, 12, 2_000);
      if (settled) settle(cells[0]!.data);
      const all = fullOrder(cells);
      expect(all.length).toBeGreaterThan(500);
      for (const limit of [0, 1, 2, 15, 50, 499, all.length, all.length + 7, Number.POSITIVE_INFINITY]) {
        const got = errorTop(cells, limit);
        expect(got.top).toEqual(all.slice(0, limit));
        expect(got.distinct).toBe(all.length);
        expect(got.total).toBe(all.reduce((n, [, c]) => n + c, 0));
      }
      // Each id's sum, whatever the limit (a signature's own count), zero and negative ones included.
      const { count } = errorTop(cells, 0);
      for (const [id, n] of all) expect(count(id)).toBe(n);
    }
  });

  test("no cells, or no failures: nothing", () => {
    expect(errorTop([], 10)).toMatchObject({ top: [], distinct: 0, total: 0 });
    const none = emptyData();
    none.err = valueMap();
    none.err.abc = 0;
    expect(errorTop([{ bucket: 0, data: none }], 10)).toMatchObject({ top: [], distinct: 0, total: 0 });
  });
});
