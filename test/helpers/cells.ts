// A rollup cell as an engine stores it and reads it back (domain/rollup-codec.ts), with a label
// dictionary of the test's own.
import type { Database } from "bun:sqlite";
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

/**
 * Rewrites one stored cell of an SQLite database (grain, stored slice), changed by `change`, as
 * damage or tampering would leave it: returns the row's id and its parts before, to put back.
 */
export function rewriteCell(sqlite: Database, grain: number, slice: string, change: (d: RollupData) => void): { id: number; before: Record<"data" | "apps" | "errors", Uint8Array | null> } {
  const known = new LabelCache((label) => {
    throw new Error(`rewriteCell: label ${label} is not in the database`);
  });
  known.learn(sqlite.query("SELECT id, label FROM rollup_labels").all() as { id: number; label: string }[]);
  const row = sqlite
    .query("SELECT r.id, r.data, r.apps, r.errors FROM rollups r JOIN rollup_labels l ON l.id = r.slice WHERE r.grain = ? AND l.label = ? LIMIT 1")
    .get(grain, slice) as { id: number; data: Uint8Array; apps: Uint8Array | null; errors: Uint8Array | null };
  const d = emptyData();
  for (const part of ["data", "apps", "errors"] as const) decodePart(d, part, row[part], known);
  change(d);
  const parts = encodeCell(d, slice.endsWith("|*"), known);
  sqlite.run("UPDATE rollups SET data = ?, apps = ?, errors = ? WHERE id = ?", [parts.data, parts.apps, parts.errors, row.id]);
  return { id: row.id, before: { data: row.data, apps: row.apps, errors: row.errors } };
}
