// The opt-in public stats (issue 18 item 4): counts per app over 30, 90 and 365 days equal to what
// was sent, the privacy floor, no token needed only when enabled, the cache. The floor alone:
// test/unit/public-stats-privacy-floor.test.ts; the page: test/browser/public-page-shows-only-apps-above-the-floor.test.ts.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { DAY } from "../../src/domain/time.ts";
import { PUBLIC_CACHE_MS, type PublicStats } from "../../src/read/native/public-stats-routes.ts";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";

setDefaultTimeout(120_000);

/** `n` runs of `app` through /upload, `failed` of them failing and the rest done. */
async function runs(a: TestApp, app: string, n: number, failed: number, tag: string, type = "lxc"): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = `${tag}-${app}-${i}`;
    expect((await a.post("/upload", startReport(id, { nsapp: app, type }))).status).toBe(201);
    const status = i < failed ? "failed" : "done";
    expect(
      (
        await a.post("/upload/updatestatus", {
          status,
          error: status === "failed" ? "exit code 1" : "none",
          random_id: id,
        })
      ).status,
    ).toBe(200);
  }
}

const windowOf = (body: PublicStats, days: number) => body.windows.find((w) => w.days === days)!;

describe("GET /public/stats.json", () => {
  test("not served unless enabled, with or without a read token", async () => {
    for (const readToken of [null, "read-secret"]) {
      const a = await testApp({ readToken });
      const r = await a.get("/public/stats.json");
      expect(r.status).toBe(404);
      expect(r.body.error).toBe("not_found");
      await a.stop();
    }
  });

  test("counts per app and window equal what was sent; floor, kinds and the read token", async () => {
    const a = await testApp({ publicStats: true, publicMinInstalls: 5, readToken: "read-secret" });
    // 200 days ago: only in the 365-day window; 60 days ago: in 90 and 365; now: in all three.
    await runs(a, "old-app", 6, 1, "old");
    a.clock.advance(140 * DAY);
    await runs(a, "mid-app", 5, 5, "mid");
    await runs(a, "old-app", 2, 0, "old2");
    a.clock.advance(60 * DAY);
    await runs(a, "new-app", 7, 2, "new");
    await runs(a, "rare-app", 4, 1, "rare");
    // Host tools and addons are not installs: never in the public numbers.
    await runs(a, "tool-app", 9, 0, "tool", "pve");

    const r = await a.get("/public/stats.json");
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    expect(r.headers.get("cache-control")).toBe(`public, max-age=${PUBLIC_CACHE_MS / 1000}`);
    const body = r.body as unknown as PublicStats;
    expect(body.min_installs).toBe(5);
    expect(body.windows.map((w) => w.days)).toEqual([30, 90, 365]);

    const d30 = windowOf(body, 30);
    expect(d30.apps).toEqual([
      { app: "new-app", installs: 7, success: 5, failed: 2, blocked: 0, aborted: 0, failure_rate: 0.2857 },
    ]);
    expect(d30.other).toEqual({
      apps: 1,
      installs: 4,
      success: 3,
      failed: 1,
      blocked: 0,
      aborted: 0,
      failure_rate: 0.25,
    });
    expect(d30.total.installs).toBe(11);

    const d90 = windowOf(body, 90);
    expect(d90.apps.map((x) => [x.app, x.installs, x.failed])).toEqual([
      ["new-app", 7, 2],
      ["mid-app", 5, 5],
    ]);
    // old-app's 2 runs of 60 days ago are below the floor of 5 in this window.
    expect(d90.other).toMatchObject({ apps: 2, installs: 6 });

    const d365 = windowOf(body, 365);
    expect(d365.apps.map((x) => [x.app, x.installs])).toEqual([
      ["old-app", 8],
      ["new-app", 7],
      ["mid-app", 5],
    ]);
    expect(d365.total).toMatchObject({ installs: 24, success: 15, failed: 9 });
    expect(JSON.stringify(body)).not.toContain("tool-app");
    expect(JSON.stringify(body)).not.toContain("rare-app");

    // Everything else still needs the token.
    expect((await a.get("/api/installs")).status).toBe(401);
    expect((await a.get("/api/stats/summary")).status).toBe(401);
    await a.stop();
  });

  test("an answer is reused for ten minutes, then recomputed", async () => {
    const a = await testApp({ publicStats: true, publicMinInstalls: 1 });
    await runs(a, "cached-app", 1, 0, "c1");
    const first = (await a.get("/public/stats.json")).body as unknown as PublicStats;
    await runs(a, "cached-app", 1, 0, "c2");
    a.clock.advance(PUBLIC_CACHE_MS - 1);
    const same = (await a.get("/public/stats.json")).body as unknown as PublicStats;
    expect(same).toEqual(first);
    a.clock.advance(1);
    const fresh = (await a.get("/public/stats.json")).body as unknown as PublicStats;
    expect(windowOf(fresh, 30).apps).toEqual([expect.objectContaining({ app: "cached-app", installs: 2 })]);
    expect(fresh.generated_at).not.toBe(first.generated_at);
    await a.stop();
  });
});
