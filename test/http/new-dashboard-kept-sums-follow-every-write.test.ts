// /api/new keeps what it derived from stored cells while they are the same (domain/rollup.ts settle):
// a failure written later into that day must show in the next answer, whichever window reads it, and
// what the open hours add (or a second repo filter) must never change what was kept.
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

test("failures of stored days kept for a window are not changed by the open hours added to them", async () => {
  const t = await testApp();
  const day = t.clock() - 3 * DAY;
  await t.store.write([failure("b1", "jellyfin", day)]);
  // The same group (code, category, signature) in the open hour, by another app: added to the kept days.
  await t.store.write([failure("b2", "immich", t.clock())]);
  const first = (await t.get("/api/new?days=7")).body as Why;
  expect(first.exit_codes).toEqual([expect.objectContaining({ code: 100, count: 2, apps: 2 })]);
  expect(first.signatures).toEqual([expect.objectContaining({ count: 2, apps: 2 })]);
  // Once more in the open hour: the kept days still count one failure of one app.
  await t.store.write([failure("b3", "plex", t.clock() + 1000)]);
  const second = (await t.get("/api/new?days=7")).body as Why;
  expect(second.exit_codes).toEqual([expect.objectContaining({ code: 100, count: 3, apps: 3 })]);
  expect(second.signatures).toEqual([expect.objectContaining({ count: 3, apps: 3 })]);
});

test("sums of stored days kept for a window are not changed by the open hours or a second repo filter added to them", async () => {
  const t = await testApp();
  const run = (id: string, at: number, repoSource: string | null, type = "lxc") =>
    finishedLoad(id, at, { nsapp: "jellyfin", status: "done", outcome: "success", repoSource, type });
  const day = t.clock() - 3 * DAY;
  // The stored day's sums are the kept ones, which nothing after may change: the open hours add to
  // its containers, not to its VMs.
  await t.store.write([
    run("c0", day, "ProxmoxVE"),
    run("c1", day, "ProxmoxVE", "vm"),
    run("c2", day + 1000, null, "vm"),
  ]);
  await t.store.write([run("c3", t.clock(), "ProxmoxVE"), run("c4", t.clock() + 500, null)]);
  type Head = { runs: number; success: number; by_type: { label: string; runs: number }[] };
  const ask = async (path: string) => {
    const b = (await t.get(path)).body as Head;
    const type = (label: string) => b.by_type.find((g) => g.label === label)?.runs;
    return { runs: b.runs, success: b.success, lxc: type("lxc"), vm: type("vm") };
  };
  // ProxmoxVE: the reports naming it and those naming no repo, two filters added up.
  for (const path of ["/api/new?days=7", "/api/new?days=7&repo=ProxmoxVE"])
    expect(await ask(path)).toEqual({ runs: 5, success: 5, lxc: 3, vm: 2 });
  await t.store.write([run("c5", t.clock() + 1000, "ProxmoxVE")]);
  for (const path of ["/api/new?days=7", "/api/new?days=7&repo=ProxmoxVE"])
    expect(await ask(path)).toEqual({ runs: 6, success: 6, lxc: 4, vm: 2 });
  await t.store.write([run("c6", t.clock() + 2000, null)]);
  for (const path of ["/api/new?days=7&repo=ProxmoxVE", "/api/new?days=7"])
    expect(await ask(path)).toEqual({ runs: 7, success: 7, lxc: 5, vm: 2 });
});
