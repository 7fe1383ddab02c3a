// Scheduled jobs: stuck installs expire through the write path; runs are logged and counted.
import { describe, expect, test } from "bun:test";
import { startReport, testApp } from "../helpers/app.ts";
import { createLogger } from "../../src/log.ts";
import { startJobs } from "../../src/maintenance/jobs.ts";
import { expireStuck, expireStuckJob } from "../../src/maintenance/expire-stuck.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { execution } from "../helpers/reports.ts";

const HOUR = 3_600_000;

describe("expire-stuck", () => {
  test("only installs in progress past the age become unknown; rollups stay exact; runs are logged and counted", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("old-stuck"));
    await t.post("/upload", startReport("old-done"));
    await t.post("/upload/updatestatus", { status: "done", random_id: "old-done" });
    t.clock.advance(13 * HOUR);
    await t.post("/upload", startReport("young"));
    const lines: string[] = [];
    const jobs = startJobs(
      [expireStuckJob({ store: t.store, writer: t.writer, clock: t.clock, stuckAfterMs: 12 * HOUR })],
      {
        log: createLogger("info", (l) => lines.push(l), t.clock),
        metrics: t.metrics,
        clock: t.clock,
        lease: (name, everyMs, at, fn) => t.store.leaseJob(name, everyMs, at, fn),
      },
    );
    try {
      await jobs.runNow("expire-stuck");
    } finally {
      jobs.stop();
    }
    expect((await t.get("/api/installs/old-stuck")).body).toMatchObject({ outcome: "unknown", status: "installing" });
    expect((await t.get("/api/installs/old-done")).body).toMatchObject({ outcome: "success" });
    expect((await t.get("/api/installs/young")).body).toMatchObject({ outcome: "in_progress" });
    expect((await verifyRollups(t.store)).ok).toBe(true);
    const done = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "job done");
    expect(done).toMatchObject({ job: "expire-stuck", expired: 1 });
    expect(t.metrics.jobRuns.get({ job: "expire-stuck", result: "ok" })).toBe(1);
  });

  test("each run checks only installs created since the last one; an imported old install in progress is still found", async () => {
    const t = await testApp();
    const expire = () => expireStuck(t.store, t.writer, 12 * HOUR, t.clock());
    await t.post("/upload", startReport("first"));
    t.clock.advance(13 * HOUR);
    expect(await expire()).toBe(1);
    const mark = await t.store.stuckCheckedUntil();
    expect(mark).toBe(t.clock() - 12 * HOUR);
    // A run with nothing new to check neither scans nor moves the mark.
    expect(await expire()).toBe(0);
    expect(await t.store.stuckCheckedUntil()).toBe(mark);
    // Installs created before the mark are not scanned again, unless one arrives by import.
    const old = t.clock() - 20 * HOUR;
    const row = execution("imported-old", { createdAt: old, updatedAt: old, installingAt: old });
    expect(await t.writer.submit({ kind: "load", execution: row, at: t.clock() })).toEqual({
      kind: "created",
      outcome: "in_progress",
    });
    expect(await t.store.stuckCheckedUntil()).toBe(old);
    t.clock.advance(HOUR);
    expect(await expire()).toBe(1);
    expect((await t.get("/api/installs/imported-old")).body).toMatchObject({ outcome: "unknown" });
    expect(await t.store.stuckCheckedUntil()).toBe(t.clock() - 12 * HOUR);
    expect((await verifyRollups(t.store)).ok).toBe(true);
  });

  test("a failing job is logged and counted, not thrown", async () => {
    const t = await testApp();
    const lines: string[] = [];
    const jobs = startJobs(
      [
        {
          name: "broken",
          everyMs: 3_600_000,
          run: async () => {
            throw new Error("disk on fire");
          },
        },
      ],
      {
        log: createLogger("info", (l) => lines.push(l), t.clock),
        metrics: t.metrics,
        clock: t.clock,
        lease: (name, everyMs, at, fn) => t.store.leaseJob(name, everyMs, at, fn),
      },
    );
    await jobs.runNow("broken");
    jobs.stop();
    expect(lines.some((l) => l.includes("job failed") && l.includes("disk on fire"))).toBe(true);
    expect(t.metrics.jobRuns.get({ job: "broken", result: "error" })).toBe(1);
  });

  test("a round another node runs (the store's lease says so) is skipped and counted, not run", async () => {
    const t = await testApp();
    let ran = 0;
    const asked: [string, number, number][] = [];
    const jobs = startJobs([{ name: "fold-rollups", everyMs: 300_000, run: async () => ({ n: ++ran }) }], {
      log: createLogger("info", () => {}, t.clock),
      metrics: t.metrics,
      clock: t.clock,
      lease: async (name, everyMs, at) => {
        asked.push([name, everyMs, at]);
        return null;
      },
    });
    await jobs.runNow("fold-rollups");
    jobs.stop();
    expect({ ran, asked }).toEqual({ ran: 0, asked: [["fold-rollups", 0, t.clock()]] });
    expect(t.metrics.jobRuns.get({ job: "fold-rollups", result: "skipped" })).toBe(1);
  });
});
