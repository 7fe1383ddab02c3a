// The SQLite store's state (src/store/sqlite/store-state.ts) on its own: two connections to one
// file, a write through one; the other's open hours know nothing of it until checkState sees
// data_version move, then they equal the writer's; a check within the same millisecond asks nothing.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { GRAINS } from "../../src/domain/rollup.ts";
import { HOUR } from "../../src/domain/time.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { rollupCells } from "../../src/store/sqlite/rollup-reads.ts";
import { checkState, createStoreState, recount } from "../../src/store/sqlite/store-state.ts";
import { writeNow } from "../../src/store/sqlite/store.ts";
import { reportOp, uploadStart } from "../helpers/reports.ts";
import { tempDir } from "../helpers/tmp.ts";

/** The hour cells around `at`: stored ones, and the open hours' from memory. */
const hoursAround = (state: ReturnType<typeof createStoreState>, at: number) =>
  rollupCells(state, GRAINS.hour, at - HOUR, at + HOUR);

describe("SQLite store state", () => {
  test("another connection's commit is seen at the next check, and the open hours are counted again", () => {
    const file = join(tempDir(), "state.db");
    const a = openDatabase(file, { durability: "normal", migrate: true });
    const b = openDatabase(file, { durability: "normal", migrate: false });
    const mine = createStoreState(a.sqlite, a.db);
    const theirs = createStoreState(b.sqlite, b.db);
    const at = mine.open.foldedUntil + 60_000;
    expect(writeNow(theirs, [reportOp(uploadStart("11111111-2222-4333-8444-555555555555"), at)])).toEqual([
      expect.objectContaining({ kind: "created" }),
    ]);
    expect(theirs.reads.getExecutions("11111111-2222-4333-8444-555555555555")).toHaveLength(1);

    // Asked within a millisecond of the last check: nothing is asked, nothing recounted.
    mine.checkedAt = performance.now() + 60_000;
    checkState(mine);
    expect(hoursAround(mine, at)).toEqual([]);
    expect(hoursAround(theirs, at).length).toBeGreaterThan(0);

    // A batch always checks: data_version moved, so the open hours are counted from the records again.
    mine.checkedAt = Number.NEGATIVE_INFINITY;
    checkState(mine, true);
    expect(mine.seenVersion).toBe(mine.dataVersion.get()!.data_version);
    // The same cells as the connection that wrote them, and as a recount from scratch.
    expect(hoursAround(mine, at)).toEqual(hoursAround(theirs, at));
    recount(theirs);
    expect(hoursAround(mine, at)).toEqual(hoursAround(theirs, at));
    a.sqlite.close();
    b.sqlite.close();
  });
});
