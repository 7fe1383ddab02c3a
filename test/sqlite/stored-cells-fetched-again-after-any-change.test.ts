// The rows of a rollup range are fetched once while nothing in the database changes (reads.ts
// FetchedRanges): a page's aggregates ask for the same cells many times. Any change of a cell is seen
// by the next read: a batch of this connection, any statement on it, a commit of another connection
// (noticed by the store's checkState, which every rollup read passes first and which asks SQLite at
// most once a millisecond); rows read inside a transaction go with its rollback.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { GRAINS, storedSlicesOf } from "../../src/domain/rollup.ts";
import { DAY } from "../../src/domain/time.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { checkState, createStoreState } from "../../src/store/sqlite/store-state.ts";
import { writeNow } from "../../src/store/sqlite/store.ts";
import { execution, finishedLoad } from "../helpers/reports.ts";
import { tempDir } from "../helpers/tmp.ts";

test("a stored range read again reflects every change, whoever made it", () => {
  const file = join(tempDir(), "fetched.db");
  const a = openDatabase(file, { durability: "normal", migrate: true });
  const b = openDatabase(file, { durability: "normal", migrate: false });
  const state = createStoreState(a.sqlite, a.db);
  // Days before the fold mark: written straight into stored day cells.
  const day = Math.floor(state.open.foldedUntil / DAY) * DAY - 5 * DAY;
  const load = (id: string, at: number) => finishedLoad(id, at, { status: "done", outcome: "success" });
  const slice = storedSlicesOf(execution("x"))[0]!;
  // As a rollup read does (rollup-reads.ts): the store's state checked, then the stored range.
  const days = () => {
    checkState(state);
    return (
      state.reads
        .storedRollups({ grain: GRAINS.day, from: day - DAY, to: day + 4 * DAY, parts: ["data"] }, [slice])
        .get(slice) ?? []
    ).map((c) => c.bucket);
  };

  writeNow(state, [load("d0", day + 1000)]);
  expect(days()).toEqual([day]);
  expect(days()).toEqual([day]); // fetched once, read twice

  // A batch of this connection.
  writeNow(state, [load("d2", day + 2 * DAY + 1000)]);
  expect(days()).toEqual([day, day + 2 * DAY]);

  // Any statement on this connection (data_version does not move for its own writes).
  a.sqlite.run("DELETE FROM rollups WHERE grain = ? AND bucket = ?", [GRAINS.day, day + 2 * DAY]);
  expect(days()).toEqual([day]);

  // A change rolled back leaves the cells as they were, and so does a change of executions only.
  expect(() =>
    a.sqlite.transaction(() => {
      a.sqlite.run("DELETE FROM rollups WHERE grain = ?", [GRAINS.day]);
      throw new Error("rolled back");
    })(),
  ).toThrow("rolled back");
  expect(days()).toEqual([day]);
  // Read inside a transaction: the change is seen there, and gone with the rollback.
  expect(() =>
    a.sqlite.transaction(() => {
      a.sqlite.run("DELETE FROM rollups WHERE grain = ?", [GRAINS.day]);
      expect(days()).toEqual([]);
      throw new Error("rolled back");
    })(),
  ).toThrow("rolled back");
  expect(days()).toEqual([day]);
  // A cell of another range, and the first and the last day of this one.
  writeNow(state, [load("d9", day + 9 * DAY + 1000)]);
  expect(days()).toEqual([day]);
  writeNow(state, [load("d3", day + 3 * DAY + 1000)]);
  expect(days()).toEqual([day, day + 3 * DAY]);
  writeNow(state, [load("d-1", day - DAY + 1000)]);
  expect(days()).toEqual([day - DAY, day, day + 3 * DAY]);
  a.sqlite.run("DELETE FROM executions");
  expect(days()).toEqual([day - DAY, day, day + 3 * DAY]);

  // Another connection's commit.
  b.sqlite.run("DELETE FROM rollups WHERE grain = ?", [GRAINS.day]);
  Bun.sleepSync(2);
  expect(days()).toEqual([]);
  a.sqlite.close();
  b.sqlite.close();
});
