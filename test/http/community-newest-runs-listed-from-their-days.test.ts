// The newest runs of /api/new, its CSV log and /api/script-detail are listed only over the days
// that hold them, as the daily series counts them (a platform or a repo filter has no index, so a
// listing reads every row it passes): the lists must still be exactly the newest runs of the
// filters, whether the window has fewer runs than a list holds, more, none, or only long ago.
import { beforeAll, describe, expect, test } from "bun:test";
import type { Execution } from "../../src/domain/execution.ts";
import { DAY, HOUR } from "../../src/domain/time.ts";
import { testApp, type TestApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

interface Run {
  id: string;
  at: number;
  app: string;
  platform: "pve" | "incus";
  repo: string;
}

let t: TestApp;
const runs: Run[] = [];

beforeAll(async () => {
  t = await testApp();
  const now = t.clock();
  // docker: 0-12 runs a day over 25 days, incus on one day in four; "quiet": runs 12-20 days ago only.
  for (let d = 0; d < 25; d++)
    for (let i = 0; i < (d * 7) % 13; i++)
      runs.push({
        id: `docker-${d}-${i}`,
        at: now - d * DAY - (i + 1) * HOUR,
        app: "docker",
        platform: d % 4 === 1 ? "incus" : "pve",
        repo: i % 3 === 0 ? "my-fork" : "ProxmoxVE",
      });
  for (let d = 12; d <= 20; d += 2)
    runs.push({ id: `quiet-${d}`, at: now - d * DAY, app: "quiet", platform: "pve", repo: "ProxmoxVE" });
  const loads = runs.map((r) =>
    finishedLoad(r.id, r.at, {
      nsapp: r.app,
      platform: r.platform,
      repoSource: r.repo,
      status: "success",
      outcome: "success",
    } satisfies Partial<Execution>),
  );
  await t.store.write(loads);
});

/** The ids of the `limit` newest runs that `keep` keeps within `days` days. */
function newest(keep: (r: Run) => boolean, days: number, limit: number): string[] {
  const from = t.clock() - days * DAY;
  return runs
    .filter((r) => r.at >= from && keep(r))
    .sort((a, b) => b.at - a.at)
    .slice(0, limit)
    .map((r) => r.id)
    .sort();
}

const idsOf = (recent: unknown) => ((recent as { run: string }[] | null) ?? []).map((r) => r.run).sort();

describe("/api/script-detail's 50 newest runs", () => {
  test.each([
    ["every platform: more runs than listed, cut within a day", "", () => true],
    ["pve", "&platform=pve", (r: Run) => r.platform === "pve"],
    ["incus: runs on one day in four", "&platform=incus", (r: Run) => r.platform === "incus"],
    ["pve of one repo", "&platform=pve&repo=ProxmoxVE", (r: Run) => r.platform === "pve" && r.repo === "ProxmoxVE"],
  ])("%s", async (_, params, keep) => {
    for (const days of [1, 7, 30]) {
      const { body } = await t.get(`/api/script-detail?app=docker&days=${days}${params}`);
      const want = newest((r) => r.app === "docker" && keep(r), days, 50);
      expect(idsOf((body as { recent: unknown }).recent), `${days} days${params}`).toEqual(want);
    }
  });

  test("an app heard from only long ago, and one never heard from", async () => {
    const quiet = await t.get("/api/script-detail?app=quiet&days=30");
    expect(idsOf((quiet.body as { recent: unknown }).recent)).toEqual(newest((r) => r.app === "quiet", 30, 50));
    expect(idsOf((quiet.body as { recent: unknown }).recent)).toHaveLength(5);
    const none = await t.get("/api/script-detail?app=quiet&days=7");
    expect((none.body as { recent: unknown }).recent).toBeNull();
  });
});

describe("/api/new's 300 newest runs, and its CSV log", () => {
  test.each([
    ["every platform", "", () => true],
    ["incus", "&platform=incus", (r: Run) => r.platform === "incus"],
    ["a repo", "&repo=ProxmoxVE", (r: Run) => r.repo === "ProxmoxVE"],
  ])("%s", async (_, params, keep) => {
    for (const days of [7, 30]) {
      const { body } = await t.get(`/api/new?days=${days}${params}`);
      const want = newest(keep, days, 300);
      expect(idsOf((body as { recent: unknown }).recent), `${days} days${params}`).toEqual(want);
      const csv = await t.app.handle(new Request(`http://localhost/api/new/log.csv?days=${days}${params}`));
      // One line per run after the header; the app and the time are in every line.
      expect((await csv.text()).trim().split("\n").length - 1).toBe(want.length);
    }
  });
});
