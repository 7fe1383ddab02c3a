#!/usr/bin/env bun
// Hostile clients against the disk (issue 15): what anonymous floods cost the host in bytes.
// Each scenario starts a fresh server (bun src/main.ts serve, rate limiting off so that only
// the storage budgets are measured) on a new database in a temporary directory, floods it, stops
// it (SIGTERM), checkpoints, and measures the files and, per table, the bytes on disk (dbstat).
//
//   bun scripts/hostile-budgets.ts [--scenario junk,conflict,orphans] [--concurrency 8]
//                                   [--junk-seconds 30] [--conflict-seconds 15]
//                                   [--orphans 76000] [--orphan-seconds 60] [--json out.json]
//                                   [--root DIR] [--keep] [-- extra serve flags...]
//
// --root runs the server of another checkout (an older commit unpacked with git archive), to
// measure before and after a change with the same harness.
//
// Scenarios (the figures of issue 15):
//   junk      200 KB bodies of distinct random text (not JSON) to POST /upload: 400 invalid_json,
//             each logged raw; issue 15 saw 2.66 GB added in 30 s.
//   conflict  one install made final, then the same 200 KB status update over and over: 409
//             already_final, each logged raw; issue 15 saw 1.66 GB in 15 s.
//   orphans   76,000 status updates (4 KB error text each) for random_ids never started: 202
//             held; issue 15 saw 314 MB of held rows in 20 s, never expired.
// Output: one markdown table per scenario on stdout (and JSON with --json).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Database } from "bun:sqlite";
import { fileSizes, killAllChildren, spawnListening, stopGracefully } from "./bench/lib.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const { values: opt, positionals } = parseArgs({
  args: Bun.argv.slice(2),
  allowPositionals: true,
  options: {
    scenario: { type: "string", default: "junk,conflict,orphans" },
    concurrency: { type: "string", default: "8" },
    "junk-seconds": { type: "string", default: "30" },
    "conflict-seconds": { type: "string", default: "15" },
    orphans: { type: "string", default: "76000" },
    "orphan-seconds": { type: "string", default: "60" },
    json: { type: "string" },
    keep: { type: "boolean", default: false },
    root: { type: "string" },
  },
});

const concurrency = Number(opt.concurrency);
const SERVER_ROOT = opt.root ?? ROOT;
const dir = mkdtempSync(join(tmpdir(), "installstats-hostile-"));
process.on("exit", () => {
  killAllChildren();
  if (!opt.keep) rmSync(dir, { recursive: true, force: true });
});
process.on("SIGINT", () => process.exit(130));

const KB = 1024;
const MB = 1024 * KB;
const mb = (n: number) => (n / MB).toFixed(n < 10 * MB ? 2 : 1);

/** Distinct printable junk: random bytes in base64 (about what a broken client or an attacker sends). */
function junk(bytes: number): Uint8Array {
  const raw = new Uint8Array(Math.ceil((bytes * 3) / 4));
  crypto.getRandomValues(raw);
  return new TextEncoder().encode(Buffer.from(raw).toString("base64").slice(0, bytes));
}

/** Log-like text, as the current clients send in `error` (compressible, like real logs). */
function logText(bytes: number, seed: string): string {
  const lines: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const line = `[${String(i).padStart(4, "0")}] ${seed} apt-get install -y curl sudo mc gnupg2 ... E: Unable to fetch some archives (exit ${i % 255})\n`;
    lines.push(line);
    n += line.length;
  }
  return lines.join("").slice(0, bytes);
}

interface Flood {
  sent: number;
  statuses: Record<string, number>;
  seconds: number;
}

/** `concurrency` loops posting `body(i)` until `seconds` pass or `count` requests were sent. */
async function flood(
  url: string,
  path: string,
  body: (i: number) => Uint8Array | string,
  limits: { seconds: number; count?: number },
): Promise<Flood> {
  const started = performance.now();
  const until = started + limits.seconds * 1000;
  const statuses: Record<string, number> = {};
  let next = 0;
  const loop = async () => {
    for (;;) {
      if (performance.now() >= until) return;
      const i = next++;
      if (limits.count !== undefined && i >= limits.count) return;
      try {
        const res = await fetch(`${url}${path}`, {
          method: "POST",
          body: body(i) as BodyInit,
          headers: { "content-type": "application/json" },
        });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      } catch (e) {
        const key = `error: ${(e as Error).message.slice(0, 40)}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const sent = Object.values(statuses).reduce((a, b) => a + b, 0);
  return { sent, statuses, seconds: (performance.now() - started) / 1000 };
}

interface Measured {
  files: { db: number; wal: number };
  tables: { name: string; bytes: number }[];
  rows: Record<string, number>;
  /** The budgets' counters (migration 0009 on), as committed. */
  counters: Record<string, number>;
}

function measure(dbPath: string): Measured {
  const rw = new Database(dbPath);
  try {
    rw.run("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    rw.close();
  }
  const sizes = fileSizes(dbPath);
  const db = new Database(dbPath, { readonly: true });
  try {
    const tables = db
      .query<{ name: string; bytes: number }, []>(
        "SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC",
      )
      .all();
    const rows: Record<string, number> = {};
    for (const { name } of db
      .query<{ name: string }, []>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%'",
      )
      .all()) {
      rows[name] = db.query<{ n: number }, []>(`SELECT count(*) AS n FROM "${name}"`).get()!.n;
    }
    const counters =
      "budget_counters" in rows
        ? Object.fromEntries(
            db
              .query<{ name: string; value: number }, []>("SELECT name, value FROM budget_counters ORDER BY name")
              .all()
              .map((c) => [c.name, c.value]),
          )
        : {};
    return { files: { db: sizes.db, wal: sizes.wal }, tables, rows, counters };
  } finally {
    db.close();
  }
}

async function withServer<T>(
  name: string,
  run: (url: string) => Promise<T>,
): Promise<{ result: T; before: Measured; after: Measured; metrics: string }> {
  const dbPath = join(dir, `${name}.db`);
  const serve = [
    "bun",
    join(SERVER_ROOT, "src/main.ts"),
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
    ...positionals,
  ];
  let server = await spawnListening(serve, {
    stderrPath: join(dir, `${name}.stderr`),
    timeoutMs: 60_000,
    cwd: SERVER_ROOT,
  });
  await stopGracefully(server.proc); // the empty database, migrated
  const before = measure(dbPath);
  server = await spawnListening(serve, {
    stderrPath: join(dir, `${name}.stderr`),
    timeoutMs: 60_000,
    cwd: SERVER_ROOT,
  });
  const result = await run(server.url);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  const code = await stopGracefully(server.proc);
  if (code !== 0) throw new Error(`server exited ${code}`);
  return { result, before, after: measure(dbPath), metrics };
}

const scenarios: Record<string, () => Promise<unknown>> = {
  junk: () =>
    withServer("junk", (url) => flood(url, "/upload", () => junk(200 * KB), { seconds: Number(opt["junk-seconds"]) })),

  conflict: () =>
    withServer("conflict", async (url) => {
      const id = "11111111-2222-4333-8444-555555555555";
      const post = (path: string, body: object) =>
        fetch(`${url}${path}`, {
          method: "POST",
          body: JSON.stringify(body),
          headers: { "content-type": "application/json" },
        });
      await post("/upload", { random_id: id, type: "lxc", nsapp: "victim", status: "installing" });
      await post("/upload/updatestatus", { random_id: id, status: "done" });
      const repeated = JSON.stringify({ random_id: id, status: "failed", error: logText(200 * KB - 100, "conflict") });
      return flood(url, "/upload/updatestatus", () => repeated, { seconds: Number(opt["conflict-seconds"]) });
    }),

  orphans: () =>
    withServer("orphans", (url) =>
      flood(
        url,
        "/upload/updatestatus",
        (i) =>
          JSON.stringify({
            random_id: `orphan-${i}-${crypto.randomUUID()}`,
            status: "failed",
            error: logText(4 * KB, `orphan ${i}`),
          }),
        {
          seconds: Number(opt["orphan-seconds"]),
          count: Number(opt.orphans),
        },
      ),
    ),
};

const report: Record<string, unknown> = {};
for (const name of opt.scenario!.split(",")) {
  const scenario = scenarios[name];
  if (!scenario) throw new Error(`unknown scenario ${name}; one of ${Object.keys(scenarios).join(", ")}`);
  const { result, before, after, metrics } = (await scenario()) as {
    result: Flood;
    before: Measured;
    after: Measured;
    metrics: string;
  };
  const grown = after.files.db + after.files.wal - before.files.db - before.files.wal;
  const budgetLines = metrics.split("\n").filter((l) => /^installstats_(log_|held_|storage_)/.test(l));
  report[name] = { flood: result, before, after, grown, budgetLines };
  console.log(
    `\n## ${name}: ${result.sent} requests in ${result.seconds.toFixed(1)} s (${JSON.stringify(result.statuses)})\n`,
  );
  console.log(
    `database grew by ${mb(grown)} MB (${(grown / Math.max(1, result.sent)).toFixed(0)} bytes per request); file ${mb(after.files.db)} MB\n`,
  );
  console.log("| table or index | MB | rows |\n|---|---:|---:|");
  for (const t of after.tables.filter((t) => t.bytes >= 64 * KB))
    console.log(`| ${t.name} | ${mb(t.bytes)} | ${after.rows[t.name] ?? ""} |`);
  if (Object.keys(after.counters).length > 0)
    console.log(
      `\nbudget counters: ${Object.entries(after.counters)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ")}`,
    );
  if (budgetLines.length > 0) console.log(`\n\`\`\`\n${budgetLines.join("\n")}\n\`\`\``);
}
if (opt.json) writeFileSync(opt.json, JSON.stringify(report, null, 2));
process.exit(0);
