// Top apps over 90 and 365 days begin with a part of a day older than the hour cells, counted from
// its records and kept as settled cells (store/common/old-hours.ts): what a reader derives from
// them is kept by their identity. A write to such a day (a new run, a late final report, a
// deletion) must show in the next answer, asked again and again in between.
import { beforeAll, expect, test } from "bun:test";
import type { Execution } from "../../src/domain/execution.ts";
import { DAY, HOUR } from "../../src/domain/time.ts";
import { testApp, type TestApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

let t: TestApp;
let to: number;
const runs = new Map<string, { app: string; at: number }>();

/** Runs of `apps` in the first hours of the window of `days` days, and an hour before it (outside). */
function firstDayRuns(days: number, apps: readonly string[], tag: string) {
  const from = to - days * DAY;
  return apps.flatMap((app, i) =>
    [from - HOUR, from + HOUR, from + (2 + i) * HOUR].map((at, k) => {
      const id = `${tag}-${days}-${app}-${k}`;
      runs.set(id, { app, at });
      return finishedLoad(id, at, { nsapp: app } satisfies Partial<Execution>);
    }),
  );
}

async function expectRecount(label: string) {
  const body = (await t.get("/api/stats/top-apps?limit=50")).body as Record<
    string,
    { total: number; apps: { nsapp: string; count: number }[] }
  >;
  for (const [key, days] of [
    ["30d", 30],
    ["90d", 90],
    ["365d", 365],
  ] as const) {
    const from = to - days * DAY;
    const counts = new Map<string, number>();
    for (const r of runs.values()) if (r.at >= from && r.at < to) counts.set(r.app, (counts.get(r.app) ?? 0) + 1);
    const want = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    expect(
      body[key]!.apps.map((a) => [a.nsapp, a.count]),
      `${label}: ${key}`,
    ).toEqual(want);
    expect(body[key]!.total, `${label}: ${key}`).toBe(want.reduce((n, [, c]) => n + c, 0));
  }
}

beforeAll(async () => {
  t = await testApp();
  to = Math.floor(t.clock() / HOUR) * HOUR + HOUR;
  await t.store.write([
    ...firstDayRuns(90, ["docker", "pihole", "jellyfin"], "a"),
    ...firstDayRuns(365, ["docker", "homeassistant"], "a"),
    finishedLoad("recent", to - 2 * HOUR, { nsapp: "docker" }),
  ]);
  runs.set("recent", { app: "docker", at: to - 2 * HOUR });
});

test("asked again: the same answer, equal to a recount", async () => {
  await expectRecount("first");
  await expectRecount("again");
});

test("a run added to each window's first day shows in the next answer", async () => {
  await t.store.write([...firstDayRuns(90, ["immich", "immich2"], "b"), ...firstDayRuns(365, ["immich"], "b")]);
  await expectRecount("added");
  await expectRecount("added, again");
});

test("a deletion in a window's first day shows in the next answer", async () => {
  const gone = [...runs.keys()].filter((id) => id.startsWith("a-365-docker-"));
  for (const id of gone) {
    await t.store.write([{ kind: "delete", randomId: id, at: t.clock() }]);
    runs.delete(id);
  }
  await expectRecount("deleted");
});
