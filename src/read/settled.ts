// What readers keep from settled cells (domain/rollup.ts settle: no one changes them any more): an
// hour later, or after a report, a window holds the same settled cells and a few open ones (open
// hours, scans), so what is derived from the settled ones is kept by their identities and the open
// ones are added to a copy. Adding up a year's cells again was half of /api/new's CPU at 1M.
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

/**
 * A memo of what `make` derives from settled cells, by `shape` (what else it depends on) and the
 * cells' identities; the `size` asked last are kept.
 */
export function byWindow<T>(size: number): (settled: readonly Cell[], shape: string, make: () => T) => T {
  const kept = new Map<string, T>();
  return (settled, shape, make) => {
    const key = `${shape}|${settled.map(idOf).join(",")}`;
    const value = kept.get(key) ?? make();
    kept.delete(key);
    kept.set(key, value);
    if (kept.size > size) kept.delete(kept.keys().next().value!);
    return value;
  };
}
