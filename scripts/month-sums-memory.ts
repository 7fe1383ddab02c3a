// Memory of a bulk load's month sums (src/store/sqlite/cells.ts sumMonths), alone: the months of a
// seeded SQLite database summed again from its day cells, as a bulk load sums them once it has
// passed them, in a process of their own. Prints the high-water mark before and after, and the
// time. The peak of a dense seed is this summing (seed --records 600000 --days 22: 173 MiB through
// the load, 207.9 MiB at its end), so this measures it in seconds instead of a seed's minutes.
//
//   bun scripts/month-sums-memory.ts <seeded.db> [--runs 3] [--tree <checkout>]
//
// Each run sums a fresh copy (the database itself is not changed). --tree measures another
// checkout's code on the same data (A/B: run it once per tree, alternating).
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Database } from "bun:sqlite";
import { GRAINS } from "../src/domain/rollup.ts";

const { values, positionals } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    runs: { type: "string", default: "3" },
    tree: { type: "string", default: resolve(import.meta.dir, "..") },
    child: { type: "boolean", default: false },
  },
  allowPositionals: true,
});

const highWaterMb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]) / 1024;

if (values.child) {
  // In the child: sum every month from the first day cell's, as a bulk load's finish does.
  const [db] = positionals;
  const tree = values.tree!;
  const { openSqliteEngine } = await import(join(tree, "src/store/sqlite/engine.ts"));
  const { BULK_LOAD, bulkWriter } = await import(join(tree, "src/store/bulk-load.ts"));
  const engine = openSqliteEngine(db, { durability: "normal", migrate: true, ...BULK_LOAD });
  Bun.gc(true);
  const before = highWaterMb();
  const began = performance.now();
  const cpu = process.cpuUsage();
  await bulkWriter(engine.store).finish(Date.now());
  const used = process.cpuUsage(cpu);
  const after = highWaterMb();
  await engine.close();
  console.log(
    JSON.stringify({
      before,
      after,
      seconds: (performance.now() - began) / 1000,
      cpu: (used.user + used.system) / 1e6,
    }),
  );
  process.exit(0);
}

const [source] = positionals;
if (source === undefined) {
  console.error("usage: bun scripts/month-sums-memory.ts <seeded.db> [--runs 3] [--tree <checkout>]");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "installstats-month-sums-"));
try {
  for (let run = 1; run <= Number(values.runs); run++) {
    const db = join(dir, "sums.db");
    rmSync(db, { force: true });
    copyFileSync(source, db);
    const sqlite = new Database(db);
    const { first } = sqlite.query("SELECT min(bucket) AS first FROM rollups WHERE grain = ?").get(GRAINS.day) as {
      first: number | null;
    };
    if (first === null) throw new Error(`${source} has no day cells`);
    const d = new Date(first);
    const month = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    sqlite.run("UPDATE rollup_state SET months_from = ?", [month]);
    sqlite.close();
    const child = Bun.spawnSync([process.execPath, import.meta.path, "--child", "--tree", values.tree!, db], {
      stderr: "inherit",
    });
    if (child.exitCode !== 0) throw new Error(`run ${run} failed (exit ${child.exitCode})`);
    const r = JSON.parse(child.stdout.toString()) as { before: number; after: number; seconds: number; cpu: number };
    console.log(
      `run ${run}: months from ${new Date(month).toISOString().slice(0, 7)} summed: high-water mark ${r.before.toFixed(1)} -> ${r.after.toFixed(1)} MiB (+${(r.after - r.before).toFixed(1)}), ${r.seconds.toFixed(2)} s, ${r.cpu.toFixed(2)} s CPU`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
