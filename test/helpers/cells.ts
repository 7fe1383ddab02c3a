// A rollup cell as an engine stores it and reads it back (domain/rollup-codec.ts), with a label
// dictionary of the test's own.
import { emptyData, type RollupData } from "../../src/domain/rollup.ts";
import { decodePart, encodeCell } from "../../src/domain/rollup-codec.ts";
import { LabelCache } from "../../src/store/shared/labels.ts";

let next = 0;
const labels = new LabelCache(() => ++next);

/** `d` encoded and decoded again; `allApps` for a cell of every app (the only ones with an apps part). */
export function storedAndRead(d: RollupData, allApps = true): RollupData {
  const parts = encodeCell(d, allApps, labels);
  const out = emptyData();
  for (const part of ["data", "apps", "errors"] as const) decodePart(out, part, parts[part], labels);
  return out;
}
