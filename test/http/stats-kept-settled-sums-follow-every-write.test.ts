// The aggregates keep the sum of a window's stored cells while those cells are the same
// (read/stats.ts settledSummed): a run written later into a stored day must show in the next
// answer of every question, and what the open hours add must never change what was kept.
import { expect, test } from "bun:test";
import { DAY } from "../../src/domain/time.ts";
import { testApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

const run = (id: string, app: string, createdAt: number, failed: boolean) =>
  finishedLoad(id, createdAt, {
    nsapp: app,
    status: failed ? "failed" : "done",
    outcome: failed ? "failed" : "success",
    installDuration: 60,
    ...(failed
      ? {
          exitCode: 100,
          errorCategory: "dependency",
          error: "exit_code=100 | apt failed | at line 12: apt-get install",
        }
      : {}),
  });

type Summary = { total: number; success: number; failed: number };
type Breakdown = { groups: { value: string | null; total: number; failed: number }[] };
type Errors = { total_failed: number; signatures: { count: number }[] };

test("a run written into a stored day after a read is counted by the next read of every question", async () => {
  const t = await testApp();
  // Days back: stored day cells, read decoded (and settled) from their bytes.
  const day = t.clock() - 3 * DAY;
  const window = `from=${new Date(t.clock() - 7 * DAY).toISOString()}&to=${new Date(t.clock() + 3_600_000).toISOString()}`;
  const ask = async () => ({
    summary: (await t.get(`/api/stats/summary?${window}`)).body as Summary,
    apps: (await t.get(`/api/stats/breakdown?by=nsapp&${window}`)).body as Breakdown,
    errors: (await t.get(`/api/stats/errors?${window}`)).body as Errors,
  });
  const app = (b: Breakdown, name: string) => b.groups.find((g) => g.value === name);

  // Two stored days: more than one settled cell, summed and kept.
  await t.store.write([run("a1", "jellyfin", day, true), run("a2", "jellyfin", day - DAY, false)]);
  // The same app in the open hour: added to the kept sum of the stored day.
  await t.store.write([run("a3", "jellyfin", t.clock(), false)]);
  let got = await ask();
  expect(got.summary).toMatchObject({ total: 3, success: 2, failed: 1 });
  expect(app(got.apps, "jellyfin")).toMatchObject({ total: 3, failed: 1 });
  expect(got.errors).toMatchObject({ total_failed: 1, signatures: [{ count: 1 }] });

  // Once more in the open hour: the stored day's kept sum still holds its two runs.
  await t.store.write([run("a4", "jellyfin", t.clock() + 1000, true)]);
  got = await ask();
  expect(got.summary).toMatchObject({ total: 4, success: 2, failed: 2 });
  expect(got.errors).toMatchObject({ total_failed: 2, signatures: [{ count: 2 }] });

  // Into the stored day itself, by another app: its cell changes, so does every answer.
  await t.store.write([run("a5", "immich", day + 120_000, true)]);
  got = await ask();
  expect(got.summary).toMatchObject({ total: 5, success: 2, failed: 3 });
  expect(app(got.apps, "immich")).toMatchObject({ total: 1, failed: 1 });
  expect(app(got.apps, "jellyfin")).toMatchObject({ total: 4, failed: 2 });
  expect(got.errors).toMatchObject({ total_failed: 3, signatures: [{ count: 3 }] });
});
