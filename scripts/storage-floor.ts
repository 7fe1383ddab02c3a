#!/usr/bin/env bun
// The floor of bytes per execution for the benchmark's current-client traffic (bench-ingest.ts
// --fill-mode telemetry): the same executions stored in the most compact SQLite layout we could
// think of, to judge how far the real schema is from what any layout could do. Not the real
// schema: ids as 16-byte blobs, every label dictionary-coded to a small integer, every row written
// once in its final state (no page slack from rewrites), each error text zstd-compressed whole at
// the highest level, the four indexes the reads need (execution id, random_id, time, app and
// time), then VACUUM. Only temporary files; prints one markdown table.
//
//   bun scripts/storage-floor.ts [--rows 200000]
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: { rows: { type: "string", default: "200000" } },
});
const ROWS = Number(opt.rows);
if (!Number.isInteger(ROWS) || ROWS < 1000) {
  console.error("storage-floor: --rows must be a whole number >= 1000");
  process.exit(2);
}

// The benchmark's failures: a summary line, then one of four ~9.3 KB log tails (scripts/bench/ingest.lua).
const logTail = (k: number) =>
  Array.from({ length: 90 }, (_, i) => {
    const l = i + 1;
    const two = (n: number) => String(n).padStart(2, "0");
    return `[${two(10 + k)}:${two(l % 60)}:${two((l * 7) % 60)}] step ${l} of build ${k}: compiling module_${l}.c -> module_${l}.o (warning: unused variable 'tmp${l}')`;
  }).join("\n");
const ERRORS = [1, 2, 3, 4].map(
  (k) =>
    `exit_code=100 | APT: package installation failed | at line 212: apt-get install -y libssl-dev\n---\n${logTail(k)}`,
);
// Each failure's text compressed on its own, as a row would keep it.
const COMPRESSED = ERRORS.map((e) => Bun.zstdCompressSync(Buffer.from(e), { level: 19 }));

const dir = mkdtempSync(join(tmpdir(), "installstats-floor-"));
try {
  const path = join(dir, "floor.db");
  const db = new Database(path, { create: true, strict: true });
  db.run("PRAGMA journal_mode = OFF");
  db.run("PRAGMA synchronous = OFF");
  const small = Array.from({ length: 30 }, (_, i) => `f${i} INTEGER`).join(", ");
  db.run(`CREATE TABLE e (id BLOB NOT NULL, rid BLOB NOT NULL, ${small}, error BLOB, created INTEGER NOT NULL, updated INTEGER, duration INTEGER,
    installing INTEGER, validation INTEGER, configuring INTEGER, finished INTEGER, nsapp INTEGER, host_gpu TEXT, extra TEXT)`);
  const insert = db.prepare(
    `INSERT INTO e VALUES (${Array.from({ length: 2 + 30 + 1 + 7 + 3 }, () => "?").join(", ")})`,
  );
  let t = Date.UTC(2026, 10, 1);
  let failures = 0;
  db.run("BEGIN");
  for (let i = 0; i < ROWS; i++) {
    const id = crypto.getRandomValues(new Uint8Array(16));
    const rid = crypto.getRandomValues(new Uint8Array(16));
    // Labels as codes below 128 (one byte), numbers as sent: attempt, kind, payload version, type,
    // ct_type, disk, cores, ram, os, os version, disableip6, method, pve, cpu vendor and model, gpu
    // vendor, model and passthrough, ram speed, arch, platform, has_arm, repo source and slug,
    // kernel, app version, status, outcome, exit code, category (and failed command and line).
    const failed = Math.random() < 0.2;
    if (failed) failures++;
    const codes = Array.from({ length: 30 }, (_, k) =>
      k < 4 ? 1 : k === 5 ? 2048 : k === 22 ? 3200 : k >= 26 && !failed ? null : (i * (k + 3)) % 100,
    );
    const installing = t;
    t += 250; // 4,000 executions per second, as the fill
    insert.run(
      id,
      rid,
      ...codes,
      failed ? COMPRESSED[i % 4]! : null,
      installing,
      installing + 240_000,
      240_000,
      installing,
      installing + 80_000,
      installing + 160_000,
      installing + 240_000,
      i % 120,
      null,
      null,
    );
  }
  db.run("COMMIT");
  db.run("CREATE UNIQUE INDEX e_id ON e(id)");
  db.run("CREATE INDEX e_rid ON e(rid)");
  db.run("CREATE INDEX e_created ON e(created)");
  db.run("CREATE INDEX e_app ON e(nsapp, created)");
  db.run("VACUUM");
  const parts = db
    .query<{ name: string; bytes: number }, []>(
      "SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC",
    )
    .all()
    .filter((p) => p.bytes > 4096);
  db.close();
  const size = statSync(path).size;
  const avgCompressed = COMPRESSED.reduce((s, c) => s + c.length, 0) / COMPRESSED.length;
  console.log(
    `# Storage floor, ${ROWS.toLocaleString("en-US")} executions (${failures.toLocaleString("en-US")} failed)\n`,
  );
  console.log(
    `A failure's text: ${ERRORS[0]!.length.toLocaleString("en-US")} characters, ${avgCompressed.toFixed(0)} bytes compressed on its own (zstd 19).\n`,
  );
  console.log("| part | bytes per execution |\n|---|---:|");
  for (const p of parts) console.log(`| ${p.name} | ${(p.bytes / ROWS).toFixed(1)} |`);
  console.log(`| **whole file** | **${(size / ROWS).toFixed(1)}** |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
