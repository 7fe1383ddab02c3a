// Reads never stall ingestion (issue 15, item 3), in the compiled binary: reports acknowledged
// while a long scan runs, a scan past the budget stopped with a clear 503, the read thread started
// afresh, and answers equal to local reads. The read threads' rules alone:
// test/sqlite/read-threads-enforce-the-budget.test.ts.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(180_000);

describe("the compiled binary", () => {
  // Large enough that one scan takes ~100 ms: a report delayed by a busy machine (25 ms seen) stays far below half of it.
  const RECORDS = 120_000;

  let original: string | null = null;
  /** A copy of one seeded database (seeding takes seconds; copying does not). */
  async function seeded(name: string): Promise<string> {
    const bin = await compiledBinary();
    if (original === null) {
      original = join(tempDir("installstats-reads-seed-"), "seed.db");
      expect(
        Bun.spawnSync([bin, "seed", "--db", original, "--records", String(RECORDS), "--days", "400"], {
          stdin: "ignore",
        }).exitCode,
      ).toBe(0);
    }
    const db = join(tempDir(`installstats-${name}-`), "reads.db");
    copyFileSync(original, db);
    return db;
  }

  const report = (id: string) =>
    JSON.stringify({ random_id: id, type: "lxc", nsapp: "isolation", status: "installing" });

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
      const scans = Array.from({ length: 12 }, (_, i) =>
        i % 2 ? "/api/stats/summary?days=3660&q=zzz-none" : "/api/stats/breakdown?by=nsapp&days=3660&q=zzz-none",
      );
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
        const res = await fetch(`${s.url}/upload`, {
          method: "POST",
          body: report(`iso-${i}`),
          headers: { "content-type": "application/json" },
        });
        expect(res.status).toBe(201);
        acked.push(performance.now());
        latencies.push(performance.now() - sent);
      }
      const done = await Promise.all(scanned);
      expect(done.every((d) => d.status === 200)).toBe(true);
      // Causality, not speed: the ten reports were all answered before the scans were.
      expect(Math.max(...acked)).toBeLessThan(Math.max(...done.map((d) => d.at)));
      // And none waited for a scan: every report took less than half of one scan alone.
      console.log(
        `one scan of ${RECORDS} records alone: ${scanMs.toFixed(0)} ms; reports meanwhile: max ${Math.max(...latencies).toFixed(1)} ms`,
      );
      expect(Math.max(...latencies)).toBeLessThan(scanMs / 2);

      // What the read threads answer equals what this process reads from the file.
      const listed = (await (await fetch(`${s.url}/api/installs?limit=50&q=a&order=oldest`)).json()) as {
        installs: { random_id: string }[];
      };
      const local = openSqliteEngine(db, { durability: "normal", migrate: false });
      const mine = (
        await local.store.listExecutions({ q: "a", kind: "install" }, { limit: 50, order: "oldest" })
      ).rows.map((r) => r.randomId);
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
      expect(
        (
          await fetch(`${s.url}/upload`, {
            method: "POST",
            body: report("after-budget"),
            headers: { "content-type": "application/json" },
          })
        ).status,
      ).toBe(201);
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
