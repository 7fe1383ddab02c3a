// Reads never stall ingestion (issue 15, item 3): scans of executions run on read threads with a
// time budget. The pool's rules against a stand-in read thread whose slowness the test decides;
// then the compiled binary: reports acknowledged while a long scan runs, a scan past the budget
// stopped with a clear 503, the read thread started afresh, and answers equal to local reads.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../src/log.ts";
import { ReadBudgetError } from "../src/store/contract.ts";
import { openSqliteEngine } from "../src/store/sqlite/engine.ts";
import { startScanThreads } from "../src/store/sqlite/scan-threads.ts";
import { compiledBinary, startServer } from "./helpers/binary.ts";
import { tempDir } from "./helpers/tmp.ts";

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
      expect(failed).toMatchObject({ name: "SQLiteError", code: "SQLITE_CORRUPT", message: "database disk image is malformed" });
    } finally {
      scans.stop();
    }
  });
});

describe("the compiled binary", () => {
  // Large enough that one scan takes ~100 ms: a report delayed by a busy machine (25 ms seen) stays far below half of it.
  const RECORDS = 120_000;

  let original: string | null = null;
  /** A copy of one seeded database (seeding takes seconds; copying does not). */
  async function seeded(name: string): Promise<string> {
    const bin = await compiledBinary();
    if (original === null) {
      original = join(tempDir("installstats-reads-seed-"), "seed.db");
      expect(Bun.spawnSync([bin, "seed", "--db", original, "--records", String(RECORDS), "--days", "400"], { stdin: "ignore" }).exitCode).toBe(0);
    }
    const db = join(tempDir(`installstats-${name}-`), "reads.db");
    copyFileSync(original, db);
    return db;
  }

  const report = (id: string) => JSON.stringify({ random_id: id, type: "lxc", nsapp: "isolation", status: "installing" });

  test("reports are acknowledged while long scans run, well before the scans answer; scans through the read threads equal local reads", async () => {
    const db = await seeded("isolation");
    const s = await startServer(await compiledBinary(), ["--db", db, "--read-budget", "0"]);
    try {
      // One full scan (a text no record holds: every record read), alone: how long a report would
      // wait behind it on the thread that acknowledges reports.
      const alone = performance.now();
      await (await fetch(`${s.url}/api/stats/summary?days=3660&q=zzz-none`)).arrayBuffer();
      const scanMs = performance.now() - alone;
      // A dozen at once: they queue on the
      // read threads, so the last answers long after the first reports could have waited for them.
      const scans = Array.from({ length: 12 }, (_, i) => (i % 2 ? "/api/stats/summary?days=3660&q=zzz-none" : "/api/stats/breakdown?by=nsapp&days=3660&q=zzz-none"));
      const scanned = scans.map(async (p) => {
        const res = await fetch(`${s.url}${p}`);
        await res.arrayBuffer();
        return { at: performance.now(), status: res.status };
      });
      await Bun.sleep(20);
      const acked: number[] = [];
      const latencies: number[] = [];
      for (let i = 0; i < 10; i++) {
        const sent = performance.now();
        const res = await fetch(`${s.url}/upload`, { method: "POST", body: report(`iso-${i}`), headers: { "content-type": "application/json" } });
        expect(res.status).toBe(201);
        acked.push(performance.now());
        latencies.push(performance.now() - sent);
      }
      const done = await Promise.all(scanned);
      expect(done.every((d) => d.status === 200)).toBe(true);
      // Causality, not speed: the ten reports were all answered before the scans were.
      expect(Math.max(...acked)).toBeLessThan(Math.max(...done.map((d) => d.at)));
      // And none waited for a scan: every report took less than half of one scan alone.
      console.log(`one scan of ${RECORDS} records alone: ${scanMs.toFixed(0)} ms; reports meanwhile: max ${Math.max(...latencies).toFixed(1)} ms`);
      expect(Math.max(...latencies)).toBeLessThan(scanMs / 2);

      // What the read threads answer equals what this process reads from the file.
      const listed = (await (await fetch(`${s.url}/api/installs?limit=50&q=a&order=oldest`)).json()) as { installs: { random_id: string }[] };
      const local = openSqliteEngine(db, { durability: "normal", migrate: false });
      const mine = (await local.store.listExecutions({ q: "a", kind: "install" }, { limit: 50, order: "oldest" })).rows.map((r) => r.randomId);
      await local.close();
      expect(listed.installs.map((r) => r.random_id)).toEqual(mine);
      expect(mine.length).toBe(50);
    } finally {
      await s.stop();
    }
  });

  test("a scan past the read budget answers 503 read_budget_exceeded, naming the budget; ingestion, health and other reads go on", async () => {
    const db = await seeded("budget");
    // 1 ms: no full scan of 60,000 records finishes in it.
    const s = await startServer(await compiledBinary(), ["--db", db, "--read-budget", "0.001s"]);
    try {
      const res = await fetch(`${s.url}/api/stats/summary?days=3660&q=zzz-none`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: string; message: string };
      expect(body.error).toBe("read_budget_exceeded");
      expect(body.message).toContain("read budget (0.001 s)");
      expect(body.message).toContain("--read-budget");
      expect((await fetch(`${s.url}/upload`, { method: "POST", body: report("after-budget"), headers: { "content-type": "application/json" } })).status).toBe(201);
      expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
      // Rollup reads and reads by id do not scan: unaffected.
      expect((await fetch(`${s.url}/api/stats/summary?days=3660`)).status).toBe(200);
      expect((await fetch(`${s.url}/api/installs/after-budget`)).status).toBe(200);
      expect(s.stderr()).toContain("read stopped past its budget");
      expect(s.stderr()).not.toContain("unhandled error");
    } finally {
      await s.stop();
    }
  });
});
