// Read threads with a time budget (issue 15, item 3): the pool's rules against a stand-in read
// thread whose slowness the test decides. The same against the compiled binary, ingesting while
// it scans: test/hostile/long-scans-never-stall-ingestion.test.ts.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/log.ts";
import { ReadBudgetError } from "../../src/store/contract/errors.ts";
import { startScanThreads } from "../../src/store/sqlite/scan-threads.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(180_000);

/** A read thread that speaks scanner.ts's protocol; a filter with q "slow" never finishes, "boom" fails like a damaged file. */
function standIn(): URL {
  const path = join(tempDir("installstats-scan-stand-in-"), "stand-in.ts");
  writeFileSync(
    path,
    `declare const self: Worker;
self.onmessage = (event) => {
  const m = event.data;
  if ("path" in m) return;
  if (m.filter?.q === "slow") { for (;;) Bun.sleepSync(1000); }
  if (m.filter?.q === "boom") { self.postMessage({ id: m.id, ok: false, message: "database disk image is malformed", name: "SQLiteError", code: "SQLITE_CORRUPT" }); return; }
  if (m.op === "list") self.postMessage({ id: m.id, ok: true, value: { rows: [], next: null, answeredBy: m.filter?.q ?? "" } });
  else if (m.op === "next") self.postMessage({ id: m.id, ok: true, value: m.stream % 2 ? null : [] });
  else self.postMessage({ id: m.id, ok: true, value: null });
};
`,
  );
  return new URL(`file://${path}`);
}

const quiet = createLogger("error", () => {}, Date.now);

describe("read threads", () => {
  test("a scan past the budget fails with ReadBudgetError; a listing waiting behind it is asked again of the fresh thread; later scans work", async () => {
    const scans = startScanThreads(standIn(), "unused.db", { threads: 1, budgetMs: 300, log: quiet });
    try {
      const began = performance.now();
      const slow = scans.listExecutions({ q: "slow" }, { limit: 1 });
      const waiting = scans.listExecutions({ q: "behind" }, { limit: 1 });
      await expect(slow).rejects.toBeInstanceOf(ReadBudgetError);
      await expect(slow).rejects.toThrow(/longer than the read budget \(0\.3 s\)/);
      expect(performance.now() - began).toBeLessThan(5000);
      // The listing queued behind it was answered by the new thread, not lost.
      expect(await waiting).toMatchObject({ rows: [], answeredBy: "behind" });
      expect(await scans.listExecutions({ q: "after" }, { limit: 1 })).toMatchObject({ answeredBy: "after" });
    } finally {
      scans.stop();
    }
  });

  test("a stream open on a thread stopped for another scan fails clearly instead of starting over", async () => {
    const scans = startScanThreads(standIn(), "unused.db", { threads: 1, budgetMs: 300, log: quiet });
    try {
      const stream = scans.executionChunks({}); // stream 0: endless empty chunks
      expect((await stream.next()).value).toEqual([]);
      await expect(scans.listExecutions({ q: "slow" }, { limit: 1 })).rejects.toBeInstanceOf(ReadBudgetError);
      await expect(stream.next()).rejects.toThrow(/stopped with its read thread/);
    } finally {
      scans.stop();
    }
  });

  test("errors come back with SQLite's code, so damage is told apart; no budget means no limit", async () => {
    const scans = startScanThreads(standIn(), "unused.db", { threads: 1, budgetMs: 0, log: quiet });
    try {
      const failed = await scans.listExecutions({ q: "boom" }, { limit: 1 }).catch((e: unknown) => e);
      expect(failed).toMatchObject({
        name: "SQLiteError",
        code: "SQLITE_CORRUPT",
        message: "database disk image is malformed",
      });
    } finally {
      scans.stop();
    }
  });
});
