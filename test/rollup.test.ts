// Rollup cells as pure data: counting in and out, merging, and the open hours' counts.
import { describe, expect, test } from "bun:test";
import { ALL_APPS, GRAINS, RollupDeltas, addRecord, appSlice, emptyData, mergeInto, type RollupRecord } from "../src/domain/rollup.ts";
import { HOUR } from "../src/domain/time.ts";

const record = (over: Partial<RollupRecord> = {}): RollupRecord => ({
  nsapp: "jellyfin", osType: "debian", osVersion: "12", pveVersion: "8.2.4", type: "lxc", method: "default", status: "failed",
  ctType: 1, coreCount: 2, ramSize: 2048, outcome: "failed", createdAt: 10 * HOUR + 5, durationMs: 90_000, error: "exit code 1", ...over,
});

describe("addRecord", () => {
  test("a record counted in and out again leaves an empty cell, with no zero entries", async () => {
    for (const app of [ALL_APPS, appSlice("jellyfin")]) {
      const cell = emptyData();
      const r = record();
      addRecord(cell, r, "failed", 1, app, "sig1");
      expect(cell.dims.type).toEqual({ lxc: [0, 1, 0, 0, 0] });
      expect(cell.dims.nsapp).toEqual(app === ALL_APPS ? { jellyfin: [0, 1, 0, 0, 0] } : undefined);
      expect(cell.err).toEqual({ sig1: 1 });
      addRecord(cell, r, "failed", -1, app, "sig1");
      expect(cell).toEqual(emptyData());
    }
  });

  test("counting a removal in place equals merging the same counts as a delta", async () => {
    const a = record({ nsapp: "pihole", outcome: "success", status: "done", error: null });
    const b = record();
    const inPlace = emptyData();
    addRecord(inPlace, a, "success", 1, ALL_APPS, null);
    addRecord(inPlace, b, "failed", 1, ALL_APPS, "sig1");
    addRecord(inPlace, b, "failed", -1, ALL_APPS, "sig1");
    const merged = emptyData();
    const plus = emptyData();
    addRecord(plus, a, "success", 1, ALL_APPS, null);
    addRecord(plus, b, "failed", 1, ALL_APPS, "sig1");
    const minus = emptyData();
    addRecord(minus, b, "failed", -1, ALL_APPS, "sig1");
    mergeInto(mergeInto(merged, plus), minus);
    expect(inPlace).toEqual(merged);
    expect(inPlace.dims.nsapp).toEqual({ pihole: [1, 0, 0, 0, 0] });
  });
});

describe("RollupDeltas", () => {
  test("open hours keep records to count; folded hours become cells of every grain", async () => {
    const deltas = new RollupDeltas(10 * HOUR);
    deltas.add(record({ createdAt: 10 * HOUR + 1 }), "failed", 1, "sig1");
    deltas.add(record({ createdAt: 9 * HOUR }), "failed", 1, "sig1");
    expect(deltas.open).toHaveLength(1);
    expect([...deltas.cells.values()].map((c) => c.key.grain).sort()).toEqual([GRAINS.hour, GRAINS.hour, GRAINS.day, GRAINS.day, GRAINS.month, GRAINS.month]);
    const open = [...deltas.openCells().values()];
    expect(open.map((c) => c.key)).toEqual([
      { grain: GRAINS.hour, app: ALL_APPS, bucket: 10 * HOUR },
      { grain: GRAINS.hour, app: appSlice("jellyfin"), bucket: 10 * HOUR },
    ]);
    expect(open[0]!.data.dims.nsapp).toEqual({ jellyfin: [0, 1, 0, 0, 0] });
  });
});
