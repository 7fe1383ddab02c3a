// What readers keep from settled cells (domain/rollup.ts settle: no one changes them any more): an
// hour later, or after a report, a window holds the same settled cells and a few open ones (open
// hours, scans), so what is derived from the settled ones is kept by their identities and the open
// ones are added to a copy. Adding up a year's cells again was half of /api/new's CPU at 1M.
import { RecentlyUsed } from "../domain/recently-used.ts";
import { isSettled } from "../domain/rollup.ts";
import type { Cell } from "./aggregate.ts";

const ids = new WeakMap<Cell["data"], number>();
let lastId = 0;
const idOf = ({ data }: Cell): number => {
  let id = ids.get(data);
  if (id === undefined) ids.set(data, (id = ++lastId));
  return id;
};

/** A window's cells that no one changes any more, and the others. */
export function settledAndOpen(cells: readonly Cell[]): { settled: Cell[]; open: Cell[] } {
  const settled: Cell[] = [];
  const open: Cell[] = [];
  for (const c of cells) (isSettled(c.data) ? settled : open).push(c);
  return { settled, open };
}

type Derive<T> = (before: T, lost: readonly Cell[], gained: readonly Cell[]) => T;

/**
 * A memo of what `make` derives from settled cells, by `shape` (what else it depends on) and the
 * cells' identities; the `size` asked last are kept. With `derive`, a window that shares most of
 * its cells with one kept for the same shape (an hour or a day later) is made from that one: the
 * cells it lost taken out and those it gained added, as `derive` does without changing `before`.
 */
export function byWindow<T>(
  size: number,
): (settled: readonly Cell[], shape: string, make: () => T, derive?: Derive<T>) => T {
  const kept = new RecentlyUsed<{ shape: string; cells: readonly Cell[]; value: T }>(size);
  return (settled, shape, make, derive) => {
    const key = `${shape}|${settled.map(idOf).join(",")}`;
    let entry = kept.get(key);
    if (entry === undefined)
      kept.set(
        key,
        (entry = { shape, cells: settled, value: (derive && near(kept, settled, shape, derive)) ?? make() }),
      );
    return entry.value;
  };
}

/** `derive` from the kept window of `shape` with the fewest cells changed, unless they are half of them or more. */
function near<T>(
  kept: RecentlyUsed<{ shape: string; cells: readonly Cell[]; value: T }>,
  settled: readonly Cell[],
  shape: string,
  derive: Derive<T>,
): T | undefined {
  let best: { value: T; lost: Cell[]; gained: Cell[] } | undefined;
  for (const k of kept.values()) {
    if (k.shape !== shape) continue;
    const { lost, gained } = changes(k.cells, settled);
    if (best === undefined || lost.length + gained.length < best.lost.length + best.gained.length)
      best = { value: k.value, lost, gained };
  }
  if (best === undefined || 2 * (best.lost.length + best.gained.length) >= settled.length) return undefined;
  return derive(best.value, best.lost, best.gained);
}

/** The cells of `before` not in `after` and those of `after` not in `before`, by identity, each as often as it differs. */
function changes(before: readonly Cell[], after: readonly Cell[]): { lost: Cell[]; gained: Cell[] } {
  const count = new Map<Cell["data"], number>();
  for (const { data } of before) count.set(data, (count.get(data) ?? 0) + 1);
  const gained: Cell[] = [];
  for (const c of after) {
    const n = count.get(c.data) ?? 0;
    if (n === 0) gained.push(c);
    else count.set(c.data, n - 1);
  }
  const lost: Cell[] = [];
  for (const c of before) {
    const n = count.get(c.data) ?? 0;
    if (n > 0) {
      lost.push(c);
      count.set(c.data, n - 1);
    }
  }
  return { lost, gained };
}
