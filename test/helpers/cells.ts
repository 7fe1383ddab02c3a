// A rollup cell as an engine stores it and reads it back (domain/rollup-codec.ts), with a label
// dictionary of the test's own; databases of the layouts before (SQLite 0016/0017, PostgreSQL 0011).
import type { Database } from "bun:sqlite";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  GRAINS,
  RollupDeltas,
  countHour,
  emptyData,
  type Grain,
  type RollupData,
  type RollupKey,
} from "../../src/domain/rollup.ts";
import type { StoreReads } from "../../src/store/contract/executions.ts";
import { failureSignatureId } from "../../src/domain/error-signature.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { decodePart, encodeCell } from "../../src/domain/rollup-codec.ts";
import { LabelCache } from "../../src/store/common/labels.ts";
import { migrationsFolder } from "../../src/store/sqlite/database.ts";

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
export function rewriteCell(
  sqlite: Database,
  grain: number,
  slice: string,
  change: (d: RollupData) => void,
): { id: number; before: Record<"data" | "apps" | "errors", Uint8Array | null> } {
  const known = new LabelCache((label) => {
    throw new Error(`rewriteCell: label ${label} is not in the database`);
  });
  known.learn(sqlite.query("SELECT id, label FROM rollup_labels").all() as { id: number; label: string }[]);
  const row = sqlite
    .query(
      "SELECT r.id, r.data, r.apps, r.errors FROM rollups r JOIN rollup_labels l ON l.id = r.slice WHERE r.grain = ? AND l.label = ? LIMIT 1",
    )
    .get(grain, slice) as { id: number; data: Uint8Array; apps: Uint8Array | null; errors: Uint8Array | null };
  const d = emptyData();
  for (const part of ["data", "apps", "errors"] as const) decodePart(d, part, row[part], known);
  change(d);
  const parts = encodeCell(d, slice.endsWith("|*"), known);
  sqlite.run("UPDATE rollups SET data = ?, apps = ?, errors = ? WHERE id = ?", [
    parts.data,
    parts.apps,
    parts.errors,
    row.id,
  ]);
  return { id: row.id, before: { data: row.data, apps: row.apps, errors: row.errors } };
}

/** A cell as the engines stored it before migration 0016 (SQLite) / 0011 (PostgreSQL): three JSON texts. */
export function jsonColumns(d: RollupData): { data: string; apps: string; errors: string } {
  const { nsapp, ...rest } = d.dims;
  return {
    data: JSON.stringify({ dims: rest, dur: d.dur }),
    apps: JSON.stringify(nsapp ?? {}),
    errors: JSON.stringify(d.err),
  };
}

/**
 * Every cell the layout before 0016/0011 kept for `records` with the fold mark at `foldedUntil`:
 * every slice of slicesOf (every repo included), hour cells for every folded hour however old,
 * day and month cells; open hours are not stored.
 */
export function oldLayoutCells(
  records: readonly Execution[],
  foldedUntil: number,
): { key: RollupKey; data: RollupData }[] {
  const deltas = new RollupDeltas(foldedUntil);
  const hours = new Map<string, { key: RollupKey; data: RollupData }>();
  for (const r of records) {
    const sig = failureSignatureId(r.outcome, r.error);
    deltas.add(r, r.outcome, 1, sig);
    if (r.createdAt >= foldedUntil) continue;
    countHour(
      (slice, hour) => {
        const id = `${hour}|${slice}`;
        let cell = hours.get(id);
        if (!cell) hours.set(id, (cell = { key: { grain: GRAINS.hour, app: slice, bucket: hour }, data: emptyData() }));
        return cell.data;
      },
      { r, outcome: r.outcome, sign: 1, errorSig: sig },
    );
  }
  return [...[...deltas.cells.values()].filter((c) => c.key.grain !== GRAINS.hour), ...hours.values()];
}

/**
 * What a store answers for every slice and grain of `cells` (old-layout cells) over [0, to): each
 * slice's cells, oldest first, as the old cells held them; pairs of what came and what was kept,
 * for one comparison.
 */
export async function answersOf(store: StoreReads, cells: readonly { key: RollupKey; data: RollupData }[], to: number) {
  const bySlice = new Map<string, { grain: Grain; slice: string; cells: { bucket: number; data: RollupData }[] }>();
  for (const { key, data } of cells) {
    const id = `${key.grain}|${key.app}`;
    if (!bySlice.has(id)) bySlice.set(id, { grain: key.grain, slice: key.app, cells: [] });
    bySlice.get(id)!.cells.push({ bucket: key.bucket, data });
  }
  const got: unknown[] = [];
  const want: unknown[] = [];
  for (const { grain, slice, cells: kept } of bySlice.values()) {
    kept.sort((a, b) => a.bucket - b.bucket);
    got.push({
      grain,
      slice,
      cells: await store.readRollups({ grain, slice, from: 0, to, parts: ["data", "apps", "errors"] }),
    });
    want.push({ grain, slice, cells: kept });
  }
  return { got, want };
}

/** The SQLite migrations up to `lastIdx` (a database of an earlier schema), as a folder of their own under `dir`. */
export function sqliteMigrationsUpTo(dir: string, lastIdx: number): string {
  const folder = join(dir, `migrations-${lastIdx}`);
  cpSync(migrationsFolder(), folder, { recursive: true });
  const journal = JSON.parse(readFileSync(join(folder, "meta/_journal.json"), "utf8")) as {
    entries: { idx: number }[];
  };
  journal.entries = journal.entries.filter((e) => e.idx <= lastIdx);
  writeFileSync(join(folder, "meta/_journal.json"), JSON.stringify(journal));
  return folder;
}

/** The executions table's columns before migration 0017 (every one stored, ids as text). */
const OLD_COLUMNS = [
  "execution_id",
  "random_id",
  "attempt",
  "kind",
  "payload_version",
  "type",
  "ct_type",
  "disk_size",
  "core_count",
  "ram_size",
  "os_type",
  "os_version",
  "disableip6",
  "nsapp",
  "method",
  "pve_version",
  "cpu_vendor",
  "cpu_model",
  "gpu_vendor",
  "gpu_model",
  "ram_speed",
  "gpu_passthrough",
  "host_gpu",
  "arch",
  "platform",
  "has_arm",
  "repo_source",
  "repo_slug",
  "kernel_version",
  "app_version",
  "extra",
  "status",
  "outcome",
  "error",
  "exit_code",
  "error_category",
  "failed_command",
  "failed_line",
  "install_duration",
  "created_at",
  "updated_at",
  "duration_ms",
  "installing_at",
  "validation_at",
  "configuring_at",
  "finished_at",
  "repaired",
] as const;
const camel = (c: string) => c.replace(/_([a-z])/g, (_, x: string) => x.toUpperCase());

/** Inserts `records` into an SQLite executions table of the layout before migration 0017, as a release of then stored them. */
export function insertOldExecutions(sqlite: Database, records: readonly Execution[]): void {
  const insert = sqlite.query(
    `INSERT INTO executions (${OLD_COLUMNS.join(", ")}) VALUES (${OLD_COLUMNS.map(() => "?").join(", ")})`,
  );
  for (const e of records) {
    insert.run(
      ...OLD_COLUMNS.map((c) => {
        const v = (e as unknown as Record<string, unknown>)[camel(c)];
        return typeof v === "boolean" ? (v ? 1 : 0) : (v as string | number | null);
      }),
    );
  }
}
