// /api/errors reads each failing app's exit codes, categories and first signature from the failure
// keys of the window's cells (one read per repo filter). A failure key keeps 96 characters of an
// app's name, so an app with a longer one is read from its own slice as before: two apps with the
// same failures, one of each kind, must be described alike, ties and repo filters included.
import { expect, test } from "bun:test";
import type { Execution } from "../../src/domain/execution.ts";
import { HOUR } from "../../src/domain/time.ts";
import { testApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

const SHORT = "tiebreak";
const LONG = `${"x".repeat(100)}-tiebreak`;
/** Failures without any error text: no signature to name. */
const TEXTLESS = ["textless", `${"y".repeat(100)}-textless`];

/** code, category, error text, repo, how many. */
const FAILURES: [number, string, string, string | null, number][] = [
  // ProxmoxVE: two texts with 2 failures each (the first by signature id), code 100 and 7 tied at 3.
  [100, "dependency", "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg", "ProxmoxVE", 2],
  [7, "network", "exit_code=7 | curl: (7) Failed to connect to github.com", "ProxmoxVE", 2],
  // No repo named (ProxmoxVE's too): a third text, 2 failures: tied with the first filter's best.
  [100, "dependency", "exit_code=100 | dpkg was interrupted", null, 1],
  [7, "network", "exit_code=7 | curl: (7) Failed to connect to deb.debian.org", null, 2],
  [0, "", "", null, 1],
];

test("an app read from failure keys is described as one read from its own slice", async () => {
  const t = await testApp();
  const now = t.clock();
  let n = 0;
  const loads = [SHORT, LONG].flatMap((app) =>
    FAILURES.flatMap(([code, category, error, repo, times]) =>
      Array.from({ length: times }, () =>
        finishedLoad(`e${n++}`, now - 2 * HOUR - n * 60_000, {
          nsapp: app,
          repoSource: repo,
          status: "failed",
          outcome: "failed",
          exitCode: code === 0 ? null : code,
          errorCategory: category === "" ? null : category,
          error: error === "" ? null : error,
        } satisfies Partial<Execution>),
      ),
    ),
  );
  const textless = TEXTLESS.flatMap((app) =>
    [1, 1, 2].map((code) =>
      finishedLoad(`e${n++}`, now - 3 * HOUR - n * 60_000, {
        nsapp: app,
        status: "failed",
        outcome: "failed",
        exitCode: code,
      } satisfies Partial<Execution>),
    ),
  );
  await t.store.write([...loads, ...textless]);
  for (const query of ["days=7", "days=7&repo=ProxmoxVE", "days=7&repo=all"]) {
    const res = await t.get(`/api/errors?${query}`);
    expect(res.status).toBe(200);
    const apps = (res.body as { app_errors: Record<string, unknown>[] }).app_errors;
    const of = (app: string) => {
      const { app: _, ...rest } = apps.find((a) => a.app === app)!;
      return rest;
    };
    expect([query, of(SHORT)]).toEqual([query, of(LONG)]);
    expect(of(SHORT)).toMatchObject({ failed_count: 8, top_exit_code: 7, top_category: "network" });
    expect(String(of(SHORT).top_error)).not.toBe("");
    expect([query, of(TEXTLESS[0]!)]).toEqual([query, of(TEXTLESS[1]!)]);
    expect(of(TEXTLESS[0]!)).toMatchObject({ failed_count: 3, top_exit_code: 1, top_error: "" });
    const categories = (res.body as { category_stats: { category: string; top_apps: string }[] }).category_stats;
    for (const c of categories) expect(c.top_apps.split(", ").sort()).toEqual([LONG, SHORT].sort());
    expect(res.body).toMatchObject({ total_errors: 22 });
  }
});
