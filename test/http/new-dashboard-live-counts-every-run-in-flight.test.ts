// /api/new's live panel counts the runs in flight that reported in the last 20 minutes, however
// long ago they started (most here started hours before: the store's late index finds them), and
// lists the 40 heard from most recently.
import { expect, test } from "bun:test";
import { MINUTE } from "../../src/domain/time.ts";
import { testApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

test.each([12, 620])("%i runs in flight: those heard from in the last 20 minutes counted", async (runs) => {
  const t = await testApp();
  const now = t.clock();
  // Started up to ~10 hours ago, last heard from 0-59 minutes ago: every third within 20 minutes.
  const loads = Array.from({ length: runs }, (_, i) => {
    const heard = now - (i % 3 === 0 ? 1 + (i % 19) : 21 + (i % 38)) * MINUTE;
    return finishedLoad(`live-${i}`, heard - (i % 600) * MINUTE, {
      nsapp: "debian",
      status: "installing",
      outcome: "in_progress",
      updatedAt: heard,
      finishedAt: null,
      durationMs: null,
    });
  });
  await t.store.write(loads);
  const body = (await t.get("/api/new?days=1")).body as {
    live_in_flight: number;
    live_now: { duration: number }[] | null;
  };
  expect(body.live_in_flight).toBe(loads.filter((l) => l.execution.updatedAt >= now - 20 * MINUTE).length);
  const newest = loads.map((l) => l.execution.updatedAt).sort((a, b) => b - a);
  expect(body.live_now?.map((r) => r.duration)).toEqual(
    newest.slice(0, 40).map((heard) => Math.floor((now - heard) / 1000)),
  );
});
