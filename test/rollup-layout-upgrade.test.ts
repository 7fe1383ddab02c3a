// A database of the layout before migrations 0014 and 0015 (rollup cells as JSON in every slice
// and every hour, executions with text ids and every column stored) is upgraded in place at open:
// every execution reads back as it was, the cells are rebuilt in the new layout and answer every
// question the old cells answered, verify is clean, and opening again changes nothing.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { SignatureSightings, failureSignature } from "../src/domain/error-signature.ts";
import type { Execution } from "../src/domain/execution.ts";
import { GRAINS, hoursFrom } from "../src/domain/rollup.ts";
import { DAY, HOUR, floorHour } from "../src/domain/time.ts";
import { verifyRollups } from "../src/maintenance/verify.ts";
import { generateExecutions, seedOptions } from "../src/seed/seed.ts";
import { migrationsFolder, openDatabase } from "../src/store/sqlite/database.ts";
import { openSqliteEngine } from "../src/store/sqlite/engine.ts";
import { answersOf, jsonColumns, oldLayoutCells } from "./helpers/cells.ts";

setDefaultTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), "installstats-layout-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The migrations up to 0013 (the layout before), as a folder of their own. */
function migrationsBefore(): string {
  const folder = join(dir, "migrations-0013");
  cpSync(migrationsFolder(), folder, { recursive: true });
  const journal = JSON.parse(readFileSync(join(folder, "meta/_journal.json"), "utf8")) as { entries: { idx: number }[] };
  journal.entries = journal.entries.filter((e) => e.idx <= 13);
  writeFileSync(join(folder, "meta/_journal.json"), JSON.stringify(journal));
  return folder;
}

const OLD_COLUMNS = [
  "execution_id", "random_id", "attempt", "kind", "payload_version", "type", "ct_type", "disk_size", "core_count", "ram_size", "os_type", "os_version",
  "disableip6", "nsapp", "method", "pve_version", "cpu_vendor", "cpu_model", "gpu_vendor", "gpu_model", "ram_speed", "gpu_passthrough", "host_gpu", "arch",
  "platform", "has_arm", "repo_source", "repo_slug", "kernel_version", "app_version", "extra", "status", "outcome", "error", "exit_code", "error_category",
  "failed_command", "failed_line", "install_duration", "created_at", "updated_at", "duration_ms", "installing_at", "validation_at", "configuring_at", "finished_at", "repaired",
] as const;
const camel = (c: string) => c.replace(/_([a-z])/g, (_, x: string) => x.toUpperCase());
const oldRow = (e: Execution) => OLD_COLUMNS.map((c) => {
  const v = (e as unknown as Record<string, unknown>)[camel(c)];
  return typeof v === "boolean" ? (v ? 1 : 0) : (v as string | number | null);
});

const NOW = floorHour(Date.UTC(2026, 10, 20, 15));

/** The seed's /upload installs over 120 days, and executions of today's clients: retries, odd ids, v2 fields, a long error text. */
function executions(): Execution[] {
  const seeded = [...generateExecutions(seedOptions({ records: 1500, days: 120, end: NOW - 2 * HOUR, seed: 11 }))];
  const current = (i: number, over: Partial<Execution>): Execution => ({
    ...seeded[i]!, payloadVersion: 2, platform: "pve", arch: "amd64", cpuVendor: "intel", gpuVendor: "nvidia", gpuPassthrough: "yes", repoSource: "ProxmoxVE",
    repoSlug: "community-scripts/ProxmoxVE", kernelVersion: "6.14.8-2-pve", appVersion: "1.2.3", validationAt: seeded[i]!.createdAt + 3000, configuringAt: seeded[i]!.createdAt + 30_000, ...over,
  });
  const first = seeded[100]!;
  return [
    ...seeded,
    current(100, { executionId: "0f3c2a7e-1b2d-4c5e-8f90-123456789abc", attempt: 2, randomId: first.randomId, createdAt: first.createdAt + 10 * 60_000, updatedAt: first.createdAt + 20 * 60_000 }),
    current(200, { executionId: "fix-odd-id", randomId: "fix-odd-id" }),
    current(300, { executionId: "8D2E4F6A-0B1C-4D3E-9F5A-6B7C8D9E0F1A", randomId: "8D2E4F6A-0B1C-4D3E-9F5A-6B7C8D9E0F1A" }),
    current(400, { executionId: "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9", randomId: "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9", status: "failed", outcome: "failed", exitCode: 100, errorCategory: "dependency", error: `exit_code=100 | APT\n---\n${"Setting up libfoo (1.2.3) ...\n".repeat(60)}`, failedCommand: "apt-get install -y foo", failedLine: 42 }),
  ];
}

describe("upgrade from the layout before migrations 0014 and 0015", () => {
  test("executions read back as they were; cells answer what the old ones did; verify is clean; again, nothing changes", async () => {
    const path = join(dir, "old.db");
    const records = executions();
    const old = openDatabase(path, { durability: "normal", migrate: false });
    migrate(old.db, { migrationsFolder: migrationsBefore() });
    const insert = old.sqlite.query(`INSERT INTO executions (${OLD_COLUMNS.join(", ")}) VALUES (${OLD_COLUMNS.map(() => "?").join(", ")})`);
    const cells = oldLayoutCells(records, NOW);
    const putCell = old.sqlite.query("INSERT INTO rollups (grain, app, bucket, data, apps, errors) VALUES (?, ?, ?, ?, ?, ?)");
    old.sqlite.transaction(() => {
      for (const e of records) insert.run(...oldRow(e));
      for (const { key, data } of cells) {
        const c = jsonColumns(data);
        putCell.run(key.grain, key.app, key.bucket, c.data, c.apps, c.errors);
      }
      // Error signatures, as the engine kept them beside the cells.
      const sightings = new SignatureSightings();
      for (const e of records) {
        const sig = failureSignature(e.outcome, e.error);
        if (sig) sightings.see(sig, e.error!, e.nsapp, e.updatedAt);
      }
      const putSignature = old.sqlite.query("INSERT INTO error_signatures (id, signature, example, first_seen, last_seen, apps) VALUES (?, ?, ?, ?, ?, ?)");
      for (const [id, s] of sightings.seen) putSignature.run(id, s.signature, s.example, s.firstSeen, s.lastSeen, JSON.stringify([...s.apps].sort()));
      old.sqlite.run("UPDATE rollup_state SET folded_until = ?, version = 2", [NOW]);
    })();
    expect(cells.filter((c) => c.key.grain === GRAINS.hour && c.key.bucket < hoursFrom(NOW)).length).toBeGreaterThan(1000);
    old.sqlite.close();

    const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
    try {
      const { store, sqlite } = engine;
      // Every execution as it was, by its install.
      for (const e of records) expect((await store.getExecutions(e.randomId)).find((x) => x.executionId === e.executionId)).toEqual(e);
      expect((await store.getExecutions(records[100]!.randomId)).map((e) => e.attempt)).toEqual([1, 2]);
      // Stored compactly: UUIDs as 16 bytes, random_id only where it differs.
      const layout = sqlite.query("SELECT sum(typeof(execution_id) = 'blob' AND length(execution_id) = 16) AS blobs, count(rid) AS rids, count(*) AS n FROM executions").get() as { blobs: number; rids: number; n: number };
      expect(layout).toEqual({ blobs: records.length - 2, rids: 1, n: records.length });
      // Every old cell's question has the old answer, hour cells older than the kept ones included.
      const answers = await answersOf(store, cells, NOW + DAY);
      expect(answers.got).toEqual(answers.want);
      expect((sqlite.query("SELECT count(*) AS n FROM rollups WHERE grain = 0 AND bucket < ?").get(hoursFrom(NOW)) as { n: number }).n).toBe(0);
      const check = await verifyRollups(store);
      expect({ ok: check.ok, records: check.records, mismatches: check.mismatches, gaps: check.signatureGaps }).toEqual({ ok: true, records: records.length, mismatches: [], gaps: 0 });
    } finally {
      await engine.close();
    }
    const snapshot = (e: ReturnType<typeof openSqliteEngine>) => e.sqlite.query("SELECT (SELECT count(*) FROM rollups) AS cells, (SELECT sum(length(data)) FROM rollups) AS bytes, (SELECT version FROM rollup_state) AS version").get();
    const first = openSqliteEngine(path, { durability: "normal", migrate: true });
    const before = snapshot(first);
    await first.close();
    const again = openSqliteEngine(path, { durability: "normal", migrate: true });
    expect(snapshot(again)).toEqual(before);
    await again.close();
  });
});
