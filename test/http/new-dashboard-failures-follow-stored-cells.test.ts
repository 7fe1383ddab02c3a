// /api/new keeps what it derived from a stored cell's failures while the cell is the same (domain/rollup.ts
// settle): a failure written later into that day must show in the next answer, whichever window reads it.
import { expect, test } from "bun:test";
import { DAY } from "../../src/domain/time.ts";
import { testApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

const failure = (id: string, app: string, createdAt: number) =>
  finishedLoad(id, createdAt, {
    nsapp: app,
    status: "failed",
    outcome: "failed",
    exitCode: 100,
    errorCategory: "dependency",
    error: "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg",
  });

type Why = {
  exit_codes: { code: number; count: number; apps: number }[];
  signatures: { count: number; apps: number }[];
};

test("a failure written into a stored day after a read is counted by the next read, with its app", async () => {
  const t = await testApp();
  // Three days back: stored day cells, read decoded (and settled) from their bytes.
  const day = t.clock() - 3 * DAY;
  await t.store.write([failure("a1", "jellyfin", day), failure("a2", "jellyfin", day + 60_000)]);
  const first = (await t.get("/api/new?days=7")).body as Why;
  expect(first.exit_codes).toEqual([expect.objectContaining({ code: 100, count: 2, apps: 1 })]);
  expect(first.signatures).toEqual([expect.objectContaining({ count: 2, apps: 1 })]);

  await t.store.write([failure("a3", "immich", day + 120_000)]);
  // Another window (its answer is not the one kept for days=7) over the same, now changed, day cell.
  const second = (await t.get("/api/new?days=30")).body as Why;
  expect(second.exit_codes).toEqual([expect.objectContaining({ code: 100, count: 3, apps: 2 })]);
  expect(second.signatures).toEqual([expect.objectContaining({ count: 3, apps: 2 })]);
  // And a third app: a group of many apps counts each once.
  await t.store.write([failure("a4", "plex", day + 180_000), failure("a5", "immich", day + 240_000)]);
  const third = (await t.get("/api/new?days=14")).body as Why;
  expect(third.signatures).toEqual([expect.objectContaining({ count: 5, apps: 3 })]);
});
