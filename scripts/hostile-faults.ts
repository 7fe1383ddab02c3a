#!/usr/bin/env bun
// Faults under load (issue 15): the -wal file deleted under a running server, then kill -9.
// Issue 15 saw the server keep acknowledging with /healthz "ok", and the kill then lose 723 of
// 130,649 acknowledged reports. This drives start reports at a server (bun src/main.ts serve,
// rate limiting off), deletes the WAL after --before seconds, goes on for --after seconds while
// polling /healthz, kills the server with SIGKILL, and counts the acknowledged reports missing from
// the database.
//
//   bun scripts/hostile-faults.ts [--before 4] [--after 4] [--concurrency 16] [--root DIR] [--keep]
//
// --root runs the server of another checkout (e.g. an older commit unpacked with git archive), to
// measure before and after a change with the same harness.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Database } from "bun:sqlite";
import { killAllChildren, sleep, spawnListening } from "./bench/lib.ts";

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    before: { type: "string", default: "4" },
    after: { type: "string", default: "4" },
    concurrency: { type: "string", default: "16" },
    root: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});

const root = opt.root ?? new URL("..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "installstats-faults-"));
process.on("exit", () => {
  killAllChildren();
  if (!opt.keep) rmSync(dir, { recursive: true, force: true });
});
process.on("SIGINT", () => process.exit(130));

const dbPath = join(dir, "faults.db");
const server = await spawnListening(
  [
    "bun",
    join(root, "src/main.ts"),
    "serve",
    "--db",
    dbPath,
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "--rate-limit",
    "0",
    "--log-level",
    "warn",
  ],
  {
    stderrPath: join(dir, "server.stderr"),
    timeoutMs: 60_000,
    cwd: root,
  },
);

const acked: string[] = [];
const statuses: Record<string, Record<string, number>> = { before: {}, after: {} };
let phase: "before" | "after" = "before";
let stop = false;
let next = 0;
const loop = async () => {
  while (!stop) {
    const id = `f-${next++}-${crypto.randomUUID()}`;
    const body = JSON.stringify({
      random_id: id,
      type: "lxc",
      nsapp: "faults",
      status: "installing",
      os_type: "debian",
      os_version: "12",
      ct_type: 1,
      disk_size: 8,
      core_count: 2,
      ram_size: 2048,
    });
    const at = phase;
    try {
      const res = await fetch(`${server.url}/upload`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json" },
      });
      await res.arrayBuffer();
      statuses[at]![res.status] = (statuses[at]![res.status] ?? 0) + 1;
      if (res.status >= 200 && res.status < 300) acked.push(id);
    } catch {
      statuses[at]!.error = (statuses[at]!.error ?? 0) + 1;
      await sleep(10);
    }
  }
};
const clients = Array.from({ length: Number(opt.concurrency) }, loop);

await sleep(Number(opt.before) * 1000);
const ackedBefore = acked.length;
rmSync(`${dbPath}-wal`);
phase = "after";
const health: Record<string, number> = {};
const until = performance.now() + Number(opt.after) * 1000;
while (performance.now() < until) {
  try {
    const res = await fetch(`${server.url}/healthz`);
    await res.arrayBuffer();
    health[res.status] = (health[res.status] ?? 0) + 1;
  } catch {
    health.error = (health.error ?? 0) + 1;
  }
  await sleep(200);
}
server.proc.kill("SIGKILL");
await server.proc.exited;
stop = true;
await Promise.all(clients);

// Opened as a restarted server would: whatever WAL is there (none, after the deletion) is recovered.
const db = new Database(dbPath);
const have = db.query<{ n: number }, [string]>("SELECT count(*) AS n FROM executions WHERE random_id = ?");
let lost = 0;
for (const id of acked) if (have.get(id)!.n === 0) lost++;
db.close();
const ackedAfter = Object.entries(statuses.after!).reduce(
  (n, [status, count]) => n + (status.startsWith("2") ? count : 0),
  0,
);
const rescued = (await Array.fromAsync(new Bun.Glob("faults.db.rescued-*").scan(dir))).length;
console.log(
  JSON.stringify(
    {
      root,
      acknowledged: acked.length,
      // Sent before the deletion, answered after it: their batch committed before it.
      acknowledged_in_flight_at_deletion: acked.length - ackedBefore - ackedAfter,
      acknowledged_sent_after_deletion: ackedAfter,
      answers: statuses,
      healthz_after_deletion: health,
      lost_after_kill9: lost,
      rescued_files: rescued,
    },
    null,
    2,
  ),
);
process.exit(0);
